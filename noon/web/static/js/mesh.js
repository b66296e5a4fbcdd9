// Machines: `noon status` as a page (this node, its shards and each peer's lag, the peers'
// health, conflicts, frozen tombstones and forks), refreshed every few seconds.

import { get } from "./api.js";
import { clear, h } from "./dom.js";

let timer = null;

function table(head, rows) {
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        head.map((c) => h("th", { scope: "col" }, c)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          {},
          r.map((c) => h("td", {}, c ?? "-")),
        ),
      ),
    ),
  );
}

function lag(n) {
  if (n === undefined) return "?";
  if (n === 0) return "in sync";
  return n > 0 ? `lacks ${n}` : `ahead ${-n}`;
}

async function load(root) {
  const r = await get("/api/mesh");
  const d = r.daemon;
  const peers = r.peers.map((p) => p.node);
  clear(
    root,
    h("h1", {}, `Machines · ${r.node}`),
    h(
      "p",
      {},
      d.reachable
        ? `noond at ${d.url}: up ${Math.round(d.uptime_seconds)} s, ${d.rounds} rounds${d.behind ? ", OWN SHARD BEHIND A PEER" : ""}`
        : d.needed === false
          ? h("span", { class: "muted" }, `noond: ${d.note}`)
          : h("span", { class: "notice warn" }, `noond not reachable at ${d.url}: ${d.error}`),
    ),
    h("h2", {}, "Shards"),
    r.shards.length
      ? table(
          ["Shard", "Ops", "Seq", "Last write", "Corrupt", ...peers],
          r.shards.map((s) => [
            s.shard,
            s.ops,
            s.seq,
            s.last_write,
            s.corrupt,
            ...peers.map((p) => lag(s.lag[p])),
          ]),
        )
      : h("p", {}, "No shards yet."),
    h("h2", {}, "Peers"),
    h("p", { class: "muted" }, r.peers_source),
    r.peers.length
      ? table(
          ["Node", "Address", "State", "Last OK", "Last report", "Error"],
          r.peers.map((p) => [p.node, p.address, p.state, p.last_ok, p.reported_at, p.error]),
        )
      : h("p", {}, "None known."),
    h("h2", {}, "Conflicts"),
    h(
      "p",
      {},
      r.conflicts_total === null ? "unknown (forked directory)" : String(r.conflicts_total),
      Object.keys(r.conflicts_by_namespace).length > 1
        ? ` (${Object.entries(r.conflicts_by_namespace)
            .map(([ns, n]) => `${ns}: ${n}`)
            .join(", ")})`
        : null,
      r.conflicts_total ? [" · ", h("a", { href: "#/conflicts" }, "settle them")] : null,
    ),
    (r.relays || []).length
      ? [h("h2", {}, "Relays"), r.relays.map((x) => h("p", {}, x.summary))]
      : null,
    h("h2", {}, "Frozen tombstones"),
    h("p", {}, r.frozen.known ? String(r.frozen.count) : `unknown (${r.frozen.note})`),
    r.forks.length
      ? [h("h2", {}, "Forks"), r.forks.map((f) => h("p", { class: "notice error" }, f.error))]
      : null,
  );
}

export async function show(main) {
  const root = h("div", { class: "mesh" }, h("p", { class: "muted" }, "Asking noond…"));
  clear(main, root);
  await load(root);
  clearInterval(timer);
  timer = setInterval(() => load(root).catch(() => {}), 10000);
}

export function leave() {
  clearInterval(timer);
  timer = null;
}
