"""Coming from server-noonien: its shard directory, a single shard and its ``export`` (pretty
printed ``{entities, relations}``, also what ``read_graph`` returns) import, with the graph
server-noonien showed; bad shards import nothing and say where they are bad."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from noon.cli import main
from noon.config import Settings
from noon.mcp.server import create_server
from noon.store.access import kg_read
from noon.store.store import Store
from noon.transfer.noonien import NoonienOp, fold
from noon.transfer.noonien import read as read_shards
from tests.harness.mcp import make_settings
from tests.harness.noonien import T0, export_text, noonien_dir, op


def _noon(d: Path, *args: str) -> int:
    return main([*args, "--dir", str(d), "--node-id", "n1"])


def _graph(d: Path, namespace: str = "default") -> dict[str, Any]:
    store = Store(Settings.from_env({}, dir=d, node_id="n1"))
    try:
        return kg_read(store, namespace, lambda view: view.graph())
    finally:
        store.close()


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.jsonl"))} if d.exists() else {}


def test_a_noonien_directory_imports_as_noonien_showed_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = noonien_dir(tmp_path / ".noonien")
    d = tmp_path / "noon"
    assert _noon(d, "import", str(tmp_path / ".noonien")) == 0
    out = capsys.readouterr()
    assert "Imported 4 of 4 entities and 1 of 1 relations" in out.out
    assert "n1-import.jsonl, n1.jsonl, n1.sync-conflict-20260101.jsonl, n2.jsonl" in out.out
    assert "n2.jsonl:10: torn last line" in out.err
    assert _graph(d) == expected
    assert list(_files(d)) == ["n1-import.jsonl"]
    # again: nothing new
    before = _files(d)
    assert _noon(d, "import", str(tmp_path / ".noonien")) == 0
    assert "Imported 0 of 4 entities and 0 of 1 relations" in capsys.readouterr().out
    assert _files(d) == before


def test_one_shard_file_imports_alone(tmp_path: Path) -> None:
    noonien_dir(tmp_path / "src")
    d = tmp_path / "noon"
    assert _noon(d, "import", str(tmp_path / "src" / "n1.jsonl")) == 0
    assert _graph(d) == {
        "entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math", "math"]},
            {"name": "Bob", "entityType": "person", "observations": ["likes tea ✓"]},
        ],
        "relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}],
    }


def test_the_pretty_printed_export_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    expected = noonien_dir(tmp_path / "src")
    export = tmp_path / "export.json"
    export.write_text(export_text(expected), encoding="utf-8")
    assert export.read_text().count("\n") > 12  # the shape that used to be "malformed lines"
    d = tmp_path / "noon"
    assert _noon(d, "import", str(export)) == 0
    assert "Imported 4 of 4 entities and 1 of 1 relations" in capsys.readouterr().out
    assert _graph(d) == expected


async def test_what_read_graph_returns_imports_elsewhere(tmp_path: Path) -> None:
    noonien_dir(tmp_path / "src")
    a = tmp_path / "a"
    assert _noon(a, "import", str(tmp_path / "src")) == 0
    settings = make_settings(a)
    server = create_server(Store(settings), settings, {"kg"})
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("read_graph", {})
    text = "".join(getattr(c, "text", "") for c in result.content)
    dump = tmp_path / "read_graph.json"
    dump.write_text(text, encoding="utf-8")
    b = tmp_path / "b"
    assert _noon(b, "import", str(dump)) == 0
    assert _graph(b) == _graph(a)


def test_a_bad_document_names_its_items_and_imports_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "entities": [{"name": "A", "entityType": "t", "observations": ["o"]}, {"name": 3}],
        "relations": [{"from": "A", "to": "A"}],
    }
    src = tmp_path / "export.json"
    src.write_text(json.dumps(doc, indent=2))
    d = tmp_path / "noon"
    assert _noon(d, "import", str(src)) == 1
    err = capsys.readouterr().err
    assert "2 problem(s); nothing was imported" in err
    assert "entities[1]: entity without a string 'name'" in err
    assert "relations[0]: relation without a string 'relationType'" in err
    assert _files(d) == {}


def test_bad_shard_lines_are_named_and_nothing_is_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    noonien_dir(src)
    good = op("n3", 0, T0, 0, "entity.create", name="Eve", entityType="person")
    lines = [
        good,
        "{not json",
        op("n3", 1, T0, 1, "entity.rename", name="Eve"),
        good.replace('"seq":0', '"seq":1'),  # the id no longer matches
        op("n3", 2, T0, 2, "observation.add", entityName="Eve", content=7),
        op("n3", 0, T0, 0, "entity.create", name="Mallory", entityType="person"),  # same id
        op("n3", 3, T0, 3, "entity.create", name="Ok", entityType="t"),
    ]
    (src / "n3.jsonl").write_text("\n".join(lines) + "\n")
    d = tmp_path / "noon"
    started = time.monotonic()
    assert _noon(d, "import", str(src)) == 1
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert "5 problem(s); nothing was imported" in err
    assert "n3.jsonl:2: not JSON" in err
    assert "n3.jsonl:3: unknown operation type 'entity.rename'" in err
    assert "n3.jsonl:4: 'id' must be" in err
    assert "n3.jsonl:5: observation.add without a string 'content'" in err
    assert "n3.jsonl:6: another operation has id" in err and "NOONIEN_NODE_ID" in err
    assert _files(d) == {}


def test_an_empty_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (tmp_path / "empty").mkdir()
    assert _noon(tmp_path / "noon", "import", str(tmp_path / "empty")) == 1
    assert "no server-noonien shard" in capsys.readouterr().err


def test_importing_from_noonien_works_where_its_settings_linger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The remedy the refusal names must run where the refusal fires."""
    noonien_dir(tmp_path / ".noonien")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NOONIEN_DIR", str(tmp_path / ".noonien"))
    monkeypatch.setenv("NOON_NODE_ID", "n1")
    assert main(["status"]) == 1
    assert "noon import" in capsys.readouterr().err
    assert main(["import", str(tmp_path / ".noonien")]) == 0
    assert "rename to NOON_DIR" in capsys.readouterr().err  # still said, as a warning
    assert len(_graph(tmp_path / ".noon")["entities"]) == 4


