"""The chat page in headless Chromium (Debian's package) on a phone-sized screen.

Driven by Playwright's Python package with `executable_path`; Playwright never downloads a
browser here. Skipped, with the reason, only when no chromium binary is installed.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from playwright.sync_api import Page, expect, sync_playwright
from server_flows import GREETING, api, chat_flow, hotel_model, live_server

from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, transient_error

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PHONE = {"width": 375, "height": 667}

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium); .ci/run installs it",
)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    """A fresh browser profile and one phone-sized page."""
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


def send(page: Page, text: str, streamed: bool = True) -> None:
    """Type a message and press Enter, then wait until the page is idle again."""
    page.fill("#input", text)
    with page.expect_response("**/ai/stream") as response:
        page.press("#input", "Enter")
    content_type = "text/event-stream" if streamed else "application/json"
    assert response.value.headers["content-type"].startswith(content_type)
    expect(page.locator("body")).to_have_attribute("data-busy", "false")


def stored_session(page: Page) -> Any:
    return page.evaluate("JSON.parse(sessionStorage.getItem('picoflow.chat.ChatFlow')).session")


def fits_the_screen(page: Page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth <= window.innerWidth && "
        "document.getElementById('composer').getBoundingClientRect().bottom <= window.innerHeight"
    )


def test_chat_page_streams_renders_a_table_keeps_the_session_and_starts_over(page: Page) -> None:
    engine, app = api(chat_flow(name="OtherFlow"), chat_flow())
    with live_server(app) as live:
        page.goto(f"{live.url}/?flow=ChatFlow")
        expect(page.locator("#flow")).to_have_value("ChatFlow")

        send(page, "hello")
        greeting = page.locator(".msg.assistant").last
        expect(greeting).to_have_text(GREETING.replace("**", ""))
        expect(greeting.locator("strong")).to_have_text("table")  # markdown bold
        expect(greeting.locator("b")).to_have_count(0)  # the model's HTML is shown, not run
        expect(page.locator("#step")).to_have_text("Step: GreetStep")
        first_session = stored_session(page)

        send(page, "a list, please")
        items = page.locator(".msg.assistant").last.locator("ol > li")
        expect(items).to_have_text(["second", "third"])
        assert [item.get_attribute("value") for item in items.all()] == ["2", "3"]
        expect(items.last.locator("code")).to_have_text("third")

        send(page, "show me a table")
        table = page.locator(".msg.assistant table").last
        expect(table.locator("th")).to_have_text(["a", "b"])
        expect(table.locator("td")).to_have_text(["1", "2"])
        expect(page.locator("#step")).to_have_text("Step: TableStep")
        assert fits_the_screen(page)

        page.reload()  # the transcript, step and session survive a reload
        expect(page.locator(".msg")).to_have_count(6)
        expect(page.locator("#step")).to_have_text("Step: TableStep")
        send(page, "bye")
        expect(page.locator(".msg.assistant").last).to_have_text("Goodbye!")
        expect(page.locator(".note").last).to_have_text(
            "This conversation has ended. Send a message to start a new one."
        )
        doc = live.call(engine.get_session(first_session))
        assert doc["sequence"] == ["GreetStep", "TableStep", "EndStep"]

        page.click("#new-conversation")
        expect(page.locator(".msg")).to_have_count(0)
        expect(page.locator("#step")).to_be_hidden()
        send(page, "hello again")
        expect(page.locator(".msg.assistant")).to_have_text([GREETING.replace("**", "")])
        second_session = stored_session(page)
        assert second_session not in (None, first_session)

        with page.expect_response("**/ai/end"):
            page.click("#new-conversation")
        expect(page.locator(".msg")).to_have_count(0)
        assert live.call(engine.get_session(second_session)) is None
        assert fits_the_screen(page)


def test_chat_page_opens_on_the_first_flow_and_shows_errors(page: Page) -> None:
    _, app = api(chat_flow(), chat_flow(name="OtherFlow"), max_message_chars=20)
    with live_server(app) as live:
        page.goto(live.url)
        expect(page.locator("#flow")).to_have_value("ChatFlow")
        expect(page.locator("#flow option")).to_have_text(["ChatFlow", "OtherFlow"])
        send(page, "x" * 21, streamed=False)
        expect(page.locator(".msg.error")).to_have_text(
            "The message has 21 characters; this server accepts at most 20. Shorten it or send "
            "it over several turns."
        )
        page.select_option("#flow", "OtherFlow")
        expect(page.locator(".msg")).to_have_count(0)
        assert page.url.endswith("/?flow=OtherFlow")


def test_chat_page_books_a_hotel_with_the_comparison_table(page: Page) -> None:
    flow = HotelFlow.using(hotel_model(date.today()))
    engine = FlowEngine(flows=[flow], store=MemoryStore(), providers=PROVIDERS)
    with live_server(create_app(engine)) as live:
        page.goto(live.url)
        send(page, "Hi")
        expect(page.locator(".msg.assistant").last).to_have_text(
            "When would you like to stay, and for how many nights?"
        )
        expect(page.locator("#step")).to_have_text("Step: ExploreStep")
        send(page, "Two nights, please")
        expect(page.locator("#step")).to_have_text("Step: PresentStep")
        send(page, "Compare the first two on price")
        table = page.locator(".msg.assistant").last.locator("table")
        expect(table.locator("thead th")).to_have_count(3)  # the feature and two hotels
        expect(page.locator("#step")).to_have_text("Step: CompareStep")
        assert fits_the_screen(page)
        send(page, "Book number 1")
        expect(page.locator(".msg.assistant").last).to_have_text(
            "Your stay is booked. Thank you, goodbye!"
        )
        expect(page.locator("#step")).to_have_text("Step: EndStep")
        page.click("#new-conversation")
        expect(page.locator(".msg")).to_have_count(0)


class DropsThenPauses(BaseChatModel):
    """The first stream drops after "Three 🏨 hot"; the retry writes "Three 🏨 " and then waits
    for `go_on`, so the page can be looked at mid-reply. (The emoji is two units of a
    JavaScript string and one Python character.)"""

    calls: int = 0
    go_on: Any = None  # a threading.Event the test sets

    @property
    def _llm_type(self) -> str:
        return "drops-then-pauses"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        message = AIMessage("Three hotels match.")  # the chat page streams; this is unused
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        self.calls += 1
        yield ChatGenerationChunk(message=AIMessageChunk(content="Three 🏨 "))
        if self.calls == 1:
            yield ChatGenerationChunk(message=AIMessageChunk(content="hot"))
            raise transient_error("connection")
        await asyncio.to_thread(self.go_on.wait)
        yield ChatGenerationChunk(message=AIMessageChunk(content="hotels match."))


def test_v9_chat_page_takes_back_text_of_a_reply_that_dropped_mid_stream(page: Page) -> None:
    """V9: after a `retract` event the bubble holds only the retry's text, never the start of
    the reply twice."""

    async def no_wait(seconds: float) -> None:
        pass

    go_on = threading.Event()
    model = DropsThenPauses(go_on=go_on)
    engine = FlowEngine(flows=[chat_flow(model)], store=MemoryStore(), sleep=no_wait)
    with live_server(create_app(engine)) as live:
        try:
            page.goto(live.url)
            page.fill("#input", "hotels?")
            page.press("#input", "Enter")
            bubble = page.locator(".msg.assistant").last
            expect(bubble).to_have_text("Three 🏨 ")  # not "Three 🏨 hotThree 🏨 "
        finally:
            go_on.set()
        expect(page.locator("body")).to_have_attribute("data-busy", "false")
        expect(bubble).to_have_text("Three 🏨 hotels match.")
        assert model.calls == 2


ATTACKER_PAGE = """<!doctype html><title>another site</title><script>
async function attack(target) {
  // A "simple" request: text/plain needs no CORS preflight, so the browser sends it at once.
  await fetch(target + "/ai/run", {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({flowName: "ChatFlow", message: "sent by another site"})});
  return "sent";
}
</script>"""


@pytest.fixture
def other_origin() -> Iterator[str]:
    """A page served from another port of 127.0.0.1: another origin, as another site is."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = ATTACKER_PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_h1_a_page_of_another_origin_cannot_run_a_turn_with_text_plain(
    page: Page, other_origin: str
) -> None:
    """Issue #25 item 1: the cross-site 'simple' POST reaches the server and is refused (415)
    before any turn runs: no session is created and the model is never called."""
    store = MemoryStore()
    model = ScriptedChatModel(policy=lambda messages, tools: "hello")
    engine = FlowEngine(flows=[chat_flow(model)], store=store)
    with live_server(create_app(engine)) as live:
        page.goto(other_origin)
        with page.expect_response(f"{live.url}/ai/run") as response:
            assert page.evaluate("target => attack(target)", live.url) == "sent"
        assert response.value.status == 415
        assert repr(store) == "MemoryStore(sessions=0)"
        assert model.requests == []
