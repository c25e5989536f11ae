"""X5: the chat page's "Save as test" — `POST /ai/scenario`, off unless `offer_scenario_export`."""

from __future__ import annotations

import json

import pytest
from server_flows import client_for

from demo.hotel.flow import HotelFlow
from picoflow import FlowEngine
from picoflow.scenarios import run_scenario
from picoflow.server import api_key_auth, create_app, offer_scenario_export
from picoflow.stores import MemoryStore


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")


async def test_x5_save_as_test_downloads_a_scenario_that_reruns_green() -> None:
    engine = FlowEngine([HotelFlow], store=MemoryStore())
    app = offer_scenario_export(create_app(engine))
    async with client_for(app) as client:
        page = await client.get("/")
        assert '<body data-busy="false" data-save-test>' in page.text
        assert 'id="save-test"' in page.text
        first = await client.post(
            "/ai/run",
            json={"flowName": "HotelFlow", "message": "", "config": {"today": "2026-05-15"}},
        )
        session = first.json()["session"]
        headers = {"CHAT_SESSION_ID": session}
        for text in ["Hi! I need a hotel in Portland.", "July 1 to July 6"]:
            await client.post(
                "/ai/run", json={"flowName": "HotelFlow", "message": text}, headers=headers
            )
        saved = await client.post("/ai/scenario", headers=headers)
    assert saved.status_code == 200
    assert saved.headers["content-disposition"] == (
        f'attachment; filename="HotelFlow-{session[:12]}.scenario.json"'
    )
    scenario = json.loads(saved.text)
    assert [t["input"] for t in scenario["turns"]] == [
        "", "Hi! I need a hotel in Portland.", "July 1 to July 6",
    ]  # fmt: skip
    assert (await run_scenario(FlowEngine([HotelFlow], store=MemoryStore()), scenario)).passed


async def test_x5_save_as_test_is_off_by_default_and_owner_checked() -> None:
    async with client_for(create_app(FlowEngine([HotelFlow], store=MemoryStore()))) as client:
        assert "data-save-test" not in (await client.get("/")).text
        assert (await client.post("/ai/scenario")).status_code == 404

    keys = {"alice-key-0123456789": "alice", "bob-key-0123456789ab": "bob"}
    app = offer_scenario_export(
        create_app(FlowEngine([HotelFlow], store=MemoryStore()), authorize=api_key_auth(keys))
    )
    async with client_for(app) as client:
        alice = {"Authorization": "Bearer alice-key-0123456789"}
        run = await client.post(
            "/ai/run", json={"flowName": "HotelFlow", "message": "hi"}, headers=alice
        )
        session = run.json()["session"]
        bob = {"Authorization": "Bearer bob-key-0123456789ab", "CHAT_SESSION_ID": session}
        refused = await client.post("/ai/scenario", headers=bob)
        assert (refused.status_code, refused.json()["code"]) == (404, "unknown_session")
        assert refused.json()["message"] == "There is no such session to export."
        missing = await client.post("/ai/scenario", headers=alice)
        assert missing.json()["message"] == (
            "Send the session to export in the CHAT_SESSION_ID header; none was sent."
        )
        own = await client.post("/ai/scenario", headers={**alice, "CHAT_SESSION_ID": session})
        assert own.status_code == 200
