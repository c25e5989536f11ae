"""Issue 14's fourteen-turn HotelFlow conversation over a real server, as PicoFlow's clients talk.

The offline demo model behind `create_app` under uvicorn; the client behaves like PicoFlow's JS
client and chat-ui: it calls `.json()` on every reply (tables included) and reads the session id
from the `CHAT_SESSION_ID` response header, never from the body. Criteria one by one, a search,
a changed room type, three comparisons, back to the list, and a booking of number 8.
"""

from __future__ import annotations

from typing import Any

import httpx
from server_flows import live_server

from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore

TODAY = "2026-05-15"


async def test_fourteen_turns_over_http_with_a_client_that_parses_every_reply() -> None:
    engine = FlowEngine(
        [HotelFlow.using("offline:hotel")], store=MemoryStore(), providers=PROVIDERS
    )
    replies: list[dict[str, Any]] = []
    with live_server(create_app(engine)) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:
            session: str | None = None

            async def say(message: str) -> dict[str, Any]:
                nonlocal session
                headers = {"CHAT_SESSION_ID": session} if session else {}
                body: dict[str, Any] = {"flowName": "HotelFlow", "message": message}
                if session is None:
                    body["config"] = {"today": TODAY}
                response = await client.post("/ai/run", json=body, headers=headers)
                assert response.status_code == 200, response.text
                reply = response.json()  # every reply, whatever its contentType
                assert reply["success"] is True, reply
                session = response.headers["CHAT_SESSION_ID"]
                replies.append(reply)
                return reply

            assert (await say(""))["step"] == "ExploreStep"  # the chat opens: the bot greets
            await say("Hi, I'm looking for a hotel in Portland")
            assert "budget per night" in (await say("July 1 to July 6"))["message"]
            assert "room type" in (await say("under $300 a night"))["message"]
            assert "amenities" in (await say("one bed"))["message"]
            assert "distance" in (await say("wifi please"))["message"]
            assert "shall I search" in (await say("no preference"))["message"]
            first = await say("yes, search")
            assert first["step"] == "PresentStep" and "page 1 of 3" in first["message"]
            again = await say("actually, make it two beds and search again")
            assert again["step"] == "PresentStep" and "two beds" in again["message"]
            price = await say("compare 1,3,5 on price")
            assert price["contentType"] == "text/markdown"
            names = price["message"].splitlines()[0].strip("| ").split(" | ")[1:]
            amenities = await say("same ones on amenities")
            assert amenities["message"].startswith(f"| Amenity | {' | '.join(names)} |")
            pair = await say("now 2 and 4")
            assert pair["message"].startswith("| Amenity | ") and pair["step"] == "CompareStep"
            listed = await say("ok, back to the list")
            assert listed["step"] == "PresentStep" and "\n8. " in listed["message"]
            eighth = listed["message"].split("\n8. ")[1].split(" — ")[0]
            booked = await say("book number 8")
        doc = live.call(engine.get_session(replies[0]["session"]))  # before the app closes it
    assert booked["completed"] is True and eighth in booked["message"]
    assert len(replies) == 14 and len({r["session"] for r in replies}) == 1
    assert doc is not None and doc["steps"]["PresentStep"]["state"]["booking"]["hotel"] == eighth
