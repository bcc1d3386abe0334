// The package's modules import each other without a circle: every relative
// import of src/ (static, re-exports and dynamic import()) is an edge, and
// the graph must be acyclic. A circle makes the evaluation order of the
// modules depend on which one a program imports first (a class read before
// its module ran is undefined), and bundlers warn about it.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = path.join(path.dirname(fileURLToPath(import.meta.url)), "../src");

/** The relative imports of each module under dir, as absolute paths. */
function importGraph(dir) {
  const graph = new Map();
  const spec = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm;
  for (const f of fs.readdirSync(dir, { recursive: true }).filter((f) => f.endsWith(".js"))) {
    const file = path.join(dir, f);
    const text = fs.readFileSync(file, "utf8");
    graph.set(file, [...text.matchAll(spec)].map((m) => path.resolve(path.dirname(file), m[1])));
  }
  return graph;
}

/** One circle of graph (a list of modules, the first repeated at the end), or null. */
function findCircle(graph) {
  const state = new Map(); // 1: on the current path, 2: done
  const stack = [];
  const visit = (n) => {
    state.set(n, 1);
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 1) return [...stack.slice(stack.indexOf(m)), m];
      if (!state.has(m)) {
        const c = visit(m);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(n, 2);
    return null;
  };
  for (const n of graph.keys()) {
    if (!state.has(n)) {
      const c = visit(n);
      if (c) return c;
    }
  }
  return null;
}

describe("the package's import graph", () => {
  it("finds a circle where there is one", () => {
    expect(findCircle(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]]]))).toEqual(["a", "b", "c", "a"]);
    expect(findCircle(new Map([["a", ["b", "c"]], ["b", ["c"]], ["c", []]]))).toBeNull();
  });

  it("has no circle in src/", () => {
    const graph = importGraph(src);
    const edges = [...graph.values()].reduce((n, e) => n + e.length, 0);
    expect(edges, "relative imports found in src/").toBeGreaterThanOrEqual(10);
    for (const targets of graph.values()) for (const t of targets) expect(fs.existsSync(t), t).toBe(true);
    const circle = findCircle(graph);
    expect(circle?.map((f) => path.relative(src, f)).join(" -> ") ?? null).toBeNull();
  });
});
