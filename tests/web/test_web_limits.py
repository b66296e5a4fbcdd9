"""What a client may cost ``noon web`` (issue 25, items 6, 10 and 11), against a real process
or the app in-process: half-sent requests capped per client and in all and closed after the
header timeout, a slow body answered 408, wrong tokens bounded per client and in all with a
true message, and every malformed argument of every route refused with a 4xx (a hypothesis
property over the routes) - each while an honest client is served and nothing is stored."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import socket
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, TCPConnector, web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noon.core.elements import entity_key, obs_key
from noon.core.ops import Draft
from noon.web import routes
from noon.web.guesses import Guesses
from tests.harness.mesh import free_port, subprocess_env, wait_until
from tests.harness.page import login, split_address, web_server
from tests.harness.web import AGENT, NS, open_store, page_server, seed

pytestmark = pytest.mark.integration

ATTACKER = "127.0.0.2"


def _open(sock: socket.socket) -> bool:
    """Whether the server still holds ``sock`` open (nothing to read, no end, no reset)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _honest(port: int, token: str) -> tuple[int, float]:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "GET", "/api/memory?uri=core://user", headers={"Authorization": f"Bearer {token}"}
        )
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert body["text"] == "The user is Salem. Salem likes tea."
        return resp.status, time.monotonic() - started
    finally:
        conn.close()


@contextlib.contextmanager
def _sockets() -> Iterator[list[socket.socket]]:
    held: list[socket.socket] = []
    try:
        yield held
    finally:
        for s in held:
            s.close()


def test_half_sent_requests_are_capped_and_closed_while_honest_clients_are_served(
    tmp_path: Path,
) -> None:
    d = tmp_path / "laptop"
    store = open_store(d)
    seed(store)
    shard, before = store.own, store.own.read_bytes()
    store.close()
    env = subprocess_env(
        NOON_FSYNC="false",
        NOON_WEB_HEADER_TIMEOUT="3",
        NOON_WEB_BODY_TIMEOUT="3",
        NOON_WEB_MAX_CONNECTIONS="100",
    )
    with web_server(d, "laptop", env=env) as (address, proc), _sockets() as held:
        base, token = split_address(address)
        assert token is not None
        port = int(base.rsplit(":", 1)[1])
        assert _honest(port, token)[0] == 200
        idle_fds = _fds(proc.pid)
        head = f"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Half: ".encode()
        started = time.monotonic()
        for _ in range(600):  # issue 25 saw 1,143 of these hold the open-files limit
            s = socket.create_connection(("127.0.0.1", port), source_address=(ATTACKER, 0))
            s.sendall(head)
            held.append(s)
        wait_until(lambda: sum(map(_open, held)) <= 32, timeout=30, what="the cap to close")
        assert sum(map(_open, held)) == 32  # per client: NOON_WEB_CONNECTIONS_PER_CLIENT
        assert _fds(proc.pid) <= idle_fds + 32 + 8
        served = [_honest(port, token) for _ in range(5)]  # during the attack
        assert all(status == 200 and took < 10 for status, took in served), served
        # Many addresses together stop at the total cap (100), not the open-files limit.
        for n in range(3, 8):
            for _ in range(32):
                s = socket.create_connection(
                    ("127.0.0.1", port), source_address=(f"127.0.0.{n}", 0)
                )
                s.sendall(head)
                held.append(s)
        wait_until(lambda: sum(map(_open, held)) <= 100, timeout=30, what="the total cap")
        assert _fds(proc.pid) <= idle_fds + 100 + 8
        # None of them finishes its head: each is closed at the header timeout.
        wait_until(lambda: not any(map(_open, held)), timeout=60, what="the header timeout")
        took = time.monotonic() - started
        assert 3 <= took < 40, took
        assert _honest(port, token)[0] == 200
        # A body that never arrives is answered 408 at the body timeout.
        slow = socket.create_connection(("127.0.0.1", port), source_address=(ATTACKER, 0))
        held.append(slow)
        slow.sendall(
            f"POST /api/memory/text HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            'Content-Length: 1000\r\n\r\n{"uri": '.encode()
        )
        sent = time.monotonic()
        slow.settimeout(30)
        answer = slow.recv(4096)
        waited = time.monotonic() - sent
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"did not arrive within 3 s" in answer and 2.5 <= waited < 20, waited
        assert _honest(port, token)[0] == 200
    assert shard.read_bytes() == before


