// The page: routing between sections (by the URL's hash), the namespace, the live feed and
// the review badge. Each section is a module exporting `show(main, params)`.

import { ApiError, events, get, loggedIn, login, ns, setNs } from "./api.js";
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

let routing = Promise.resolve();

/** Show the section the hash names, after the one being shown finished drawing (so a quick
 * second navigation is never overdrawn by the first). */
function route() {
  routing = routing.then(show, show);
  return routing;
}

async function show() {
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
  } catch {
    /* the next event retries */
  }
}

function listen() {
  const status = document.getElementById("live");
  events(
    (event) => {
      if (event.error) {
        notice(event.error, "error");
        return;
      }
      const mine = event.reset ? { reset: true } : (event.namespaces || {})[ns()];
      if (!mine) return;
      refreshBadge();
      window.dispatchEvent(new CustomEvent("noon-change", { detail: mine }));
    },
    (on) => {
      status.textContent = on ? "live" : "reconnecting";
      status.classList.toggle("on", on);
    },
  );
}

async function namespaces(info) {
  const select = document.getElementById("ns");
  if (!ns() || !info.namespaces.includes(ns())) setNs(info.namespace);
  clear(
    select,
    info.namespaces.map((n) => h("option", { value: n, selected: n === ns() }, n)),
  );
  select.addEventListener("change", () => {
    setNs(select.value);
    refreshBadge();
    route();
  });
}

function showLogin(main) {
  const input = h("input", { type: "password", autocomplete: "current-password", required: true });
  const form = h(
    "form",
    { class: "card login" },
    h("h1", {}, "Log in"),
    h(
      "p",
      {},
      "Open the address noon web printed when it started (it carries the token once), " +
        "or give the token it was started with (NOON_TOKEN) here.",
    ),
    field("Token", input),
    h("button", { type: "submit" }, "Log in"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await login(input.value);
      location.reload();
    } catch (err) {
      notice(err.message, "error");
    }
  });
  clear(main, form);
  input.focus();
}

/** `noon web` prints the page's address with the token in its fragment (`/#token=...`, never
 * sent to a server): drop it from the address bar and this history entry, and trade it for
 * the session. */
async function takeToken() {
  const found = location.hash.match(/^#token=([^&]*)/);
  if (!found) return;
  history.replaceState(null, "", location.pathname + location.search);
  try {
    await login(decodeURIComponent(found[1]));
  } catch (err) {
    notice(`The token in the address was refused: ${err.message}`, "error");
  }
}

async function start() {
  await takeToken();
  window.addEventListener("noon-logged-out", () => showLogin(document.getElementById("main")));
  const main = document.getElementById("main");
  if (!loggedIn()) {
    showLogin(main);
    return;
  }
  let info;
  try {
    info = await get("/api/info");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      showLogin(main);
      return;
    }
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
