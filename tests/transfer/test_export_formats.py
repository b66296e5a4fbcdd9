"""``noon export`` in every format, each read back by ``noon import`` into a fresh store: the
same graph comes out. The default keeps everything; the Markdown folder is read by a YAML
front-matter reader as by noon; the official format says what it leaves out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from noon.cli import main
from noon.config import Settings
from noon.core.elements import boot_key
from noon.graph.reader import live_text, written_ms
from noon.kg import plan
from noon.store.access import kg_mutate, kg_read, service
from noon.store.readmodel.overview import namespaces
from noon.store.store import Store
from noon.transfer import markdown
from tests.harness.nocturne import nocturne_db


def _noon(d: Path, *args: str) -> int:
    return main([*args, "--dir", str(d), "--node-id", "n1"])


def _store(d: Path) -> Store:
    return Store(Settings.from_env({}, dir=d, node_id="n1"))


def _uri_graph(store: Store) -> dict[str, Any]:
    """Every namespace's memories as a reader sees them: text, when the current version was
    written, placements, keywords and boot entries."""
    svc = service(store)

    def dump(s: object) -> dict[str, Any]:
        g = svc.graph
        out: dict[str, Any] = {}
        for ns in sorted(namespaces(g.conn)):
            mems = {}
            for node in g.live_nodes(ns):
                el = g.content(ns, node)
                assert el is not None
                boot = g.element(boot_key(ns, node))
                mems[node] = {
                    "text": live_text(el),
                    "written": written_ms(el.winner),
                    "placements": sorted(tuple(p) for p in g.placements(ns, node)),
                    "keywords": g.keywords_of(ns, node),
                    "boot": None if boot is None or boot.deleted else boot.winner.val,
                }
            out[ns] = mems
        return out

    return svc.read(dump)


def _kg(store: Store, namespace: str) -> dict[str, Any]:
    return kg_read(store, namespace, lambda view: view.graph())


@pytest.fixture
def full_store(tmp_path: Path) -> Path:
    """Memories with versions, aliases, two namespaces, keywords and a boot list (a Nocturne
    database imported), and a knowledge graph in two namespaces."""
    d = tmp_path / "src"
    nocturne_db(tmp_path / "nocturne.db")
    assert _noon(d, "import", str(tmp_path / "nocturne.db")) == 0
    store = _store(d)
    for ns, name in (("default", "Alice"), ("team", "Bob")):
        kg_mutate(
            store,
            ns,
            plan.create_entities,
            [{"name": name, "entityType": "person", "observations": ["likes tea", "é ✓"]}],
            "test",
        )
    kg_mutate(
        store,
        "default",
        plan.create_relations,
        [{"from": "Alice", "to": "Ghost", "relationType": "haunts"}],
        "test",
    )
    return d


def test_default_export_keeps_every_memory_and_the_knowledge_graph(
    full_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "everything"
    assert _noon(full_store, "export", "-o", str(out)) == 0  # no --format
    fresh = tmp_path / "fresh"
    assert _noon(fresh, "import", str(out)) == 0
    before, after = _store(full_store), _store(fresh)
    assert _uri_graph(after) == _uri_graph(before)
    assert len(_uri_graph(after)["default"]) == 3
    for ns in ("default", "team"):
        assert _kg(after, ns) == _kg(before, ns)


def test_markdown_folder_round_trips_and_yaml_reads_its_front_matter(
    full_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "md"
    assert _noon(full_store, "export", "--format", "markdown", "-o", str(out)) == 0
    said = capsys.readouterr().out
    assert "Exported 4 memories and 2 entities with 1 relations of 2 namespace(s)" in said
    assert f"noon import {out}" in said
    # what it says works as written
    fresh = tmp_path / "fresh"
    assert _noon(fresh, "import", str(out)) == 0
    before, after = _store(full_store), _store(fresh)
    assert _uri_graph(after) == _uri_graph(before)
    for ns in ("default", "team"):
        assert _kg(after, ns) == _kg(before, ns)
    # a re-import adds nothing
    shards = {p.name: p.read_bytes() for p in fresh.glob("*.jsonl")}
    assert _noon(fresh, "import", str(out)) == 0
    assert "0 of 4 memories" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in fresh.glob("*.jsonl")} == shards
    # files at their URIs; a YAML reader sees the metadata; the body is the text exactly
    identity = (out / "default/core/agent/identity.md").read_text(encoding="utf-8")
    _, head, body = identity.split("---\n", 2)
    meta = yaml.safe_load(head)
    assert body == "I am the agent."
    assert meta["uri"] == "core://agent/identity" and meta["priority"] == 1
    assert meta["disclosure"] == "when asked who you are"
    assert meta["keywords"] == ["Salem"] and meta["boot"] == "core://agent/identity"
    assert meta["history"] == [meta["created"]] and meta["updated"].endswith("Z")
    notes = yaml.safe_load((out / "default/writer/notes.md").read_text().split("---\n")[1])
    assert not (out / "default/core/agent/my_notes.md").exists()  # one file a memory
    assert notes["aliases"] == ["core://agent/my_notes"] and notes["priority"] == 5
    assert [p["name"] for p in notes["placements"]] == ["notes", "my_notes"]
    agent = yaml.safe_load((out / "default/core/agent.md").read_text().split("---\n")[1])
    assert len(agent["history"]) == 3 and agent["history"][0] == agent["created"]
    assert (out / "team/core/agent.md").exists()
    kg_lines = (out / "default/memory.jsonl").read_text().split("\n")
    assert json.loads(kg_lines[0])["name"] == "Alice"


def test_markdown_export_refuses_a_folder_that_holds_something(
    full_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep me")
    assert _noon(full_store, "export", "--format", "markdown", "-o", str(taken)) == 1
    assert "not an empty folder" in capsys.readouterr().err
    assert [p.name for p in taken.iterdir()] == ["mine.txt"]
    assert _noon(full_store, "export", "--format", "markdown") == 1
    assert "-o DIR" in capsys.readouterr().err


def test_markdown_import_refuses_a_damaged_file_and_imports_nothing(
    full_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "md"
    assert _noon(full_store, "export", "--format", "markdown", "-o", str(out)) == 0
    target = out / "default/core/agent.md"
    target.write_text(target.read_text().replace('"priority": 0', '"priority": "high"'))
    (out / "default/core/stray.md").write_text("no front matter")
    fresh = tmp_path / "fresh"
    assert _noon(fresh, "import", str(out)) == 1
    err = capsys.readouterr().err
    assert "2 problem(s); nothing was imported" in err
    assert "default/core/agent.md: placements[0]: priority must be an integer" in err
    assert "default/core/stray.md: does not start with a '---' front matter line" in err
    assert not list(fresh.glob("*.jsonl"))


def test_official_format_says_it_leaves_the_uri_memories_out(
    full_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "memory.jsonl"
    assert _noon(full_store, "export", "--format", "official", "-o", str(out)) == 0
    err = capsys.readouterr().err
    assert "the 3 URI memories of namespace 'default' are not in it" in err
    fresh = tmp_path / "fresh"
    assert _noon(fresh, "import", str(out)) == 0
    assert _kg(_store(fresh), "default") == _kg(_store(full_store), "default")
    # the advice works as written
    assert _noon(full_store, "export", "--format", "noon", "-o", str(tmp_path / "all")) == 0
    assert _noon(tmp_path / "again", "import", str(tmp_path / "all")) == 0
    assert len(_uri_graph(_store(tmp_path / "again"))["default"]) == 3


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80)
NAME = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1).filter(
    lambda s: "/" not in s
)


@settings(max_examples=100, deadline=None)
@given(
    text=TEXT,
    disclosure=TEXT,
    name=NAME,
    keywords=st.lists(NAME, max_size=3),
    boot=st.one_of(st.none(), st.just(""), TEXT),
    history=st.lists(st.integers(0, 10**13), max_size=3),
)
def test_one_file_reads_back_the_same_for_noon_and_for_yaml(
    text: str,
    disclosure: str,
    name: str,
    keywords: list[str],
    boot: str | None,
    history: list[int],
) -> None:
    memory = markdown.MdMemory(
        namespace="default",
        node="0123abcd",
        text=text,
        uri=f"core://{name}",
        placements=[markdown.MdPlacement("@core", name, 3, disclosure)],
        keywords=keywords,
        boot=boot,
        history=history,
    )
    rendered = markdown.render(memory)
    back = markdown.parse(rendered)
    assert back == memory
    meta = yaml.safe_load(rendered.split("---\n", 2)[1])
    assert meta["disclosure"] == disclosure and meta["placements"][0]["name"] == name
    assert meta["keywords"] == keywords
    assert rendered.split("---\n", 2)[2] == text
