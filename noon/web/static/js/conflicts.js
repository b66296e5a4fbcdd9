// Conflicts: a memory edited on two machines at once shows its versions side by side; keep
// one, or write the merged text (either replaces every version).

import { get, post } from "./api.js";
import { busy, clear, diffView, field, h, link, notice, quietly, when } from "./dom.js";

let root = null;

async function resolve(button, c, body) {
  try {
    await busy(
      button,
      post("/api/conflicts/resolve", { node: c.node, expected_heads: c.heads, ...body }),
    );
    notice(`Settled ${c.uri}.`);
    await load();
  } catch (err) {
    notice(err.message, "error");
    if (err.status === 409) await load();
  }
}

function content(c) {
  const columns = c.versions.map((v) => {
    const keep = h(
      "button",
      { type: "button", class: "primary" },
      v.text === null ? "Keep the deletion" : "Keep this version",
    );
    keep.addEventListener("click", () => resolve(keep, c, { keep: v.version }));
    return h(
      "section",
      { class: "version", "aria-label": `Version ${v.version}` },
      h("h3", {}, h("code", {}, v.version), v.winner ? " (shown now)" : ""),
      h("p", { class: "muted" }, `${when(v.time)} · ${v.client} on ${v.machine}`),
      v.text === null
        ? h("p", { class: "notice warn" }, `Deleted by ${v.client} on ${v.machine}.`)
        : h("pre", { class: "body" }, v.text),
      v.diff
        ? h("details", {}, h("summary", {}, "Difference from the shown version"), diffView(v.diff))
        : null,
      keep,
    );
  });
  const merged = h("textarea", { rows: 8 });
  merged.value = (c.versions.find((v) => v.winner) || c.versions[0]).text || "";
  const save = h("button", { type: "button" }, "Save merged text");
  save.addEventListener("click", () => resolve(save, c, { text: merged.value }));
  return h(
    "article",
    { class: "card conflict", "data-node": c.node },
    h("h2", {}, link(c.uri), c.deleted_while_placed ? " (deleted, but still placed)" : ""),
    h("div", { class: "side-by-side" }, columns),
    h(
      "details",
      { class: "merge" },
      h("summary", {}, "Merge by hand"),
      field("Merged text", merged),
      save,
    ),
  );
}

function placement(c) {
  return h(
    "article",
    { class: "card conflict" },
    h(
      "h2",
      {},
      `${c.parent_uri.replace(/\/$/, "")}/${c.name}`,
      " (two memories created at one URI)",
    ),
    h(
      "ul",
      {},
      c.versions.map((v) =>
        h(
          "li",
          {},
          v.child ? link(v.child) : "removed",
          ` · ${when(v.time)} · ${v.client} on ${v.machine}`,
          v.winner ? " (has the name)" : "",
        ),
      ),
    ),
    h("p", { class: "muted" }, "Move or delete one of them: the other keeps the name."),
  );
}

async function load() {
  const found = await get("/api/conflicts");
  clear(
    root,
    h("h1", {}, "Conflicts"),
    found.length
      ? found.map((c) => (c.kind === "content" ? content(c) : placement(c)))
      : h("p", { class: "muted" }, "No conflicts: no memory has concurrent versions."),
  );
}

function onChange() {
  if (root && !root.querySelector("textarea:focus")) quietly(load());
}

export async function show(main) {
  root = h("div", { class: "conflicts" });
  clear(main, root);
  window.addEventListener("noon-change", onChange);
  await load();
}

export function leave() {
  window.removeEventListener("noon-change", onChange);
  root = null;
}
