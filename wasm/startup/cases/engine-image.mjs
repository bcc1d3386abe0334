// engine.mjs's start, but opening an image of an empty agentstate database
// (made by this build beforehand and passed as a file) instead of a fresh
// in-memory one: the same open + put + getTuple without the schema's
// statements (the migrations), to tell what they cost at start-up.
//   node engine-image.mjs PACKAGE_DIR IMAGE_FILE
//   node engine-image.mjs PACKAGE_DIR --make IMAGE_FILE   (writes the image)
import fs from "node:fs";
import path from "node:path";
import { engineFirstResult, measure } from "./measure.mjs";

const pkg = path.resolve(process.argv[2]);
const { Database } = await import(path.join(pkg, "src/engine.js"));
if (process.argv[3] === "--make") {
  const db = await Database.open({});
  fs.writeFileSync(process.argv[4], await db.image());
  await db.close();
} else {
  const image = fs.readFileSync(process.argv[3]);
  const m = measure();
  const db = await Database.open({ image });
  await engineFirstResult(db);
  m.first();
  await db.close();
  m.closed();
}
