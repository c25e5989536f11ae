"""Issue 35 item 6 on the chat page, in headless Chromium at 390 px: a comparison table keeps
its words whole and scrolls sideways inside its message, and both pages have a favicon."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright
from server_flows import live_server

from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
NARROW = {"width": 390, "height": 844}

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium); .ci/run installs it",
)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport=NARROW,
        )
        context.set_default_timeout(10_000)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def send(page: Page, text: str) -> None:
    page.fill("#input", text)
    with page.expect_response("**/ai/stream"):
        page.press("#input", "Enter")
    expect(page.locator("body")).to_have_attribute("data-busy", "false")


def test_a_wide_table_scrolls_instead_of_breaking_words_on_a_390px_screen(page: Page) -> None:
    engine = FlowEngine(
        [HotelFlow.using("offline:hotel")], store=MemoryStore(), providers=PROVIDERS
    )
    with live_server(create_app(engine)) as live:
        page.goto(live.url)
        for line in ["Hi, I need a hotel in Portland", "July 1 to July 6", "search now"]:
            send(page, line)
        send(page, "compare 1, 2 and 3 on amenities")
        table = page.locator(".msg.assistant").last.locator("table")
        expect(table.locator("thead th")).to_have_count(4)
        wrap = page.locator(".msg.assistant").last.locator(".table-wrap")
        sizes = wrap.evaluate("w => [w.scrollWidth, w.clientWidth]")
        assert sizes[0] > sizes[1], f"the table should scroll inside its message: {sizes}"
        header = table.locator("thead th").nth(1)
        assert header.evaluate("h => getComputedStyle(h).whiteSpace") == "nowrap"
        assert header.evaluate("h => h.getClientRects().length") == 1  # one line, not broken
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_both_pages_have_a_favicon(page: Page) -> None:
    engine = FlowEngine(
        [HotelFlow.using("offline:hotel")], store=MemoryStore(), providers=PROVIDERS
    )
    with live_server(create_app(engine)) as live:
        for path in ("/", "/operator"):
            page.goto(f"{live.url}{path}")
            icon = page.locator("link[rel=icon]")
            expect(icon).to_have_count(1)
            assert (icon.get_attribute("href") or "").startswith("data:image/svg+xml,")
