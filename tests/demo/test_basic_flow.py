"""BasicFlow (demo/basic) against research/pico-demo-flows.md section 1, through the real engine.

The first test walks a complete chat run and checks registration, models, tools and their
argument schemas, the step path and the final session state point by point (section 1.9);
the others are conversations in varied phrasing and the exits. The corpora
(test_basic_corpus.py) cover many more phrasings.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pydash
import pytest

from demo.basic.flow import ABRUPT_END, FAVORITES_SCHEMA, BasicFlow
from demo.basic.offline import MOVIE_IDEA, offline_provider, respond
from demo.basic.validators import validate_address, validate_dob, validate_name
from picoflow import FlowEngine, ModelSpec
from picoflow.server import create_app
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel

TOUR = [
    "Hi",
    "NYC and LA please",
    "blue",
    "Alien",
    "winter",
    "My name is Ada Lovelace",
    "10 December 1815",
    "12 Main St, Springfield, IL 62701",
]


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

    async def doc(self) -> dict[str, Any]:
        doc = await self.engine.get_session(self.session_id)  # type: ignore[arg-type]
        assert doc is not None
        return doc

    async def states(self) -> dict[str, Any]:
        return {name: entry["state"] for name, entry in (await self.doc())["steps"].items()}


def _schema(request: Any, name: str) -> dict[str, Any]:
    tool = next(t for t in request.tools if t["function"]["name"] == name)
    return dict(tool["function"]["parameters"])


def _types(parameters: dict[str, Any]) -> dict[str, str]:
    return {key: value.get("type") for key, value in parameters["properties"].items()}


async def test_basic_flow_matches_the_reference_run_point_by_point() -> None:
    """Section 1.1-1.9: registration, models, tools, schemas, path and final state."""
    model = ScriptedChatModel(policy=respond)
    flow = BasicFlow.using("fake:gpt-4o", mini="fake:gpt-4o-mini")
    engine = FlowEngine([flow], store=MemoryStore(), providers={"fake": lambda spec: model})
    chat = Chat(engine, config={"isPresident": False})
    results = [await chat.say(text) for text in TOUR]
    assert [r.step for r in results] == [
        "WeatherStep", "FavoritesStep", "FavoritesStep", "FavoritesStep", "NameStep",
        "DOBStep", "AddressStep", "EndStep",
    ]  # fmt: skip
    assert [r.completed for r in results] == [False] * 7 + [True]
    # turn 2: two get_weather calls in one reply, both logic steps, then the first question
    assert results[1].usage["model"]["calls"] == 2
    doc = await chat.doc()
    assert doc["run_status"] == "completed"
    assert doc["context"] == {"config": {"isPresident": False}}
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
        "EndStep",
    ]  # fmt: skip  (PicoFlow also lists the nested InContextStep and NameStep again)
    assert list(doc["steps"]) == [  # registration order (1.1)
        "WeatherStep", "NameStep", "AddressStep", "DOBStep", "FooLogicStep", "GooLogicStep",
        "InContextStep", "PresidentStep", "FavoritesStep", "EndStep",
    ]  # fmt: skip
    models = {name: (entry["model"] or {}).get("name") for name, entry in doc["steps"].items()}
    mini = {"WeatherStep", "NameStep", "AddressStep", "DOBStep", "EndStep"}
    for name in ("WeatherStep", "NameStep", "AddressStep", "DOBStep", "EndStep"):
        assert models[name] == "gpt-4o-mini", name
    for name in set(doc["steps"]) - mini - {"FooLogicStep", "GooLogicStep"}:
        assert models[name] in ("gpt-4o", None), name

    states = {name: dict(entry["state"]) for name, entry in doc["steps"].items()}
    for state in states.values():
        state.pop("_saveOn", None)
    assert states["WeatherStep"] == {"cityName_NYC": True, "cityName_LA": True}
    assert list(states["WeatherStep"]) == ["cityName_NYC", "cityName_LA"]  # order of the calls
    assert states["NameStep"] == {"name": "Ada Lovelace", "inContext": MOVIE_IDEA}
    assert states["InContextStep"] == {"who": MOVIE_IDEA}
    assert states["DOBStep"] == {"year": 1815, "month": 12, "day": 10}
    assert states["AddressStep"] == {
        "address": {"street": "12 Main St", "city": "Springfield", "state": "IL", "zip": "62701"}
    }
    assert states["FooLogicStep"] == {} and states["PresidentStep"] == {}
    assert states["GooLogicStep"] == {"fooData": "fooValue"}
    assert states["FavoritesStep"] == {
        "gooData": "gooValue",
        "favorites": {
            "favoriteColor": "blue", "favoriteMovie": "Alien", "favoriteSeason": "winter",
        },
    }  # fmt: skip
    assert list(doc["steps"]["EndStep"]["state"]) == ["_prompt", "_saveOn", "fromAddress"]
    assert states["EndStep"] == {"_prompt": ABRUPT_END, "fromAddress": 5}

    memory = doc["memory"]
    assert set(memory) == {"WeatherStep", "favorite", "default", "separate", "temp"}
    favorite = [m["type"] for m in memory["favorite"]["messages"]]
    assert favorite == ["system", "human", "ai", "human", "ai", "human", "ai", "human"]
    assert memory["favorite"]["messages"][1]["data"]["content"] == "Hi"  # the JSON is not kept
    separate = memory["separate"]["messages"]
    assert separate[1]["data"]["content"] == "Follow system prompt"
    temp = [m["type"] for m in memory["temp"]["messages"]]
    assert temp == ["system", "human", "ai"]
    assert memory["temp"]["messages"][0]["data"]["content"] == ABRUPT_END

    # tools and argument schemas as each step offers them (1.3)
    by_step: dict[str, Any] = {}
    for request in model.requests:
        by_step.setdefault(request.metadata["picoflow_step"], request)
    assert by_step["WeatherStep"].tool_names == ["get_weather", "end_chat"]
    assert by_step["NameStep"].tool_names == ["user_name", "end_chat"]
    assert by_step["DOBStep"].tool_names == ["dob", "end_chat"]
    assert by_step["AddressStep"].tool_names == ["address", "end_chat"]
    assert by_step["FavoritesStep"].tool_names == []
    assert by_step["EndStep"].tool_names == []
    weather = _schema(by_step["WeatherStep"], "get_weather")
    assert (_types(weather), weather["required"]) == ({"cityName": "string"}, ["cityName"])
    name = _schema(by_step["NameStep"], "user_name")
    assert (_types(name), name["required"]) == ({"name": "string"}, ["name"])
    dob = _schema(by_step["DOBStep"], "dob")
    assert _types(dob) == {"year": "integer", "month": "integer", "day": "integer"}
    assert sorted(dob["required"]) == ["day", "month", "year"]
    address = _schema(by_step["AddressStep"], "address")
    assert (_types(address), address["required"]) == ({"address": "string"}, ["address"])
    assert _types(_schema(by_step["WeatherStep"], "end_chat")) == {"prompt": "string"}
    idea = _schema(by_step["InContextStep"], "final_result")
    assert _types(idea) == {
        "title": "string", "genre": "string", "releaseYear": "integer", "rating": "number",
        "summary": "string",
    }  # fmt: skip
    assert sorted(idea["required"]) == sorted(MOVIE_IDEA)
    assert by_step["InContextStep"].metadata["picoflow_parent_step"] == "NameStep"
    # prompts: the schema file verbatim, the user's name from NameStep's state (Prompt.replace)
    assert FAVORITES_SCHEMA.strip() in by_step["FavoritesStep"].messages[0].text
    dob = next(r for r in model.requests if r.metadata["picoflow_step"] == "DOBStep")
    assert "date of birth of Ada Lovelace" in dob.messages[0].text.replace("\n", " ")


async def test_basic_flow_collects_the_two_cities_over_two_turns(engine: FlowEngine) -> None:
    chat = Chat(engine)
    first = await chat.say("Show me NYC")  # "Show" is not a city
    assert (first.step, first.message) == (
        "WeatherStep",
        "Got NYC. Which other city should I compare it with?",
    )
    other = await chat.say("Paris")
    assert other.message.startswith("Sorry, Only LA and NYC cities are allowed.")
    second = await chat.say("ok then Los Angeles")
    assert (second.step, second.message) == (
        "FavoritesStep",
        "What is your favourite colour: red, blue, white?",
    )
    assert (await chat.states())["WeatherStep"]["cityName_LA"] is True


async def test_basic_flow_favourites_one_at_a_time_with_a_correction(engine: FlowEngine) -> None:
    chat = Chat(engine)
    await chat.say("nyc + la")
    assert (await chat.say("what can I pick?")).message == (
        "You can choose red, blue, white. What is your favourite colour: red, blue, white?"
    )
    assert (await chat.say("bleu")).message == "What is your favourite movie?"
    season = await chat.say("oops, I meant white. Movie: Blade Runner")
    assert season.message == "And your favourite season: spring, summer, autumn, winter?"
    name = await chat.say("fall")
    assert (name.step, name.message) == ("NameStep", "Thanks! What is your name?")
    assert (await chat.states())["FavoritesStep"]["favorites"] == {
        "favoriteColor": "white",
        "favoriteMovie": "Blade Runner",
        "favoriteSeason": "autumn",
    }


async def test_basic_flow_refuses_john_doe_after_saving_it_and_running_the_nested_step(
    engine: FlowEngine,
) -> None:
    chat = Chat(engine)
    for text in TOUR[1:5]:
        await chat.say(text)
    refused = await chat.say("John Doe")
    assert (refused.step, refused.message) == (
        "NameStep",
        "Sorry: Cannot accept John Doe, please choose a different name. What name should I use?",
    )
    states = await chat.states()
    assert states["NameStep"]["name"] == "John Doe"  # saved first, as upstream
    assert states["InContextStep"]["who"] == MOVIE_IDEA
    several = await chat.say("ok, I'm Priya Nair and I was born on 2 Feb 1992")
    assert (several.step, several.message) == ("AddressStep", "Thank you. What is your address?")
    assert {k: (await chat.states())["DOBStep"][k] for k in ("year", "month", "day")} == {
        "year": 1992,
        "month": 2,
        "day": 2,
    }


async def test_basic_flow_asks_again_for_an_ambiguous_date_and_a_bad_address(
    engine: FlowEngine,
) -> None:
    chat = Chat(engine)
    for text in TOUR[1:6]:
        await chat.say(text)
    again = await chat.say("03/04/1990")
    assert (again.step, again.message) == (
        "DOBStep",
        "03/04/1990 could be read two ways. Please enter your date of birth again with the "
        "month as a word, e.g. 3 April 1990.",
    )
    assert (await chat.say("3 April 1990")).step == "AddressStep"
    bad = await chat.say("1600 Pennsylvania Ave NW, Washington, DC 20500")  # DC: not a state
    assert (bad.step, bad.completed) == ("AddressStep", False)
    assert bad.message.startswith("Sorry, that address was not accepted.")
    done = await chat.say("i live at 10 Main Street Boston MA 02118")
    assert done.completed
    assert (await chat.states())["AddressStep"]["address"] == {
        "street": "10 Main Street",
        "city": "Boston",
        "state": "MA",
        "zip": "02118",
    }


@pytest.mark.parametrize("turns", [1, 5, 6, 7])
async def test_basic_flow_end_chat_ends_from_each_step_with_the_abrupt_end_prompt(
    engine: FlowEngine, turns: int
) -> None:
    """Weather, Name, DOB and Address offer end_chat (1.6); it ends the session (R8)."""
    chat = Chat(engine)
    for text in TOUR[1:turns]:
        await chat.say(text)
    done = await chat.say("forget it, bye")
    assert (done.step, done.completed) == ("EndStep", True)
    assert done.message.startswith("Thank you for chatting with me.")
    closing = (await chat.states())["EndStep"]["_prompt"]
    # AddressStep's end_chat keeps the model's prompt (EndStep's own handler upstream)
    assert closing == (ABRUPT_END if turns < 7 else "Say goodbye to the user.")


async def test_basic_flow_starts_at_president_step_from_the_context(engine: FlowEngine) -> None:
    """Initial step is context-driven (1.1); a worker answers its ordinal and completes."""
    worker = await Chat(engine, config={"isPresident": True, "nth": "16th"}).say("")
    assert (worker.step, worker.completed) == ("PresidentStep", True)
    assert worker.message == "The 16th President of the United States was Abraham Lincoln."


async def test_basic_flow_over_http() -> None:
    engine = FlowEngine([BasicFlow], store=MemoryStore(), providers={"offline": offline_provider})
    transport = httpx.ASGITransport(app=create_app(engine))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        assert (await client.get("/ai/flows")).json() == ["BasicFlow"]
        headers: dict[str, str] = {}
        replies = []
        for text in TOUR:
            reply = await client.post(
                "/ai/run", json={"flowName": "BasicFlow", "message": text}, headers=headers
            )
            assert reply.status_code == 200, reply.text
            headers = {"CHAT_SESSION_ID": reply.headers["CHAT_SESSION_ID"]}
            replies.append(reply.json())
    assert [r["completed"] for r in replies] == [False] * 7 + [True]
    await engine.aclose()


def test_basic_flow_offline_provider_names_its_one_model() -> None:
    with pytest.raises(ValueError) as caught:
        offline_provider(ModelSpec("offline", "basic-mini"))
    assert str(caught.value) == (
        "The BasicFlow offline provider has one model, 'offline:basic'; got 'offline:basic-mini'."
    )


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("12 Main St, Springfield, IL 62701", ("12 Main St", "Springfield", "IL", "62701")),
        ("5 Elm Rd, Austin, TX 78701-1234", ("5 Elm Rd", "Austin", "TX", "78701-1234")),
        ("Apt 4 #2, St. Louis, MO 63101", ("Apt 4 #2", "St. Louis", "MO", "63101")),
    ],
)
def test_validate_address_reads_street_city_state_zip(text: str, parts: tuple[str, ...]) -> None:
    keys = ("street", "city", "state", "zip")
    assert validate_address(text) == dict(zip(keys, parts, strict=True))


@pytest.mark.parametrize(
    "text",
    [
        "", "   ", None, 42, "12 Main St Springfield IL 62701", "12 Main St, Springfield, il 62701",
        "12 Main St, Springfield, DC 20500", "12 Main St, Spring3field, IL 62701",
        "12 Main St, Springfield, IL 6270", "12 Main St, Springfield, IL 62701 ",
        "12 Main St!, Springfield, IL 62701", "12 Main St, Springfield, IL ٦٢٧٠١",
    ],
)  # fmt: skip
def test_validate_address_refuses_what_the_original_refuses(text: Any) -> None:
    assert validate_address(text) is None


def test_the_unused_validators_behave_as_upstream() -> None:
    from datetime import date

    today = date(2026, 6, 1)
    assert validate_dob(1, 6, 2008, today=today) == {"day": 1, "month": 6, "year": 2008}
    refused = {"error": "applicant must be 18 years or older"}
    assert validate_dob(2, 6, 2008, today=today) == refused
    assert validate_dob(31, 2, 1990, today=today) == refused
    assert validate_name("Ada") == {"error": "A full name is required."}
    assert validate_name("Ada Lovelace") == {"firstName": "Ada", "lastName": "Lovelace"}
    assert validate_name(" Ada  King  Byron Lovelace ") == {
        "firstName": "Ada",
        "lastName": "Lovelace",
        "middleName": "King Byron",
    }


async def test_basic_flow_batch_mode_asks_seven_presidents_three_at_a_time(
    engine: FlowEngine,
) -> None:
    """Section 1.7: `_concurrent` runs spawn_steps; each ordinal is a PresidentStep session."""
    chat = Chat(engine, config={"_concurrent": True})
    done = await chat.say("")
    assert (done.message, done.completed, done.step) == (
        "Finished concurrent flow: BasicFlow",
        True,
        "PresidentStep",
    )
    state = dict((await chat.states())["PresidentStep"])
    state.pop("_saveOn")
    assert list(state) == ["10th", "11th", "12th", "13th", "14th", "15th", "16th"]
    assert state["10th"] == "The 10th President of the United States was John Tyler."
    assert state["16th"] == "The 16th President of the United States was Abraham Lincoln."
    assert (await chat.doc())["sequence"] == ["WeatherStep", "PresidentStep"]


SCENARIOS = sorted((Path(__file__).parents[2] / "demo" / "basic" / "scenarios").glob("*.json"))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
async def test_basic_flow_scenario_files_hold_for_the_port(path: Path) -> None:
    """The PicoFlow-format scenarios (SPEC X1) of demo/basic/scenarios are true of this port."""
    scenario = json.loads(path.read_text(encoding="utf-8"))
    assert scenario["flowName"] == "BasicFlow"
    engine = FlowEngine([BasicFlow], store=MemoryStore(), providers={"offline": offline_provider})
    session = None
    for number, turn in enumerate(scenario["turns"], 1):
        tools, result = [], None
        config = scenario.get("config") if session is None else None
        async for event in engine.stream("BasicFlow", turn["input"], session, config):
            if event.kind == "tool_call":
                tools.append(event.data["name"])
            result = event.result if event.kind == "done" else result
        assert result is not None and result.success, (number, result)
        session = result.session_id
        where = f"{path.name} turn {number}: {result.message!r}"
        assert result.completed == turn["completed"], where
        expect = turn.get("expect", {})
        if "step" in expect:
            assert result.step == expect["step"], where
        if "tools" in expect:
            assert tools == expect["tools"], where
        doc = await engine.get_session(session)  # type: ignore[arg-type]
        assert doc is not None
        for dotted, value in expect.get("state", {}).items():
            step, _, key = dotted.partition(".")
            assert pydash.get(doc["steps"][step]["state"], key) == value, (where, dotted)
