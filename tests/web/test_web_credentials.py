"""The page's credential cannot be used from another port (issue 25, item 2), in a real browser:
headless Chromium logs in to ``noon web`` as the person does (the printed address), then opens
a page served on another 127.0.0.1 port. Browsers scope cookies by host, not port, so a cookie
credential would reach that page's server; the session is kept in the origin's storage (scheme,
host and port) and sent in a header instead. The other page's server receives no cookie, its
script finds no credential and cannot read or write memory, and replaying everything it got
is refused; the person's page is served before and after."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, web

from tests.harness.browser import browser_page, skip_without_browser
from tests.harness.mesh import free_port
from tests.harness.page import split_address
from tests.harness.web import open_store, seed, text_of, web_process

pytestmark = [pytest.mark.integration, skip_without_browser()]

PROBE = """<!doctype html><meta charset="utf-8"><title>another port</title><script>
(async () => {
  const noon = %s;
  const seen = { cookie: document.cookie, local: { ...localStorage },
                 session: { ...sessionStorage } };
  try {
    const r = await fetch(noon + "/api/memory?uri=core://user", { credentials: "include" });
    seen.read = [r.status, await r.text()];
  } catch (err) { seen.read = ["blocked", String(err)]; }
  try {
    await fetch(noon + "/api/memory/text", {
      method: "POST", mode: "no-cors", credentials: "include",
      headers: { "Content-Type": "text/plain" },
      body: JSON.stringify({ uri: "core://user", text: "Rewritten from another port." }),
    });
  } catch (err) { /* the request left; Cross-Origin-Resource-Policy hides the answer */ }
  await fetch("/report", { method: "POST", body: JSON.stringify(seen) });
})();
</script>"""


class OtherPort:
    """A server on another loopback port: its page probes noon's, and it records every header
    the browser sent it and what its script reported."""

    def __init__(self, noon: str) -> None:
        self.noon = noon
        self.headers: list[dict[str, str]] = []
        self.report: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    async def page(self, request: web.Request) -> web.Response:
        self.headers.append(dict(request.headers))
        return web.Response(text=PROBE % json.dumps(self.noon), content_type="text/html")

    async def reported(self, request: web.Request) -> web.Response:
        self.headers.append(dict(request.headers))
        if not self.report.done():
            self.report.set_result(json.loads(await request.text()))
        return web.Response(text="ok")


async def test_a_page_on_another_loopback_port_gets_nothing_usable(tmp_path: Path) -> None:
    d = tmp_path / "laptop"
    store = open_store(d)
    seed(store)
    shard, before = store.own, store.own.read_bytes()
    store.close()
    with web_process(d) as address:
        base, token = split_address(address)
        assert token is not None
        other = OtherPort(base)
        app = web.Application()
        app.router.add_get("/", other.page)
        app.router.add_post("/report", other.reported)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            async with browser_page(address) as page:
                await page.goto("/#/browse?uri=core%3A%2F%2Fuser")
                body = page.locator("article.memory .body")
                await body.get_by_text("Salem likes tea.").wait_for()
                session = await page.evaluate("localStorage.getItem('noon-session')")
                assert session and session != token
                probe = await page.context.new_page()
                await probe.goto(f"http://127.0.0.1:{port}/")
                seen = await asyncio.wait_for(other.report, 30)
                await probe.close()
                # The person's page is still logged in and served.
                await page.reload()
                await body.get_by_text("Salem likes tea.").wait_for()
        finally:
            await runner.cleanup()
        received = json.dumps(other.headers)
        assert all("Cookie" not in h for h in other.headers), other.headers
        assert session not in received and token not in received
        assert seen["cookie"] == "" and seen["local"] == {} and seen["session"] == {}
        assert seen["read"][0] == "blocked", seen  # no CORS grant: the answer is unreadable
        # Everything the other port got, replayed by a program (without the headers that say
        # where a browser request came from), is refused.
        context = ("host", "origin", "referer", "content-length", "content-type")
        async with ClientSession() as client:
            for headers in other.headers:
                replay = {
                    k: v
                    for k, v in headers.items()
                    if k.lower() not in context and not k.lower().startswith("sec-fetch-")
                }
                r = await client.get(f"{base}/api/memory?uri=core://user", headers=replay)
                assert r.status == 401, (r.status, replay)
                r = await client.post(
                    f"{base}/api/memory/text",
                    json={"uri": "core://user", "text": "Replayed."},
                    headers=replay,
                )
                assert r.status == 401, (r.status, replay)
    assert shard.read_bytes() == before  # nothing written, by the probe or the replays
    assert text_of(d, "laptop", "core://user") == "The user is Salem. Salem likes tea."


async def test_without_the_token_the_page_asks_for_it_and_a_wrong_one_is_refused(
    tmp_path: Path,
) -> None:
    d = tmp_path / "laptop"
    store = open_store(d)
    seed(store)
    store.close()
    with web_process(d) as address:
        base, token = split_address(address)
        assert token is not None
        async with browser_page(base + "/", refusals=("401",)) as page:  # without the token
            await page.goto("/#token=not-the-token")
            await page.locator(".notice.error", has_text="Wrong token.").wait_for()
            assert "token" not in page.url  # dropped from the address even when refused
            form = page.locator("form.login")
            await form.get_by_text("Open the address noon web printed").wait_for()
            await form.get_by_label("Token").fill(token)
            await form.get_by_role("button", name="Log in").click()
            await (
                page.get_by_role("tree", name="Memories")
                .locator('[data-uri="core://user"]')
                .wait_for()
            )
