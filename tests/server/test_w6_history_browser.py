"""The chat page's Undo and Edit buttons (W2, W4) in headless Chromium on a phone-sized screen.

Skipped, with the reason, only when no chromium binary is installed (see
test_chat_page_browser.py, whose `page` fixture and helpers this uses).
"""

from __future__ import annotations

from playwright.sync_api import Page, expect
from server_flows import live_server
from support.history_flows import ChatFlow, humans
from test_chat_page_browser import fits_the_screen, page, pytestmark, send  # noqa: F401

from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore


def session_of(tab: Page, flow: str = "ChatFlow") -> str:
    session: str = tab.evaluate(
        f"JSON.parse(sessionStorage.getItem('picoflow.chat.{flow}')).session"
    )
    return session


def idle(tab: Page) -> None:
    expect(tab.locator("body")).to_have_attribute("data-busy", "false")


def edit_last(tab: Page, text: str) -> None:
    tab.click(".edit-last")
    editor = tab.locator(".msg.editing textarea")
    expect(editor).to_be_focused()
    assert fits_the_screen(tab)
    editor.fill(text)
    with tab.expect_response("**/edit") as response:
        tab.click(".msg.editing button[type=submit]")
    assert response.value.status == 200
    idle(tab)


def test_w2_w4_undo_the_last_answer_then_edit_the_last_message(
    page: Page,  # noqa: F811 - the fixture imported above
) -> None:
    engine = FlowEngine([ChatFlow], store=MemoryStore())
    with live_server(create_app(engine)) as live:
        page.goto(live.url)
        send(page, "one")
        # The first turn started the session: there is nothing before it to go back to.
        expect(page.locator(".undo-last")).to_have_count(0)
        expect(page.locator(".edit-last")).to_have_count(0)
        send(page, "two")
        expect(page.locator(".msg")).to_have_text(["one", "echo: one", "two", "echo: two"])
        expect(page.locator(".undo-last")).to_have_count(1)
        expect(page.locator(".edit-last")).to_have_count(1)
        assert fits_the_screen(page)

        with page.expect_response("**/undo") as undone:
            page.click(".undo-last")
        assert undone.value.status == 200
        idle(page)
        expect(page.locator(".msg")).to_have_text(["one", "echo: one"])
        session = session_of(page)
        listed = live.call(engine.history(session))
        assert (listed[0]["action"], listed[0]["restored"]) == ("rewind", 0)
        assert humans(live.call(engine.get_session(session))) == ["one"]

        send(page, "three")
        page.click(".edit-last")
        page.keyboard.press("Escape")  # changing one's mind leaves everything as it was
        expect(page.locator(".msg")).to_have_text(["one", "echo: one", "three", "echo: three"])
        edit_last(page, "3")
        expect(page.locator(".msg")).to_have_text(["one", "echo: one", "3", "echo: 3"])
        assert humans(live.call(engine.get_session(session))) == ["one", "3"]
        listed = live.call(engine.history(session))
        assert [e["action"] for e in listed] == ["edit", "turn", "rewind", "turn", "turn"]

        page.reload()  # the revision of the last message is kept with the transcript
        expect(page.locator(".msg")).to_have_count(4)
        edit_last(page, "III")
        expect(page.locator(".msg").last).to_have_text("echo: III")
        assert humans(live.call(engine.get_session(session))) == ["one", "III"]
        assert session_of(page) == session
        assert fits_the_screen(page)


def test_k9_no_undo_or_edit_is_offered_for_a_turn_whose_tool_acted_on_the_world(
    page: Page,  # noqa: F811 - the fixture imported above
) -> None:
    """Undo would fail with effect_in_history after a booking: the page does not offer it."""
    from support.effect_flows import effect_flow

    runs: list[str] = []
    engine = FlowEngine([effect_flow(None, runs)], store=MemoryStore())
    with live_server(create_app(engine)) as live:
        page.goto(live.url)
        send(page, "hello")
        send(page, "look Inn")  # no effect: Undo and Edit are offered
        expect(page.locator(".undo-last")).to_have_count(1)
        send(page, "book Inn")
        expect(page.locator(".msg").last).to_have_text("Done: Booked Inn, reference R-1.")
        expect(page.locator(".undo-last")).to_have_count(0)
        expect(page.locator(".edit-last")).to_have_count(0)
        send(page, "thanks")  # a later turn after the effect may be undone again
        expect(page.locator(".undo-last")).to_have_count(1)
        doc = live.call(engine.get_session(session_of(page, "EffectFlow")))
        assert len(runs) == 1 and [e["tool"] for e in doc["effects"]] == ["book"]
