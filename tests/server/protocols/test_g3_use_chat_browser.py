"""G3: a real chat UI on `POST /ai-sdk/{flowName}`: `useChat` (@ai-sdk/react) in headless Chromium.

`ui/` is a small React page on the AI SDK's own hook; Vite builds it once per test session into
a temporary folder (never into the tree), and `create_app(public_dir=...)` serves it at
`/public/` next to the API, so the page calls the routes on its own origin. A guest holds a
HotelFlow conversation through a booking over `config.approval_limit`: the SDK shows the call
as a part awaiting approval, the guest refuses it once (nothing runs), asks again and approves
it with the SDK's `addToolApprovalResponse`, and the booking is made exactly once.

Vite, React and the SDK are pinned in tests/package.json and installed by `make node-clients`
(which `make test` runs); Chromium is Debian's, driven by Playwright with `executable_path`.
Missing either fails with the command that installs it, never a skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Locator, Page, expect, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/server: its helpers

from server_flows import hotel_model, live_server  # noqa: E402
from test_chat_page_browser import CHROMIUM, FLAGS, PHONE  # noqa: E402  (one set of flags)

from demo.hotel.flow import PROVIDERS, HotelFlow  # noqa: E402
from picoflow import FlowEngine  # noqa: E402
from picoflow.server import create_app  # noqa: E402
from picoflow.stores import MemoryStore  # noqa: E402

UI = Path(__file__).resolve().parent / "ui"
VITE = Path(__file__).resolve().parents[2] / "node_modules" / "vite"
ASKED_FOR_DATES = "When would you like to stay, and for how many nights?"
LISTED = "Here are the hotels that match; compare them or pick one."
BOOKED = "Your stay is booked. Thank you, goodbye!"


@pytest.fixture(scope="session")
def use_chat_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page built by Vite (`ui/build.mjs`, `--base /public/`), once per test session."""
    node = shutil.which("node")
    assert node is not None, "node is not installed: apt-get install nodejs npm (.ci/run does)"
    assert VITE.is_dir(), "Vite and the AI SDK are not installed: run `make node-clients`"
    out = tmp_path_factory.mktemp("use-chat-page")
    built = subprocess.run(
        [node, str(UI / "build.mjs"), str(out)],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr or built.stdout
    assert (out / "index.html").is_file(), built.stdout
    return out


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    """A fresh browser profile and one phone-sized page (test_chat_page_browser's launch)."""
    assert CHROMIUM is not None, (
        "chromium is not installed: apt-get install -y chromium (.ci/run installs it)"
    )
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport=PHONE,
        )
        context.set_default_timeout(10_000)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def settled(page: Page) -> None:
    """Wait until useChat is idle again (its `status` is "ready"), with no error shown."""
    expect(page.locator("main")).to_have_attribute("data-status", "ready")
    expect(page.get_by_role("alert")).to_have_count(0)


def send(page: Page, text: str) -> None:
    """Type a message and press Enter: useChat posts it to /ai-sdk/HotelFlow."""
    page.fill("#input", text)
    with page.expect_response("**/ai-sdk/HotelFlow") as response:
        page.press("#input", "Enter")
    assert response.value.headers["x-vercel-ai-ui-message-stream"] == "v1"
    settled(page)


def answer(waiting: Locator, button: str) -> None:
    """Click Approve or Reject: addToolApprovalResponse, then useChat sends the answer on."""
    with waiting.page.expect_response("**/ai-sdk/HotelFlow"):
        waiting.get_by_role("button", name=button).click()
    settled(waiting.page)


def last_reply(page: Page) -> Locator:
    return page.locator(".msg.assistant").last


def test_g3_use_chat_books_a_hotel_through_an_approval_in_chromium(
    page: Page, use_chat_page: Path
) -> None:
    flow = HotelFlow.using(hotel_model(date.today()))
    engine = FlowEngine(flows=[flow], store=MemoryStore(), providers=PROVIDERS)
    app = create_app(engine, public_dir=use_chat_page)
    config = quote(json.dumps({"approval_limit": 1}))  # every booking waits for a person
    with live_server(app) as live:
        page.goto(f"{live.url}/public/index.html?flow=HotelFlow&config={config}")
        send(page, "Hi")
        expect(last_reply(page).locator(".text")).to_have_text(ASKED_FOR_DATES)
        expect(page.locator("#step")).to_have_text("Step: ExploreStep")
        send(page, "Two nights, please")
        expect(page.locator("#step")).to_have_text("Step: PresentStep")
        expect(last_reply(page).locator(".text")).to_have_text(LISTED)

        send(page, "Book number 1")  # the SDK's part awaiting approval, with its buttons
        waiting = last_reply(page).locator('.tool[data-state="approval-requested"]')
        expect(waiting.locator(".call")).to_have_text('chosen_hotel({"hotel":"1"})')
        session = page.locator("main").get_attribute("data-session") or ""
        assert live.call(engine.get_session(session)).get("effects", []) == []  # nothing booked yet
        answer(waiting, "Reject")  # refused: the call never runs, the guest is back at the list
        refused = last_reply(page).locator(".tool")
        expect(refused).to_have_attribute("data-state", "output-denied")
        expect(last_reply(page).locator(".text").last).to_have_text(LISTED)
        expect(page.locator("#step")).to_have_text("Step: PresentStep")

        send(page, "Book number 1")
        waiting = last_reply(page).locator('.tool[data-state="approval-requested"]')
        answer(waiting, "Approve")  # the same message goes on: the call's output, the reply
        done = last_reply(page).locator(".tool")
        expect(done).to_have_attribute("data-state", "output-available")
        expect(last_reply(page).locator(".text").last).to_have_text(BOOKED)
        expect(page.locator("#step")).to_have_text("Step: EndStep (completed)")
        expect(page.locator(".msg.user")).to_have_count(4)  # 4 turns, 2 answers, nothing more

        doc = live.call(engine.get_session(session))
    assert [(a["tool"], a["decision"]) for a in doc["approvals"]] == [
        ("chosen_hotel", "reject"),
        ("chosen_hotel", "approve"),
    ]
    [booked] = doc["effects"]  # the tool ran once: the approved call, never the refused one
    assert (booked["tool"], booked["args"]) == ("chosen_hotel", {"hotel": "1"})
    assert booked["key"] == doc["approvals"][1]["key"]
    present = doc["steps"]["PresentStep"]["state"]
    assert present["bookings_made"] == 1
    assert present["booking"]["hotel"] == present["offers"][0]["name"]
    assert (doc["current_step"], doc["run_status"]) == ("EndStep", "completed")
