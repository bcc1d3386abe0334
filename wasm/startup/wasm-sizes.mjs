// Where the bytes of a Go wasm module go: section sizes, the largest
// functions and code bytes per Go package (from the "name" section, so give
// a build without -ldflags=-s). Usage: node wasm-sizes.mjs FILE.wasm [N]
import fs from "node:fs";
import zlib from "node:zlib";
import { readModule } from "./wasm-module.mjs";

const file = process.argv[2];
const top = Number(process.argv[3] ?? 25);
const buf = fs.readFileSync(file);
const { sections, bodies, names } = readModule(buf);
const gz = (b) => zlib.gzipSync(b, { level: 9 }).length;
const total = buf.length;
console.log(`# ${file}: ${total} bytes raw, ${gz(buf)} gzip -9, ${bodies.length} functions`);
console.log("\n| section | bytes | share |\n|---|---:|---:|");
for (const s of sections) console.log(`| ${s.name} | ${s.size} | ${((100 * s.size) / total).toFixed(1)}% |`);

const named = bodies.map((b) => ({ ...b, name: names.get(b.index) ?? `func[${b.index}]` }));
named.sort((a, b) => b.size - a.size);
console.log(`\n| largest functions | body bytes |\n|---|---:|`);
for (const f of named.slice(0, top)) console.log(`| ${f.name} | ${f.size} |`);

// Package of a Go symbol. The Go linker writes "/" in import paths as "_"
// ("github.com_ncruces_go_sqlite3_wasm_v6.New"): the package is what comes
// before the first "." that is not the one of "github.com".
function pkgOf(n) {
  const from = n.startsWith("github.com") || n.startsWith("golang.org") ? n.indexOf(".") + 1 : 0;
  const dot = n.indexOf(".", from);
  return dot < 0 ? n : n.slice(0, dot);
}
function group(p) {
  for (const [prefix, label] of [
    ["github.com_ncruces_go_sqlite3_wasm", "ncruces/go-sqlite3-wasm (SQLite translated to Go)"],
    ["github.com_ncruces_go_sqlite3", "ncruces/go-sqlite3 (bindings, VFS)"],
    ["github.com_ncruces", "ncruces (other)"],
    ["github.com_klauspost_compress", "klauspost/compress"],
    ["github.com_vmihailenco", "vmihailenco/msgpack"],
    ["github.com_agentstate_agentstate_engine", "agentstate/engine"],
    ["github.com_agentstate_agentstate_codec", "agentstate/codec"],
    ["github.com_agentstate_agentstate_channels", "agentstate/channels"],
    ["main", "agentstate/wasm/js (main)"],
    ["runtime", "runtime"],
    ["internal_runtime", "runtime"],
    ["syscall", "syscall"],
    ["encoding_json", "encoding/json"],
    ["reflect", "reflect"],
    ["regexp", "regexp"],
    ["crypto", "crypto"],
    ["compress", "compress (std)"],
  ]) if (p.startsWith(prefix)) return label;
  return p.startsWith("github.com") || p.startsWith("golang.org") ? p : "std (other)";
}
const by = new Map();
for (const f of named) {
  const g = group(pkgOf(f.name));
  const e = by.get(g) ?? { size: 0, n: 0, bytes: [] };
  e.size += f.size; e.n++; e.bytes.push(buf.subarray(f.start, f.start + f.size));
  by.set(g, e);
}
const code = named.reduce((s, f) => s + f.size, 0);
console.log(`\n| package group | functions | code bytes | gzip -9 of its code | share of code |\n|---|---:|---:|---:|---:|`);
for (const [g, e] of [...by].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
  console.log(`| ${g} | ${e.n} | ${e.size} | ${gz(Buffer.concat(e.bytes))} | ${((100 * e.size) / code).toFixed(1)}% |`);
}
if (process.env.SQLITE_FUNCS) {
  const sq = named.filter((f) => f.name.includes("go_sqlite3_wasm"));
  console.log(`\nSQLite functions over 100 KB: ${sq.filter((f) => f.size > 100e3).length}; over 20 KB: ${sq.filter((f) => f.size > 20e3).length}`);
}
