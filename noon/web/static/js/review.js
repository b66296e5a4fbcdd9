// Review: what agents changed, newest first, one item per tool call (or per memory); approve
// it, or look at its diff and roll it back. Verdicts replicate: approving here clears the
// queue on every machine.

import { get, post } from "./api.js";
import { busy, clear, go, h, notice, quietly } from "./dom.js";
import { details, header, summary } from "./changes.js";

let state = null;

function onChange() {
  if (state && !state.root.querySelector(".details:not(:empty)")) quietly(load());
}

async function act(button, call, message) {
  try {
    await busy(button, call());
    notice(message);
    await load();
  } catch (err) {
    notice(err.message, "error");
  }
}

function card(item) {
  const slot = h("div", { class: "details" });
  const buttons = [];
  const btn = (text, fn, cls) => {
    const b = h("button", { type: "button", class: cls }, text);
    b.addEventListener("click", () => fn(b));
    buttons.push(b);
  };
  btn("Details", async () => {
    if (slot.childElementCount) clear(slot);
    else await details(slot, item.ids, () => load());
  });
  if (item.status === "pending") {
    btn(
      "Approve",
      (b) => act(b, () => post("/api/changes/approve", { ids: item.ids }), "Approved."),
      "primary",
    );
    btn("Roll back…", () => details(slot, item.ids, () => load()), "danger");
  } else if (item.status === "approved" && item.ids.length === 1 && item.reviewed_by) {
    btn("Return to queue", (b) =>
      act(b, () => post("/api/changes/unreview", { id: item.id }), "Back in the queue."),
    );
  } else if (item.status === "rolled_back" && item.reviewed_by) {
    btn("Undo the rollback…", () => details(slot, [item.reviewed_by.batch], () => load()));
  }
  return h(
    "article",
    { class: "change card", "data-id": item.id, "aria-label": `Change ${item.id}` },
    header(item),
    summary(item),
    h("div", { class: "actions" }, buttons),
    slot,
  );
}

// Load the first page of the list again, or (`append`) the next older page.
async function load(append = false) {
  const mine = state;
  const { list, params } = mine;
  const page = await get("/api/changes", {
    view: params.view,
    group: params.group,
    limit: 30,
    before: append ? mine.next : null,
  });
  if (state !== mine) return; // the person went elsewhere meanwhile
  if (!append) clear(list);
  page.items.forEach((item) => list.append(card(item)));
  if (!list.childElementCount)
    list.append(
      h(
        "p",
        { class: "muted" },
        params.view === "pending"
          ? "Nothing to review: every change by an agent has been approved or rolled back."
          : "No changes.",
      ),
    );
  state.next = page.next;
  state.more.hidden = !page.next;
  state.frontier = page.frontier;
  clear(state.count, `${page.pending} to review`);
  state.approveAll.hidden = params.view !== "pending" || !page.pending;
}

export async function show(main, query) {
  const params = { view: query.get("view") || "pending", group: query.get("group") || "change" };
  const list = h("div", { class: "changes", role: "feed", "aria-label": "Changes" });
  const choose = (name, options) => {
    const select = h(
      "select",
      { onchange: (e) => go("review", { ...params, [name]: e.target.value }) },
      options.map(([v, label]) => h("option", { value: v, selected: params[name] === v }, label)),
    );
    return h("label", {}, name === "view" ? "Show " : "Group ", select);
  };
  const more = h("button", { type: "button", hidden: true }, "Older changes");
  const approveAll = h("button", { type: "button", hidden: true }, "Approve all");
  const count = h("span", { class: "muted" });
  const root = h(
    "div",
    { class: "review" },
    h("h1", {}, "Review"),
    h(
      "p",
      { class: "muted" },
      "Changes your agents made on any machine. Approving or rolling back here is seen by every machine.",
    ),
    h(
      "div",
      { class: "controls" },
      choose("view", [
        ["pending", "to review"],
        ["reviewed", "reviewed"],
        ["all", "everything (also mine)"],
      ]),
      choose("group", [
        ["change", "by tool call"],
        ["memory", "by memory"],
      ]),
      count,
      approveAll,
    ),
    list,
    more,
  );
  state = { root, list, more, params, count, approveAll, next: null, frontier: {} };
  more.addEventListener("click", () => load(true));
  approveAll.addEventListener("click", () =>
    act(
      approveAll,
      () => post("/api/changes/approve", { through: state.frontier }),
      "Approved every change listed so far.",
    ),
  );
  clear(main, root);
  window.addEventListener("noon-change", onChange);
  await load();
}

export function leave() {
  window.removeEventListener("noon-change", onChange);
  state = null;
}
