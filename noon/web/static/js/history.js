// A memory's history: every change that touched it, newest first, with diffs and who made it;
// restore a text version (and what its later edits changed beside it), or undo one change.

import { get, post } from "./api.js";
import { busy, clear, h, link, notice, quietly } from "./dom.js";
import { details, header, steps, summary } from "./changes.js";

let state = null;

async function restore(button, version) {
  try {
    const r = await busy(
      button,
      post("/api/memory/restore", { uri: state.uri, version, expected_version: state.version }),
    );
    notice(`Restored version ${version} (new version ${r.version}).`);
    await load();
  } catch (err) {
    notice(err.message, "error");
    if (err.status === 409) await load();
  }
}

function entry(item) {
  const slot = h("div", { class: "details" });
  const actions = [];
  const v = item.version;
  if (v && !v.current && !v.deleted) {
    const b = h("button", { type: "button", class: "primary" }, "Restore this version");
    b.addEventListener("click", () => restore(b, v.version));
    actions.push(b);
  }
  const undo = h("button", { type: "button" }, "Undo this change…");
  undo.addEventListener("click", () => details(slot, item.ids, () => load()));
  actions.push(undo);
  return h(
    "li",
    { class: "card" },
    header(item),
    summary(item),
    v
      ? h(
          "p",
          {},
          "Text version ",
          h("code", {}, v.version),
          v.current ? " (current)" : "",
          v.deleted ? " (deleted the memory)" : "",
        )
      : null,
    steps(item.steps),
    h("div", { class: "actions" }, actions),
    slot,
  );
}

async function load() {
  const mine = state;
  const page = await get("/api/history", { uri: mine.uri, limit: 50 });
  if (state !== mine) return; // the person went elsewhere meanwhile
  state.version = page.version;
  state.uri = `system://node/${page.node}`; // follows the memory through moves
  clear(
    state.root,
    h("h1", {}, "History of ", link(page.uri)),
    h(
      "p",
      { class: "muted" },
      `${page.total} change(s), newest first; versions compaction removed are not listed.`,
    ),
    h("ol", { class: "timeline" }, page.items.map(entry)),
  );
}

function onChange(event) {
  if (state && (event.detail.reset || (event.detail.nodes || []).includes(state.node)))
    quietly(load());
}

export async function show(main, params) {
  state = { uri: params.get("uri"), root: h("div", { class: "history" }) };
  clear(main, state.root);
  const m = await get("/api/memory", { uri: state.uri });
  state.node = m.node;
  window.addEventListener("noon-change", onChange);
  await load();
}

export function leave() {
  window.removeEventListener("noon-change", onChange);
  state = null;
}
