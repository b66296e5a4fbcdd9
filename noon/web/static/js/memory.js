// One memory: its text with glossary links, metadata, and the edits a person makes (each
// sends the version it was loaded at: a memory changed meanwhile is refused, not overwritten).

import { ApiError, get, post } from "./api.js";
import { busy, clear, diffView, field, go, h, link, notice, quietly, when, who } from "./dom.js";

export class MemoryView {
  constructor() {
    this.el = h("article", { class: "memory", "aria-live": "polite" });
    this.memory = null;
    this.editing = false;
    this.shown = 0; // counts what the view was asked to show: a late answer never overdraws a newer one
  }

  async open(uri) {
    const asked = ++this.shown;
    const memory = await get("/api/memory", { uri });
    if (asked === this.shown) this.render(memory);
  }

  /** Show something other than a memory: live changes to the memory shown before no longer
   * redraw it here. */
  empty(...children) {
    this.shown++;
    this.memory = null;
    this.editing = false;
    clear(this.el, ...children);
  }

  async reload() {
    if (!this.memory) return;
    try {
      await this.open(this.memory.uri);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        clear(
          this.el,
          h("p", { class: "notice" }, `${this.memory.uri} is gone (moved or deleted).`),
        );
        this.memory = null;
      } else throw err;
    }
  }

  changedElsewhere() {
    if (!this.editing) {
      quietly(this.reload());
      return;
    }
    const slot = this.el.querySelector(".stale-slot");
    if (slot)
      clear(
        slot,
        h(
          "p",
          { class: "notice warn" },
          "This memory just changed elsewhere. Saving will be refused; ",
          h(
            "button",
            {
              type: "button",
              onclick: () => {
                this.editing = false;
                this.reload();
              },
            },
            "load the new version",
          ),
        ),
      );
  }

  render(m) {
    this.memory = m;
    this.editing = false;
    const flags = [
      m.placement ? h("span", { class: "chip" }, `priority ${m.placement.priority}`) : null,
      m.boot ? h("span", { class: "chip" }, "boot") : null,
      m.conflicted
        ? h("a", { class: "chip warn", href: "#/conflicts" }, "concurrent versions")
        : null,
      m.deleted ? h("span", { class: "chip warn" }, "deleted on another machine") : null,
      m.orphan ? h("a", { class: "chip warn", href: "#/orphans" }, "orphan") : null,
    ];
    const crumbs = h(
      "nav",
      { class: "crumbs", "aria-label": "Breadcrumbs" },
      m.breadcrumbs.map((c, i) => [
        i ? " / " : "",
        i === m.breadcrumbs.length - 1 ? h("span", {}, c.name) : link(c.uri, c.name),
      ]),
    );
    clear(
      this.el,
      crumbs,
      h("h1", { class: "uri" }, m.uri),
      h("p", { class: "chips" }, flags),
      this.toolbar(m),
      h("div", { class: "stale-slot" }),
      h("div", { class: "editor" }),
      h("section", { class: "text", "aria-label": "Memory text" }, glossed(m.text, m.glossary)),
      m.glossary_more
        ? h(
            "p",
            { class: "notice" },
            `Only the first ${m.glossary.length} glossary keywords in this text are linked.`,
          )
        : null,
      h(
        "dl",
        { class: "meta" },
        m.placement
          ? [h("dt", {}, "Disclosure"), h("dd", {}, m.placement.disclosure || "(not set)")]
          : null,
        h("dt", {}, "Version"),
        h("dd", {}, h("code", {}, m.version)),
        h("dt", {}, "Last change"),
        h("dd", {}, `${when(m.modified.time)} by ${who(m.modified)}`),
        h("dt", {}, "Other URIs"),
        h(
          "dd",
          {},
          m.aliases.length
            ? m.aliases.map((a) => h("div", {}, link(a.uri), ` ★${a.priority}`))
            : "(none)",
        ),
        h("dt", {}, "Keywords"),
        h(
          "dd",
          {},
          m.keywords.length ? m.keywords.map((k) => h("span", { class: "chip" }, k)) : "(none)",
        ),
        h("dt", {}, "Children"),
        h("dd", {}, String(m.children)),
        h("dt", {}, "Memory ID"),
        h("dd", {}, h("code", {}, m.node)),
      ),
    );
  }

  toolbar(m) {
    const b = (text, fn, attrs = {}) =>
      h("button", { type: "button", onclick: fn, ...attrs }, text);
    return h(
      "div",
      { class: "toolbar", role: "toolbar", "aria-label": "Edit this memory" },
      b("Edit text", () => this.editText()),
      m.placement ? b("Priority & disclosure", () => this.editPlacement()) : null,
      b("New child", () => this.create()),
      b("Add alias", () => this.alias()),
      m.placement ? b("Move / rename", () => this.move()) : null,
      b("Keywords", () => this.keywords()),
      b(m.boot ? "Remove from boot" : "Add to boot", (e) => this.toggleBoot(e.target)),
      b("History", () => go("history", { uri: m.uri })),
      b("Delete", () => this.remove(), { class: "danger" }),
    );
  }

  editor(title, ...content) {
    this.editing = true;
    const slot = this.el.querySelector(".editor");
    const close = h(
      "button",
      {
        type: "button",
        onclick: () => {
          this.editing = false;
          clear(slot);
        },
      },
      "Cancel",
    );
    const form = h(
      "form",
      { class: "card", "aria-label": title },
      h("h2", {}, title),
      content,
      h("div", { class: "actions" }, close),
    );
    clear(slot, form);
    form.querySelector("input, textarea")?.focus();
    return form;
  }

  async save(button, call, after) {
    try {
      const result = await busy(button, call());
      notice("Saved.");
      after(result);
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        notice(err.message, "error");
        this.changedElsewhere();
      } else notice(err.message, "error");
    }
  }

  done(memory) {
    this.render(memory);
  }

  editText() {
    const m = this.memory;
    const area = h("textarea", { rows: 14, spellcheck: "true" });
    area.value = m.text;
    const preview = h("div", { class: "preview" });
    const save = h("button", { type: "submit", class: "primary", disabled: true }, "Save");
    const show = h("button", { type: "button" }, "Preview changes");
    show.addEventListener("click", async () => {
      try {
        const p = await busy(show, post("/api/preview", { uri: m.uri, text: area.value }));
        clear(preview, h("h3", {}, "Changes"), diffView(p.diff));
        save.disabled = false;
      } catch (err) {
        notice(err.message, "error");
      }
    });
    area.addEventListener("input", () => {
      save.disabled = true;
      clear(preview);
    });
    const form = this.editor(
      "Edit text",
      field("Text", area),
      preview,
      h("div", { class: "actions" }, show, save),
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.save(
        save,
        () =>
          post("/api/memory/text", { uri: m.uri, text: area.value, expected_version: m.version }),
        (r) => this.done(r),
      );
    });
  }

  editPlacement() {
    const m = this.memory;
    const prio = h("input", {
      type: "number",
      min: 0,
      max: 1000,
      value: m.placement.priority,
      required: true,
    });
    const disc = h("textarea", { rows: 2, required: true });
    disc.value = m.placement.disclosure;
    const save = h("button", { type: "submit", class: "primary" }, "Save");
    const form = this.editor(
      `Priority and disclosure of ${m.uri}`,
      field("Priority", prio, "0 is recalled first"),
      field("Disclosure", disc, "When to recall it"),
      save,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.save(
        save,
        () =>
          post("/api/memory/placement", {
            uri: m.uri,
            priority: Number(prio.value),
            disclosure: disc.value,
            expected_version: m.version,
            expected_placement: m.placement.version,
          }),
        (r) => this.done(r),
      );
    });
  }

  create() {
    const m = this.memory;
    const title = h("input", { type: "text", pattern: "[\\w][\\w.\\-]*", maxlength: 128 });
    const text = h("textarea", { rows: 6, required: true });
    const prio = h("input", { type: "number", min: 0, max: 1000, value: 1, required: true });
    const disc = h("input", { type: "text", required: true });
    const save = h("button", { type: "submit", class: "primary" }, "Create");
    const form = this.editor(
      `New memory under ${m.uri}`,
      field("Title (optional)", title, "letters, digits, _ - ."),
      field("Text", text),
      field("Priority", prio),
      field("Disclosure", disc, "When to recall it"),
      save,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.save(
        save,
        () =>
          post("/api/memory/create", {
            parent: m.uri,
            title: title.value || undefined,
            text: text.value,
            priority: Number(prio.value),
            disclosure: disc.value,
          }),
        (r) => {
          this.done(r);
          go("browse", { uri: r.uri });
        },
      );
    });
  }

  alias() {
    const m = this.memory;
    const target = h("input", {
      type: "text",
      required: true,
      placeholder: "core://somewhere/name",
    });
    const save = h("button", { type: "submit", class: "primary" }, "Add alias");
    const form = this.editor(`Another URI for ${m.uri}`, field("New URI", target), save);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.save(
        save,
        () => post("/api/memory/alias", { uri: m.uri, new_uri: target.value }),
        (r) => this.done(r),
      );
    });
  }

  move() {
    const m = this.memory;
    const target = h("input", { type: "text", required: true, value: m.uri });
    const save = h("button", { type: "submit", class: "primary" }, "Move");
    const form = this.editor(`Move or rename ${m.uri}`, field("New URI", target), save);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.save(
        save,
        () =>
          post("/api/memory/move", {
            uri: m.uri,
            new_uri: target.value,
            expected_version: m.version,
          }),
        (r) => {
          this.done(r);
          go("browse", { uri: r.uri });
        },
      );
    });
  }

  keywords() {
    const m = this.memory;
    const add = h("input", { type: "text", placeholder: "comma-separated" });
    const boxes = m.keywords.map((k) =>
      h("label", { class: "check" }, h("input", { type: "checkbox", value: k }), ` remove "${k}"`),
    );
    const save = h("button", { type: "submit", class: "primary" }, "Save keywords");
    const form = this.editor(
      `Keywords of ${m.uri}`,
      field("Add", add, "Words that, in other memories, should link here"),
      boxes,
      save,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const adds = add.value
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      const removes = boxes
        .map((b) => b.querySelector("input"))
        .filter((i) => i.checked)
        .map((i) => i.value);
      this.save(
        save,
        () => post("/api/memory/keywords", { uri: m.uri, add: adds, remove: removes }),
        (r) => this.done(r),
      );
    });
  }

  async toggleBoot(button) {
    const m = this.memory;
    const body = m.boot ? { remove: [m.uri] } : { add: [m.uri] };
    await this.save(
      button,
      () => post("/api/boot", body),
      () => this.reload(),
    );
  }

  remove() {
    const m = this.memory;
    const recursive = h("input", { type: "checkbox" });
    const del = h("button", { type: "submit", class: "danger" }, "Delete");
    const form = this.editor(
      `Delete ${m.uri}?`,
      h(
        "p",
        {},
        m.aliases.length
          ? "Removes this URI; the memory stays at its other URIs."
          : "Deletes the memory (its history stays until compaction, and Review can restore it).",
      ),
      h(
        "label",
        { class: "check" },
        recursive,
        " also delete the memories below it that nothing else reaches",
      ),
      del,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.save(
        del,
        () =>
          post("/api/memory/delete", {
            uri: m.uri,
            recursive: recursive.checked,
            expected_version: m.version,
          }),
        () => {
          this.memory = null;
          clear(this.el, h("p", {}, `Deleted ${m.uri}.`));
        },
      );
    });
  }
}

// The text with each glossary keyword linked to the memory it stands for.
function glossed(text, spans) {
  const out = h("div", { class: "body" });
  let at = 0;
  for (const s of spans) {
    if (s.start > at) out.append(text.slice(at, s.start));
    out.append(
      h(
        "a",
        {
          class: "gloss",
          href: `#/browse?uri=${encodeURIComponent(s.targets[0])}`,
          title: `${s.keyword} → ${s.targets.join(", ")}`,
        },
        text.slice(s.start, s.end),
      ),
    );
    at = s.end;
  }
  out.append(text.slice(at));
  return out;
}
