// A feasibility probe for phase 2 (not part of the package): a SQLite-backed
// Durable Object storing 4 KB pages as rows of ctx.storage.sql, written in
// one synchronous transaction, read back after workerd restarts.
import { DurableObject } from "cloudflare:workers";
export class Pages extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS pages(no INTEGER PRIMARY KEY, data BLOB)");
  }
  async fetch(request) {
    const url = new URL(request.url);
    const sql = this.ctx.storage.sql;
    if (url.pathname === "/write") {
      const n = Number(url.searchParams.get("n"));
      this.ctx.storage.transactionSync(() => {
        for (let i = 0; i < n; i++) sql.exec("INSERT OR REPLACE INTO pages VALUES (?, ?)", i, new Uint8Array(4096).fill(i % 251));
      });
      return Response.json({ wrote: n });
    }
    if (url.pathname === "/read") {
      const rows = sql.exec("SELECT no, data FROM pages ORDER BY no").toArray();
      const ok = rows.every((r) => new Uint8Array(r.data)[100] === r.no % 251);
      return Response.json({ pages: rows.length, ok, dbSize: sql.databaseSize });
    }
    return new Response("?");
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("ok");
    const stub = env.PAGES.get(env.PAGES.idFromName("db1"));
    return stub.fetch(request);
  },
};
