// Reads the parts of a WebAssembly module the start-up tools need: its
// sections (name, size, byte range), the number of imported functions, each
// function body (index, size, start offset) and the function names of the
// "name" section (empty for a build made with -ldflags=-s).
const sectionNames = ["custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "datacount"];

/** @param {Buffer} buf the module's bytes */
export function readModule(buf) {
  let pos = 8;
  const u32 = () => {
    let r = 0, shift = 0, b;
    do { b = buf[pos++]; r |= (b & 0x7f) << shift; shift += 7; } while (b & 0x80);
    return r >>> 0;
  };
  const str = () => { const n = u32(); const s = buf.toString("utf8", pos, pos + n); pos += n; return s; };
  const sections = [];
  const bodies = [];
  const names = new Map();
  let importedFuncs = 0;
  while (pos < buf.length) {
    const id = buf[pos++];
    const size = u32();
    const start = pos;
    const end = pos + size;
    let name = sectionNames[id] ?? `#${id}`;
    if (id === 0) name = `custom:${str()}`;
    sections.push({ name, size, start, end });
    if (id === 2) {
      const n = u32();
      for (let i = 0; i < n; i++) {
        str(); str();
        const kind = buf[pos++];
        if (kind === 0) { u32(); importedFuncs++; }
        else if (kind === 1) { pos++; const f = u32(); u32(); if (f & 1) u32(); }
        else if (kind === 2) { const f = u32(); u32(); if (f & 1) u32(); }
        else if (kind === 3) { pos += 2; }
      }
    } else if (id === 10) {
      const n = u32();
      for (let i = 0; i < n; i++) {
        const sz = u32();
        bodies.push({ index: importedFuncs + i, size: sz, start: pos });
        pos += sz;
      }
    } else if (name === "custom:name") {
      while (pos < end) {
        const sub = buf[pos++];
        const sz = u32();
        const subEnd = pos + sz;
        if (sub === 1) {
          const n = u32();
          for (let i = 0; i < n; i++) { const idx = u32(); names.set(idx, str()); }
        }
        pos = subEnd;
      }
    }
    pos = end;
  }
  return { sections, bodies, names, importedFuncs };
}
