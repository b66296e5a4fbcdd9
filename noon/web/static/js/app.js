// The page: routing between sections (by the URL's hash), the namespace, the live feed and
// the review badge. Each section is a module exporting `show(main, params)`.

import { ApiError, get, ns, post, setNs } from "./api.js";
import { clear, field, go, h, notice } from "./dom.js";

const sections = {
  browse: () => import("./browse.js"),
  review: () => import("./review.js"),
  history: () => import("./history.js"),
  conflicts: () => import("./conflicts.js"),
  orphans: () => import("./orphans.js"),
  kg: () => import("./kg.js"),
  mesh: () => import("./mesh.js"),
  search: () => import("./search.js"),
};

let current = null;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [name, query] = raw.split("?");
  return { name: sections[name] ? name : "browse", params: new URLSearchParams(query || "") };
}

async function route() {
  const { name, params } = parseHash();
  const main = document.getElementById("main");
  document.querySelectorAll("nav a").forEach((a) => {
    if (a.dataset.section === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  if (current && current.name !== name && current.module.leave) current.module.leave();
  const module = await sections[name]();
  current = { name, module };
  try {
    await module.show(main, params);
  } catch (err) {
    clear(main, h("p", { class: "notice error" }, err.message));
  }
}

async function refreshBadge() {
  try {
    const found = await get("/api/changes", { view: "pending", limit: 1 });
    const badge = document.getElementById("pending");
    badge.textContent = found.pending;
    badge.hidden = !found.pending;
    badge.title = `${found.pending} change(s) by agents to review`;
  } catch { /* the next event retries */ }
}

function listen() {
  const status = document.getElementById("live");
  const source = new EventSource("/api/events");
  source.onopen = () => { status.textContent = "live"; status.classList.add("on"); };
  source.onerror = () => { status.textContent = "reconnecting"; status.classList.remove("on"); };
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.error) { notice(event.error, "error"); return; }
    const mine = event.reset ? { reset: true } : (event.namespaces || {})[ns()];
    if (!mine) return;
    refreshBadge();
    window.dispatchEvent(new CustomEvent("noon-change", { detail: mine }));
  };
}

async function namespaces(info) {
  const select = document.getElementById("ns");
  if (!ns() || !info.namespaces.includes(ns())) setNs(info.namespace);
  clear(select, info.namespaces.map((n) => h("option", { value: n, selected: n === ns() }, n)));
  select.addEventListener("change", () => { setNs(select.value); refreshBadge(); route(); });
}

function login(main) {
  const input = h("input", { type: "password", autocomplete: "current-password", required: true });
  const form = h("form", { class: "card login" }, h("h1", {}, "Log in"),
    h("p", {}, "This page needs the token noon web was started with (NOON_TOKEN)."),
    field("Token", input), h("button", { type: "submit" }, "Log in"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await post("/api/login", { token: input.value });
      location.reload();
    } catch (err) { notice(err.message, "error"); }
  });
  clear(main, form);
  input.focus();
}

async function start() {
  let info;
  try {
    info = await get("/api/info");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) { login(document.getElementById("main")); return; }
    throw err;
  }
  document.title = `noon · ${info.node}`;
  await namespaces(info);
  document.getElementById("search").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = document.getElementById("search-q").value.trim();
    if (q) go("search", { q });
  });
  window.addEventListener("hashchange", route);
  listen();
  refreshBadge();
  await route();
}

start();
