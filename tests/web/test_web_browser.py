"""The page in a real browser (headless Chromium from the system's packages, through
Playwright) against a real ``noon web`` process: browse and search; an edit refused because an
agent changed the memory meanwhile; an agent's change made through a real ``noon serve`` over
MCP appearing live, reviewed and rolled back, and the rollback reaching a second machine through
two real ``noond`` daemons; a conflict settled; a move undone. The pages' screenshots for the
README are taken here (``NOON_SCREENSHOTS=1`` writes them to docs/screenshots)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.async_api import TimeoutError as PlaywrightTimeout

from noon.core.elements import review_key
from noon.graph import plan
from noon.graph.uri import parse
from noon.store.access import service
from noon.store.readmodel.graph import SqlGraph
from tests.harness.browser import browser_page, screenshot, skip_without_browser
from tests.harness.mcp import http_server, tool_text
from tests.harness.mesh import Node, Pki, start_all, subprocess_env, wait_until
from tests.harness.web import AGENT, NS, agent_edit, open_store, seed, text_of, web_process

pytestmark = [pytest.mark.integration, skip_without_browser()]


async def open_with_keyboard(page: Any, tree: Any, uri: str, child: str) -> None:
    """Open ``uri`` in the tree with the Right key until ``child`` shows. The live update of
    a change just made may redraw the tree between the focus and the key press (the press
    then reaches nothing): press again, for 30 s at most."""
    deadline = time.monotonic() + 30
    while True:
        await tree.locator(f'[data-uri="{uri}"]').focus()
        await page.keyboard.press("ArrowRight")
        try:
            await tree.locator(f'[data-uri="{child}"]').wait_for(timeout=3000)
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise


async def test_browse_and_search(tmp_path: Path) -> None:
    d = tmp_path / "laptop"
    store = open_store(d)
    seed(store)
    with web_process(d) as url:
        async with browser_page(url) as page:
            await page.goto("/")
            tree = page.get_by_role("tree", name="Memories")
            agent = tree.locator('[data-uri="core://agent"] > .row')
            await agent.click()
            view = page.locator("article.memory")
            await view.locator("h1.uri", has_text="core://agent").wait_for()
            assert "I am the agent." in await view.locator(".body").inner_text()
            await screenshot(page, "browse", tmp_path)
            # Expand with the keyboard: the child appears, loaded on demand.
            await page.locator('[role="treeitem"][data-uri="core://agent"]').focus()
            await page.keyboard.press("ArrowRight")
            await tree.locator('[data-uri="core://agent/style"]').wait_for()
            await page.keyboard.press("ArrowDown")
            await page.keyboard.press("Enter")
            await view.locator("h1.uri", has_text="core://agent/style").wait_for()
            # A glossary keyword links to the memory it is bound to.
            await agent.click()
            await view.get_by_role("link", name="Salem").click()
            await view.locator("h1.uri", has_text="core://user").wait_for()
            await page.get_by_label("Search memories").fill("tea")
            await page.keyboard.press("Enter")
            results = page.locator("ol.results li")
            await results.first.wait_for()
            assert await results.count() == 1
            await results.first.get_by_role("link", name="core://user").click()
            await view.locator("h1.uri", has_text="core://user").wait_for()
            await view.get_by_role("button", name="Add to boot").click()
            await view.get_by_role("button", name="Remove from boot").wait_for()
            await page.goto("/#/browse")
            boot = page.locator("article.memory ul li")
            await boot.get_by_role("link", name="core://user").wait_for()
            # A live change to the memory shown before leaves the boot list in place: the
            # badge counting the agent's change shows the event reached the page.
            badge = page.locator("#pending")
            before = await badge.inner_text()
            agent_edit(store, "core://user", "The user is Salem. Salem likes green tea.")
            await page.wait_for_function(
                "(before) => document.getElementById('pending').textContent !== before", arg=before
            )
            assert await boot.get_by_role("link", name="core://user").is_visible()
            await page.get_by_role("link", name="Knowledge graph").click()
            await page.get_by_text("0 entities").wait_for()
    store.close()


async def test_an_edit_of_a_memory_changed_meanwhile_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "laptop"
    store = open_store(d)
    seed(store)
    with web_process(d) as url:
        async with browser_page(url) as page:
            await page.goto("/#/browse?uri=core%3A%2F%2Fuser")
            view = page.locator("article.memory")
            await view.get_by_role("button", name="Edit text").click()
            area = view.get_by_role("textbox", name="Text", exact=True)
            await area.fill("The user is Salem. Salem likes coffee now.")
            await view.get_by_role("button", name="Preview changes").click()
            await view.locator(".preview .diff .add", has_text="coffee").wait_for()
            await screenshot(page, "edit-preview", tmp_path)
            agent_edit(store, "core://user", "An agent rewrote this meanwhile.")
            await view.get_by_role("button", name="Save").click()
            await page.locator(".notice.error", has_text="changed since").wait_for()
            await view.get_by_role("button", name="load the new version").click()
            await view.locator(".body", has_text="An agent rewrote this meanwhile.").wait_for()
    store.close()
    assert text_of(d, "laptop", "core://user") == "An agent rewrote this meanwhile."


async def test_an_agents_change_appears_live_is_rolled_back_and_the_rollback_replicates(
    tmp_path: Path, pki: Pki, spawn: list[Node]
) -> None:
    laptop, desktop = Node("laptop", tmp_path, pki), Node("desktop", tmp_path, pki)
    spawn += [laptop, desktop]
    start_all((laptop, [desktop]), (desktop, [laptop]))
    cert, key, ca = pki.node("laptop")
    tls = {"NOOND_TLS_CERT": str(cert), "NOOND_TLS_KEY": str(key), "NOOND_TLS_CA": str(ca)}
    serve = ["--dir", str(laptop.dir), "--node-id", "laptop", "--tools", "uri"]
    agent_info = types.Implementation(name=AGENT, version="1")
    with (
        http_server(serve, subprocess_env(NOON_FSYNC="false")) as mcp_url,
        web_process(
            laptop.dir,
            "laptop",
            "--daemon-url",
            f"https://{laptop.address}",
            env=subprocess_env(NOON_FSYNC="false", **tls),
        ) as url,
    ):
        async with Client(
            streamable_http_client(mcp_url), mode="legacy", client_info=agent_info
        ) as agent:

            async def call(tool: str, **args: Any) -> dict[str, Any]:
                r = await agent.call_tool(tool, args)
                assert not r.is_error, r.content
                return r.structured_content or {}

            await call(
                "create_memory",
                parent_uri="core://",
                title="user",
                content="The user likes tea.",
                priority=1,
                disclosure="When talking to the user",
            )
            async with browser_page(url) as page:
                await page.goto("/#/review")
                first = page.locator("article.change").first
                await first.get_by_role("link", name="core://user").wait_for()
                await first.get_by_role("button", name="Approve").click()
                await page.get_by_text("Nothing to review").wait_for()
                # The agent edits text and priority in one call; the page shows it unasked.
                await call(
                    "update_memory",
                    uri="core://user",
                    old_string="tea",
                    new_string="coffee",
                    priority=5,
                )
                item = page.locator("article.change", has_text="core://user").first
                await item.get_by_text("to review").wait_for()
                assert await page.locator("#pending").inner_text() == "1"
                assert AGENT in await item.inner_text()
                await item.get_by_role("button", name="Roll back…").click()
                await item.locator(".diff .del", has_text="The user likes tea.").wait_for()
                await item.locator(".diff .add", has_text="The user likes coffee.").wait_for()
                await screenshot(page, "review", tmp_path)
                await item.get_by_role("button", name="Confirm rollback").click()
                await page.get_by_text("Rolled back: 2 element(s) restored.").wait_for()
                await page.get_by_text("Nothing to review").wait_for()
                await page.goto("/#/mesh")
                await page.get_by_role("cell", name="desktop").first.wait_for()
                await screenshot(page, "mesh", tmp_path)
            read = await agent.call_tool("read_memory", {"uri": "core://user"})
            assert "The user likes tea." in tool_text(read)
            assert (read.structured_content or {})["priority"] == 1

    def desktop_has_it() -> bool:
        return text_of(desktop.dir, "desktop", "core://user") == "The user likes tea."

    wait_until(desktop_has_it, what="the rollback to reach the desktop")
    store = open_store(desktop.dir, "desktop")
    try:
        reviews = [k for k in store.fold.elements if k[0] == "review"]
        assert len(reviews) == 2 and all(k[3] == "laptop" for k in reviews)
        rolled = [
            k for k in reviews if store.fold.elements[k].winner.val == {"verdict": "rolled_back"}
        ]
        assert len(rolled) == 1 and review_key(NS, rolled[0][2], "laptop") == rolled[0]
    finally:
        store.close()


async def test_a_conflict_is_settled_from_the_page(tmp_path: Path) -> None:
    laptop, desktop = tmp_path / "laptop", tmp_path / "desktop"
    store = open_store(laptop)
    seed(store)
    desktop.mkdir()
    shutil.copyfile(store.own, desktop / store.own.name)
    other = open_store(desktop, "desktop")
    agent_edit(store, "core://user", "Salem likes green tea.")
    agent_edit(other, "core://user", "Salem likes black tea.")
    shutil.copyfile(other.own, laptop / other.own.name)
    other.close()
    store.close()
    with web_process(laptop) as url:
        async with browser_page(url) as page:
            await page.goto("/#/browse?uri=core%3A%2F%2Fuser")
            await page.get_by_role("link", name="concurrent versions").click()
            conflict = page.locator("article.conflict")
            versions = conflict.locator("section.version")
            await versions.nth(1).wait_for()
            assert await versions.count() == 2
            await screenshot(page, "conflicts", tmp_path)
            black = versions.filter(has=page.locator("pre.body", has_text="black tea"))
            await black.get_by_role("button", name="Keep this version").click()
            await page.get_by_text("No conflicts").wait_for()
    assert text_of(laptop, "laptop", "core://user") == "Salem likes black tea."


async def test_a_move_is_undone_from_the_history(tmp_path: Path) -> None:
    d = tmp_path / "laptop"
    store = open_store(d)
    seed(store)
    with web_process(d) as url:
        async with browser_page(url) as page:
            await page.goto("/#/review?group=memory")
            await page.locator("article.change").first.wait_for()

            def move(g: SqlGraph) -> tuple[list[Any], None]:
                node, _, pl = plan.locate(g, NS, "core://agent/style")
                return plan.move(g, NS, node, pl, parse("core://style"), None, None), None

            service(store).write(move, AGENT)
            await page.goto("/#/browse?uri=core%3A%2F%2Fstyle")
            tree = page.get_by_role("tree", name="Memories")
            await tree.locator('[data-uri="core://style"]').wait_for()
            view = page.locator("article.memory")
            await view.get_by_role("button", name="History").click()
            entry = page.locator("ol.timeline > li").first
            await entry.get_by_text("placed memory at core://style").wait_for()
            await screenshot(page, "history", tmp_path)
            await entry.get_by_role("button", name="Undo this change…").click()
            await entry.get_by_role("button", name="Confirm rollback").click()
            await page.locator(".notice", has_text="Rolled back").wait_for()
            await page.goto("/#/browse")
            await tree.locator('[data-uri="core://style"]').wait_for(state="detached")
            await open_with_keyboard(page, tree, "core://agent", "core://agent/style")
    store.close()
    assert text_of(d, "laptop", "core://agent/style") == "Answer tersely."
    assert text_of(d, "laptop", "core://style") is None


async def test_a_delete_made_on_the_other_machine_is_said_to_be_made_there(tmp_path: Path) -> None:
    laptop, desktop = tmp_path / "laptop", tmp_path / "desktop"
    store = open_store(laptop)
    seed(store)
    desktop.mkdir()
    shutil.copyfile(store.own, desktop / store.own.name)
    other = open_store(desktop, "desktop")
    agent_edit(store, "core://user", "Salem likes green tea.")

    def delete(g: SqlGraph) -> tuple[list[Any], None]:
        node, _, pl = plan.locate(g, NS, "core://user")
        return plan.delete(g, NS, node, "core://user", pl, False)[0], None

    service(other).write(delete, AGENT)
    shutil.copyfile(other.own, laptop / other.own.name)
    other.close()
    store.close()
    with web_process(laptop) as url:
        async with browser_page(url) as page:
            await page.goto("/#/conflicts")
            conflict = page.locator("article.conflict")
            await conflict.locator("section.version").nth(1).wait_for()
            said = await conflict.inner_text()
            assert f"Deleted by {AGENT} on desktop." in said
            assert "this machine" not in said and "Salem likes green tea." in said


async def test_a_domain_row_opens_on_click_and_a_crowded_parent_has_a_filter(
    tmp_path: Path,
) -> None:
    from noon.core.elements import content_key, edge_key
    from noon.core.ops import Draft

    d = tmp_path / "laptop"
    store = open_store(d)
    seed(store)
    parent = plan.locate(service(store).graph, NS, "project://noon")[0]
    drafts = []
    for i in range(5000):
        node = f"kid{i:05d}"
        drafts.append(Draft(content_key(NS, node), {"text": f"child number {i}"}))
        drafts.append(
            Draft(edge_key(NS, parent, f"child-{i}"), plan.edge_val(node, 1, f"When {i}"))
        )
    store.write(lambda g: drafts, client=AGENT)
    store.close()
    with web_process(d) as url:
        async with browser_page(url) as page:
            await page.goto("/")
            tree = page.get_by_role("tree", name="Memories")
            await tree.locator('[data-uri="core://agent"]').wait_for()
            # a click on the domain's row itself (not its twisty) opens it
            await tree.locator('[data-uri="project://"] > .row .name').click()
            await tree.locator('[data-uri="project://noon"]').wait_for()
            await tree.locator('[data-uri="project://noon"] > .row button.twisty').click()
            box = page.get_by_label("Filter the children of noon")
            await box.wait_for()
            assert await box.get_attribute("placeholder") == "Filter 5000 children by name"
            await box.fill("child-4321")
            only = tree.locator('[data-uri="project://noon/child-4321"]')
            await only.wait_for()
            await page.wait_for_function(
                "document.querySelectorAll('[data-uri^=\"project://noon/\"]').length === 1"
            )
            await box.fill("no such child")
            await page.get_by_text("No child holds “no such child”.").wait_for()
