// Memories: the tree beside the memory it opens; both follow live changes.

import { get } from "./api.js";
import { clear, go, h, link, quietly } from "./dom.js";
import { MemoryView } from "./memory.js";
import { Tree } from "./tree.js";

let state = null;

function onChange(event) {
  if (!state) return;
  const d = event.detail;
  if (d.reset) {
    quietly(state.tree.load());
    quietly(state.view.reload());
    return;
  }
  quietly(state.tree.refresh(d.parents || []));
  if (state.view.memory && (d.nodes || []).includes(state.view.memory.node))
    state.view.changedElsewhere();
}

export async function show(main, params) {
  const uri = params.get("uri");
  if (!state || !main.contains(state.layout)) {
    const tree = new Tree((u) => go("browse", { uri: u }));
    const view = new MemoryView();
    const layout = h(
      "div",
      { class: "browse" },
      h("aside", { class: "pane tree-pane", "aria-label": "Memory tree" }, tree.el),
      h("section", { class: "pane", "aria-label": "Memory" }, view.el),
    );
    state = { tree, view, layout };
    clear(main, layout);
    window.addEventListener("noon-change", onChange);
    await tree.load();
  }
  if (uri) {
    await state.view.open(uri);
    state.tree.mark(uri);
    return;
  }
  const boot = await get("/api/boot");
  state.view.empty(
    h("p", { class: "muted" }, "Choose a memory in the tree, or search."),
    h("h2", {}, "Boot memories"),
    h(
      "p",
      { class: "muted" },
      "Every session of every agent starts by reading these (system://boot).",
    ),
    boot.length
      ? h(
          "ul",
          {},
          boot.map((b) => h("li", {}, link(b.uri), b.deleted ? " (deleted)" : "")),
        )
      : h("p", {}, "None yet: open a memory and choose Add to boot."),
  );
}

export function leave() {
  window.removeEventListener("noon-change", onChange);
  state = null;
}
