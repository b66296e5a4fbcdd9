"""The page server's guards, in-process on a loopback port: a rebinding Host, a cross origin
and a missing session refused, the token required on loopback and traded for the session,
hostile requests refused while honest ones are served, and live connections bounded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.harness.web import page_server, seed

U = {"uri": "core://user"}


async def test_rebinding_host_cross_origin_and_a_missing_session_are_refused(
    tmp_path: Path,
) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        before = page.shard()
        c = page.client
        r = await c.get("/api/info", headers={"Host": f"attacker.example:{page.port}"})
        assert r.status == 421 and "DNS rebinding" in (await r.json())["error"]
        r = await c.get("/", headers={"Host": "127.0.0.1:1"})
        assert r.status == 421
        body = {**U, "text": "pwned"}
        status, answer = await page.post("/api/memory/text", body, Origin="http://attacker.example")
        assert status == 403 and "Cross-origin" in answer["error"]
        status, answer = await page.post(
            "/api/memory/text", body, **{"Sec-Fetch-Site": "cross-site"}
        )
        assert status == 403
        r = await c.post("/api/memory/text", json=body)
        assert r.status == 401 and "open the address noon web printed" in (await r.json())["error"]
        r = await c.post("/api/memory/text", json=body, headers={"X-Noon-Session": "guess"})
        assert r.status == 401
        assert page.shard() == before
        status, _ = await page.post(
            "/api/memory/text", body, Origin=f"http://127.0.0.1:{page.port}"
        )
        assert status == 200
        r = await c.get("/")
        for header in ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"):
            assert header in r.headers
        assert "Set-Cookie" not in r.headers  # no credential is a cookie


async def test_the_token_is_required_on_loopback_and_traded_for_the_session(
    tmp_path: Path,
) -> None:
    async with page_server(tmp_path, token="s3cret-token") as page:
        seed(page.store)
        c = page.client
        r = await c.get("/api/info")
        assert r.status == 401 and "token" in (await r.json())["error"]
        r = await c.get("/")
        assert r.status == 200 and "noon" in await r.text()  # the shell holds no data
        r = await c.get("/static/app.css")
        assert r.status == 200  # assets hold no data
        r = await c.get("/api/info", headers={"Authorization": "Bearer wrong"})
        assert r.status == 401
        r = await c.get("/api/info", headers={"Authorization": "Bearer s3cret-token"})
        assert r.status == 200
        r = await c.post(
            "/api/memory/text",
            json={**U, "text": "by a program"},
            headers={"Authorization": "Bearer s3cret-token"},
        )
        assert r.status == 200
        status, answer = await page.post("/api/login", {"token": "wrong"})
        assert status == 401 and answer == {"error": "Wrong token."}
        r = await c.post("/api/login", json={"token": "s3cret-token"})
        session = (await r.json())["session"]
        assert r.status == 200 and session == page.session and "Set-Cookie" not in r.headers
        r = await c.get("/api/info", headers={"X-Noon-Session": session})
        assert r.status == 200
        assert session != "s3cret-token" and len(session) >= 40


async def test_hostile_requests_are_refused_and_honest_ones_served(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        before = page.shard()
        junk = b'{"uri": "core://user", "text": "' + b"x" * (9 << 20) + b'"}'
        headers = {**page.auth, "Content-Type": "application/json"}

        async def hostile() -> int:
            r = await page.client.post("/api/memory/text", data=junk, headers=headers)
            return r.status

        async def honest() -> int:
            status, m = await page.get("/api/memory", **U)
            assert m["text"].startswith("The user is Salem")
            return status

        started = time.monotonic()
        results = await asyncio.gather(
            *[hostile() for _ in range(8)], *[honest() for _ in range(8)]
        )
        took = time.monotonic() - started
        assert results[:8] == [413] * 8 and results[8:] == [200] * 8
        assert took < 20, took
        assert page.shard() == before


@pytest.mark.parametrize("count", [33])
async def test_live_connections_are_bounded(tmp_path: Path, count: int) -> None:
    async with page_server(tmp_path) as page:
        opened = []
        for _ in range(count - 1):
            r = await page.client.get("/api/events", headers=page.auth)
            assert r.status == 200
            await r.content.readuntil(b"\n\n")
            opened.append(r)
        r = await page.client.get("/api/events", headers=page.auth)
        assert r.status == 503 and "Too many live pages" in (await r.json())["error"]
        for o in opened:
            o.close()
