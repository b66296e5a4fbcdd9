// Small DOM helpers shared by every view: element building, times, diffs, notices.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function when(ms) {
  if (!ms) return "";
  const d = new Date(ms);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

export function who(item) {
  return `${item.client || "unknown"} on ${item.machine}`;
}

export function link(uri, text) {
  return h("a", { href: `#/browse?uri=${encodeURIComponent(uri)}` }, text || uri);
}

export function diffView(diff) {
  if (!diff) return null;
  if (diff.too_large) {
    return h(
      "p",
      { class: "muted" },
      `Too long to diff here (${diff.before_chars} → ${diff.after_chars} characters).`,
    );
  }
  if (!diff.lines.length) return h("p", { class: "muted" }, "No text change.");
  const rows = diff.lines.map(([tag, text]) => {
    const cls = { "+": "add", "-": "del", "…": "skip" }[tag] || "ctx";
    const mark = tag === "…" ? "" : tag;
    return h(
      "div",
      { class: `line ${cls}` },
      h("span", { class: "sign", "aria-hidden": "true" }, mark),
      h("span", { class: "sr-only" }, { "+": "added: ", "-": "removed: " }[tag] || ""),
      h("span", { class: "text" }, text || " "),
    );
  });
  return h(
    "div",
    {
      class: "diff",
      role: "group",
      "aria-label": `Diff: ${diff.added} line(s) added, ${diff.removed} removed`,
    },
    rows,
  );
}

let noticeTimer = null;

export function notice(message, kind = "info") {
  const el = document.getElementById("notice");
  clear(el, h("p", { class: `notice ${kind}` }, message));
  clearTimeout(noticeTimer);
  if (kind !== "error") noticeTimer = setTimeout(() => clear(el), 6000);
}

export function busy(button, promise) {
  button.disabled = true;
  return promise.finally(() => {
    button.disabled = false;
  });
}

export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2)}`;
  input.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    input,
    hint ? h("small", { class: "muted" }, hint) : null,
  );
}

export function go(name, params = {}) {
  const query = new URLSearchParams(params).toString();
  location.hash = `#/${name}${query ? `?${query}` : ""}`;
}

// Run a reload the page did not ask for (a live event): a failure is shown, not thrown.
export function quietly(promise) {
  return promise.catch((err) => notice(err.message, "error"));
}
