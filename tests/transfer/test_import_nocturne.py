"""Coming from Nocturne Memory: the boot list of every install generation (the presets table,
``config.json``, ``.env``, or one named with ``--nocturne-config``) boots under the URIs it
listed; each version keeps when Nocturne wrote it; a database without a boot list is reported.
The PostgreSQL tests (Nocturne's Docker deployment) run against a real server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from noon.cli import main
from noon.config import Settings
from noon.core.elements import boot_key, content_key
from noon.store.store import Store
from noon.transfer.nocturne import node_id
from tests.harness.nocturne import (
    UUIDS,
    nocturne_db,
    nocturne_postgres,
    write_config,
    write_dotenv,
)
from tests.harness.postgres import postgres_server
from tests.harness.uri import Session, make_server, open_store

AGENT, IDENTITY, NOTES = (node_id(UUIDS[k]) for k in ("agent", "identity", "notes"))


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Nocturne's naive times are read in the local zone: make it UTC for exact expectations."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _noon(d: Path, *args: str) -> int:
    return main([*args, "--dir", str(d), "--node-id", "n1"])


def _store(d: Path) -> Store:
    return Store(Settings.from_env({}, dir=d, node_id="n1"))


def _boots(d: Path) -> dict[tuple[str, ...], Any]:
    store = _store(d)
    try:
        return {
            k: el.winner.val
            for k, el in store.fold.elements.items()
            if k[0] == "boot" and not el.deleted
        }
    finally:
        store.close()


async def _read(d: Path, uri: str, namespace: str = "default") -> str:
    store, settings = open_store(d, "n1", namespace)
    try:
        async with Client(make_server(store, settings)) as client:
            return await Session(client).read(uri)
    finally:
        store.close()


# -- the boot list, from every place Nocturne kept it -----------------------------------------


async def test_a_dotenv_boot_list_boots_under_the_uris_it_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nocturne_data.db"
    nocturne_db(db, presets_table=False)
    write_dotenv(tmp_path, ["core://agent", "core://agent/my_notes", "core://missing"])
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 0
    out = capsys.readouterr()
    # the list is the default namespace's, and so also that of "team", which has no list
    assert f"3 of 3 boot entries (boot list from {tmp_path / '.env'}" in out.out
    assert "boot URI core://missing names no memory in namespace 'default'" in out.err
    assert "core://agent/my_notes names no memory in namespace 'team'" in out.err
    assert _boots(d)[boot_key("default", NOTES)] == {"uri": "core://agent/my_notes"}
    boot = await _read(d, "system://boot")
    assert "# Loaded: 2/2 memories" in boot
    # notes is also writer://notes, a shorter URI: it boots under the one the list named
    assert "MEMORY: core://agent/my_notes" in boot and "MEMORY: writer://notes" not in boot
    assert "Disclosure: alias of notes" in boot  # the placement of that URI
    # once that URI names something else, the memory boots under its best remaining URI
    store, settings = open_store(d, "n1")
    try:
        async with Client(make_server(store, settings)) as client:
            s = Session(client)
            await s.call("move_memory", uri="core://agent/my_notes", new_uri="core://agent/kept")
            await s.create("core://agent", "my_notes", "another memory now")
            boot = await s.read("system://boot")
    finally:
        store.close()
    assert "MEMORY: writer://notes" in boot and "MEMORY: core://agent/my_notes" not in boot


async def test_config_json_wins_over_dotenv_and_namespaces_fall_back_to_the_default_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nocturne_data.db"
    nocturne_db(db, presets_table=False)
    write_dotenv(tmp_path, ["core://agent/identity"])
    write_config(tmp_path, {"": ["core://agent"]})
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 0
    assert f"boot list from {tmp_path / 'config.json'}" in capsys.readouterr().out
    assert _boots(d) == {
        boot_key("default", AGENT): {"uri": "core://agent"},
        boot_key("team", AGENT): {"uri": "core://agent"},  # "team" has no list of its own
    }
    assert "MEMORY: core://agent" in await _read(d, "system://boot", "team")


def test_the_active_preset_and_its_namespace_fallback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nocturne.db"
    nocturne_db(db)
    write_dotenv(tmp_path, ["core://agent/my_notes"])  # older than the preset: not read
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 0
    out = capsys.readouterr()
    assert "3 of 3 boot entries (boot list from the database's active preset" in out.out
    assert "core://agent/identity names no memory in namespace 'team'" in out.err
    assert set(_boots(d)) == {
        boot_key("default", AGENT),
        boot_key("default", IDENTITY),
        boot_key("team", AGENT),
    }


def test_an_explicit_config_wins_over_the_preset(tmp_path: Path) -> None:
    db = tmp_path / "nocturne.db"
    nocturne_db(db)
    other = tmp_path / "elsewhere"
    other.mkdir()
    env = write_dotenv(other, ["core://agent/my_notes"], team=["core://agent"])
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db), "--nocturne-config", str(env)) == 0
    assert _boots(d) == {
        boot_key("default", NOTES): {"uri": "core://agent/my_notes"},
        boot_key("team", AGENT): {"uri": "core://agent"},
    }


def test_no_boot_list_at_all_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nocturne.db"
    nocturne_db(db, presets_table=False)
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 0
    out = capsys.readouterr()
    assert "0 of 0 boot entries (boot list from none" in out.out
    assert "no boot list found" in out.err and "--nocturne-config" in out.err
    assert _boots(d) == {}
    empty = tmp_path / "empty.db"
    nocturne_db(empty, presets={"": []})
    assert _noon(tmp_path / "noon2", "import", str(empty)) == 0
    assert "loads no memory: system://boot will load nothing" in capsys.readouterr().err


def test_a_bad_config_imports_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "nocturne.db"
    nocturne_db(db, presets_table=False)
    (tmp_path / "config.json").write_text('{"boot_uris": {"": "core://agent"}}')
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 1
    assert "boot_uris must map namespaces to lists of URIs" in capsys.readouterr().err
    assert not list(d.glob("*.jsonl"))
    assert _noon(d, "import", str(db), "--nocturne-config", str(tmp_path / "nope.json")) == 1
    assert "--nocturne-config" in capsys.readouterr().err and not list(d.glob("*.jsonl"))


# -- when each version was written ---------------------------------------------------------------


async def test_each_version_keeps_when_nocturne_wrote_it(
    tmp_path: Path, utc: None, capsys: pytest.CaptureFixture[str]
) -> None:
    started_ms = time.time_ns() // 1_000_000
    db = tmp_path / "nocturne.db"
    nocturne_db(db)
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 0
    store = _store(d)
    versions = sorted(store.fold.elements[content_key("default", AGENT)].versions,
                      key=lambda o: o.order)  # fmt: skip
    store.close()
    assert [v.val for v in versions] == [
        {"text": "Agent v1", "written": 1_767_225_601_000},
        {"text": "Agent v2", "written": 1_767_225_602_000},
        {"text": "Agent v3 (current)", "written": 1_767_225_603_000},
    ]
    # the ops themselves are stamped now, strictly increasing: the node's clock never goes back
    shard = (d / "n1-import.jsonl").read_text().splitlines()
    stamps = [int(line.split('"hlc":')[1].split(",")[0]) for line in shard]
    assert stamps == sorted(set(stamps)) and stamps[0] >> 16 >= started_ms - 1000
    history = await _read(d, "system://history/core://agent")
    assert "2026-01-01 00:00:03 UTC (imported " in history
    assert "2026-01-01 00:00:01 UTC (imported " in history
    assert "Last Modified: 2026-01-01 00:00:03 UTC" in await _read(d, "core://agent")
    assert "Last Modified: 2026-01-01 00:00:05 UTC" in await _read(d, "writer://notes")
    capsys.readouterr()
    assert main(["history", "core://agent", "--dir", str(d), "--node-id", "n1"]) == 0
    assert "written 2026-01-01T00:00:02.000Z, before the import" in capsys.readouterr().out


def test_an_import_compacts_its_shard_once_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction waits for the end of an import (during it, each chunk would re-scan the whole
    directory) and then runs whatever the import's size."""
    monkeypatch.setenv("NOON_HISTORY", "1")
    db = tmp_path / "nocturne.db"
    nocturne_db(db)
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 0
    store = _store(d)
    el = store.fold.elements[content_key("default", AGENT)]
    texts = [v.val["text"] for v in el.versions if v.val]
    store.close()
    assert texts == ["Agent v2", "Agent v3 (current)"]  # the newest and one before it


