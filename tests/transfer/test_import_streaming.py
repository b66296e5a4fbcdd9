"""``noon import`` of a JSON lines file streams it (checked whole, then read again a kind at a
time), answering exactly as reading the whole text does; and compacts the import shard at its end
only when something in it is superseded."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from noon.cli import main
from noon.transfer import importer, official
from noon.transfer.errors import TransferError
from tests.harness.nocturne import nocturne_db

LINES = [
    b'{"type":"entity","name":"A","entityType":"t","observations":["x","\\u00e9"]}',
    b'{"type":"relation","from":"A","to":"B","relationType":"r"}',
    b'{"type":"entity","name":"B","entityType":"t"}',
    b'{"entities":[],"relations":[]}',
    b'{"type":"widget"}',
    b'{"type":"entity","name":"C"',
    b"[1, 2]",
    b"   ",
    b"",
    b'{"type":"entity","name":"\xc3\xa9","entityType":"\xe2\x9c\x93"}\r',
    b'{"type":"entity","name":"bad \xff byte","entityType":"t"}',
]


def _whole(data: bytes, source: str) -> object:
    """What ``noon import`` answered before it streamed: the whole text, parsed at once."""
    try:
        graph = official.parse(data.decode("utf-8-sig"), source)
    except UnicodeDecodeError as exc:
        return f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})"
    except TransferError as exc:
        return str(exc)
    return (graph.entities, graph.relations)


@given(
    st.lists(st.sampled_from(LINES), max_size=12),
    st.booleans(),
    st.sampled_from([b"\n", b"\r\n"]),
)
@example([LINES[0], LINES[10], LINES[5]], True, b"\n")
@example([LINES[3]], False, b"\n")
def test_streamed_lines_read_as_the_whole_text_does(
    lines: list[bytes], bom: bool, newline: bytes
) -> None:
    data = (b"\xef\xbb\xbf" if bom else b"") + newline.join(lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.jsonl"
        path.write_bytes(data)
        try:
            streamed = official.open_lines(path, str(path))
        except TransferError as exc:
            assert str(exc) == _whole(data, str(path))
            return
        if streamed is None:  # read whole, as before
            return
        entities, relations = list(streamed.entities), list(streamed.relations)
        assert (entities, relations) == _whole(data, str(path))
        assert (len(streamed.entities), len(streamed.relations)) == (len(entities), len(relations))


def _compactions(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    ran: list[list[str]] = []
    real = importer.compact_dir

    def counted(directory: Path, shards: list[str], *, history: int) -> object:
        ran.append(shards)
        return real(directory, shards, history=history)

    monkeypatch.setattr(importer, "compact_dir", counted)
    return ran


def test_an_import_that_only_adds_is_not_compacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = _compactions(monkeypatch)
    src = tmp_path / "memory.jsonl"
    src.write_bytes(b"\n".join(LINES[:3]))
    d = tmp_path / "noon"
    assert main(["import", str(src), "--dir", str(d), "--node-id", "n1"]) == 0
    assert "Imported 2 of 2 entities and 1 of 1 relations" in capsys.readouterr().out
    assert ran == []


def test_an_import_that_supersedes_its_own_versions_is_compacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = _compactions(monkeypatch)
    dbfile = tmp_path / "nocturne.db"
    nocturne_db(dbfile)  # a memory with three versions: each names the one before
    d = tmp_path / "noon"
    assert main(["import", str(dbfile), "--dir", str(d), "--node-id", "n1"]) == 0
    assert ran == [["n1-import.jsonl"]]
