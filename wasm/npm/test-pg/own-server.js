// A throwaway PostgreSQL server of a test's own, started as
// .ci/with-postgres starts one (initdb into a temporary directory, as user
// postgres when run as root; 127.0.0.1 only, a free port), for the tests
// that stop it.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

function bindir() {
  const cands = [process.env.PG_BINDIR ?? ""];
  try {
    cands.push(execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim());
  } catch {}
  try {
    cands.push(...fs.readdirSync("/usr/lib/postgresql").sort().map((v) => `/usr/lib/postgresql/${v}/bin`));
  } catch {}
  const d = cands.find((c) => c && fs.existsSync(path.join(c, "pg_ctl")));
  if (!d) throw new Error("no initdb/pg_ctl found (install postgresql, or set PG_BINDIR)");
  return d;
}

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

export async function ownServer() {
  const bin = bindir();
  const root = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(root ? "/tmp" : os.tmpdir(), "agentstate-pg-own."));
  const asUser = root ? ["runuser", "-u", "postgres", "--"] : [];
  if (root) execFileSync("chown", ["postgres:", dir]);
  const port = await freePort();
  const data = path.join(dir, "data");
  const argv = (prog, ...args) => [...asUser, path.join(bin, prog), ...args];
  const run = (prog, ...args) => {
    const [cmd, ...rest] = argv(prog, ...args);
    execFileSync(cmd, rest, { stdio: "pipe" });
  };
  run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync");
  const startArgs = ["-D", data, "-l", path.join(dir, "server.log"), "-w", "-t", "60", "-o", `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir}`, "start"];
  run("pg_ctl", ...startArgs);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable`,
    /** The command that stops the server as a crash does (every session ends at once). */
    stopArgv: argv("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"),
    start: () => run("pg_ctl", ...startArgs),
    close() {
      try {
        run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop");
      } catch {}
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
