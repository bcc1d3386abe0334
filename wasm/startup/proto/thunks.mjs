// The callback module: a few dozen bytes of wasm, made ahead of time, that
// turn a JavaScript function into a wasm function SQLite's function table
// can hold. It imports `cb.fn` (a JavaScript function) and exports `fn`,
// which forwards its arguments to it. Hosts that compile no wasm at run
// time (workerd) import it as a module like the others; elsewhere it can
// be compiled on the spot.
//
//   node thunks.mjs OUT.wasm
import fs from "node:fs";

const I32 = 0x7f;

function section(id, payload) {
  return [id, ...uleb(payload.length), ...payload];
}
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
const name = (s) => [...uleb(s.length), ...new TextEncoder().encode(s)];

/** A module whose export `fn` takes nParams i32 and returns nothing (void
 * callbacks such as a scalar function's xFunc(ctx, argc, argv)). */
export function thunkBytes(nParams = 3) {
  const params = Array(nParams).fill(I32);
  const type = section(1, [1, 0x60, nParams, ...params, 0]);
  const imports = section(2, [1, ...name("cb"), ...name("fn"), 0, 0]);
  const funcs = section(3, [1, 0]);
  const exports = section(7, [1, ...name("fn"), 0, 1]);
  const body = [0, ...params.flatMap((_, i) => [0x20, i]), 0x10, 0, 0x0b];
  const code = section(10, [1, ...uleb(body.length), ...body]);
  return new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...type, ...imports, ...funcs, ...exports, ...code]);
}

if (import.meta.url === `file://${process.argv[1]}`) fs.writeFileSync(process.argv[2], thunkBytes(3));
