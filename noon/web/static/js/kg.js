// The knowledge graph of the nine-tool drop-in: entities (searchable the way search_nodes
// searches), each with its observations, relations and changes.

import { get } from "./api.js";
import { clear, go, h } from "./dom.js";
import { header, summary } from "./changes.js";

let root = null;

async function entity(name) {
  const e = await get("/api/kg/entity", { name });
  return h(
    "article",
    { class: "card entity" },
    h("h2", {}, `kg://${e.name}`, h("span", { class: "chip" }, e.type)),
    h("h3", {}, "Observations"),
    e.observations.length
      ? h(
          "ul",
          {},
          e.observations.map((o) => h("li", {}, o)),
        )
      : h("p", { class: "muted" }, "(none)"),
    h("h3", {}, "Relations"),
    e.relations.length
      ? h(
          "ul",
          {},
          e.relations.map((r) =>
            h(
              "li",
              {},
              h("a", { href: `#/kg?name=${encodeURIComponent(r.from)}` }, r.from),
              ` —${r.relationType}→ `,
              h("a", { href: `#/kg?name=${encodeURIComponent(r.to)}` }, r.to),
            ),
          ),
        )
      : h("p", { class: "muted" }, "(none)"),
    h("h3", {}, "Changes"),
    h(
      "ul",
      { class: "plain" },
      e.changes.map((c) => h("li", {}, header(c), summary(c))),
    ),
  );
}

export async function show(main, params) {
  const q = params.get("q") || "";
  const name = params.get("name");
  const input = h("input", { type: "search", value: q, placeholder: "name, type or observation" });
  const form = h(
    "form",
    { role: "search", class: "inline" },
    h("label", {}, "Search entities ", input),
    h("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    go("kg", { q: input.value });
  });
  const page = await get("/api/kg/entities", { q, limit: 200 });
  const table = h(
    "table",
    { class: "entities" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Name", "Type", "Observations", "First observation"].map((t) =>
          h("th", { scope: "col" }, t),
        ),
      ),
    ),
    h(
      "tbody",
      {},
      page.items.map((e) =>
        h(
          "tr",
          {},
          h("td", {}, h("a", { href: `#/kg?${new URLSearchParams({ q, name: e.name })}` }, e.name)),
          h("td", {}, e.type),
          h("td", {}, String(e.observations)),
          h("td", {}, e.first),
        ),
      ),
    ),
  );
  root = h(
    "div",
    { class: "kg" },
    h("h1", {}, "Knowledge graph"),
    form,
    h(
      "p",
      { class: "muted" },
      `${page.total} entit${page.total === 1 ? "y" : "ies"}${q ? ` matching "${q}"` : ""}${page.total > page.items.length ? `, first ${page.items.length} shown` : ""}.`,
    ),
    name ? await entity(name) : null,
    table,
  );
  clear(main, root);
}

export function leave() {
  root = null;
}
