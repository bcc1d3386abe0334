// src/index.d.ts is hand-written; these tests tie it to the sources so it
// cannot drift: tsc compiles a program that uses every declaration under
// --strict, and the TypeScript compiler's parse of the file is compared
// with what the modules export at run time, member by member, and with the
// options Database.open reads.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as pkg from "../src/index.js";
import { Events, Runs, Threads } from "../src/records.js";
import { BaseCheckpointSaver, BaseStore } from "@langchain/langgraph-checkpoint";

const here = path.dirname(fileURLToPath(import.meta.url));
const dts = path.join(here, "../src/index.d.ts");

/** The declarations of index.d.ts: exported values (classes, functions,
 * consts) and every class's and interface's member names. */
function declarations() {
  const sf = ts.createSourceFile(dts, fs.readFileSync(dts, "utf8"), ts.ScriptTarget.Latest, true);
  const values = new Set();
  const members = new Map(); // name -> { instance: Set, statics: Set }
  const nameOf = (m) => m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name)) && m.name.text;
  for (const st of sf.statements) {
    const exported = st.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) continue;
    if (ts.isVariableStatement(st)) for (const d of st.declarationList.declarations) values.add(d.name.text);
    if (ts.isFunctionDeclaration(st)) values.add(st.name.text);
    if (ts.isClassDeclaration(st) || ts.isInterfaceDeclaration(st)) {
      if (ts.isClassDeclaration(st)) values.add(st.name.text);
      const instance = new Set();
      const statics = new Set();
      for (const m of st.members) {
        const n = nameOf(m);
        if (!n || ts.isConstructorDeclaration(m)) continue;
        (m.modifiers?.some((x) => x.kind === ts.SyntaxKind.StaticKeyword) ? statics : instance).add(n);
      }
      members.set(st.name.text, { instance, statics });
    }
  }
  return { values, members };
}

/** Public own members of a class at run time (no constructor, no _internal). */
function runtimeMembers(cls) {
  const pub = (n) => n !== "constructor" && !n.startsWith("_");
  return {
    instance: new Set(Object.getOwnPropertyNames(cls.prototype).filter(pub)),
    statics: new Set(Object.getOwnPropertyNames(cls).filter((n) => pub(n) && !["length", "name", "prototype"].includes(n))),
  };
}

function hasMember(cls, name) {
  for (let p = cls.prototype; p; p = Object.getPrototypeOf(p)) if (Object.hasOwn(p, name)) return true;
  return false;
}

describe("index.d.ts", () => {
  const { values, members } = declarations();

  it("declares every value the package exports, and nothing it does not", () => {
    expect([...values].sort()).toEqual(Object.keys(pkg).sort());
  });

  it("declares each exported class's public members, and no member the class lacks", () => {
    const bases = { AgentStateSaver: BaseCheckpointSaver, AgentStateStore: BaseStore };
    for (const [name, value] of Object.entries(pkg)) {
      if (typeof value !== "function" || !/^[A-Z]/.test(name)) continue;
      const declared = members.get(name);
      expect(declared, `${name} is declared as a class`).toBeDefined();
      const actual = runtimeMembers(value);
      for (const m of actual.instance) {
        // An override of the LangGraph base class is declared by the base's types.
        if (bases[name] && hasMember(bases[name], m)) continue;
        expect(declared.instance.has(m), `${name}.prototype.${m} is not in index.d.ts`).toBe(true);
      }
      for (const m of declared.instance) {
        if (["db", "code", "host"].includes(m)) continue; // instance fields, set in the constructor or by open
        expect(hasMember(value, m), `index.d.ts declares ${name}.${m}, which the class does not have`).toBe(true);
      }
      expect([...declared.statics].sort(), `${name}'s static members`).toEqual([...actual.statics].sort());
    }
  });

  it("declares the record handles' methods as records.js defines them", () => {
    for (const [name, cls] of Object.entries({ Runs, Events, Threads })) {
      expect([...members.get(name).instance].sort(), name).toEqual([...runtimeMembers(cls).instance].sort());
    }
  });

  it("declares every option Database.open and loadEngine read", () => {
    const src = fs.readFileSync(path.join(here, "../src/engine.js"), "utf8");
    const read = new Set([...src.matchAll(/\boptions\.(\w+)/g)].map((m) => m[1]));
    // and those read by destructuring (`const { trace = false } = options`)
    for (const m of src.matchAll(/const \{([^}]+)\} = options\b/g)) for (const f of m[1].split(",")) read.add(f.trim().split(/[\s=:]/)[0]);
    read.delete("testHooks"); // the tests' own hooks, not an option for users
    expect(read.size).toBeGreaterThan(10);
    const declared = members.get("OpenOptions").instance;
    for (const o of read) expect(declared.has(o), `engine.js reads options.${o}, which OpenOptions does not declare`).toBe(true);
    for (const o of declared) expect(read.has(o), `OpenOptions declares ${o}, which engine.js never reads`).toBe(true);
  });

  it("compiles, with a program using every declaration, under tsc --strict", () => {
    const tsc = path.join(here, "../node_modules/typescript/bin/tsc");
    let out = "";
    try {
      out = execFileSync(process.execPath, [tsc, "-p", path.join(here, "types/tsconfig.json")], { encoding: "utf8" });
    } catch (e) {
      out = `${e.stdout}${e.stderr}`;
    }
    expect(out.trim()).toBe("");
  });
});
