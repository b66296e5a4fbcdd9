"""``noon status``, ``doctor``, ``log``, ``history`` and ``query`` as a person runs them: real
subprocesses on real shard directories, against real daemons over mutual TLS. Every doctor
finding from a deliberately broken setup is in test_doctor.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from noon.config import Settings
from noon.core.hlc import pack
from noon.core.ops import Draft, encode
from noon.graph import plan
from noon.graph.uri import parse
from noon.kg import plan as kg_plan
from noon.mcp.uri_views import read_view
from noon.store import peerstate
from noon.store.access import kg_mutate, service
from noon.store.store import Store
from tests.harness.mesh import ROOT, Node, reported, start_all, wait_until
from tests.harness.operator import (
    as_json,
    cli_env,
    doctor,
    noon_cli,
    problems,
    run,
    write_op,
)

pytestmark = pytest.mark.integration

X = ("content", "default", "x")


# -- the CLI knows the commands -------------------------------------------------------------


def test_help_lists_every_operator_command():
    out = subprocess.run(
        [sys.executable, "-m", "noon", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    for name in ("status", "doctor", "log", "history", "query", "peers", "compact", "certs"):
        assert name in out.stdout


# -- status and doctor against real daemons -----------------------------------------------


def test_status_and_doctor_follow_a_live_mesh_and_a_peer_going_down(spawn, tmp_path, pki):
    env = {"NOOND_SUSPECT_AFTER": "1", "NOOND_DEAD_AFTER": "2"}
    a, b = Node("a", tmp_path, pki, env=dict(env)), Node("b", tmp_path, pki, env=dict(env))
    spawn += [a, b]
    start_all((a, [b]), (b, [a]))
    a.write(("x", "shared"))
    b.write(("y", "from b"))
    wait_until(
        lambda: reported(a, "b", "a", 1) and reported(a, "b", "b", 1),
        what="b to report holding both shards",
    )
    cli = cli_env(a.dir, "a", pki.node("a"), a.address)

    status = as_json(run("status", "--json", env=cli))
    assert status["daemon"]["reachable"] and status["peers_source"] == "daemon"
    assert [p["node"] for p in status["peers"]] == ["b"]
    assert status["peers"][0]["state"] == "alive"
    shards = {s["shard"]: s for s in status["shards"]}
    assert shards["a"]["ops"] == 1 and shards["a"]["seq"] == 1
    assert shards["a"]["lag"] == {"b": 0} and shards["b"]["lag"] == {"b": 0}
    assert status["conflicts_total"] == 0 and status["forks"] == []
    text = run("status", env=cli).stdout
    assert "SHARD" in text and "in sync" in text and "alive" in text

    code, findings = doctor(cli)
    assert code == 0, findings
    assert any(
        f["check"] == "peers" and "peer b" in f["what"] and f["level"] == "ok" for f in findings
    )

    b.stop()
    a.store().write(lambda fold: [Draft(X, None)])  # b saw x: its tombstone must wait for b
    a.write(("z", "written while b is away"))

    def frozen() -> dict[str, Any] | None:
        got = as_json(run("status", "--json", env=cli))
        return got if got["frozen"]["known"] and got["frozen"]["count"] >= 1 else None

    got = wait_until(frozen, what="the tombstone of x to be frozen for b")
    assert any(k["member"] == "b" and k["element"] == list(X) for k in got["frozen"]["kept"])
    assert got["shards"][0]["lag"]["b"] == 2  # b lacks a's last two ops
    assert "lacks 2" in run("status", env=cli).stdout

    code, findings = doctor(cli)
    assert code == 1
    down = problems(findings, "peers")
    assert down and "peer b" in down[0]["what"] and "does not answer" in down[0]["what"]
    assert "noon peers depart b" in down[0]["fix"]


def test_status_without_a_daemon_uses_the_files(tmp_path, pki):
    d = tmp_path / "data"
    write_op(d, "a", X, {"text": "one"})
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(d / "a.jsonl", other / "a.jsonl")
    write_op(other, "b", X, {"text": "two"}, client="claude-code")  # concurrent with the next
    write_op(d, "a", X, {"text": "three"}, client="codex")
    shutil.copy(other / "b.jsonl", d / "b.jsonl")

    def knows_b(s: peerstate.PeerState) -> None:
        s.members.update(b="127.0.0.1:1")
        s.reports.update(b=peerstate.Report({"a": 1, "b": 1}, time.time()))

    peerstate.update(d / ".noon" / "noond.json", knows_b)
    env = cli_env(d, "a", pki.node("a"))
    status = as_json(run("status", "--json", env=env))
    assert not status["daemon"]["reachable"] and "state file" in status["peers_source"]
    assert status["conflicts_total"] == 1
    heads = status["conflicts"][0]["heads"]
    assert {(h["by"], h["node"]) for h in heads} == {("codex", "a"), ("claude-code", "b")}
    assert {s["shard"]: s["lag"]["b"] for s in status["shards"]} == {"a": 1, "b": 0}
    assert status["frozen"] == {
        "known": False,
        "count": None,
        "kept": [],
        "note": "no daemon answered",
    }
    assert "conflicts: 1" in run("status", env=env).stdout


def test_status_counts_an_edit_against_a_delete_as_system_conflicts_lists_it(tmp_path):
    d = tmp_path / "data"
    write_op(d, "a", X, {"text": "one"})
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(d / "a.jsonl", other / "a.jsonl")
    write_op(other, "b", X, None)  # deleted on b, concurrent with the edit on a
    write_op(d, "a", X, {"text": "edited"})
    shutil.copy(other / "b.jsonl", d / "b.jsonl")
    env = cli_env(d, "a")
    store = Store(Settings(dir=d, node_id="a", fsync=False))
    listed = service(store).read(lambda s: read_view(s, "default", "system://conflicts")[0])
    store.close()
    assert "# Total: 1" in listed
    status = as_json(run("status", "--json", env=env))
    assert status["conflicts_total"] == 1 and status["conflicts_by_namespace"] == {"default": 1}
    assert [h["deleted"] for h in status["conflicts"][0]["heads"]] == [False, True]
    assert "conflicts: 1 (default: 1)" in run("status", env=env).stdout


def test_status_on_one_machine_says_no_daemon_is_needed(tmp_path):
    d = tmp_path / "data"
    write_op(d, "a", X, {"text": "kept here"})
    env = cli_env(d, "a")
    status = as_json(run("status", "--json", env=env))
    assert status["daemon"]["needed"] is False and not status["daemon"]["reachable"]
    text = run("status", env=env).stdout
    assert "daemon: none needed: this is the only machine" in text
    assert "not reachable" not in text and "CA certificate" not in text
    # nothing about a daemon that is not needed: no "last reports" of a state file never
    # written, no tombstones "unknown" for want of peers
    assert "peers (none: this is the only machine)" in text
    assert "no daemon answered" not in text and "frozen tombstones: 0" in text
    assert "noon certs init" in (ROOT / "docs" / "noond.md").read_text()  # where it points
    # a second machine's shard here: a daemon is expected, and its absence is said
    write_op(d, "b", ("content", "default", "y"), {"text": "from b"})
    text = run("status", env=env).stdout
    assert "not reachable" in text and "none needed" not in text


def test_status_refuses_a_missing_directory(tmp_path):
    out = run("status", env=cli_env(tmp_path / "nowhere", "a"))
    assert out.returncode == 1 and "does not exist" in out.stdout
    assert not (tmp_path / "nowhere").exists()


# -- log, history and query -------------------------------------------------------------------


def memories(d: Path) -> str:
    """Two machines' memories: URI memories written through the graph planner (as the MCP tools
    do) and a knowledge-graph entity. Returns the node id of core://agent."""
    laptop = Store(Settings(dir=d, node_id="laptop", fsync=False))
    svc = service(laptop)

    def create(parent: str, title: str, text: str, client: str) -> str:
        def p(g: Any) -> tuple[list[Draft], str]:
            drafts, node, _ = plan.create(
                g, "default", parse(parent), title, text, 0, "When drinks come up"
            )
            return drafts, node

        return svc.write(p, client)[1]

    agent = create("core://", "agent", "The agent prefers tea over coffee.", "claude-code")
    create("core://agent", "style", "Write terse commit messages.", "codex")
    desktop = service(Store(Settings(dir=d, node_id="desktop", fsync=False)))
    desktop.write(
        lambda g: ([plan.set_text("default", agent, "The agent prefers green tea.")], None),
        "cursor",
    )
    kg_mutate(
        laptop,
        "default",
        kg_plan.create_entities,
        [{"name": "Alice", "entityType": "person", "observations": ["likes tea", "lives in Oslo"]}],
        "opencode",
    )
    kg_mutate(
        laptop,
        "default",
        kg_plan.create_relations,
        [{"from": "Alice", "to": "Bob", "relationType": "knows"}],
        "opencode",
    )
    return agent


