"""Per-call latency of the knowledge-graph tools: noon vs the official memory server.

Same client (a synchronous stdio JSON-RPC client speaking MCP), same machine, same run. For each
size the graph is first filled with that many entities (two observations each), then each tool
is timed over several calls, the servers interleaved round by round. The first table shows p50 /
p99 in milliseconds and noon ÷ official ratios of the medians; the second the same (but for the
filling calls) until each answer's last byte had arrived, before the client parsed it: the
server's answer as a raw JSON client sees it (at 10k entities the client's own parse of
read_graph's 2.4 MB answer, stdlib ``json``, is about 9 ms for either server); the third each
server's CPU per call (its process's user + system time over all of a tool's calls, from
/proc, divided by their number: under load the steadiest figure, though a background thread's
work counts where it falls). ``ping`` (an empty MCP request) is each server's floor: the stdio
round trip plus the SDK's request handling; in the rounds it follows the other server's calls,
``ping between pings`` (after the rounds) only the other server's ping.

    python -m bench.kg_latency [--sizes 1000 10000] [--calls 50] [--before DIR]
    python -m bench.kg_latency --first-answers 15 [--before DIR]

``--first-answers N`` times only the first answer on an empty graph, N rounds with the servers
interleaved (so load drifts hit each alike), and prints each one's median; ``--before DIR`` adds
(to either) the noon whose ``noon`` package sits in DIR (``git archive OLD noon | tar -x -C DIR``).

Needs node and the official server (scripts/install-official-server.sh).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from itertools import permutations
from pathlib import Path
from typing import Any

from bench.pipe import PipeClient
from bench.stats import cpu_seconds, percentiles, rss_mib
from tests.harness.mesh import ROOT, subprocess_env

OFFICIAL = ROOT / ".cache/official/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
FILL_BATCH = 500
BUDGET_S = 60.0
"""Seconds of calls one tool may take at one size: a tool that slow gets fewer samples instead of
holding the run for hours."""
BULK = f"create_entities ×{FILL_BATCH}"
"""The filling calls, timed: bulk create_entities of :data:`FILL_BATCH` entities each."""
AGAIN = "read_graph unchanged"
"""read_graph again right after read_graph, nothing written between (a client reading the graph
at each conversation's start); the read_graph row has writes before every call."""
QUIET = "ping between pings"
"""Pings alone after the rounds, the servers interleaved: each server's ping follows the other's
ping, not the other's calls. In the rounds a server's ping follows the other server's calls,
which grow with the store (the official server reads its whole file on every call) and leave
the shared cores' caches cold and the other's collector running beside it."""
TOOLS = (
    "ping",
    QUIET,
    "create_entities",
    "add_observations",
    "search_nodes",
    "open_nodes",
    "read_graph",
    AGAIN,
    BULK,
)


def _entity(i: int) -> dict[str, Any]:
    return {"name": f"e{i}", "entityType": "thing", "observations": [f"fact {i}", f"note {i}"]}


def _timed(client: PipeClient, tool: str, args: dict[str, Any]) -> tuple[float, float]:
    """ms until the answer was parsed, and ms until its last byte had arrived (before the
    client parsed it: a large answer's parsing, the same for every server, is much of the
    first)."""
    start = time.perf_counter()
    if tool in ("ping", QUIET):
        client.request("ping")
        end = time.perf_counter()
        return (end - start) * 1000, (client.received - start) * 1000
    result = client.call("read_graph" if tool == AGAIN else tool, args)
    end = time.perf_counter()
    if result.get("isError") or "__error__" in result:
        raise RuntimeError(f"{tool} failed: {str(result)[:500]}")
    return (end - start) * 1000, (client.received - start) * 1000


def _calls(k: int, size: int, calls: int) -> list[tuple[str, dict[str, Any]]]:
    """The ``k``-th round of calls: each tool once (read_graph, then read_graph again with
    nothing written between, in the first fifth only)."""
    rounds: list[tuple[str, dict[str, Any]]] = [
        ("ping", {}),
        ("create_entities", {"entities": [_entity(size + k)]}),
        (
            "add_observations",
            {"observations": [{"entityName": f"e{(k * 7919) % size}", "contents": [f"new {k}"]}]},
        ),
        ("search_nodes", {"query": f"fact {k * 31}"}),
        ("open_nodes", {"names": [f"e{(k * 104729 + j) % size}" for j in range(3)]}),
    ]
    if k < max(3, calls // 5):
        rounds += [("read_graph", {}), (AGAIN, {})]
    return rounds


def _turns(names: list[str], k: int) -> list[str]:
    """The servers' order in round ``k``: each order of them in turn, so each follows each
    other alike (a server's call is slower right after the official server's, whose calls at
    10k entities and more read its whole file and leave its collector running)."""
    orders = list(permutations(names))
    return list(orders[k % len(orders)])


def fill(client: PipeClient, size: int) -> None:
    """Fill the graph to ``size`` entities, :data:`FILL_BATCH` a call."""
    for start in range(0, size, FILL_BATCH):
        batch = [_entity(i) for i in range(start, min(size, start + FILL_BATCH))]
        client.call("create_entities", {"entities": batch})


def _fill_timed(
    clients: dict[str, PipeClient], size: int, cpu: dict[str, dict[str, list[float]]]
) -> dict[str, list[float]]:
    """Fill every server's graph to ``size`` entities, batch by batch with the servers
    interleaved; each call's ms (the bulk create_entities row), its CPU seconds into ``cpu``."""
    out: dict[str, list[float]] = {name: [] for name in clients}
    for start in range(0, size, FILL_BATCH):
        batch = [_entity(i) for i in range(start, min(size, start + FILL_BATCH))]
        for name, client in clients.items():
            used = cpu_seconds(client.proc.pid)
            out[name].append(_timed(client, "create_entities", {"entities": batch})[0])
            cpu[name][BULK].append(cpu_seconds(client.proc.pid) - used)
    return out


def measure_side_by_side(
    clients: dict[str, PipeClient], size: int, calls: int
) -> dict[str, dict[str, Any]]:
    """Fill every server's graph to ``size`` entities, then time every tool, round by round
    with the servers interleaved, in each of their orders in turn (so a change of the machine's
    load, and what one server leaves behind on the shared cores, hits each alike); p50/p99
    per tool in ms, per server, under ``"received_ms"`` the same until each answer's last byte
    had arrived (before the client parsed it), and under ``"cpu_ms"`` its process's CPU ms per
    call. A tool
    that has spent :data:`BUDGET_S` on a server gets no more calls there (its ``n`` says how
    many it got)."""
    cpu: dict[str, dict[str, list[float]]] = {n: {tool: [] for tool in TOOLS} for n in clients}
    filled = _fill_timed(clients, size, cpu)
    out: dict[str, dict[str, list[float]]] = {n: {tool: [] for tool in TOOLS} for n in clients}
    received: dict[str, dict[str, list[float]]] = {n: {tool: [] for tool in TOOLS} for n in clients}
    for name, times in filled.items():
        out[name][BULK] = times

    def timed(name: str, tool: str, args: dict[str, Any]) -> None:
        pid = clients[name].proc.pid
        used = cpu_seconds(pid)
        parsed, arrived = _timed(clients[name], tool, args)
        out[name][tool].append(parsed)
        received[name][tool].append(arrived)
        cpu[name][tool].append(cpu_seconds(pid) - used)

    names = list(clients)
    for k in range(calls):
        for name in _turns(names, k):
            for tool, args in _calls(k, size, calls):
                if sum(out[name][tool]) < BUDGET_S * 1000:
                    timed(name, tool, args)
    for k in range(calls):
        for name in _turns(names, k):
            timed(name, QUIET, {})
    result: dict[str, dict[str, Any]] = {}
    for name, client in clients.items():
        result[name] = {tool: percentiles(v) for tool, v in out[name].items()}
        result[name]["received_ms"] = {
            tool: percentiles(v) for tool, v in received[name].items() if v
        }
        result[name]["cpu_ms"] = {
            tool: 1000 * sum(v) / len(v) for tool, v in cpu[name].items() if v
        }
        result[name]["rss_mib"] = rss_mib(client.proc.pid)
    return result


def measure(client: PipeClient, size: int, calls: int) -> dict[str, Any]:
    """One server's figures (see :func:`measure_side_by_side`)."""
    return measure_side_by_side({"server": client}, size, calls)["server"]


def noon_client(
    directory: Path,
    fsync: bool = True,
    node: str = "bench",
    timeout: float = 20,
    tools: str = "kg",
    code: Path | None = None,
) -> PipeClient:
    env = subprocess_env(NOON_FSYNC="true" if fsync else "false")
    # Bytecode as an installed noon has it (pip compiles it at install; an editable install
    # writes it on first import): where PYTHONDONTWRITEBYTECODE is set, every start would
    # otherwise compile noon's modules again, a cost no installed server pays.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if code is not None:  # another checkout's noon, found before this one's
        env["PYTHONPATH"] = str(code) + os.pathsep + env["PYTHONPATH"]
    # `python -m` puts its working directory first on the path: started in this checkout, it
    # would import this checkout's noon whatever PYTHONPATH says.
    cwd = code if code is not None else ROOT
    return PipeClient(
        [
            sys.executable,
            "-m",
            "noon",
            "serve",
            "--tools",
            tools,
            "--dir",
            str(directory),
            "--node-id",
            node,
        ],
        env=env,
        cwd=str(cwd),
        timeout=timeout,
    )


def official_client(memory_file: Path, timeout: float = 20) -> PipeClient:
    return PipeClient(
        ["node", str(OFFICIAL)],
        env={**subprocess_env(), "MEMORY_FILE_PATH": str(memory_file)},
        timeout=timeout,
    )


def first_answer(start: Callable[[], PipeClient]) -> float:
    """Seconds from process start to the first read_graph answer on an empty graph."""
    t0 = time.perf_counter()
    client = start()
    try:
        client.call("read_graph", {})
        return time.perf_counter() - t0
    finally:
        client.close()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def first_answers(
    rounds: int, before: Path | None
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Seconds to the first answer on an empty graph, ``rounds`` times each, interleaved, after
    one untimed start of each (as on a machine where the server ran before); and the CPU seconds
    each server process used in all (start, first answer, exit), which the machine's load
    disturbs far less than the wall clock."""
    starts: dict[str, Callable[[Path], PipeClient]] = {
        "noon": lambda d: noon_client(d / "noon"),
        "official": lambda d: official_client(d / "m.jsonl"),
    }
    if before is not None:
        starts["noon before"] = lambda d: noon_client(d / "noon", code=before)
    out: dict[str, list[float]] = {name: [] for name in starts}
    cpu: dict[str, list[float]] = {name: [] for name in starts}
    # untimed: bytecode and noon's code cache (noon.codecache) written, files in the page cache
    for start in starts.values():
        with tempfile.TemporaryDirectory() as tmp:
            first_answer(partial(start, Path(tmp)))
    for _ in range(rounds):
        for name, start in starts.items():
            with tempfile.TemporaryDirectory() as tmp:
                used = _children_cpu()
                out[name].append(first_answer(partial(start, Path(tmp))))
                cpu[name].append(_children_cpu() - used)
    return out, cpu


def run(sizes: list[int], calls: int, before: Path | None = None) -> dict[str, Any]:
    """{size: {"noon": {tool: p50/p99}, "official": {...} or absent, "noon before": {...}
    with ``before``}}; the official server is skipped (and says so) when it is not installed."""
    have_official = OFFICIAL.exists()
    out: dict[str, Any] = {"official_installed": have_official, "sizes": {}, "first_answer": {}}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        out["first_answer"]["noon"] = first_answer(lambda: noon_client(d / "noon"))
        if have_official:
            out["first_answer"]["official"] = first_answer(lambda: official_client(d / "m.jsonl"))
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
            d = Path(tmp)
            clients: dict[str, PipeClient] = {}
            if have_official:
                clients["official"] = official_client(d / "m.jsonl")
                stack.callback(clients["official"].close)
            clients["noon"] = noon_client(d / "noon")
            stack.callback(clients["noon"].close)
            if before is not None:
                clients["noon before"] = noon_client(d / "before", node="before", code=before)
                stack.callback(clients["noon before"].close)
            out["sizes"][str(size)] = measure_side_by_side(clients, size, calls)
    return out


def _latency_table(
    res: dict[str, Any],
    names: list[str],
    figures: Callable[[dict[str, Any]], dict[str, Any]],
    title: str,
) -> None:
    """p50/p99 of every tool at every size, each noon's ÷ the official server's p50."""
    print(
        f"\n{'entities':>8}  {title or 'tool':<21} {'official p50/p99':>17}"
        + "".join(f" {n + ' p50/p99':>19} {n + ' ÷ official':>17}" for n in names)
    )
    for size, entry in res["sizes"].items():
        theirs = figures(entry["official"])
        for tool in (tool for tool in TOOLS if tool in theirs):
            a = theirs[tool]
            line = f"{size:>8}  {tool:<21} {a['p50']:>8.2f}/{a['p99']:<8.2f}"
            for n in names:
                b = figures(entry[n])[tool]
                line += f" {b['p50']:>9.2f}/{b['p99']:<9.2f} {b['p50'] / a['p50']:>17.2f}"
            print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--first-answers", type=int, default=0, metavar="N")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR")
    args = parser.parse_args(argv)
    if not OFFICIAL.exists():
        print("official server missing: run scripts/install-official-server.sh", file=sys.stderr)
        return 1
    if args.first_answers:
        times, cpu = first_answers(args.first_answers, args.before)
        for label, figures in (("first answer", times), ("CPU of its process", cpu)):
            anchor = statistics.median(figures["official"])
            for name, values in figures.items():
                mid = statistics.median(values)
                print(
                    f"{label}, empty graph, {name:<11} median {mid:.3f} s "
                    f"(min {min(values):.3f}, max {max(values):.3f}, n={len(values)}) "
                    f"{mid / anchor:.2f}x the official server"
                )
        return 0
    res = run(args.sizes, args.calls, args.before)
    names = [n for n in ("noon", "noon before") if n in next(iter(res["sizes"].values()))]
    _latency_table(res, names, lambda entry: entry, "")
    _latency_table(res, names, lambda entry: entry["received_ms"], "to the answer's last byte")
    print(
        f"\n{'entities':>8}  {'tool':<21} {'official CPU ms/call':>21}"
        + "".join(f" {n + ' CPU ms/call':>21} {n + ' ÷ official':>17}" for n in names)
    )
    for size, entry in res["sizes"].items():
        theirs = entry["official"]["cpu_ms"]
        for tool in TOOLS:
            line = f"{size:>8}  {tool:<21} {theirs[tool]:>21.2f}"
            for n in names:
                mine = entry[n]["cpu_ms"][tool]
                ratio = f"{mine / theirs[tool]:.2f}" if theirs[tool] else "-"
                line += f" {mine:>21.2f} {ratio:>17}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
