"""One HotelFlow conversation through each provider's real client and a loopback server.

As in `test_hotel_over_http.py` (OpenAI), the server's "LLM" is the offline demo model, which
sees only what crosses the wire; here the wire is Anthropic's Messages API, Ollama's chat API
and the Gemini API, each with their own message, tool-call and system-prompt shapes, over a
whole conversation: several tool rounds, step changes, a summary and a direct reply.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hotel_chat import CONFIRMATION, Guest, offline_engine, search_july
from support.anthropic_server import AnthropicServer
from support.gemini_server import GeminiServer
from support.ollama_server import OllamaServer

from demo.hotel.offline_model import OfflineHotelModel
from picoflow import ModelSpec

SERVERS: dict[str, Any] = {
    "anthropic": AnthropicServer,
    "ollama": OllamaServer,
    "google_genai": GeminiServer,
}


@pytest.mark.parametrize("provider", list(SERVERS))
async def test_booking_through_each_provider_client(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    with SERVERS[provider](OfflineHotelModel()) as server:
        model = ModelSpec(provider, "model-x", {"base_url": server.url}, retry_attempts=0)
        guest = Guest(offline_engine(model=model))
        listed = await search_july(guest, "two beds, under $300 a night, with wifi and parking")
        assert "1. Columbia Slough Lodge — Portland, OR — two beds" in listed.message
        table = await guest.say("compare 1 and 3 on price")
        assert table.message.startswith("| Price | Columbia Slough Lodge | Mount Hood Gateway Inn")
        booked = await guest.say("book number 3")
    assert booked.completed
    booking = await guest.booking()
    assert booking["hotel"] == "Mount Hood Gateway Inn"
    assert re.fullmatch(CONFIRMATION, booking["confirmation"])
    assert booking["confirmation"] in booked.message
    doc = await guest.doc()
    assert doc["usage"]["model"]["total_tokens"] > 0
    assert doc["memory"]["hotel-explore"]["summary"]  # the summariser ran over the wire too