def json_lines(out: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert out.returncode == 0, out.stdout + out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_log_history_and_query(tmp_path):
    d = tmp_path / "data"
    agent = memories(d)
    env = cli_env(d, "laptop")

    log = json_lines(run("log", "--json", env=env))
    assert len(log) == 9
    assert log[0]["what"] == "related kg://Alice --knows--> kg://Bob"
    assert [e["time"] for e in log] == sorted((e["time"] for e in log), reverse=True)
    by_cursor = json_lines(run("log", "--json", "--by", "cursor", env=env))
    assert len(by_cursor) == 1 and by_cursor[0]["node"] == "desktop"
    assert by_cursor[0]["what"] == "edited memory core://agent: The agent prefers green tea."
    assert len(json_lines(run("log", "--json", "--node", "desktop", env=env))) == 1
    assert len(json_lines(run("log", "--json", "-n", "2", env=env))) == 2

    hist = json_lines(run("history", "--json", "core://agent", env=env))
    assert [(e["by"], e["node"]) for e in hist] == [
        ("cursor", "desktop"),
        ("claude-code", "laptop"),
        ("claude-code", "laptop"),
    ]
    assert {e["what"] for e in hist[1:]} == {
        "placed memory at core://agent",
        "wrote memory core://agent: The agent prefers tea over coffee.",
    }
    by_id = json_lines(run("history", "--json", f"system://node/{agent}", env=env))
    assert by_id == hist
    text = run("history", "core://agent", env=env).stdout
    assert "desktop" in text and "cursor" in text and "edited memory core://agent" in text
    alice = json_lines(run("history", "--json", "kg://Alice", env=env))
    assert len(alice) == 4 and {e["by"] for e in alice} == {"opencode"}
    missing = run("history", "core://nowhere", env=env)
    assert missing.returncode == 1 and "no memory at core://nowhere" in missing.stderr
    assert missing.stdout == ""  # stdout holds only what was asked for
    # through `noon` itself: refusals on stderr (control characters escaped), stdout empty
    nothing = noon_cli("query", " ", env=env)
    assert (nothing.returncode, nothing.stdout) == (1, "")
    assert "noon: nothing to search for" in nothing.stderr
    hostile = noon_cli("history", "core://\x1b[2Kx", env=env)
    assert hostile.returncode == 1 and "\x1b" not in hostile.stderr and "\\x1b" in hostile.stderr
    for command in ("log", "history", "query", "reindex"):
        words = ["core://agent"] if command in ("history", "query") else []
        gone = noon_cli(command, *words, env={**env, "NOON_DIR": str(tmp_path / "absent")})
        assert (gone.returncode, gone.stdout) == (1, ""), command
        assert f"noon: {tmp_path / 'absent'} does not exist; set NOON_DIR" in gone.stderr, command

    found = as_json(run("query", "--json", "tea", env=env))
    assert found["memories"][0]["uri"] == "core://agent"
    assert "green tea" in found["memories"][0]["snippet"]
    assert [e["name"] for e in found["entities"]] == ["Alice"]
    assert found["relations"] == [{"from": "Alice", "to": "Bob", "relationType": "knows"}]
    assert as_json(run("query", "--json", "oslo", env=env))["memories"] == []
    shown = run("query", "commit", "messages", env=env).stdout
    assert "core://agent/style" in shown and "knowledge-graph entities: 0" in shown

    write_op(d, "laptop", ("content", "default", agent), None)  # deleted on this machine alone
    write_op(d, "laptop", ("edge", "default", "@core", "agent"), None)
    after = json_lines(run("history", "--json", "core://agent", env=env))
    assert [(e["node"], e["seq"]) for e in after[2:]] == [(e["node"], e["seq"]) for e in hist]
    assert {e["deleted"] for e in after[:2]} == {True}


def test_doctor_and_status_report_a_fork_the_daemon_found(spawn, tmp_path, pki):
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    start_all((a, [b]), (b, [a]))
    a.write(("x", "original"))
    wait_until(lambda: (b.dir / "a.jsonl").exists() and b.state().get(X), what="b to hold a's op")
    a.stop()
    # A restored backup written to: a's shard now holds another op 1.
    (a.dir / "a.jsonl").write_bytes(
        encode(
            node="a",
            seq=1,
            hlc=pack(time.time_ns() // 1_000_000, 0),
            el=X,
            val={"text": "rewritten"},
        )
        + b"\n"
    )
    a.start([b])
    wait_until(lambda: a.status().forks, what="a's daemon to find the fork")
    cli = cli_env(a.dir, "a", pki.node("a"), a.address)
    code, findings = doctor(cli)
    assert code == 1
    forks = [f["what"] for f in problems(findings, "fork")]
    assert any("differs from b's copy" in what for what in forks), forks
    assert any("what this machine read of it before" in what for what in forks), forks
    status = as_json(run("status", "--json", env=cli))
    assert status["forks"] and status["forks"][0]["peer"] == "b"
    assert "FORK" in run("status", env=cli).stdout


def test_doctor_and_status_on_a_plaintext_loopback_mesh(spawn, tmp_path, pki):
    env = {"NOOND_TLS": "off"}
    a, b = Node("a", tmp_path, pki, env=dict(env)), Node("b", tmp_path, pki, env=dict(env))
    spawn += [a, b]
    start_all((a, [b]), (b, [a]))
    a.write(("x", "plain"))
    wait_until(lambda: reported(a, "b", "a", 1), what="b to report a's op")
    cli = {**cli_env(a.dir, "a", listen=a.address), "NOOND_TLS": "off"}
    code, findings = doctor(cli)
    assert code == 0, findings
    (plain,) = problems(findings, "certificates", "warning")
    assert "plaintext" in plain["what"]
    assert any("peer b" in f["what"] and f["level"] == "ok" for f in findings)
    status = as_json(run("status", "--json", env=cli))
    assert status["daemon"]["reachable"] and status["peers"][0]["node"] == "b"


def test_a_cli_error_names_cli_commands_and_they_work(tmp_path):
    d = tmp_path / "data"
    store = Store(Settings(dir=d, node_id="a", fsync=False))
    service(store).write(
        lambda g: (
            plan.create(g, "default", parse("core://"), "tea", "Salem likes tea.", 1, "d")[0],
            0,
        ),
        "cli",
    )
    store.close()
    env = cli_env(d, "a")
    out = noon_cli("history", "core://nope", env=env)
    assert (out.returncode, out.stdout) == (1, "") and "search_memory" not in out.stderr
    assert "`noon query WORDS`" in out.stderr and "`noon log`" in out.stderr
    found = run("query", "tea", env=env)
    assert found.returncode == 0 and "core://tea" in found.stdout
    assert run("log", env=env).returncode == 0
