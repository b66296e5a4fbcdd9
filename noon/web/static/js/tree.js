// The memory tree: domains, then children loaded a page at a time when a memory is expanded
// (a 100k-memory graph is never sent whole). Keyboard: Up/Down move, Right opens or enters,
// Left closes or goes to the parent, Enter shows the memory.

import { get } from "./api.js";
import { clear, h } from "./dom.js";

const PAGE = 100;
const FILTER_FROM = 50; // a parent with more children than this gets a filter box

export class Tree {
  constructor(onSelect) {
    this.onSelect = onSelect;
    this.groups = new Map(); // node id (or "@domain") -> {ul, uri, loaded}
    this.el = h("ul", { class: "tree", role: "tree", "aria-label": "Memories" });
    this.el.addEventListener("keydown", (e) => this.key(e));
  }

  async load() {
    const domains = await get("/api/domains");
    clear(this.el);
    this.groups.clear();
    for (const d of domains) {
      const item = this.item(
        {
          name: `${d.domain}://`,
          uri: `${d.domain}://`,
          node: `@${d.domain}`,
          children: d.children,
          priority: null,
          disclosure: "",
        },
        1,
      );
      this.el.append(item);
      if (domains.length === 1 || d.domain === "core") await this.expand(item);
    }
    const first = this.el.querySelector('[role="treeitem"]');
    if (first) first.tabIndex = 0;
  }

  item(entry, level) {
    const label = h(
      "span",
      { class: "label" },
      h("span", { class: "name" }, entry.name),
      entry.priority !== null
        ? h(
            "span",
            { class: "prio", title: "priority (lower is recalled first)" },
            `★${entry.priority}`,
          )
        : null,
      entry.boot ? h("span", { class: "flag", title: "in the boot list" }, "boot") : null,
      entry.conflicted
        ? h("span", { class: "flag warn", title: "concurrent versions" }, "conflict")
        : null,
      entry.deleted
        ? h("span", { class: "flag warn", title: "deleted on another machine" }, "deleted")
        : null,
      entry.disclosure ? h("span", { class: "disclosure" }, entry.disclosure) : null,
    );
    const li = h("li", {
      role: "treeitem",
      tabindex: -1,
      "aria-level": level,
      "data-uri": entry.uri,
      "data-node": entry.node,
      "aria-expanded": entry.children ? "false" : null,
    });
    const toggle = entry.children
      ? h(
          "button",
          {
            class: "twisty",
            type: "button",
            tabindex: -1,
            "aria-label": `Expand ${entry.name}`,
            onclick: (e) => {
              e.stopPropagation();
              this.toggle(li);
            },
          },
          "▸",
        )
      : h("span", { class: "twisty" });
    const row = h(
      "div",
      { class: "row", onclick: () => this.select(li) },
      toggle,
      label,
      entry.children ? h("span", { class: "count", title: "children" }, entry.children) : null,
    );
    li.append(row);
    li.entry = entry;
    return li;
  }

  async toggle(li) {
    if (li.getAttribute("aria-expanded") === "true") this.collapse(li);
    else await this.expand(li);
  }

  collapse(li) {
    li.setAttribute("aria-expanded", "false");
    const group = li.querySelector(":scope > ul");
    if (group) group.remove();
    this.groups.delete(li.dataset.node);
    li.querySelector(".twisty").textContent = "▸";
  }

  async expand(li, upTo = PAGE) {
    if (!li.hasAttribute("aria-expanded")) return;
    const ul = h("ul", { role: "group" });
    li.querySelector(":scope > ul")?.remove();
    li.append(ul);
    li.setAttribute("aria-expanded", "true");
    li.querySelector(".twisty").textContent = "▾";
    const previous = this.groups.get(li.dataset.node);
    const group = { ul, li, uri: li.dataset.uri, loaded: 0, filter: previous?.filter || "" };
    this.groups.set(li.dataset.node, group);
    await this.more(group, upTo);
  }

