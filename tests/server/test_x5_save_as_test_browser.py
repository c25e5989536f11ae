"""X5: the chat page's "Save as test" link in headless Chromium (skipped without chromium)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from server_flows import live_server
from test_chat_page_browser import fits_the_screen, page, pytestmark, send  # noqa: F401

from demo.hotel.flow import HotelFlow
from picoflow import FlowEngine
from picoflow.server import create_app, offer_scenario_export
from picoflow.stores import MemoryStore


def test_x5_save_as_test_link_downloads_the_session_as_a_scenario(
    page: Page,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    app = offer_scenario_export(create_app(FlowEngine([HotelFlow], store=MemoryStore())))
    with live_server(app) as live:
        page.goto(live.url)
        expect(page.locator("#save-test")).to_be_hidden()  # no session yet
        send(page, "Hi! I need a hotel in Portland.")
        link = page.locator("#save-test")
        expect(link).to_be_visible()
        assert fits_the_screen(page)
        with page.expect_download() as download:
            link.click()
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
    assert saved.name.startswith("HotelFlow-") and saved.name.endswith(".scenario.json")
    scenario = json.loads(saved.read_text())
    assert [turn["input"] for turn in scenario["turns"]] == ["Hi! I need a hotel in Portland."]