# -- the fold, against a replay of every op in order -------------------------------------------

NAMES = ("a", "b", "c")
CONTENTS = ("x", "y")


@st.composite
def noonien_ops(draw: st.DrawFn) -> list[NoonienOp]:
    out = []
    for i in range(draw(st.integers(0, 30))):
        kind = draw(
            st.sampled_from(
                [
                    "entity.create",
                    "entity.delete",
                    "observation.add",
                    "observation.delete",
                    "relation.add",
                    "relation.delete",
                ]
            )
        )
        name, other = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
        content = draw(st.sampled_from(CONTENTS))
        payload: tuple[Any, ...] = {
            "entity.create": (name, draw(st.sampled_from(("person", "place")))),
            "entity.delete": (name,),
            "observation.add": (name, content, draw(st.integers(0, 1))),
            "observation.delete": (name, content),
            "relation.add": (name, other, "r"),
            "relation.delete": (name, other, "r"),
        }[kind]
        stamp = f"{draw(st.integers(0, 5)):015d}:{i:06d}"
        node = draw(st.sampled_from(("n1", "n2"))).encode("utf-16-be")
        out.append(NoonienOp((stamp, node, i), kind, payload))
    return out


def replay(ops: list[NoonienOp]) -> dict[str, Any]:
    """server-noonien's semantics applied one op at a time, oldest first."""
    entities: dict[str, str | None] = {}
    occurrences: dict[tuple[str, str, int], tuple[Any, ...]] = {}
    relations: dict[tuple[str, ...], bool] = {}
    for o in sorted(ops, key=lambda o: o.order):
        if o.type == "entity.create":
            entities[o.payload[0]] = o.payload[1]
        elif o.type == "entity.delete":
            entities[o.payload[0]] = None
        elif o.type == "observation.add":
            occurrences[o.payload] = o.order
        elif o.type == "observation.delete":
            for key in [k for k in occurrences if k[:2] == o.payload]:
                del occurrences[key]
        else:
            relations[o.payload] = o.type == "relation.add"
    present = {n: t for n, t in entities.items() if t is not None}
    shown = sorted((order, key) for key, order in occurrences.items() if key[0] in present)
    return {
        "entities": [
            {
                "name": n,
                "entityType": present[n],
                "observations": [k[1] for _, k in shown if k[0] == n],
            }
            for n in sorted(present)
        ],
        "relations": [
            {"from": r[0], "to": r[1], "relationType": r[2]}
            for r in sorted(relations)
            if relations[r] and r[0] in present and r[1] in present
        ],
    }