  // A box that narrows a crowded parent's children to those whose name or disclosure holds
  // what is typed (asked of the server: the children are never all sent).
  filterBox(group, all) {
    const input = h("input", {
      type: "search",
      class: "tree-filter",
      value: group.filter,
      placeholder: `Filter ${all} children by name`,
      "aria-label": `Filter the children of ${group.li.entry.name}`,
    });
    let timer = null;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        group.filter = input.value.trim();
        group.ul
          .querySelectorAll(":scope > [role=treeitem], :scope > .more, :scope > .none")
          .forEach((x) => x.remove());
        group.loaded = 0;
        await this.more(group);
      }, 200);
    });
    input.addEventListener("keydown", (e) => e.stopPropagation()); // typing is not tree navigation
    return h("li", { class: "filter", role: "none" }, input);
  }

  async more(group, count = PAGE) {
    const level = Number(group.li.getAttribute("aria-level")) + 1;
    const page = await get("/api/children", {
      uri: group.uri,
      offset: group.loaded,
      limit: Math.min(count, 200),
      filter: group.filter,
    });
    if (page.all > FILTER_FROM && !group.ul.querySelector(":scope > .filter"))
      group.ul.append(this.filterBox(group, page.all));
    group.ul.querySelector(":scope > .more")?.remove();
    for (const entry of page.items) group.ul.append(this.item(entry, level));
    group.loaded += page.items.length;
    if (!page.total && group.filter)
      group.ul.append(
        h("li", { class: "none muted", role: "none" }, `No child holds “${group.filter}”.`),
      );
    const left = page.total - group.loaded;
    if (left > 0) {
      group.ul.append(
        h(
          "li",
          { class: "more", role: "none" },
          h(
            "button",
            { type: "button", onclick: () => this.more(group) },
            `Show ${Math.min(left, PAGE)} more of ${left}`,
          ),
        ),
      );
    }
  }

  // Reload the children of these nodes (ids, or @domain roots) where they are open.
  async refresh(parents) {
    for (const node of parents) {
      const group = this.groups.get(node);
      if (group && group.li.isConnected) await this.expand(group.li, Math.max(group.loaded, PAGE));
    }
  }

  // Show `uri` as the selected row when it is loaded.
  mark(uri) {
    this.el
      .querySelectorAll('[aria-selected="true"]')
      .forEach((x) => x.removeAttribute("aria-selected"));
    const li = [...this.el.querySelectorAll('[role="treeitem"]')].find(
      (x) => x.dataset.uri === uri,
    );
    if (li) li.setAttribute("aria-selected", "true");
  }

  select(li) {
    this.el
      .querySelectorAll('[aria-selected="true"]')
      .forEach((x) => x.removeAttribute("aria-selected"));
    li.setAttribute("aria-selected", "true");
    this.focus(li);
    if (li.entry.priority !== null) this.onSelect(li.entry.uri);
    else this.toggle(li); // a domain row has no memory to show: it opens (or closes) instead
  }

  focus(li) {
    this.el.querySelectorAll('[role="treeitem"][tabindex="0"]').forEach((x) => {
      x.tabIndex = -1;
    });
    li.tabIndex = 0;
    li.focus();
  }

  key(e) {
    const li = e.target.closest('[role="treeitem"]');
    if (!li) return;
    const items = [...this.el.querySelectorAll('[role="treeitem"]')];
    const i = items.indexOf(li);
    const expanded = li.getAttribute("aria-expanded");
    if (e.key === "ArrowDown" && i + 1 < items.length) this.focus(items[i + 1]);
    else if (e.key === "ArrowUp" && i > 0) this.focus(items[i - 1]);
    else if (e.key === "ArrowRight" && expanded === "false") this.expand(li);
    else if (e.key === "ArrowRight" && expanded === "true" && items[i + 1])
      this.focus(items[i + 1]);
    else if (e.key === "ArrowLeft" && expanded === "true") this.collapse(li);
    else if (e.key === "ArrowLeft") {
      const up = li.parentElement.closest('[role="treeitem"]');
      if (up) this.focus(up);
    } else if (e.key === "Enter" || e.key === " ") this.select(li);
    else return;
    e.preventDefault();
  }
}
