"""K7 in headless Chromium: the chat page shows a pending approval and the operator's replies;
the operator page (`/operator`) lists what waits and acts on it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright
from server_flows import api, live_server
from support.approval_flows import booking_flow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium); .ci/run installs it",
)


@pytest.fixture
def pages(tmp_path: Path) -> Iterator[tuple[Page, Page]]:
    """The guest's chat page and the operator's page, in one browser profile."""
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 375, "height": 667},
        )
        context.set_default_timeout(10_000)
        try:
            chat = context.pages[0] if context.pages else context.new_page()
            yield chat, context.new_page()
        finally:
            context.close()


def send(page: Page, text: str) -> None:
    page.fill("#input", text)
    with page.expect_response("**/ai/stream"):
        page.press("#input", "Enter")
    expect(page.locator("body")).to_have_attribute("data-busy", "false")


def test_k7_an_operator_approves_and_answers_from_the_operator_page(
    pages: tuple[Page, Page],
) -> None:
    chat, operator = pages
    _, app = api(booking_flow())
    with live_server(app) as live:
        chat.goto(f"{live.url}/?flow=BookingFlow")
        send(chat, "book Ritz 900")
        expect(chat.locator(".note").last).to_have_text(
            "A person needs to approve this before I go on; you can keep writing."
        )

        operator.goto(f"{live.url}/operator")
        waiting = operator.locator("#approvals li")
        expect(waiting).to_have_count(1)
        expect(waiting.first).to_contain_text('book {"hotel":"Ritz","total":900}')
        waiting.first.get_by_role("button", name="Approve").click()
        expect(operator.locator("#status")).to_have_text("Done: Result: Booked Ritz for 900.")
        expect(operator.locator("#no-approvals")).to_be_visible()
        expect(chat.locator(".msg.assistant").last).to_have_text("Result: Booked Ritz for 900.")

        send(chat, "a person please")
        operator.click("#refresh")
        handed = operator.locator("#handoffs li")
        expect(handed).to_have_count(1)
        expect(handed.first).to_contain_text("The guest asked: a person please")
        handed.first.locator("textarea").fill("Hi, Sam here.")
        handed.first.get_by_role("button", name="Send reply").click()
        expect(chat.locator(".msg.operator")).to_have_text(["Hi, Sam here."])
        operator.locator("#handoffs li").first.get_by_role("button", name="Hand back").click()
        expect(operator.locator("#no-handoffs")).to_be_visible()

        send(chat, "thanks")
        expect(chat.locator(".msg.assistant").last).to_have_text(
            "I have read what the operator wrote."
        )
        chat.close()  # its GET /ai/events stream ends with it, so the server can stop
        operator.close()