@given(noonien_ops(), st.randoms())
def test_the_fold_equals_a_replay_in_any_order(ops: list[NoonienOp], rnd: random.Random) -> None:
    shuffled = list(ops)
    rnd.shuffle(shuffled)
    graph = fold(shuffled)
    assert {"entities": graph.entities, "relations": graph.relations} == replay(ops)


@given(noonien_ops(), st.randoms())
def test_shards_merge_whatever_way_the_ops_are_split(
    tmp_path_factory: pytest.TempPathFactory, ops: list[NoonienOp], rnd: random.Random
) -> None:
    """Read from files: any split of the lines over shards (with repeats) reads the same."""
    d = tmp_path_factory.mktemp("shards")
    lines = []
    for o in ops:
        ms, counter = int(o.order[0][:15]), int(o.order[0][16:])
        node = o.order[1].decode("utf-16-be")
        fields = dict(zip(_FIELDS[o.type], o.payload, strict=True))
        lines.append(op(node, o.order[2], T0 + ms, counter, o.type, **fields))
    for i in range(3):
        chosen = [ln for ln in lines if rnd.random() < 0.6] if i else lines
        (d / f"s{i}.jsonl").write_text("\n".join(chosen) + "\n")
    found = read_shards(d)
    assert {"entities": found.graph.entities, "relations": found.graph.relations} == replay(ops)


_FIELDS = {
    "entity.create": ("name", "entityType"),
    "entity.delete": ("name",),
    "observation.add": ("entityName", "content", "slot"),
    "observation.delete": ("entityName", "content"),
    "relation.add": ("from", "to", "relationType"),
    "relation.delete": ("from", "to", "relationType"),
}


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("deep.jsonl", "[" * 200_000),  # exhausts the decoder's recursion
        ("long.jsonl", '{"type":"entity","name":"x","entityType":' + "9" * 50_000 + "}"),
        ("deep.json", '{"entities": ' + "[" * 200_000),
        ("shards/n9.jsonl", '{"v":1,"type":"entity.create","x":' + "[" * 200_000 + "\n"
         + op("n9", 0, T0, 0, "entity.create", name="A", entityType="t") + "\n"),
    ],
)  # fmt: skip
def test_hostile_files_are_refused_quickly_and_leave_the_memory_usable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, body: str
) -> None:
    d = tmp_path / "noon"
    good = tmp_path / "good.json"
    good.write_text(export_text({"entities": [], "relations": []} | _ONE))
    src = tmp_path / name
    src.parent.mkdir(exist_ok=True)
    src.write_text(body)
    started = time.monotonic()
    # a shard inside a directory is read as server-noonien's, whatever its first bytes say
    assert _noon(d, "import", str(src if "/" not in name else src.parent)) == 1
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert "nothing was imported" in err and "Traceback" not in err
    assert _files(d) == {}
    assert _noon(d, "import", str(good)) == 0  # and the next, honest import goes through
    assert _graph(d)["entities"] == _ONE["entities"]


_ONE = {"entities": [{"name": "A", "entityType": "t", "observations": ["kept"]}]}
