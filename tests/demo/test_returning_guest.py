"""A returning guest with a model that is not the offline one (issue 23, SPEC L1/L5).

A real LLM reads the usual stay from the explore prompt and calls `forget_guest` itself; a
scripted model plays it here, so the test checks what the flow gives any model: the prompt, the
tool, and the booking remembered by flow code whatever the model says.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from cli_runner import demo
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from demo.cli import Chat, option_problem, parse_args
from demo.hotel.flow import PROVIDERS, HotelFlow
from demo.hotel.formats import USUAL_STAY
from demo.hotel.returning import UsualStay
from demo.hotel.types import Amenity, RoomType
from picoflow import FlowEngine
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

TODAY = "2026-05-15"
CONFIG = {"today": TODAY, "user_id": "ada"}
JULY = [{"start": "2026-07-01", "end": "2026-07-06"}]


def _engine(model: ScriptedChatModel, store: MemoryStore) -> FlowEngine:
    return FlowEngine([HotelFlow.using(model)], store=store, providers=PROVIDERS)


async def test_l1_any_model_books_and_the_flow_remembers_the_usual_stay() -> None:
    model = ScriptedChatModel(
        script=[
            tool_call("capture_choices", dates=JULY, room_type="two beds", amenities=["pool"]),
            "Here are the hotels.",
            tool_call("chosen_hotel", hotel="1"),
            "Booked, thank you!",
        ]
    )
    engine = _engine(model, MemoryStore())
    first = await engine.run("HotelFlow", "two beds with a pool, July 1 to 6", None, CONFIG)
    booked = await engine.run("HotelFlow", "book number 1", first.session_id)
    assert booked.completed, booked.message
    (entry,) = await engine.memory_bank("ada").list()
    assert entry["text"] == "Usual stay: two beds; amenities: pool."


async def test_l1_the_explore_prompt_offers_the_usual_stay_and_the_model_can_forget_it() -> None:
    store = MemoryStore()
    model = ScriptedChatModel(policy=_concierge)
    engine = _engine(model, store)
    await engine.memory_bank("ada").add("Usual stay: suite; amenities: pool, spa.", "preference")
    await engine.memory_bank("ada").add("Travels with a dog", "fact")  # not a usual stay
    first = await engine.run("HotelFlow", "hi", None, CONFIG)
    prompt = model.requests[0].messages[0].text
    assert "Last time they chose a suite with pool and spa." in prompt
    assert f'{USUAL_STAY}: {{"room_type": "suite", "amenities": ["pool", "spa"]}}' in prompt
    assert "Never search with them unasked." in prompt
    forgot = await engine.run("HotelFlow", "please forget me", first.session_id)
    assert forgot.message.startswith("Done: I have forgotten what I knew about you")
    assert await engine.memory_bank("ada").list() == []  # the fact went too: the whole bank
    await engine.run("HotelFlow", "July 1 to 6", first.session_id)
    explore = [r for r in model.requests if r.tool_names]  # not the summariser's requests
    assert "Nothing: treat the guest as new." in explore[-1].messages[0].text


def _concierge(messages: list[BaseMessage], tools: list[str]) -> str | AIMessage:
    """A model that forgets the guest when asked, and otherwise (summaries too) just talks."""
    said = str(messages[-1].text)
    if tools and isinstance(messages[-1], HumanMessage) and "forget me" in said:
        return tool_call("forget_guest")
    return "Welcome back! Same again?" if tools else "The guest said hello."


def test_the_usual_stay_reads_back_what_it_writes_and_nothing_else() -> None:
    usual = UsualStay(RoomType.ONE_BED, (Amenity.WIFI, Amenity.EV_CHARGING))
    assert usual.text() == "Usual stay: one bed; amenities: wifi, EV charging."
    assert UsualStay.parse(usual.text()) == usual
    assert usual.describe() == "a one bed room with wifi and EV charging"
    assert UsualStay.parse("Usual stay: suite.") == UsualStay(RoomType.SUITE)
    for other in ("Usual stay: penthouse.", "Prefers a quiet room", "Usual stay: suite"):
        assert UsualStay.parse(other) is None
    assert UsualStay.from_json({"room_type": "suite", "amenities": ["pool", "jacuzzi"]}) == (
        UsualStay(RoomType.SUITE, (Amenity.POOL,))
    )
    assert UsualStay.from_json({"room_type": "villa"}) is None


def _chat(*argv: str) -> Chat:
    args = parse_args(list(argv))
    assert option_problem(args) is None
    return Chat(FlowEngine([HotelFlow], store=MemoryStore()), args, resumable=True)


def test_the_cli_chats_as_the_login_name_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "ada")
    assert _chat().config == {"user_id": "ada"}
    assert _chat("--user", "bob", "--today", TODAY).config == {"today": TODAY, "user_id": "bob"}
    assert _chat("--anonymous").config is None
    assert _chat("--user", "bob").options == ["--user=bob"]  # the resume hint keeps the guest

    def nameless() -> str:
        raise KeyError("no user entry")

    monkeypatch.setattr("getpass.getuser", nameless)
    assert _chat().config is None  # a system without a login name: anonymous


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--user", "ada", "--anonymous"], "--user and --anonymous contradict each other"),
        (["--user", " "], "--user needs a name; leave it out to be your login name"),
        (["--serve", "--user", "ada"], "--user cannot be combined with --serve: over HTTP"),
        (["--serve", "--anonymous"], "--anonymous cannot be combined with --serve: over HTTP"),
    ],
)
def test_the_cli_refuses_user_options_that_cannot_work(argv: list[str], problem: str) -> None:
    args: argparse.Namespace = parse_args(argv)
    found = option_problem(args)
    assert found is not None and found.startswith(problem)


def test_make_demo_recognises_a_returning_person_on_its_default_store(tmp_path: Path) -> None:
    """Two chats in the same folder, as `make demo` twice: the second offers the usual stay.

    (Another owner and --anonymous are the engine tests' and the config test's: each chat here
    is a process start.)
    """
    booking = "I need a hotel in Portland\nJuly 1 to July 6\na suite with a pool\nsearch now\n"
    first = demo("--today", TODAY, "--user", "ada", cwd=tmp_path, stdin=booking + "book 1\n")
    assert first.returncode == 0 and "Your confirmation number is HF-" in first.stdout
    back = "I need a hotel in Portland\nAugust 3 to August 7\nunder $400\n"
    again = demo("--today", TODAY, "--user", "ada", cwd=tmp_path, stdin=back)
    assert "Welcome back!" in again.stdout
    assert "Last time you chose a suite with pool — same again?" in again.stdout
