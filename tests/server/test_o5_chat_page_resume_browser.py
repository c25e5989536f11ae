"""O5 in headless Chromium: the chat page picks a dropped stream up again by itself.

The server hangs up on the page's first `POST /ai/stream` after two events (as a proxy or a
phone that locks would); the turn runs on, and the page asks `GET /ai/stream/<turn>` with
`Last-Event-ID` for the rest, which it shows once. Skipped only without a chromium binary.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from playwright.sync_api import Page, Request, expect
from server_flows import chat_flow, live_server
from test_chat_page_browser import page, pytestmark  # noqa: F401 - the fixture and the skip

from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore

REPLY = ["Three ", "hotels ", "match ", "your ", "dates."]


class PausesMidReply(BaseChatModel):
    """Streams two words, waits for `go_on` (a threading.Event), then writes the rest."""

    go_on: Any = None

    @property
    def _llm_type(self) -> str:
        return "pauses-mid-reply"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        message = AIMessage("".join(REPLY))  # the chat page streams; this is unused
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for word in REPLY[:2]:
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))
        await asyncio.to_thread(self.go_on.wait)
        for word in REPLY[2:]:
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))


class _HangUp(Exception):
    pass


def hangs_up_once(app: Any, after_events: int, shown: threading.Event) -> Any:
    """The app, except that the first `POST /ai/stream` connection is cut after some events.

    The response is left unfinished, so the server closes the connection mid-body and the
    browser's reader fails with a network error, as with a dropped connection. The cut waits
    for `shown` (the test sets it once the page shows what came before it): cut at once, a
    loaded host could close the connection before the page read the first event, and a page
    that never got an event id has nothing to resume from, which is right but not this test.
    """
    cut = threading.Event()

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/ai/stream" or cut.is_set():
            await app(scope, receive, send)
            return
        cut.set()
        sent = 0

        async def counted(message: Any) -> None:
            nonlocal sent
            if message["type"] == "http.response.body" and sent >= after_events:
                await asyncio.to_thread(shown.wait, 30)
                raise _HangUp
            sent += message.get("body", b"").count(b"\n\n")
            await send(message)

        try:
            await app(scope, receive, counted)
        except* _HangUp:
            pass

    return wrapped


def test_o5_the_chat_page_resumes_a_dropped_stream_and_shows_the_rest_once(page: Page) -> None:  # noqa: F811
    go_on = threading.Event()
    shown = threading.Event()
    engine = FlowEngine(flows=[chat_flow(PausesMidReply(go_on=go_on))], store=MemoryStore())
    resumes: list[Request] = []
    page.on(
        "request",
        lambda request: resumes.append(request) if "/ai/stream/" in request.url else None,
    )
    with live_server(hangs_up_once(create_app(engine), after_events=1, shown=shown)) as live:
        try:
            page.goto(live.url)
            page.fill("#input", "hotels?")
            page.press("#input", "Enter")
            bubble = page.locator(".msg.assistant").last
            expect(bubble).to_have_text("Three ")
            shown.set()
            # One token came before the hang-up, the second with the resumed stream: each once.
            expect(bubble).to_have_text("Three hotels ")
            assert len(resumes) == 1
        finally:
            shown.set()
            go_on.set()
        expect(page.locator("body")).to_have_attribute("data-busy", "false")
        expect(bubble).to_have_text("Three hotels match your dates.")
        expect(page.locator(".msg.error")).to_have_count(0)
    turn_id = resumes[0].url.rsplit("/", 1)[1]
    assert resumes[0].method == "GET"
    assert resumes[0].headers["last-event-id"] == f"{turn_id}:1"


def test_o5_a_page_reloaded_mid_answer_shows_the_whole_answer_once(page: Page) -> None:  # noqa: F811
    """The user reloads while the answer streams: the turn runs on, and the reloaded page
    asks for its events again (from the first), so the answer appears whole, once."""
    go_on = threading.Event()
    engine = FlowEngine(flows=[chat_flow(PausesMidReply(go_on=go_on))], store=MemoryStore())
    resumes: list[Request] = []
    page.on(
        "request",
        lambda request: resumes.append(request) if "/ai/stream/" in request.url else None,
    )
    with live_server(create_app(engine)) as live:
        try:
            page.goto(live.url)
            page.fill("#input", "hotels?")
            page.press("#input", "Enter")
            expect(page.locator(".msg.assistant").last).to_have_text("Three hotels ")
            page.reload()
            bubble = page.locator(".msg.assistant").last
            expect(bubble).to_have_text("Three hotels ")  # the kept events, from the first
            assert len(resumes) == 1
        finally:
            go_on.set()
        expect(page.locator("body")).to_have_attribute("data-busy", "false")
        expect(bubble).to_have_text("Three hotels match your dates.")
        expect(page.locator(".msg.user")).to_have_text(["hotels?"])
        expect(page.locator(".msg.assistant")).to_have_count(1)
        expect(page.locator(".msg.error")).to_have_count(0)
        page.reload()  # the turn is over: nothing to resume, the transcript as it was
        expect(page.locator(".msg.assistant")).to_have_text(["Three hotels match your dates."])
        expect(page.locator(".msg.user")).to_have_text(["hotels?"])
    assert len(resumes) == 1
    turn_id = resumes[0].url.rsplit("/", 1)[1]
    assert resumes[0].headers["last-event-id"] == f"{turn_id}:0"


def test_o5_a_page_reloaded_before_the_first_event_says_the_answer_did_not_arrive(
    page: Page,  # noqa: F811
) -> None:
    """Reloaded before any event came, the page never learnt the turn's id: it says so
    instead of showing a question with no answer and nothing else."""
    engine = FlowEngine(flows=[chat_flow()], store=MemoryStore())
    with live_server(create_app(engine)) as live:
        page.goto(live.url)
        expect(page.locator("body")).to_have_attribute("data-busy", "false")
        flow = page.locator("#flow").input_value()
        chat = {"session": None, "step": None, "messages": [{"role": "user", "text": "hi?"}]}
        page.evaluate(
            "([key, chat]) => sessionStorage.setItem(key, JSON.stringify(chat))",
            [f"picoflow.chat.{flow}", {**chat, "ended": False, "lastSession": None}],
        )
        page.reload()
        expect(page.locator(".msg.user")).to_have_text(["hi?"])
        said = "No answer to your last message reached this page: send it again, or go on."
        expect(page.locator(".note", has_text="No answer")).to_have_text([said])
        expect(page.locator("body")).to_have_attribute("data-busy", "false")
