// Search results (search_memory's ranking: text, URIs, disclosures and keywords).

import { get } from "./api.js";
import { clear, h, link } from "./dom.js";

export async function show(main, params) {
  const q = params.get("q") || "";
  document.getElementById("search-q").value = q;
  const results = q ? await get("/api/search", { q, limit: 50 }) : [];
  clear(
    main,
    h(
      "div",
      { class: "search" },
      h("h1", {}, `Search: ${q}`),
      results.length
        ? h(
            "ol",
            { class: "results" },
            results.map((r) =>
              h(
                "li",
                {},
                link(r.uri),
                h("span", { class: "muted" }, ` ★${r.priority} · score ${r.score}`),
                r.disclosure ? h("p", { class: "muted" }, r.disclosure) : null,
                h("p", {}, r.snippet),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No memory matches."),
    ),
  );
}
