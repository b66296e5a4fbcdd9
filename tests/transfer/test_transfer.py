"""noon import / noon export: the official memory file (round trip byte for byte), a Nocturne
Memory database built here with its schema, and noon's own lossless format. Imports are
idempotent, go to the import shard, and malformed input imports nothing."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from noon.cli import main
from noon.config import Settings
from noon.kg import plan
from noon.mcp.server import create_server
from noon.store.access import kg_mutate, kg_read
from noon.store.store import Store
from noon.transfer.nocturne import node_id
from tests.harness.mcp import Recorder, make_settings
from tests.harness.nocturne import nocturne_db
from tests.harness.stores import val_of

OFFICIAL_LINES: list[dict[str, Any]] = [
    {
        "type": "entity",
        "name": "Alice",
        "entityType": "person",
        "observations": ["likes tea", "likes tea", 'é ✓ \u2028 "quoted" \\ back'],
    },
    {"type": "entity", "name": "Bob", "entityType": "person", "observations": []},
    {"type": "entity", "name": "x/y: z", "entityType": "", "observations": [""]},
    {"type": "relation", "from": "Alice", "to": "Bob", "relationType": "knows"},
    {"type": "relation", "from": "Alice", "to": "Bob", "relationType": "knows"},
    {"type": "relation", "from": "Alice", "to": "Ghost", "relationType": "haunts"},
]


def _official_text(lines: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) for o in lines)


def _noon(d: Path, *args: str) -> int:
    return main([*args, "--dir", str(d), "--node-id", "n1"])


def _store(d: Path) -> Store:
    return Store(Settings.from_env({}, dir=d, node_id="n1"))


def _shards(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.jsonl"))}


def test_official_file_round_trips_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "memory.jsonl"
    src.write_text(_official_text(OFFICIAL_LINES), encoding="utf-8")
    d = tmp_path / "noon"
    assert _noon(d, "import", str(src)) == 0
    assert "Imported 3 of 3 entities and 3 of 3 relations" in capsys.readouterr().out
    assert list(_shards(d)) == ["n1-import.jsonl"]  # the import shard, not the node's own
    out = tmp_path / "out.jsonl"
    assert _noon(d, "export", "--format", "official", "-o", str(out)) == 0
    assert out.read_bytes() == src.read_bytes()
    # to stdout as well, with no trailing newline
    assert _noon(d, "export", "--format", "official") == 0
    assert capsys.readouterr().out == src.read_text(encoding="utf-8")


def test_reimport_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "memory.jsonl"
    src.write_text(_official_text(OFFICIAL_LINES), encoding="utf-8")
    d = tmp_path / "noon"
    _noon(d, "import", str(src))
    before = _shards(d)
    capsys.readouterr()
    assert _noon(d, "import", str(src)) == 0
    assert "Imported 0 of 3 entities and 0 of 3 relations" in capsys.readouterr().out
    assert _shards(d) == before


def test_malformed_input_names_lines_and_imports_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "memory.jsonl"
    good = _official_text(OFFICIAL_LINES[:2])
    src.write_text(
        good + '\n{"type":"entity","name":"C"\n\n{"type":"widget"}\n'
        '{"type":"relation","from":"a","to":1,"relationType":"r"}',
        encoding="utf-8",
    )
    d = tmp_path / "noon"
    assert _noon(d, "import", str(src)) == 1
    err = capsys.readouterr().err
    assert "3 malformed line(s); nothing was imported" in err
    assert "line 3: not JSON" in err
    assert "line 5: unknown record type 'widget'" in err
    assert "line 6: relation without a string 'to'" in err
    assert _shards(d) == {}


def test_legacy_memory_json_both_shapes(tmp_path: Path) -> None:
    d = tmp_path / "noon"
    doc = tmp_path / "memory.json"
    doc.write_text(
        json.dumps(
            {
                "entities": [{"name": "A", "entityType": "t", "observations": ["o"]}],
                "relations": [{"from": "A", "to": "A", "relationType": "self"}],
            }
        )
    )
    assert _noon(d, "import", str(doc)) == 0
    lines = tmp_path / "old.json"
    lines.write_text(_official_text(OFFICIAL_LINES[1:2]) + "\n")
    assert _noon(d, "import", str(lines)) == 0
    graph = kg_read(_store(d), "default", lambda view: view.graph())
    assert [e["name"] for e in graph["entities"]] == ["A", "Bob"]
    assert graph["relations"] == [{"from": "A", "to": "A", "relationType": "self"}]


def test_import_into_a_namespace_and_existing_names_are_kept(tmp_path: Path) -> None:
    d = tmp_path / "noon"
    src = tmp_path / "memory.jsonl"
    src.write_text(_official_text(OFFICIAL_LINES[:1]))
    assert _noon(d, "import", str(src), "--namespace", "work") == 0
    other = tmp_path / "other.jsonl"
    other.write_text(_official_text([{**OFFICIAL_LINES[0], "observations": ["different"]}]))
    assert _noon(d, "import", str(other), "--namespace", "work") == 0
    store = _store(d)
    assert kg_read(store, "default", lambda view: view.graph())["entities"] == []
    work = kg_read(store, "work", lambda view: view.graph())["entities"]
    assert work[0]["observations"] == OFFICIAL_LINES[0]["observations"]


def test_large_import_shows_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "memory.jsonl"
    src.write_text(
        _official_text(
            [
                {"type": "entity", "name": f"e{i}", "entityType": "t", "observations": [f"o{i}"]}
                for i in range(6000)
            ]
        )
    )
    d = tmp_path / "noon"
    assert _noon(d, "import", str(src)) == 0
    captured = capsys.readouterr()
    assert "Imported 6000 of 6000 entities" in captured.out
    assert "importing" in captured.err
    assert len(kg_read(_store(d), "default", lambda view: view.graph())["entities"]) == 6000


def test_noon_format_is_lossless_and_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tmp_path / "a"
    src = tmp_path / "memory.jsonl"
    src.write_text(_official_text(OFFICIAL_LINES))
    _noon(a, "import", str(src))
    kg_mutate(
        _store(a),
        "default",
        plan.add_observations,
        [{"entityName": "Bob", "contents": ["written by n1 itself"]}],
        "test",
    )
    dump = tmp_path / "all.noon"
    assert _noon(a, "export", "--format", "noon", "-o", str(dump)) == 0
    b = tmp_path / "b"
    assert _noon(b, "import", str(dump)) == 0
    assert _shards(b) == _shards(a)  # the very same op lines, identities and digests
    capsys.readouterr()
    assert _noon(b, "import", str(dump)) == 0
    assert "Restored 0 operations" in capsys.readouterr().out
    # a tampered op is a fork: refused before anything is written
    lines = dump.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b"Alice", b"Alicia")
    dump.write_bytes(b"\n".join(lines))
    before = _shards(b)
    assert _noon(b, "import", str(dump)) == 1
    assert "forked shard" in capsys.readouterr().err
    assert _shards(b) == before


def _uri_of(store: Store, ns: str, node: str) -> set[str]:
    """Every URI reaching ``node`` by walking placements up to a domain root."""
    edges = {
        k: el.winner.val
        for k, el in store.fold.elements.items()
        if k[0] == "edge" and k[1] == ns and not el.deleted
    }
    found: set[str] = set()

    def up(child: str, suffix: list[str], depth: int) -> None:
        for (_, _, parent, name), val in edges.items():
            if val and val["child"] == child and depth < 10:
                if parent.startswith("@"):
                    found.add(f"{parent[1:]}://" + "/".join([name, *suffix]))
                else:
                    up(parent, [name, *suffix], depth + 1)

    up(node, [], 0)
    return found


def test_nocturne_database_imports_everything_and_reimport_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbfile = tmp_path / "nocturne.db"
    u = nocturne_db(dbfile)
    d = tmp_path / "noon"
    assert _noon(d, "import", str(dbfile)) == 0
    # 5 versions in the default namespace, and agent's 3 again in "team", which places it
    said = capsys.readouterr()
    assert "8 content versions of 3 memories" in said.out
    store = _store(d)
    els = store.fold.elements
    agent, identity, notes = node_id(u["agent"]), node_id(u["identity"]), node_id(u["notes"])
    # latest version shown, with its history in order, as one chain (no conflict)
    content = els[("content", "default", agent)]
    assert val_of(content.winner)["text"] == "Agent v3 (current)"
    assert [val_of(v)["text"] for v in sorted(content.versions, key=lambda o: o.order)] == [
        "Agent v1",
        "Agent v2",
        "Agent v3 (current)",
    ]
    assert not content.conflicted
    assert val_of(els[("content", "default", notes)].winner)["text"] == "Notes ✓"
    assert node_id(u["gone"]) not in {k[2] for k in els if k[0] == "content"}
    # ... and the import said so, naming it
    assert "1 Nocturne memory(ies) hold only deprecated versions" in said.err
    assert u["gone"] in said.err
    # URIs, aliases, priorities and disclosures
    assert _uri_of(store, "default", identity) == {"core://agent/identity"}
    assert _uri_of(store, "default", notes) == {"writer://notes", "core://agent/my_notes"}
    assert els[("edge", "default", agent, "identity")].winner.val == {
        "child": identity,
        "priority": 1,
        "disclosure": "when asked who you are",
    }
    assert els[("edge", "default", "@writer", "notes")].winner.val == {
        "child": notes,
        "priority": 5,
        "disclosure": "",
    }
    # namespaces: the team namespace sees only what its paths place
    assert _uri_of(store, "team", agent) == {"core://agent"}
    assert ("content", "team", agent) in els and ("content", "team", notes) not in els
    # keywords and boot
    assert ("keyword", "default", "Salem", identity) in els
    assert ("keyword", "default", "notes", notes) in els
    assert {k for k in els if k[0] == "boot"} == {
        ("boot", "default", agent),
        ("boot", "default", identity),
        ("boot", "team", agent),  # "team" has no list of its own: the default one applies
    }
    before = _shards(d)
    assert list(before) == ["n1-import.jsonl"]
    assert _noon(d, "import", str(dbfile)) == 0
    report = capsys.readouterr().out
    assert "0 content versions of 3 memories, 0 of 5 placements, 0 of 2 keywords" in report
    assert _shards(d) == before


def test_not_a_nocturne_database_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbfile = tmp_path / "other.db"
    db = sqlite3.connect(dbfile)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    assert _noon(tmp_path / "noon", "import", str(dbfile)) == 1
    assert "missing tables: nodes, memories, edges, paths" in capsys.readouterr().err
    assert not list((tmp_path / "noon").glob("*.jsonl"))


async def test_import_while_a_server_runs_reaches_its_clients(tmp_path: Path) -> None:
    d = tmp_path / "noon"
    d.mkdir()
    src = tmp_path / "memory.jsonl"
    src.write_text(_official_text(OFFICIAL_LINES))
    server = create_server(Store(make_settings(d)), make_settings(d), {"kg"})
    rec = Recorder()
    async with Client(server, mode="legacy", message_handler=rec) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource("memory://knowledge-graph")
        await client.call_tool(
            "create_entities",
            {"entities": [{"name": "Live", "entityType": "t", "observations": []}]},
        )
        assert await anyio.to_thread.run_sync(lambda: _noon(d, "import", str(src))) == 0
        await rec.wait(lambda: len(rec.updated()) >= 2)
        graph = (await client.call_tool("read_graph", {})).structured_content
    assert [e["name"] for e in graph["entities"]] == ["Live", "Alice", "Bob", "x/y: z"]
    assert set(_shards(d)) == {"n1.jsonl", "n1-import.jsonl"}


@pytest.mark.parametrize("planted", ["shard", "lock"])
def test_noon_format_import_never_writes_through_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: str
) -> None:
    """A link in NOON_DIR where the import would write (a shard or its lock): the import is
    refused before writing anything, the file it points at is untouched, the other shards of
    the export are not half-restored, and the store still serves its readers."""
    a = tmp_path / "a"
    src = tmp_path / "memory.jsonl"
    src.write_text(_official_text(OFFICIAL_LINES))
    _noon(a, "import", str(src))
    dump = tmp_path / "all.noon"
    assert _noon(a, "export", "--format", "noon", "-o", str(dump)) == 0
    b = tmp_path / "b"
    b.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not a shard\n")
    target = b / ("n1-import.jsonl" + (".lock" if planted == "lock" else ""))
    target.symlink_to(outside)
    capsys.readouterr()
    assert _noon(b, "import", str(dump)) == 1
    err = capsys.readouterr().err
    assert f"{target} is not a regular file" in err and "Nothing was imported" in err
    assert outside.read_bytes() == b"not a shard\n"
    assert target.is_symlink()
    assert sorted(p.name for p in b.iterdir() if not p.is_symlink()) == []
    target.unlink()  # the honest import goes through once the link is gone
    assert _noon(b, "import", str(dump)) == 0
    assert _shards(b) == _shards(a)
    graph = kg_read(_store(b), "default", lambda view: view.graph())
    assert [e["name"] for e in graph["entities"]] == ["Alice", "Bob", "x/y: z"]
