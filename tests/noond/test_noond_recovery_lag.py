"""Own-shard claims: a member that merely received our newest ops by push while this exchange
began before they were written is no claim. The warning that tells the operator to recover or
revoke comes only when this machine really holds less (the shard is read again first)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from noon.core.ops import decode, encode
from noon.store.serve import Summary
from noond.client import OpsPage
from noond.membership import Member
from noond.recovery import Recovery
from noond.shards import Holdings


def line(seq: int) -> bytes:
    return encode(
        node="n",
        seq=seq,
        hlc=(1_700_000_000_000 << 16) + seq,
        el=("content", "default", f"e{seq}"),
        val={"text": "t"},
        prev=None,
        by="test",
        bat=None,
    )


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def labels(self, *_: str) -> Counter:
        return self

    def inc(self, by: int = 1) -> None:
        self.count += by


class Client:
    """A member that serves our shard from seq 1 to 6, as a peer that was pushed them does."""

    def __init__(self) -> None:
        self.asked = 0

    async def pull(self, address: str, **kw: Any) -> OpsPage:
        self.asked += 1
        after = kw["after"]
        body = b"".join(line(s) + b"\n" for s in range(after + 1, 7))
        return OpsPage(body=body, last=6, more=False, head=6, checked=True)


def recovery(d: Path) -> tuple[Recovery, Client]:
    client = Client()
    holdings = Holdings(d, "n", lambda: set())
    wiring: Any = SimpleNamespace(
        node="n",
        holdings=holdings,
        client=client,
        metrics=SimpleNamespace(rejected=Counter()),
        membership=None,
        forks=None,
        settings=None,
        signers=None,
    )
    state: Any = SimpleNamespace(recover={})
    return Recovery(wiring, puller=None, state=state, hold=1.0), client  # type: ignore[arg-type]


def write(d: Path, upto: int) -> None:
    (d / "n.jsonl").write_bytes(b"".join(line(s) + b"\n" for s in range(1, upto + 1)))


async def test_a_member_ahead_of_a_stale_view_only_is_no_claim(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, 3)
    rec, client = recovery(tmp_path)
    stale = await rec.holdings.summary("n")
    write(tmp_path, 6)  # local writers went on; a push gave the member seqs 4-6
    theirs = Summary("n", 6, decode(line(6)).digest)
    with caplog.at_level(logging.WARNING, logger="noond"):
        await rec.claimed(Member("m", "127.0.0.1:1"), "n", stale, theirs)
    assert rec.claims == {} and client.asked == 0
    assert "noon peers recover" not in caplog.text and "lying" not in caplog.text


async def test_a_member_holding_more_than_the_file_is_still_a_claim(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, 3)  # this machine lost seqs 4-6
    rec, _ = recovery(tmp_path)
    mine = await rec.holdings.summary("n")
    theirs = Summary("n", 6, decode(line(6)).digest)
    with caplog.at_level(logging.WARNING, logger="noond"):
        await rec.claimed(Member("m", "127.0.0.1:1"), "n", mine, theirs)
    assert [(c.seq, c.held) for c in rec.claims.values()] == [(6, 3)]
    assert "noon peers recover m" in caplog.text
