"""An in-process peer for exchange tests without processes: a :class:`noond.client.Transport`
that answers every request from a directory of its own, through the same store functions as
noond's routes (so an honest fake serves exactly what a daemon would), and that a test can
script to lie: override :meth:`FakePeer.answer` or set ``routes`` entries.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from noon.config import Settings
from noon.core.ops import Draft, decode
from noon.names import shard_file
from noon.store import receive, serve
from noon.store.errors import ForkDetected
from noon.store.store import Store
from noond.client import Client, Reply, Unreachable
from noond.exchange import Exchanger
from noond.forks import Forks
from noond.membership import Member, Membership
from noond.metrics import Metrics
from noond.shards import Holdings
from noond.signers import Signers
from noond.statefile import StateFile
from noond.wire import REVISIONS, Code, PageHeaders, listing_root, parse_checks, summary_json
from noond.wiring import ExchangeSettings, Wiring
from tests.harness.stores import plan_of

Route = Callable[["Request"], Awaitable[Reply]]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    params: Mapping[str, str]
    body: bytes | None
    headers: Mapping[str, str] = field(default_factory=dict)


def json_reply(obj: object, status: int = 200) -> Reply:
    return Reply(status, {"Content-Type": "application/json"}, orjson.dumps(obj), None)


def error_reply(status: int, code: Code, message: str) -> Reply:
    return json_reply({"error": message, "code": code.value}, status)


@dataclass
class FakePeer:
    node: str
    dir: Path
    routes: dict[str, Route] = field(default_factory=dict)
    """``"METHOD /path"`` -> a scripted answer instead of the honest one."""
    requests: list[Request] = field(default_factory=list)
    down: bool = False

    async def request(
        self,
        method: str,
        address: str,
        path: str,
        *,
        params: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes | None,
        limit: int,
    ) -> Reply:
        if self.down:
            raise Unreachable(f"{address}: connection refused")
        req = Request(method, path, dict(params), body, dict(headers))
        self.requests.append(req)
        scripted = self.routes.get(f"{method} {path}")
        reply = await (scripted(req) if scripted else self.answer(req))
        if len(reply.body) > limit:
            from noond.client import PeerError

            raise PeerError(f"{address}{path}: response exceeds {limit} bytes")
        return reply

    async def close(self) -> None:
        pass

    def summaries(self) -> dict[str, serve.Summary]:
        return {n: s for n, s in serve.Summaries(self.dir).all().items() if s.seq > 0}

    async def answer(self, req: Request) -> Reply:
        """What an honest noond answers."""
        if req.path == "/info":
            return json_reply(
                {
                    "node": self.node,
                    "protocol": REVISIONS[1],
                    "revisions": list(REVISIONS),
                    "capabilities": [],
                }
            )
        if req.path == "/shards/digest":
            root = listing_root(self.summaries())
            return json_reply({"root": root, "shards": 0, "members": ""})
        if req.path == "/shards":
            return json_reply({"shards": [summary_json(s) for s in self.summaries().values()]})
        if req.path == "/membership":
            return json_reply({"peers": [{"node": self.node, "address": "fake:1"}]})
        if req.path.startswith("/shards/") and req.path.endswith("/ops"):
            shard = req.path.split("/")[2]
            return self._get(shard, req) if req.method == "GET" else self._push(shard, req)
        return error_reply(404, Code.NOT_FOUND, "no such route")

    def _get(self, shard: str, req: Request) -> Reply:
        path = self.dir / shard_file(shard)
        checks = parse_checks(req.params["checks"]) if req.params.get("checks") else []
        check = int(req.params["check"], 16) if "check" in req.params else None
        try:
            page = serve.read_after(
                path,
                int(req.params.get("after", "0")),
                max_bytes=int(req.params.get("limit", str(1 << 20))),
                check=check,
                checks=checks or [],
            )
        except ForkDetected as exc:
            return error_reply(409, Code.FORK, str(exc))
        headers = PageHeaders(page.last, page.more, page.head, page.checked, page.ops).encode()
        body = page.body
        if body:
            gz = zlib.compressobj(6, zlib.DEFLATED, 31)
            body = gz.compress(body) + gz.flush()
            headers["Content-Encoding"] = "gzip"
        return Reply(200, headers, body, None)

    def _push(self, shard: str, req: Request) -> Reply:
        ops = receive.parse_ops(req.body or b"", shard, max_ops=200_000)
        try:
            done = receive.append(self.dir, shard, ops, fsync=False)
        except ForkDetected as exc:
            return error_reply(409, Code.FORK, str(exc))
        return json_reply({"appended": done.appended, "skipped": done.skipped, "head": done.head})


def write_texts_of(directory: Path, node: str, *texts: str) -> None:
    """``node`` writes one memory per text in ``directory`` (its own shard, ops 1..n)."""
    store = Store(Settings(dir=directory, node_id=node, fsync=False))
    for i, text in enumerate(texts):
        store.write(plan_of([Draft(("content", "default", f"{node}{i}"), {"text": text})]))
    store.close()


def seqs(path: Path) -> list[int]:
    """The seqs of a shard file, in file order (none when it does not exist)."""
    return [decode(raw).seq for raw in path.read_bytes().splitlines()] if path.exists() else []


@dataclass
class Local:
    """One node's exchange machinery, talking to a :class:`FakePeer`."""

    exchanger: Exchanger
    forks: Forks
    metrics: Metrics
    membership: Membership
    member: Member
    suggested: list[tuple[str, str | None, str]]

    def sample(self, name: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(name, labels) or 0.0


def local_node(
    directory: Path,
    node: str,
    peer: FakePeer,
    *,
    page_bytes: int = 1 << 20,
    signers: Signers | None = None,
) -> Local:
    """``node``'s exchange machinery in ``directory``; ``signers`` with a CA to verify what
    it takes (none: a test mesh without TLS, nothing verified)."""
    metrics = Metrics()
    membership = Membership(node, suspect_after=3, dead_after=6, dead_retry=1.0)
    forks = Forks(metrics)
    suggested: list[tuple[str, str | None, str]] = []
    client = Client(
        node=node,
        advertise="local:1",
        transport=peer,
        tls=False,
        max_body=32 << 20,
        metrics=metrics,
    )
    limits = ExchangeSettings(page_bytes=page_bytes, fsync=False, digest=True, recovery_hold=5.0)
    holdings = Holdings(directory, node, set)
    exchanger = Exchanger(
        Wiring(
            node,
            client,
            holdings,
            membership,
            forks,
            metrics,
            limits,
            signers or Signers(directory, None),
        ),
        state=StateFile(directory / ".noon" / "noond.json", membership),
        suggest=lambda address, node, source, via=None: suggested.append((address, node, source)),
    )
    member = membership.admit(peer.node, "fake:1")
    assert member is not None
    return Local(exchanger, forks, metrics, membership, member, suggested)