# -- PostgreSQL --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def _database(server_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def _folded(d: Path) -> dict[tuple[str, ...], Any]:
    """Every element's versions' values, oldest first: what an import wrote, minus its clock."""
    store = _store(d)
    try:
        return {
            k: [v.val for v in sorted(el.versions, key=lambda o: o.order)]
            for k, el in store.fold.elements.items()
        }
    finally:
        store.close()


@pytest.mark.integration
async def test_a_postgres_deployment_imports_like_its_sqlite_twin(
    postgres: str, tmp_path: Path, utc: None, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    url = _database(postgres, "nocturne")
    with psycopg.connect(url) as conn:
        nocturne_postgres(conn)
    from_pg = tmp_path / "from_pg"
    # Nocturne's own DATABASE_URL form, as its config.json holds it
    assert _noon(from_pg, "import", url.replace("postgresql://", "postgresql+asyncpg://")) == 0
    out = capsys.readouterr().out
    assert "8 content versions of 3 memories, 5 of 5 placements, 2 of 2 keywords" in out
    assert "3 of 3 boot entries (boot list from the database's active preset" in out
    from_sqlite = tmp_path / "from_sqlite"
    nocturne_db(tmp_path / "nocturne.db")
    assert _noon(from_sqlite, "import", str(tmp_path / "nocturne.db")) == 0
    assert _folded(from_pg) == _folded(from_sqlite)
    assert "MEMORY: core://agent/identity" in await _read(from_pg, "system://boot")
    # read-only: the database is as it was
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (6,)
    # and again: nothing new
    before = {p.name: p.read_bytes() for p in from_pg.glob("*.jsonl")}
    assert _noon(from_pg, "import", url) == 0
    assert {p.name: p.read_bytes() for p in from_pg.glob("*.jsonl")} == before


@pytest.mark.integration
def test_postgres_problems_are_clear_bounded_and_import_nothing(
    postgres: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "noon"
    empty = _database(postgres, "not_nocturne")
    assert _noon(d, "import", empty) == 1
    assert "not a Nocturne Memory database (missing tables: nodes, memories" in (
        capsys.readouterr().err
    )
    missing = postgres.rsplit("/", 1)[0] + "/no_such_db"
    assert _noon(d, "import", missing) == 1
    assert "cannot connect" in capsys.readouterr().err
    from tests.harness.mesh import free_port

    started = time.monotonic()
    assert _noon(d, "import", f"postgresql://me:hunter2@127.0.0.1:{free_port()}/x") == 1
    assert time.monotonic() - started < 15
    err = capsys.readouterr().err
    assert "cannot connect" in err and "hunter2" not in err and "me:***@" in err
    assert not d.exists() or not list(d.glob("*.jsonl"))


async def test_recent_after_an_import_follows_the_original_times(tmp_path: Path, utc: None) -> None:
    """The import writes agent's three versions last (one level a batch), but Nocturne wrote
    notes last: system://recent orders by the times Nocturne wrote, as it shows them."""
    db = tmp_path / "nocturne.db"
    nocturne_db(db)
    d = tmp_path / "noon"
    assert _noon(d, "import", str(db)) == 0
    recent = await _read(d, "system://recent")
    listed = [line.split()[1] for line in recent.splitlines() if line[:1].isdigit()]
    assert listed == ["writer://notes", "core://agent/identity", "core://agent"]
    assert "modified: 2026-01-01 00:00:05 UTC" in recent.splitlines()[4]
    # a memory written now is newer than every imported one
    store, settings = open_store(d, "n1")
    try:
        async with Client(make_server(store, settings)) as client:
            await Session(client).create("core://", "today", "written after the import")
            recent = await Session(client).read("system://recent")
    finally:
        store.close()
    listed = [line.split()[1] for line in recent.splitlines() if line[:1].isdigit()]
    assert listed[:2] == ["core://today", "writer://notes"]
