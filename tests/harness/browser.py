"""Headless Chromium from the system's packages, driven by Playwright (never a downloaded
browser: ``playwright install`` is not used). Tests skip with a reason when it is missing."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.harness.page import CHROMIUM_ARGS, chromium, split_address

if TYPE_CHECKING:
    from playwright.async_api import Page

TIMEOUT_MS = 20_000
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def skip_without_browser() -> pytest.MarkDecorator:
    missing = chromium() is None
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing = True
    return pytest.mark.skipif(
        missing,
        reason="browser tests need Debian's chromium (apt-get install chromium) and the "
        "playwright package (pip install -e '.[test]'); .ci/run installs both",
    )


@asynccontextmanager
async def browser_page(address: str, refusals: tuple[str, ...] = ()) -> AsyncIterator[Page]:
    """A fresh page of headless Chromium, logged in as a person is: by opening ``address``, what
    ``noon web`` printed (``http://127.0.0.1:PORT/#token=...``); the page's relative URLs are
    on that server. Fails the test if the page's script throws or logs an error other than the
    refusals (HTTP statuses) the test causes: 409 and 400, and those named."""
    from playwright.async_api import async_playwright

    errors: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            base_url, token = split_address(address)
            context = await browser.new_context(
                base_url=base_url, viewport={"width": 1280, "height": 820}
            )
            page = await context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
            page.on(
                "console",
                lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None,
            )
            if token is not None:
                await page.goto(address)
                await page.wait_for_function("localStorage.getItem('noon-session') !== null")
                assert "token" not in page.url, page.url  # dropped from the address bar
            yield page
        finally:
            await browser.close()
    caused = ("409", "400", *refusals)
    expected = [e for e in errors if not any(code in e for code in caused)]
    assert not expected, expected


async def screenshot(page: object, name: str, tmp: Path) -> Path:
    """Save a PNG of the page: into docs/screenshots when NOON_SCREENSHOTS=1 (to refresh the
    README's pictures), else beside the test's files."""
    out = SCREENSHOTS if os.environ.get("NOON_SCREENSHOTS") == "1" else tmp
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path
