"""L3 on every store: a model extracts bank entries from raw messages, citing their ids.

The extractor is a ScriptedChatModel whose policy reads the transcript it is sent (each line
led by a message id in brackets) and answers with entries citing the ids of the user lines
that hold a keyword, so every test checks real ids against the stored session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from picoflow import Flow, FlowDefinitionError, FlowEngine, Step, finish, go, tool
from picoflow._housekeeping.extraction import MARK_KEY
from picoflow.stores.base import Store
from picoflow.testing import ScriptedChatModel

_LINE = re.compile(r"^\[([^\]]+)\] (\w+)[^:\n]*: ?(.*)$", re.M)


def lines(messages: list[BaseMessage]) -> list[tuple[str, str, str]]:
    """(id, role, text) of every transcript line of an extraction request."""
    return _LINE.findall(str(messages[-1].text))


def citing(*wanted: tuple[str, str, str]) -> Callable[[list[BaseMessage], list[str]], str]:
    """An extractor: for each (keyword, text, kind), an entry citing the user lines with it."""

    def policy(messages: list[BaseMessage], tools: list[str]) -> str:
        found = lines(messages)
        entries = []
        for keyword, text, kind in wanted:
            ids = [i for i, role, said in found if role == "User" and keyword in said]
            if ids:
                entries.append({"text": text, "kind": kind, "message_ids": ids})
        return json.dumps({"entries": entries})

    return policy


class Greet(Step):
    def get_prompt(self) -> str:
        return "Greet the guest and learn about them."

    @tool
    async def start_booking(self) -> Any:
        """Go on to booking."""
        return go(Book)


class Book(Step):
    def get_prompt(self) -> str:
        return "Book a room."

    @tool
    async def done(self) -> Any:
        """The booking is done."""
        return finish("Booked, goodbye.")


def hotel(
    model: ScriptedChatModel,
    extractor: ScriptedChatModel,
    *,
    extract: str = "step",
    kinds: tuple[str, ...] = ("fact", "preference", "episode"),
    summary: ScriptedChatModel | None = None,
) -> type[Flow]:
    class HotelFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            if summary is not None:
                self.get_memory().set_summary_model(summary).set_summary_config(
                    min_messages=8, recent_messages=2
                ).enable_summary("Greet")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [
                Greet(self).use_long_term_memory(
                    tools=False, extract=extract, extract_model=extractor, kinds=kinds
                ),
                Book(self),
            ]

    return HotelFlow


def moving_model() -> ScriptedChatModel:
    """Greet answers once, then moves to Book on the second user message."""

    def policy(messages: list[BaseMessage], tools: list[str]) -> Any:
        from picoflow.testing import tool_call

        said = str(messages[-1].text)
        if "start_booking" in tools and "book" in said.lower():
            return tool_call("start_booking")
        if "done" in tools and "confirm" in said.lower():
            return tool_call("done")
        return "Noted."

    return ScriptedChatModel(policy=policy)


async def stored_ids(engine: FlowEngine, session_id: str) -> set[str]:
    doc = await engine.get_session(session_id)
    assert doc is not None
    return {m["data"]["id"] for ns in doc["memory"].values() for m in ns["messages"]}


async def test_l3_leaving_a_step_extracts_entries_citing_its_message_ids(store: Store) -> None:
    extractor = ScriptedChatModel(policy=citing(("dog", "Travels with a dog", "fact")))
    engine = FlowEngine([hotel(moving_model(), extractor)], store=store)
    first = await engine.run("HotelFlow", "Hi, I travel with my dog", owner="ada")
    assert first.success and extractor.requests == []  # the step is not left yet
    second = await engine.run("HotelFlow", "let's book", session_id=first.session_id)
    assert second.success, second.message
    assert second.warnings == []
    (entry,) = await engine.memory_bank("ada").list()
    assert (entry["text"], entry["kind"]) == ("Travels with a dog", "fact")
    source = entry["source"]
    assert source["session_id"] == first.session_id and source["namespace"] == "Greet"
    assert source["step"] == "Greet"
    assert (source["from_seq"], source["to_seq"]) == (1, 5)  # up to the move's tool result
    (cited,) = source["message_ids"]
    assert cited in await stored_ids(engine, first.session_id or "")
    assert cited.startswith("Greet|")
    request = extractor.requests[0].messages
    roles = [role for _, role, _ in lines(request)]
    assert roles == ["User", "Assistant", "User", "Assistant", "Tool"]
    assert "Allowed kinds: fact, preference, episode." in str(request[0].text)
    assert extractor.requests[0].tags is not None and "picoflow:extract" in (
        extractor.requests[0].tags or []
    )
    doc = await engine.get_session(first.session_id or "")
    assert doc is not None and doc["steps"]["Greet"]["state"][MARK_KEY] == {"Greet": 5}
    assert doc["usage"]["summary"]["calls"] == 1  # counted as a housekeeping call (M10)
    assert await engine.memory_bank("bob").list() == []  # L5: only the owner's bank


async def test_l3_bad_extractor_output_writes_nothing_warns_and_the_turn_succeeds(
    store: Store,
) -> None:
    for reply, words in [
        ("sure, here you go", "the reply is not JSON"),
        ('{"entries": [{"text": "x"}]}', "does not match ExtractionReply"),
        ("", "the extraction model returned an empty reply"),
        (ValueError("model down"), "the extraction model raised ValueError: model down"),
    ]:
        extractor = ScriptedChatModel(script=[reply])
        engine = FlowEngine([hotel(moving_model(), extractor)], store=store)
        first = await engine.run("HotelFlow", "my dog comes along", owner="ada")
        second = await engine.run("HotelFlow", "book it", session_id=first.session_id)
        assert second.success and second.message == "Noted."
        (warning,) = second.warnings
        assert warning.startswith("Long-term memory extraction skipped: namespace 'Greet'")
        assert words in warning and "read again at the next extraction" in warning
        assert await engine.memory_bank("ada").list() == []
        doc = await engine.get_session(first.session_id or "")
        assert doc is not None and MARK_KEY not in doc["steps"]["Greet"]["state"]


async def test_l3_entries_with_foreign_ids_unknown_kinds_or_no_text_are_dropped(
    store: Store,
) -> None:
    def policy(messages: list[BaseMessage], tools: list[str]) -> str:
        user = [i for i, role, _ in lines(messages) if role == "User"]
        return json.dumps(
            {
                "entries": [
                    {"text": "Travels with a dog", "kind": "fact", "message_ids": user[:1]},
                    {"text": "Made up", "kind": "fact", "message_ids": ["Other|2026|1"]},
                    {"text": "Likes jazz", "kind": "hobby", "message_ids": user[:1]},
                    {"text": "  ", "kind": "fact", "message_ids": user[:1]},
                    {"text": "Uncited", "kind": "preference", "message_ids": []},
                ]
            }
        )

    extractor = ScriptedChatModel(policy=policy)
    engine = FlowEngine([hotel(moving_model(), extractor)], store=store)
    first = await engine.run("HotelFlow", "my dog comes along", owner="ada")
    second = await engine.run("HotelFlow", "book it", session_id=first.session_id)
    assert second.success
    assert [e["text"] for e in await engine.memory_bank("ada").list()] == ["Travels with a dog"]
    (warning,) = second.warnings
    assert warning.startswith("Long-term memory extraction dropped 4 of 5 entries")
    assert "entry 2 cites messages that are not in the extracted range (Other|2026|1)" in warning
    assert "entry 3 has the kind 'hobby', not one of fact, preference, episode" in warning
    assert "entry 4 is malformed (A memory entry needs non-empty text" in warning


async def test_l3_extraction_reads_archived_originals_never_the_summary(store: Store) -> None:
    summariser = ScriptedChatModel(policy=lambda m, t: "SUMMARY: the guest has a dog.")
    extractor = ScriptedChatModel(policy=citing(("dog", "Travels with a dog", "fact")))
    flow = hotel(moving_model(), extractor, extract="session", summary=summariser)
    engine = FlowEngine([flow], store=store)
    first = await engine.run("HotelFlow", "I travel with my dog", owner="ada")
    for text in ["a quiet room", "high floor", "late checkout", "two nights"]:
        await engine.run("HotelFlow", text, session_id=first.session_id)
    doc = await engine.get_session(first.session_id or "")
    assert doc is not None and doc["memory"]["Greet"]["summary"]  # compaction ran
    assert doc["memory"]["Greet"]["archived"] > 0
    assert extractor.requests == []  # extract="session": nothing before the session ends
    result = await engine.extract_memory(first.session_id or "")
    assert result["warnings"] == []
    (entry,) = result["entries"]
    request = str(extractor.requests[0].messages[-1].text)
    assert "SUMMARY" not in request and "the guest has a dog" not in request
    assert "I travel with my dog" in request  # read back from the archive
    assert entry["source"]["from_seq"] == 1 and entry["source"]["to_seq"] == 10
    archived = await store.search_archive(first.session_id or "", "Greet", "dog")
    assert entry["source"]["message_ids"] == [archived[0]["message"]["data"]["id"]]


async def test_l3_a_range_is_extracted_once_even_after_the_owner_forgets(store: Store) -> None:
    extractor = ScriptedChatModel(policy=citing(("dog", "Travels with a dog", "fact")))
    engine = FlowEngine([hotel(moving_model(), extractor, extract="session")], store=store)
    first = await engine.run("HotelFlow", "I travel with my dog", owner="ada")
    sid = first.session_id or ""
    assert len((await engine.extract_memory(sid))["entries"]) == 1
    assert await engine.extract_memory(sid) == {"entries": [], "warnings": []}
    assert len(extractor.requests) == 1  # nothing new: the model is not asked again
    assert await engine.memory_bank("ada").forget() == 1
    assert (await engine.extract_memory(sid))["entries"] == []  # not re-learnt
    await engine.run("HotelFlow", "my dog is called Rex", session_id=sid)
    (entry,) = (await engine.extract_memory(sid))["entries"]
    assert (entry["source"]["from_seq"], entry["source"]["to_seq"]) == (3, 4)  # only the new part
    assert [role for _, role, _ in lines(extractor.requests[-1].messages)] == [
        "User",
        "Assistant",
    ]


async def test_l3_session_extraction_runs_when_the_session_ends(store: Store) -> None:
    extractor = ScriptedChatModel(
        policy=citing(("dog", "Travels with a dog", "fact"), ("quiet", "Wants quiet", "preference"))
    )
    engine = FlowEngine([hotel(moving_model(), extractor, extract="session")], store=store)
    first = await engine.run("HotelFlow", "I travel with my dog", owner="ada")
    await engine.run("HotelFlow", "a quiet room, book it", session_id=first.session_id)
    assert extractor.requests == []  # the step was left, but it extracts at the session's end
    last = await engine.run("HotelFlow", "confirm", session_id=first.session_id)
    assert last.success and last.completed
    texts = sorted(e["text"] for e in await engine.memory_bank("ada").list())
    assert texts == ["Travels with a dog", "Wants quiet"]


async def test_l3_owner_isolation_and_no_owner_means_no_extraction(store: Store) -> None:
    extractor = ScriptedChatModel(policy=citing(("dog", "Travels with a dog", "fact")))
    engine = FlowEngine([hotel(moving_model(), extractor)], store=store)
    bob = await engine.run("HotelFlow", "my dog comes", owner="bob")
    await engine.run("HotelFlow", "book", session_id=bob.session_id, owner="bob")
    nobody = await engine.run("HotelFlow", "my dog comes")
    await engine.run("HotelFlow", "book", session_id=nobody.session_id)
    assert len(extractor.requests) == 1  # the session without an owner asks no model
    assert [e["owner"] for e in await engine.memory_bank("bob").list()] == ["bob"]
    assert await engine.memory_bank("ada").list() == []
    assert await engine.memory_bank("ada").search("dog") == []


async def test_l3_background_mode_extracts_after_the_reply(store: Store) -> None:
    extractor = ScriptedChatModel(policy=citing(("dog", "Travels with a dog", "fact")))
    summariser = ScriptedChatModel(policy=lambda m, t: "summary")
    base = hotel(moving_model(), extractor, summary=summariser)

    class Background(base):  # type: ignore[valid-type, misc]
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_summary_config(min_messages=8, recent_messages=2, background=True)

    engine = FlowEngine([Background], store=store)
    first = await engine.run("Background", "my dog comes", owner="ada")
    second = await engine.run("Background", "book", session_id=first.session_id)
    assert second.success and second.warnings == []
    await engine.wait_for_background()
    (entry,) = await engine.memory_bank("ada").list()
    assert entry["source"]["session_id"] == first.session_id
    doc = await engine.get_session(first.session_id or "")
    assert doc is not None and doc["steps"]["Greet"]["state"][MARK_KEY] == {"Greet": 5}


def test_l3_bad_extraction_options_fail_at_definition() -> None:
    step = Greet.__new__(Greet)
    with pytest.raises(ValueError, match="is 'step' .* 'session' .* or None, got 'turn'"):
        Step.use_long_term_memory(step, extract="turn")
    with pytest.raises(ValueError, match="non-empty list of distinct labels"):
        Step.use_long_term_memory(step, extract="step", kinds=())
    with pytest.raises(ValueError, match="non-empty list of distinct labels"):
        Step.use_long_term_memory(step, extract="step", kinds="fact")
    with pytest.raises(ValueError, match="short lowercase label"):
        Step.use_long_term_memory(step, extract="step", kinds=["Fact!"])
    assert Step.use_long_term_memory(step, tools=False, extract="step") is step  # extract only
    model = ScriptedChatModel(script=["hi"])

    class NoModel(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Greet(self).use_long_term_memory(extract="step"), Book(self)]

    with pytest.raises(FlowDefinitionError, match="needs a model to read the messages"):
        FlowEngine([NoModel])


async def test_l3_extract_memory_refuses_unknown_and_other_owners_sessions(store: Store) -> None:
    from picoflow import SessionNotFoundError

    extractor = ScriptedChatModel(policy=citing(("dog", "Travels with a dog", "fact")))
    engine = FlowEngine([hotel(moving_model(), extractor, extract="session")], store=store)
    first = await engine.run("HotelFlow", "I travel with my dog", owner="ada")
    with pytest.raises(SessionNotFoundError):
        await engine.extract_memory("no-such-session")
    with pytest.raises(SessionNotFoundError):
        await engine.extract_memory(first.session_id or "", owner="bob")  # H4: not bob's
    assert extractor.requests == [] and await engine.memory_bank("ada").list() == []
    done = await engine.extract_memory(first.session_id or "", owner="ada")
    assert [e["text"] for e in done["entries"]] == ["Travels with a dog"]
