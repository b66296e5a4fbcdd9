// Orphans: memories no domain root reaches (after concurrent moves or deletes); place each
// again, or delete it for good.

import { get, post } from "./api.js";
import { busy, clear, field, h, notice, quietly, when } from "./dom.js";

let root = null;

function card(o) {
  const uri = h("input", { type: "text", required: true, placeholder: "core://where/name" });
  const prio = h("input", { type: "number", min: 0, max: 1000, value: 1, required: true });
  const disc = h("input", { type: "text", required: true });
  const place = h("button", { type: "submit", class: "primary" }, "Place it");
  const form = h(
    "form",
    { class: "inline" },
    field("New URI", uri),
    field("Priority", prio),
    field("Disclosure", disc),
    place,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await busy(
        place,
        post("/api/orphans/place", {
          node: o.node,
          new_uri: uri.value,
          priority: Number(prio.value),
          disclosure: disc.value,
        }),
      );
      notice(`Placed at ${uri.value}.`);
      await load();
    } catch (err) {
      notice(err.message, "error");
    }
  });
  const del = h("button", { type: "button", class: "danger" }, "Delete for good");
  del.addEventListener("click", async () => {
    try {
      await busy(del, post("/api/orphans/delete", { node: o.node, recursive: true }));
      notice("Deleted.");
      await load();
    } catch (err) {
      notice(err.message, "error");
    }
  });
  return h(
    "article",
    { class: "card orphan", "data-node": o.node },
    h("h2", {}, h("code", {}, o.uri)),
    h("p", {}, o.snippet),
    o.unreachable_under.length
      ? h(
          "p",
          { class: "muted" },
          `Still placed under: ${o.unreachable_under.join(", ")} (unreachable)`,
        )
      : null,
    o.modified
      ? h(
          "p",
          { class: "muted" },
          `Last change ${when(o.modified.time)} by ${o.modified.client} on ${o.modified.machine}`,
        )
      : null,
    form,
    del,
  );
}

async function load() {
  const page = await get("/api/orphans", { limit: 100 });
  clear(
    root,
    h("h1", {}, "Orphans"),
    h(
      "p",
      { class: "muted" },
      "Nothing is lost when concurrent moves or deletes leave a memory unreachable: it waits here.",
    ),
    page.items.length
      ? page.items.map(card)
      : h("p", { class: "muted" }, "No orphans: every memory is reachable."),
    page.total > page.items.length
      ? h("p", { class: "muted" }, `${page.total - page.items.length} more not shown.`)
      : null,
  );
}

function onChange() {
  if (root && !root.contains(document.activeElement)) quietly(load());
}

export async function show(main) {
  root = h("div", { class: "orphans" });
  clear(main, root);
  window.addEventListener("noon-change", onChange);
  await load();
}

export function leave() {
  window.removeEventListener("noon-change", onChange);
  root = null;
}