async def test_wrong_tokens_are_bounded_per_client_and_in_all(tmp_path: Path) -> None:
    now = [1000.0]
    guesses = Guesses(clock=lambda: now[0])
    async with page_server(tmp_path, token="the-right-token", guesses=guesses) as page:
        seed(page.store)
        url = f"http://127.0.0.1:{page.port}/api/login"

        async def guess(source: str, token: str) -> tuple[int, str, str | None]:
            async with ClientSession(connector=TCPConnector(local_addr=(source, 0))) as c:
                r = await c.post(url, json={"token": token})
                return (
                    r.status,
                    (await r.json())["error" if r.status != 200 else "session"],
                    (r.headers.get("Retry-After")),
                )

        async def honest() -> int:
            status, info = await page.get("/api/info")
            assert info["node"] == "laptop"
            return status

        started = time.monotonic()
        answers, served = await asyncio.gather(
            asyncio.gather(*[guess(ATTACKER, f"guess-{i}") for i in range(200)]),
            asyncio.gather(*[honest() for _ in range(20)]),
        )
        took = time.monotonic() - started
        assert served == [200] * 20  # the page logged in is served throughout
        assert sorted(a[0] for a in answers) == [401] * 10 + [429] * 190  # 10 checked, no more
        limited = [a for a in answers if a[0] == 429]
        assert limited[0][1] == (
            f"Too many wrong tokens from {ATTACKER} (10 in the last 60 s): no token from this "
            "address is checked for 60 s more."
        )
        assert all(a[2] == "60" for a in limited)
        assert took < 30, took
        # Not even the right token is checked for that address now (the guesser learns nothing).
        assert (await guess(ATTACKER, "the-right-token"))[0] == 429
        r = await page.client.get("/api/info", headers={"Authorization": "Bearer wrong"})
        assert r.status == 401  # another address: checked, and counted
        # From all addresses together: 30 wrong in the window (11 so far), then none checked.
        assert [(await guess("127.0.0.3", "nope"))[0] for _ in range(10)] == [401] * 10
        assert [(await guess("127.0.0.4", "nope"))[0] for _ in range(10)] == [401] * 9 + [429]
        status, message, _ = await guess("127.0.0.9", "the-right-token")
        assert status == 429 and message.startswith("Too many wrong tokens (30 from all addresses")
        now[0] += 61  # the window moved on: the right token logs in again
        status, session, _ = await guess(ATTACKER, "the-right-token")
        assert status == 200 and session == page.session
        assert (await honest()) == 200


def _seed_kg(d: Path) -> tuple[Path, bytes]:
    store = open_store(d)
    seed(store)
    store.write(
        lambda f: [
            Draft(entity_key(NS, "Ada"), {"type": "person"}),
            Draft(obs_key(NS, "Ada", "likes tea", 0), {}),
        ],
        client=AGENT,
    )
    shard, before = store.own, store.own.read_bytes()
    store.close()
    return shard, before


ROUTES: dict[tuple[str, str], tuple[str, ...]] = {
    ("GET", "/api/info"): (),
    ("GET", "/api/domains"): (),
    ("GET", "/api/children"): ("uri", "offset", "limit"),
    ("GET", "/api/memory"): ("uri",),
    ("GET", "/api/search"): ("q", "domain", "limit"),
    ("GET", "/api/boot"): (),
    ("GET", "/api/changes"): ("view", "group", "before", "limit"),
    ("GET", "/api/change"): ("id",),
    ("GET", "/api/history"): ("uri", "offset", "limit"),
    ("GET", "/api/conflicts"): (),
    ("GET", "/api/orphans"): ("offset", "limit"),
    ("GET", "/api/kg/entities"): ("q", "offset", "limit"),
    ("GET", "/api/kg/entity"): ("name",),
    ("GET", "/api/mesh"): (),
    ("POST", "/api/login"): ("token",),
    ("POST", "/api/preview"): ("uri", "text"),
    ("POST", "/api/memory/text"): ("uri", "text", "expected_version"),
    ("POST", "/api/memory/placement"): (
        "uri",
        "priority",
        "disclosure",
        "expected_version",
        "expected_placement",
    ),
    ("POST", "/api/memory/create"): ("parent", "title", "text", "priority", "disclosure"),
    ("POST", "/api/memory/alias"): ("uri", "new_uri", "priority", "disclosure"),
    ("POST", "/api/memory/move"): ("uri", "new_uri", "expected_version"),
    ("POST", "/api/memory/delete"): ("uri", "recursive", "expected_version"),
    ("POST", "/api/memory/keywords"): ("uri", "add", "remove"),
    ("POST", "/api/memory/restore"): ("uri", "version", "expected_version"),
    ("POST", "/api/boot"): ("add", "remove"),
    ("POST", "/api/conflicts/resolve"): ("node", "keep", "text", "expected_heads"),
    ("POST", "/api/orphans/place"): ("node", "new_uri", "priority", "disclosure"),
    ("POST", "/api/orphans/delete"): ("node", "recursive"),
    ("POST", "/api/changes/approve"): ("ids", "through"),
    ("POST", "/api/changes/unreview"): ("id",),
    ("POST", "/api/changes/rollback"): ("ids", "basis"),
}
"""Every route with its parameters (docs/web.md); the events stream is checked on its own."""

HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["\x00", "core://\x00", "core://user\x00x", "\ud800", "core://\udfff", "%", "*", "'"]
    ),
    st.builds(lambda a, b: a + "\x00" + b, st.text(max_size=10), st.text(max_size=10)),
    st.just("x" * 5000),
    st.sampled_from(["core://user", "core://", "core://agent/style", "laptop:1", "Ada", "default"]),
)
JSON_VALUE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
        HOSTILE_TEXT,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(HOSTILE_TEXT, inner, max_size=3)
    ),
    max_leaves=8,
)
RAW_QUERY = st.sampled_from(
    ["%00", "%ed%a0%80", "%ff%fe", "%C0%80", "-1", "99999999999999", "1e3", ""]
)


def _quote(text: str) -> str:
    return urllib.parse.quote(text, errors="surrogatepass")


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, str, bytes | None]:
    method, path = draw(st.sampled_from(sorted(ROUTES)))
    names = [*ROUTES[(method, path)], "ns", draw(HOSTILE_TEXT)]
    if method == "GET":
        pairs = []
        for name in draw(st.lists(st.sampled_from(names), max_size=5)):
            raw = draw(st.one_of(RAW_QUERY, HOSTILE_TEXT.map(_quote)))
            pairs.append(f"{_quote(name)}={raw}")
        return method, path, "&".join(pairs), None
    body: Any = draw(
        st.one_of(
            st.dictionaries(st.sampled_from(names), JSON_VALUE, max_size=6),
            JSON_VALUE,
        )
    )
    sent = json.dumps(body, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    return method, path, "", sent


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str, Path, bytes]]:
    """A ``noon web`` process on a seeded store: its port, the page's session (never limited,
    unlike the token, which the fuzzed logins may lock out), its shard and the shard's bytes."""
    d = tmp_path_factory.mktemp("fuzz") / "laptop"
    shard, before = _seed_kg(d)
    daemon = f"https://127.0.0.1:{free_port()}"  # nothing listens there: the mesh page says so
    with web_server(d, "laptop", "--daemon-url", daemon) as (address, _):
        base, token = split_address(address)
        assert token is not None
        yield int(base.rsplit(":", 1)[1]), login(base, token), shard, before


def test_the_table_names_every_route() -> None:
    registered = set()
    for r in routes.routes:
        assert isinstance(r, web.RouteDef), r  # every route is a handler, none a static folder
        registered.add((r.method, r.path))
    assert registered | {("POST", "/api/login")} == set(ROUTES)


def _call(port: int, session: str, method: str, target: str, body: bytes | None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"X-Noon-Session": session}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, target, body=body, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw.decode(errors="replace")
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("target", "named"),
    [
        ("/api/kg/entities?q=%00", "'q'"),
        ("/api/kg/entities?q=a%00b", "'q'"),
        ("/api/kg/entity?name=Ada%00", "'name'"),
        ("/api/search?q=tea%00", "'q'"),
        ("/api/memory?uri=core://user%00", "'uri'"),
        ("/api/changes?before=%00", "'before'"),
        ("/api/change?id=laptop:1%00", "'id'"),
        ("/api/events?ns=%00", "'ns'"),
    ],
)
def test_a_nul_in_any_query_is_a_clean_refusal(
    served: tuple[int, str, Path, bytes], target: str, named: str
) -> None:
    port, token, _, _ = served
    status, body = _call(port, token, "GET", target, None)
    assert status == 400 and named in body["error"], (status, body)
    assert "sqlite" not in body["error"].lower() and "Internal" not in body["error"]
    assert _call(port, token, "GET", "/api/kg/entities?q=tea", None)[1]["total"] == 1


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(request=requests())
def test_every_malformed_argument_of_every_route_is_a_4xx_and_stores_nothing(
    served: tuple[int, str, Path, bytes], request: tuple[str, str, str, bytes | None]
) -> None:
    port, token, shard, _ = served
    method, path, query, body = request
    before = shard.read_bytes()
    started = time.monotonic()
    status, answer = _call(port, token, method, f"{path}?{query}" if query else path, body)
    took = time.monotonic() - started
    assert status < 500, (method, path, query, body, status, answer)
    assert took < 20, took
    if status >= 400:
        if isinstance(answer, str):  # refused by aiohttp's parser before any handler
            assert status == 400 and "Got more than 8190 bytes" in answer, (status, answer)
        else:
            assert isinstance(answer.get("error"), str) and answer["error"], answer
        assert shard.read_bytes() == before  # refused: nothing written
