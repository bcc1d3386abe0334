// Writes the callback module (dist/sqlite-callbacks.wasm): a few hundred
// bytes of wasm that turn JavaScript functions into wasm functions SQLite's
// function table can hold. For each signature it imports cb.<sig> and
// exports it again as <sig>; src/sqlite/loader.js (addFunction) binds one
// JavaScript function per instance. It is made here, at build time,
// because workerd compiles no wasm at run time: there the package's users
// import this file as a module, like the engine and sqlite3.wasm.
//
//   node scripts/callbacks.js OUT.wasm

/** Emscripten-style signatures (result letter, then one per parameter):
 * every callback type of sqlite3_vfs (v1-v3), sqlite3_io_methods (v1-v3),
 * application-defined functions, destructors and hooks. */
export const SIGNATURES = [
  // void
  "vi", // xShmBarrier, xDestroy, xFinal, auxdata destructor, rollback hook
  "vii", // xDlClose
  "viii", // xFunc, xStep, xDlError
  "viiii",
  "viiiij", // update hook (arg, op, db name, table, rowid)
  // int, all i32 parameters
  "i",
  "ii", // xClose, xSectorSize, xDeviceCharacteristics, progress, commit hook
  "iii", // xSync, xFileSize, xLock, xUnlock, xCheckReservedLock, xShmUnmap, xSleep, xCurrentTime(Int64), busy handler
  "iiii", // xFileControl, xDelete, xRandomness, xGetLastError, xDlSym
  "iiiii", // xAccess, xFullPathname, xShmLock, trace_v2, wal hook
  "iiiiii", // xOpen, xShmMap, collation compare
  "iiiiiii", // authorizer
  // int, with sqlite3_int64 parameters
  "iij", // xTruncate
  "iiiij", // xRead, xWrite
  "iijii", // xFetch
  "iiji", // xUnfetch
];

const TYPES = { i: 0x7f, j: 0x7e, f: 0x7d, d: 0x7c };

function uleb(n) {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}
const vec = (items) => [...uleb(items.length), ...items.flat()];
const name = (s) => vec([...new TextEncoder().encode(s)]);
const section = (id, payload) => [id, ...uleb(payload.length), ...payload];

export function callbackModuleBytes(signatures = SIGNATURES) {
  const types = signatures.map((s) => {
    const params = [...s.slice(1)].map((c) => TYPES[c]);
    const results = s[0] === "v" ? [] : [TYPES[s[0]]];
    if (params.includes(undefined) || results.includes(undefined)) throw new Error(`bad signature ${s}`);
    return [0x60, ...vec(params), ...vec(results)];
  });
  const imports = signatures.map((s, i) => [...name("cb"), ...name(s), 0x00, ...uleb(i)]);
  const exports = signatures.map((s, i) => [...name(s), 0x00, ...uleb(i)]);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec(types)),
    ...section(2, vec(imports)),
    ...section(7, vec(exports)),
  ]);
}

if (typeof process !== "undefined" && import.meta.url === `file://${process.argv[1]}`) {
  const fs = await import("node:fs");
  fs.writeFileSync(process.argv[2], callbackModuleBytes());
}
