// One WASI agentstate process per directory, and cleanup after one that died.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const OWNER = ".agentstate-wasi.owner";

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

/**
 * Removes what ncruces' dot-lock build leaves next to a database when its
 * process dies: "<db>.lock" files and "<db>-shm" directories. Only called
 * while we own the directory, so no live process holds them.
 */
export function clearStaleLocks(dir) {
  const removed = [];
  for (const name of fs.readdirSync(dir)) {
    const full = path.join(dir, name);
    let base;
    if (name.endsWith(".lock")) base = full.slice(0, -".lock".length);
    else if (name.endsWith("-shm")) base = full.slice(0, -"-shm".length);
    else continue;
    if (!fs.existsSync(base)) continue;
    const st = fs.lstatSync(full);
    if (name.endsWith(".lock") && st.isFile()) fs.unlinkSync(full);
    else if (name.endsWith("-shm") && st.isDirectory()) fs.rmdirSync(full);
    else continue;
    removed.push(name);
  }
  return removed;
}

/** Takes DIR for this process; returns the release function. */
export function acquireDir(dir) {
  const file = path.join(dir, OWNER);
  const me = JSON.stringify({ pid: process.pid, host: os.hostname() });
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      fs.writeFileSync(file, me, { flag: "wx" });
      const release = () => {
        try {
          fs.unlinkSync(file);
        } catch {}
      };
      process.on("exit", release);
      return release;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    let text;
    let owner;
    try {
      text = fs.readFileSync(file, "utf8");
      owner = JSON.parse(text);
    } catch {
      continue;
    }
    if (owner.host !== os.hostname()) throw new Error(`${dir} is in use on host ${owner.host} (pid ${owner.pid}); if that process is gone, remove ${file}`);
    if (alive(owner.pid)) throw new Error(`${dir} is in use by process ${owner.pid}`);
    // The owner died: move its file aside (verifying we moved that one),
    // then clear the locks it left.
    const aside = `${file}.${process.pid}`;
    try {
      fs.renameSync(file, aside);
    } catch (e) {
      if (e.code === "ENOENT") continue;
      throw e;
    }
    if (fs.readFileSync(aside, "utf8") !== text) {
      try {
        fs.linkSync(aside, file);
      } catch {}
      fs.unlinkSync(aside);
      continue;
    }
    fs.unlinkSync(aside);
    const removed = clearStaleLocks(dir);
    if (removed.length > 0) console.error(`agentstate (wasi): removed locks left by dead process ${owner.pid}: ${removed.join(", ")}`);
  }
  throw new Error(`could not take ${file}`);
}

/**
 * A regular "<db>-shm" file is a native process's WAL-index: that process
 * may still have the database open (a native read-only open also leaves it
 * behind). The WASI build keeps its WAL-index in memory and cannot share
 * one with it, so refuse clearly instead of failing with "locking protocol".
 */
export function refuseNativeWAL(dir, args) {
  for (const a of args) {
    if (a.startsWith("-")) continue;
    const db = path.resolve(dir, a.replace(/^\/data\/?/, ""));
    let st;
    try {
      st = fs.lstatSync(`${db}-shm`);
    } catch {
      continue;
    }
    if (st.isFile()) {
      throw new Error(
        `${a}-shm is a native process's WAL index: close the native process that has ${a} open (or, if none has, remove ${a}-shm and ${a}-wal after checking ${a}-wal is empty)`,
      );
    }
  }
}
