// The demo page: talks to the worker, draws the thread, its checkpoints and
// the storage figures.
import { openFailure, opfsLabel } from "./ui.js";

const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const $ = (s) => document.querySelector(s);
let seq = 0;
const pending = new Map();

worker.onmessage = ({ data }) => {
  const done = pending.get(data.id);
  pending.delete(data.id);
  if (data.type === "error") {
    setStatus(`error: ${data.message}`, true);
    done?.reject(new Error(data.message));
  } else {
    render(data.state);
    done?.resolve(data.state);
  }
};

function ask(msg) {
  const id = ++seq;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ ...msg, id });
  });
}

function setStatus(text, bad = false) {
  const s = $("#status");
  s.textContent = text;
  s.className = bad ? "status bad" : "status";
}

const kb = (n) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(2)} MB` : `${(n / 1024).toFixed(1)} KB`);

function render(state) {
  const thread = $("#thread");
  thread.replaceChildren(
    ...(state.messages.length === 0
      ? [Object.assign(document.createElement("p"), { className: "empty", textContent: "No messages yet. Say something, then reload the page." })]
      : state.messages.map((m) => {
          const div = document.createElement("div");
          div.className = `msg ${m.role}`;
          div.innerHTML = `<span class="who">${m.role === "human" ? "You" : "Assistant"}</span>`;
          const p = document.createElement("p");
          p.textContent = m.content;
          div.append(p);
          return div;
        })),
  );
  thread.scrollTop = thread.scrollHeight;

  const rows = state.history.map(
    (h) =>
      `<tr><td class="mono">${h.id.slice(0, 8)}…${h.id.slice(-4)}</td><td>${h.step}</td><td>${h.source}</td><td><span class="tag ${h.stored}">${h.stored}</span></td><td>${h.writes}</td></tr>`,
  );
  $("#history").innerHTML = rows.join("") || `<tr><td colspan="5" class="empty">none</td></tr>`;
  $("#history-count").textContent = state.history.length;

  const s = state.storage;
  $("#storage").innerHTML = [
    ["Database file (SQLite pages)", kb(s.fileBytes)],
    [opfsLabel, kb(s.opfsBytes)],
    ["Pages", `${s.pages} × ${s.pageSize} B`],
    ["Checkpoints / writes / stored values", `${s.checkpoints} / ${s.writes} / ${s.values}`],
    ["History cache hits / misses", `${s.cacheHits} / ${s.cacheMisses}`],
    ["Engine start (load + open)", `${s.openMs.toFixed(0)} ms`],
    ["Last turn (graph + commit)", s.lastMs == null ? "–" : `${s.lastMs.toFixed(1)} ms`],
  ]
    .map(([k, v]) => `<div class="fig"><span>${k}</span><b>${v}</b></div>`)
    .join("");
}

$("#composer").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $("#input");
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  input.disabled = true;
  // A message typed while the engine loads waits for it, saying so,
  // rather than reaching a worker with no graph yet (and being lost).
  if (!engineReady) setStatus("loading the engine… your message is sent when it is ready");
  if (!(await ready)) {
    input.value = text; // the chat could not be opened: keep what was typed
    return;
  }
  setStatus("thinking…");
  try {
    await ask({ type: "send", text });
    setStatus("ready");
  } finally {
    if (!locked) {
      input.disabled = false;
      input.focus();
    }
  }
});

// The engine could not open the chat (a second tab: BUSY): nothing typed
// could be stored, so the composer is disabled and the thread panel says why.
let locked = false;
function lock(message) {
  const s = openFailure(message);
  locked = s.composerDisabled;
  for (const el of [$("#input"), $("#composer button"), $("#reset")]) el.disabled = locked;
  $("#input").placeholder = s.status;
  $("#thread").replaceChildren(Object.assign(document.createElement("p"), { className: "empty", textContent: s.banner }));
  setStatus(s.status, true);
}

$("#reset").addEventListener("click", async () => {
  await ask({ type: "reset" });
  setStatus("ready");
});

setStatus("loading the engine…");
let engineReady = false;
// Resolves true once the chat is open, false if it could not be.
const ready = ask({ type: "init" }).then(
  () => {
    engineReady = true;
    if (!$("#input").disabled) setStatus("ready");
    return true;
  },
  (e) => {
    lock(e.message);
    return false;
  },
);
