"""One HotelFlow conversation through the real ChatOpenAI client and an OpenAI-compatible server.

The server's "LLM" is the offline demo model, which sees only what crosses the wire — messages
and tool schemas, no run metadata — so this also checks that the offline model decides from
the conversation alone, as any LLM behind an HTTP endpoint must.
"""

from __future__ import annotations

import re

from hotel_chat import CONFIRMATION, Guest, offline_engine, search_july
from support.openai_server import OpenAIServer

from demo.hotel.offline.model import OfflineHotelModel
from picoflow import ModelSpec


async def test_booking_through_chat_openai_and_a_local_server() -> None:
    with OpenAIServer(OfflineHotelModel()) as server:  # type: ignore[arg-type]
        model = ModelSpec("openai", "gpt-4o", {"base_url": server.base_url}, retry_attempts=0)
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
    bound = [body for body in server.requests if body.get("tools")]
    assert {tool["function"]["name"] for tool in bound[0]["tools"]} == {
        "capture_choices",
        "end_chat",
        "forget_guest",
    }
    assert all(body["model"] == "gpt-4o" for body in server.requests)
    assert (await guest.doc())["usage"]["model"]["total_tokens"] > 0
