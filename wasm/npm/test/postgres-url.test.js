// A PostgreSQL URL given to the npm package, which has no PostgreSQL client
// yet: refused with a typed error before anything is created, the URL shown
// without its password, wherever it is given.
import { AgentStateError, AgentStateSaver, AgentStateStore, Database } from "../src/index.js";

const url = "postgresql://agent:secret@db.example:5432/agents?sslmode=disable";

async function refused(p, shown = "postgresql://agent:xxxxx@db.example:5432/agents") {
  const e = await p.then(
    () => null,
    (err) => err,
  );
  expect(e).toBeInstanceOf(AgentStateError);
  expect(e.code).toBe("INVALID_ARGUMENT");
  expect(e.message).not.toContain("secret");
  expect(e.message).toContain(shown);
  expect(e.message).toContain("docs/postgresql.md");
}

test("open, fromConnString and the store refuse a URL without showing its password", async () => {
  await refused(Database.open({ path: url }));
  await refused(AgentStateSaver.open({ path: url }));
  await refused(AgentStateStore.open({ path: url }));
  await refused(AgentStateSaver.fromConnString(url).setup());
  await refused(Database.open({ path: "postgres://h/db?password=secret" }), "postgres://h/db?password=xxxxx");
});
