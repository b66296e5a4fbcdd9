// Memories: the tree beside the memory it opens; both follow live changes.

import { clear, go, h, quietly } from "./dom.js";
import { MemoryView } from "./memory.js";
import { Tree } from "./tree.js";

let state = null;

function onChange(event) {
  if (!state) return;
  const d = event.detail;
  if (d.reset) { quietly(state.tree.load()); quietly(state.view.reload()); return; }
  quietly(state.tree.refresh(d.parents || []));
  if (state.view.memory && (d.nodes || []).includes(state.view.memory.node)) state.view.changedElsewhere();
}

export async function show(main, params) {
  const uri = params.get("uri");
  if (!state || !main.contains(state.layout)) {
    const tree = new Tree((u) => go("browse", { uri: u }));
    const view = new MemoryView();
    const layout = h("div", { class: "browse" },
      h("aside", { class: "pane tree-pane", "aria-label": "Memory tree" }, tree.el),
      h("section", { class: "pane", "aria-label": "Memory" }, view.el));
    state = { tree, view, layout };
    clear(main, layout);
    window.addEventListener("noon-change", onChange);
    await tree.load();
  }
  if (uri) await state.view.open(uri);
  else clear(state.view.el, h("p", { class: "muted" }, "Choose a memory in the tree, or search."));
}

export function leave() {
  window.removeEventListener("noon-change", onChange);
  state = null;
}
