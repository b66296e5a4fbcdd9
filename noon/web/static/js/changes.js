// Rendering of changes, shared by Review and History: an item's header, and the details of
// what it did to each element with the rollback it would take.

import { get, post } from "./api.js";
import { busy, clear, diffView, h, link, notice, when } from "./dom.js";

const STATUS = {
  pending: "to review",
  approved: "approved",
  rolled_back: "rolled back",
  web: "made here",
};

export function subjectLink(subject) {
  if (!subject) return h("span", {}, "(no memory)");
  if (subject.kind === "memory") return link(subject.label);
  if (subject.kind === "entity")
    return h("a", { href: `#/kg?name=${encodeURIComponent(subject.name)}` }, subject.label);
  return h("span", {}, subject.label);
}

export function header(item) {
  const clients = item.clients ? item.clients.join(", ") : item.client;
  const machines = item.machines ? item.machines.join(", ") : item.machine;
  return h(
    "header",
    { class: "change-head" },
    h("span", { class: "subject" }, subjectLink(item.subject)),
    h("span", { class: "chip" }, STATUS[item.status] || item.status),
    h(
      "span",
      { class: "muted" },
      `${when(item.time)} · ${clients} on ${machines}`,
      item.changes > 1 ? ` · ${item.changes} changes` : ` · ${item.ops} op(s)`,
    ),
  );
}

export function summary(item) {
  return h(
    "ul",
    { class: "what" },
    item.what.map((w) => h("li", {}, w)),
    item.more ? h("li", { class: "muted" }, `and ${item.more} more`) : null,
  );
}

function value(v) {
  if (v === null || v === undefined) return h("em", {}, "absent");
  if (typeof v === "object") return h("code", {}, JSON.stringify(v));
  return String(v);
}

export function steps(list) {
  return h(
    "div",
    { class: "steps" },
    list.map((s) =>
      h(
        "section",
        { class: "step" },
        h("h4", {}, s.element),
        s.diff ? diffView(s.diff) : null,
        s.fields && s.fields.length
          ? h(
              "table",
              { class: "fields" },
              h(
                "thead",
                {},
                h(
                  "tr",
                  {},
                  h("th", { scope: "col" }, "field"),
                  h("th", { scope: "col" }, "before"),
                  h("th", { scope: "col" }, "after"),
                ),
              ),
              h(
                "tbody",
                {},
                s.fields.map(([f, a, b]) =>
                  h(
                    "tr",
                    {},
                    h("th", { scope: "row" }, f),
                    h("td", {}, value(a)),
                    h("td", {}, value(b)),
                  ),
                ),
              ),
            )
          : null,
        s.fields && !s.fields.length && !s.diff
          ? h(
              "p",
              { class: "muted" },
              `${s.before ? "present" : "absent"} → ${s.after ? "present" : "absent"}`,
            )
          : null,
        s.later.length
          ? h(
              "p",
              { class: "notice warn" },
              `Changed again since, by ${s.later.map((l) => `${l.client} on ${l.machine}`).join(", ")}.`,
            )
          : null,
        s.concurrent.length
          ? h(
              "p",
              { class: "notice" },
              `Also written concurrently, not by this change, by ${s.concurrent.map((l) => `${l.client} on ${l.machine}`).join(", ")}.`,
            )
          : null,
      ),
    ),
  );
}

// Which elements of how many a page of details shows, with buttons to the others.
function paging(d, open) {
  if (d.total_steps <= d.steps.length) return null;
  const first = d.offset + 1,
    last = d.offset + d.steps.length;
  const size = Math.max(d.steps.length, 1);
  const go = (offset, label) => {
    const b = h("button", { type: "button" }, label);
    b.addEventListener("click", () => open(offset));
    return b;
  };
  return h(
    "p",
    { class: "muted" },
    `Elements ${first}–${last} of ${d.total_steps.toLocaleString()}. `,
    d.offset > 0 ? go(Math.max(0, d.offset - size), "Previous") : null,
    last < d.total_steps ? go(last, "Next") : null,
  );
}

// The details of changes `ids` with their rollback; `done(result)` after a rollback. Large
// changes come a page of elements at a time (`offset`).
export async function details(slot, ids, done, offset = 0) {
  clear(slot, h("p", { class: "muted" }, "Loading…"));
  const d = await get("/api/change", { id: ids, offset });
  const u = d.undo;
  const button = h(
    "button",
    { type: "button", class: "danger", disabled: !u.possible || !u.writes },
    "Confirm rollback",
  );
  button.addEventListener("click", async () => {
    try {
      const r = await busy(button, post("/api/changes/rollback", { ids, basis: u.basis }));
      notice(`Rolled back: ${r.written} element(s) restored.`);
      done(r);
    } catch (err) {
      notice(err.message, "error");
      if (err.status === 409) await details(slot, ids, done, offset);
    }
  });
  const pages = () => paging(d, (at) => details(slot, ids, done, at));
  clear(
    slot,
    pages(),
    steps(d.steps),
    pages(),
    h(
      "section",
      { class: "undo" },
      h("h4", {}, "Rolling back"),
      u.problems.length ? h("p", { class: "notice error" }, u.problems.join(" ")) : null,
      h(
        "ul",
        {},
        d.steps.map((s) => h("li", {}, s.restore)),
      ),
      u.overwrites_later
        ? h(
            "p",
            { class: "notice warn" },
            "Some of these were edited again since: rolling back replaces those edits too.",
          )
        : null,
      !u.writes && u.possible
        ? h("p", { class: "muted" }, "Everything already reads as before.")
        : null,
      button,
    ),
  );
}
