"""A whole HotelFlow booking through a real uvicorn server, as a PicoFlow client drives it.

explore -> present -> compare (a markdown table) -> book -> completed, then the completed id
starts a new session. The model is a ScriptedChatModel policy that plays the LLM. The client
behaves like PicoFlow's JS client and chat-ui: it calls `.json()` on every reply and reads the
session id from the response header (issue 14, item 6).
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

import httpx
from server_flows import hotel_model, live_server

from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore

TODAY = date(2027, 3, 1)


async def test_a_whole_hotel_booking_over_a_real_server() -> None:
    flow = HotelFlow.using(hotel_model(TODAY))
    engine = FlowEngine(flows=[flow], store=MemoryStore(), providers=PROVIDERS)
    with live_server(create_app(engine)) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:

            async def turn(message: str, session: str | None, **extra: Any) -> httpx.Response:
                headers = {"CHAT_SESSION_ID": session} if session else {}
                body = {"flowName": "HotelFlow", "message": message, **extra}
                reply = await client.post("/ai/run", json=body, headers=headers)
                assert reply.status_code == 200, reply.text
                reply.json()  # every reply is the envelope, whatever its contentType
                return reply

            hello = await turn("Hi", None, config={"today": TODAY.isoformat()})
            session = hello.headers["CHAT_SESSION_ID"]
            assert hello.json()["step"] == "ExploreStep"

            found = await turn("Two nights from March 3, please", session)
            assert found.json()["step"] == "PresentStep"
            assert found.json()["session"] == session

            table = await turn("Compare the first two on price", session)
            assert table.headers["CHAT_SESSION_ID"] == session
            assert table.json()["contentType"] == "text/markdown"
            lines = table.json()["message"].splitlines()
            assert lines[0].startswith("| ") and set(lines[1].replace(" ", "")) <= {"|", "-"}

            booked = await turn("Book number 1", session)
            assert booked.json()["completed"] is True
            assert booked.json()["step"] == "EndStep"
            assert booked.json()["message"] == "Your stay is booked. Thank you, goodbye!"

            doc = live.call(engine.get_session(session))
            assert doc["sequence"] == [
                "ExploreStep",
                "PresentStep",
                "CompareStep",
                "PresentStep",
                "EndStep",
            ]
            booking = doc["steps"]["PresentStep"]["state"]["booking"]
            assert re.search(r"HF-\d{6}", json.dumps(booking))  # a confirmation number

            again = await turn("Hi", session)  # a completed id silently starts over
            assert again.json()["session"] != session
            assert again.headers["CHAT_SESSION_ID"] == again.json()["session"]
