"""BasicFlow (demo/basic): whole conversations through the real engine and the offline model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from demo.basic.flow import BasicFlow
from demo.basic.offline import offline_provider, respond
from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel


@pytest.fixture(params=["memory", "sqlite"])
async def engine(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[FlowEngine]:
    store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "b.db")
    engine = FlowEngine([BasicFlow], store=store, providers={"offline": offline_provider})
    yield engine
    await engine.aclose()


class Chat:
    def __init__(self, engine: FlowEngine, config: dict[str, Any] | None = None) -> None:
        self.engine, self.config, self.session_id = engine, config, None

    async def say(self, text: str) -> Any:
        result = await self.engine.run("BasicFlow", text, self.session_id, self.config)
        assert result.success, result.message
        self.session_id = result.session_id
        return result

    async def states(self) -> dict[str, Any]:
        doc = await self.engine.get_session(self.session_id)
        return {name: entry["state"] for name, entry in doc["steps"].items()}


async def test_basic_flow_from_weather_to_address_ends_the_session(engine: FlowEngine) -> None:
    chat = Chat(engine)
    weather = await chat.say("What's the weather in NYC and LA?")
    # one response, two get_weather calls, one group handler, two logic steps: same turn
    assert (weather.step, weather.message) == (
        "FavoritesStep",
        "Tell me your favourite colour and your favourite food.",
    )
    assert weather.usage["model"]["calls"] == 2
    named = await chat.say("My colour is green and my food is ramen")
    assert (named.step, named.message) == ("NameStep", "Lovely! What is your full name?")
    dob = await chat.say("My name is Grace Hopper")
    assert dob.step == "DOBStep"
    address = await chat.say("I was born on 1906-12-09")
    assert address.step == "AddressStep"
    done = await chat.say("1 Navy Way, Arlington, VA 22202")
    assert (done.completed, done.message) == (
        True,
        "Thank you, Grace Hopper! Everything is recorded. Goodbye.",
    )
    states = await chat.states()
    assert states["FavoritesStep"]["favorites"] == {"color": "green", "food": "ramen"}
    assert states["FavoritesStep"]["via"] == ["Foo", "Goo"]
    assert states["FavoritesStep"]["weather"] == {"NYC": "sunny, 24°C", "LA": "cloudy, 19°C"}
    assert states["NameStep"]["role"] == "Grace Hopper as Rick Blaine in Casablanca"
    assert states["InContextStep"]["title"] == "Casablanca"
    assert states["AddressStep"]["dob"] == "1906-12-09"
    assert states["AddressStep"]["address"] == {
        "street": "1 Navy Way",
        "city": "Arlington",
        "state": "VA",
        "zip": "22202",
    }
    doc = await engine.get_session(chat.session_id)
    assert doc["run_status"] == "completed"
    assert doc["sequence"] == [
        "WeatherStep",
        "FooLogicStep",
        "GooLogicStep",
        "FavoritesStep",
        "NameStep",
        "InContextStep",  # V2: the nested run, then NameStep again
        "NameStep",
        "DOBStep",
        "AddressStep",
    ]


async def test_basic_flow_stays_until_the_input_is_right(engine: FlowEngine) -> None:
    chat = Chat(engine)
    one_city = await chat.say("Weather in NYC please")
    assert (one_city.step, one_city.message) == (
        "WeatherStep",
        "Sorry: I can only report NYC and LA together; you asked for NYC.",
    )
    await chat.say("NYC and LA then")
    vague = await chat.say("I like lots of things")
    assert (vague.step, vague.message) == (
        "FavoritesStep",
        "Tell me your favourite colour and your favourite food.",
    )  # on_response: not JSON, so the reply stands and the step stays
    await chat.say("My colour is red and my food is tacos")
    placeholder = await chat.say("My name is John Doe")
    assert (placeholder.step, placeholder.message) == (
        "NameStep",
        "Sorry: 'John Doe' is a placeholder, not a name.",
    )
    assert "who" not in (await chat.states()).get("InContextStep", {})  # never ran
    await chat.say("My name is Alan Turing")
    await chat.say("1912-06-23")
    bad = await chat.say("5 Bletchley Rd, Milton Keynes, MK 1234")
    assert (bad.step, bad.completed) == ("AddressStep", False)
    assert bad.message == (
        "Sorry: Invalid address: 'MK' is not a US state code; '1234' is not a US ZIP code."
    )


async def test_basic_flow_can_start_at_favorites_from_the_context(engine: FlowEngine) -> None:
    chat = Chat(engine, config={"skip_weather": True})
    first = await chat.say("Hello")
    assert (first.step, first.message) == (
        "FavoritesStep",
        "Tell me your favourite colour and your favourite food.",
    )
    moved = await chat.say("My colour is blue and my food is pizza")
    assert moved.step == "NameStep"
    states = await chat.states()
    assert "weather" not in states["FavoritesStep"]


async def test_basic_flow_nested_step_is_traced_under_its_parent() -> None:
    model = ScriptedChatModel(policy=respond)
    flow = BasicFlow.using(model)
    engine = FlowEngine([flow], store=MemoryStore())
    chat = Chat(engine, config={"skip_weather": True})
    await chat.say("My colour is blue and my food is pizza")
    await chat.say("My name is Ada Lovelace")
    nested = [r for r in model.requests if r.metadata.get("picoflow_step") == "InContextStep"]
    assert len(nested) == 1
    assert nested[0].metadata["picoflow_parent_step"] == "NameStep"
    assert nested[0].tool_names == ["final_result"]


async def test_basic_flow_over_http() -> None:
    engine = FlowEngine([BasicFlow], store=MemoryStore(), providers={"offline": offline_provider})
    app = create_app(engine)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        flows = await client.get("/ai/flows")
        assert flows.json() == ["BasicFlow"]
        headers: dict[str, str] = {}
        replies = []
        for text in [
            "weather for NYC and LA",
            "my colour is teal and my food is soup",
            "my name is Hedy Lamarr",
            "1914-11-09",
            "10 Film Ave, Los Angeles, CA 90028",
        ]:
            reply = await client.post(
                "/ai/run", json={"flowName": "BasicFlow", "message": text}, headers=headers
            )
            assert reply.status_code == 200, reply.text
            headers = {"CHAT_SESSION_ID": reply.headers["CHAT_SESSION_ID"]}
            replies.append(reply.json())
    assert [r["completed"] for r in replies] == [False, False, False, False, True]
    assert replies[-1]["message"] == "Thank you, Hedy Lamarr! Everything is recorded. Goodbye."
    await engine.aclose()


@pytest.mark.parametrize(
    "said", ["weather in new york and los angeles?", "NY city and L.A. please", "nyc and la"]
)
async def test_basic_flow_knows_the_cities_by_their_usual_names(
    engine: FlowEngine, said: str
) -> None:
    weather = await Chat(engine).say(said)
    assert weather.step == "FavoritesStep", weather.message
