"""step distillation: a step left for good is distilled into typed state with provenance.

`Step.distil_on_exit(Schema, key=..., erase=...)`: when the cursor leaves the step (F8), the
summary model turns the step's messages into a pydantic value stored in the step's state with
the ids of those messages, at the end of the turn (or after the reply in background mode); with
`erase=True` the messages then go to the archive (M9). Failures warn and change nothing (M8);
usage is summary usage (M10). Scripted models only. Background mode is in
test_distil_background.py.
"""

from __future__ import annotations

import asyncio
import doctest
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict

import picoflow._housekeeping.distillation
from picoflow import (
    Flow,
    FlowDefinitionError,
    FlowEngine,
    Step,
    StoreError,
    go,
    tool,
)
from picoflow._housekeeping.distillation import DEFAULT_DISTIL_PROMPT, erase_cut
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

SKIPPED_TAIL = (
    ". Nothing was stored or erased; the step is distilled again the next time it is left."
)
HANG = "<never answers>"


class StayCriteria(BaseModel):
    city: str | None = None
    nights: int | None = None


class Explore(Step):
    def get_prompt(self) -> str:
        return "Collect the stay criteria."

    @tool
    def done(self) -> Any:
        """The criteria are complete: show hotels."""
        return go(Present)

    @tool
    def again(self) -> Any:
        """Start collecting again (a move to the current step)."""
        return go(Explore)


class Present(Step):
    def get_prompt(self) -> str:
        criteria = self.flow.get_step(Explore).get_distilled(StayCriteria)
        return f"Present hotels for {criteria!r}."

    @tool
    def back(self) -> Any:
        """Go back to the criteria."""
        return go(Explore)


class Brain:
    """Plays every model of a test flow.

    Reply calls take the step's `plan` first; otherwise a user message that names a bound tool
    calls it, and anything else is answered "re <text>". Summaries are fixed. Distil calls take
    `values` in order (an exception is raised, HANG never answers); the first `held` of them
    wait for `release` (`started` tells the test one is waiting).
    """

    def __init__(self, *values: str | Exception, held: int = 0, **plan: list[Any]) -> None:
        self.values = list(values)
        self.plan = {step: list(replies) for step, replies in plan.items()}
        self.held = held
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.model = ScriptedChatModel(policy=self.reply)

    async def reply(self, messages: list, tools: list[str]) -> str | AIMessage:
        metadata = self.model.requests[-1].metadata  # read before any await: this request's
        if metadata["picoflow_purpose"] == "distil":
            return await self._distil()
        if metadata["picoflow_purpose"] == "summary":
            return "The user wants Lyon."
        planned = self.plan.get(metadata["picoflow_step"])
        if planned:
            return planned.pop(0)
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.content in tools:
            return tool_call(last.content)
        return f"re {last.content}"

    async def _distil(self) -> str:
        item = self.values.pop(0)
        if self.held > 0:
            self.held -= 1
            self.started.set()
            await self.release.wait()
        if item == HANG:
            await asyncio.Event().wait()
        if isinstance(item, Exception):
            raise item
        return item

    def distil_requests(self) -> list[Any]:
        return [r for r in self.model.requests if r.metadata["picoflow_purpose"] == "distil"]


def trip_flow(
    brain: Brain,
    *,
    shared: bool = False,
    recall: bool = False,
    config: dict[str, Any] | None = None,
    compact: bool = False,
    **distil: Any,
) -> type[Flow]:
    """Explore (namespace "explore", distilled into "criteria") and Present ("present", or
    "explore" when `shared`)."""

    class TripFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(brain.model)
            memory.set_summary_config(**{"min_messages": 8, "recent_messages": 4, **(config or {})})
            if compact:
                memory.enable_summary("explore")

        def config_model(self) -> Any:
            return brain.model

        def define_steps(self) -> list[Step]:
            explore = Explore(self).use_memory("explore")
            explore.distil_on_exit(StayCriteria, key="criteria", **distil)
            present = Present(self).use_memory("explore" if shared else "present")
            return [explore.use_recall() if recall else explore, present]

    return TripFlow


async def chat(engine: FlowEngine, *texts: str, session_id: str | None = None) -> list[Any]:
    results = []
    for text in texts:
        result = await engine.run("TripFlow", text, session_id=session_id)
        assert result.success, result.message
        session_id = result.session_id
        results.append(result)
    return results


def contents(doc: dict[str, Any], namespace: str = "explore") -> list[str]:
    out = []
    for message in doc["memory"][namespace]["messages"][1:]:
        data = message["data"]
        calls = data.get("tool_calls") or []
        out.append("call " + calls[0]["name"] if calls else data["content"])
    return out


def ids(doc: dict[str, Any], namespace: str = "explore") -> list[str]:
    return [m["data"]["id"] for m in doc["memory"][namespace]["messages"][1:]]


LYON = '{"city": "Lyon", "nights": 2}'
LYON_VALUE = {"city": "Lyon", "nights": 2}


# -- success: typed value, provenance, accessor ------------------------------------------------


async def test_distil_stores_the_typed_value_with_the_ids_it_came_from() -> None:
    """step distillation, F8: leaving the step stores value + provenance at turn end."""
    brain = Brain(LYON)
    engine = FlowEngine(flows=[trip_flow(brain)], store=MemoryStore())
    first, second = await chat(engine, "Lyon please", "done")
    assert second.warnings == [] and second.step == "Present"
    doc = await engine.get_session(first.session_id)
    entry = doc["steps"]["Explore"]["state"]["criteria"]
    assert contents(doc) == ["Lyon please", "re Lyon please", "done", "call done", "ok"]
    assert entry["value"] == {"city": "Lyon", "nights": 2}
    assert entry["source_message_ids"] == ids(doc)
    assert all(i.startswith("Explore|") for i in entry["source_message_ids"])
    assert (entry["schema"], entry["generation"]) == ("StayCriteria", 1)
    assert entry["at"].endswith("Z")
    # The next step's model call was not held up: it ran before the distil call.
    purposes = [
        (r.metadata["picoflow_purpose"], r.metadata["picoflow_step"]) for r in brain.model.requests
    ]
    assert purposes[-2:] == [("reply", "Present"), ("distil", "Explore")]


async def test_distil_request_carries_instruction_schema_and_transcript() -> None:
    """step distillation, M6: JSON-schema instruction, then a transcript in one message."""
    brain = Brain(LYON)
    engine = FlowEngine(flows=[trip_flow(brain)], store=MemoryStore())
    await chat(engine, "Lyon please", "done")
    (request,) = brain.distil_requests()
    assert [m.type for m in request.messages] == ["system", "human"] and request.tool_names == []
    schema = json.dumps(StayCriteria.model_json_schema())
    assert request.messages[0].content == (
        DEFAULT_DISTIL_PROMPT + "\n\nReply with one JSON object that validates against this "
        "JSON Schema, and nothing else:\n" + schema
    )
    assert request.messages[1].content == (
        "Current value:\n(none yet)\n\nMessages of the step Explore, oldest first:\n"
        "User: Lyon please\nAssistant: re Lyon please\nUser: done\n"
        "Assistant: [called done({})]\nTool result (done): ok"
    )


async def test_distil_get_distilled_returns_the_model_to_later_steps() -> None:
    """step distillation, S1: the state reads back as the pydantic object."""
    brain = Brain("```json\n" + LYON + "\n```")  # a fenced reply is accepted
    engine = FlowEngine(flows=[trip_flow(brain)], store=MemoryStore())
    await chat(engine, "Lyon please", "done", "thanks")
    first_prompt = [r for r in brain.model.requests if r.metadata["picoflow_step"] == "Present"]
    assert first_prompt[0].messages[0].content == "Present hotels for None."
    assert brain.model.requests[-1].messages[0].content == (
        "Present hotels for StayCriteria(city='Lyon', nights=2)."
    )


def test_distil_get_distilled_without_a_value_or_without_distil_on_exit() -> None:
    """step distillation: None before the first value; a clear error on a plain step."""
    flow = trip_flow(Brain())()
    explore, present = flow.get_step(Explore), flow.get_step(Present)
    assert explore.get_distilled() is None
    explore.save_state({"criteria": {"value": {"city": "Oslo"}}})
    assert explore.get_distilled() == StayCriteria(city="Oslo")
    with pytest.raises(FlowDefinitionError) as info:
        present.get_distilled()
    assert str(info.value) == (
        "Present.get_distilled(): Present does not distil its conversation. Call "
        ".distil_on_exit(Schema) on it (in its __init__ or in define_steps())."
    )


async def test_distil_usage_is_summary_usage_and_the_call_is_tagged() -> None:
    """step distillation, M10: tagged summary/distil, tokens counted as summary."""
    brain = Brain(LYON)
    engine = FlowEngine(flows=[trip_flow(brain)], store=MemoryStore())
    first, second = await chat(engine, "Lyon please", "done")
    (request,) = brain.distil_requests()
    assert request.metadata == {
        "picoflow_session_id": first.session_id,
        "picoflow_flow": "TripFlow",
        "picoflow_step": "Explore",
        "picoflow_namespace": "explore",
        "picoflow_purpose": "distil",
    }
    assert request.tags == [
        "picoflow",
        "picoflow:summary",
        "picoflow:distil",
        "picoflow:step:Explore",
        "picoflow:namespace:explore",
        "nostream",
    ]
    assert second.usage["summary"]["calls"] == 1 and second.usage["summary"]["input_tokens"] > 0
    assert second.usage["model"]["calls"] == 2
    doc = await engine.get_session(first.session_id)
    assert doc["usage"]["summary"] == second.usage["summary"]
    assert doc["memory"]["explore"]["summary_usage"] == second.usage["summary"]  # by namespace


async def test_distil_again_merges_the_previous_value_and_extends_provenance() -> None:
    """step distillation: the next exit sends the current value; generation counts."""
    brain = Brain(LYON, '{"city": "Lyon", "nights": 3}')
    engine = FlowEngine(flows=[trip_flow(brain, prompt="Extract the stay.")], store=MemoryStore())
    results = await chat(engine, "Lyon please", "done", "back", "3 nights", "done")
    doc = await engine.get_session(results[0].session_id)
    entry = doc["steps"]["Explore"]["state"]["criteria"]
    assert (entry["value"], entry["generation"]) == ({"city": "Lyon", "nights": 3}, 2)
    assert entry["source_message_ids"] == ids(doc)  # every Explore message, once
    first, second = brain.distil_requests()
    assert first.messages[0].content.startswith("Extract the stay.\n\nReply with one JSON")
    assert second.messages[1].content.startswith(
        'Current value:\n{"city": "Lyon", "nights": 2}\n\nMessages of the step Explore'
    )
    assert second.messages[1].content.endswith(
        "User: 3 nights\nAssistant: re 3 nights\nUser: done\nAssistant: [called done({})]\n"
        "Tool result (done): ok"
    )


# -- F8 and several moves in one turn ----------------------------------------------------------


async def test_distil_goto_the_current_step_is_not_an_exit() -> None:
    """step distillation, F8: go() to the current step runs no on_exit, so no distil."""
    brain = Brain()
    engine = FlowEngine(flows=[trip_flow(brain)], store=MemoryStore())
    results = await chat(engine, "Lyon please", "again")
    assert results[-1].step == "Explore" and brain.distil_requests() == []
    doc = await engine.get_session(results[0].session_id)
    assert "criteria" not in doc["steps"]["Explore"]["state"]


async def test_distil_a_step_left_twice_in_one_turn_is_distilled_once() -> None:
    """step distillation, F8: A->B->A->B in one turn: one distillation of all of A."""
    brain = Brain(LYON, Present=[tool_call("back"), "Hotels."], Explore=["re"])
    engine = FlowEngine(flows=[trip_flow(brain)], store=MemoryStore())
    first = (await chat(engine, "Lyon please"))[0]
    brain.plan["Explore"] = [tool_call("done"), tool_call("done")]
    (result,) = await chat(engine, "go", session_id=first.session_id)
    assert result.message == "Hotels." and result.step == "Present"
    doc = await engine.get_session(first.session_id)
    assert doc["sequence"] == ["Explore", "Present", "Explore", "Present"]
    (request,) = brain.distil_requests()
    assert request.messages[1].content.count("[called done({})]") == 2
    assert doc["steps"]["Explore"]["state"]["criteria"]["source_message_ids"] == ids(doc)


async def test_distil_a_step_re_entered_by_the_end_of_the_turn_waits_for_its_next_exit() -> None:
    """step distillation, F8: A->B->A: A is current again, so it is not distilled yet."""
    brain = Brain(LYON, Present=[tool_call("back")])
    engine = FlowEngine(flows=[trip_flow(brain)], store=MemoryStore())
    first, second = await chat(engine, "Lyon please", "done")
    assert second.step == "Explore" and brain.distil_requests() == []
    (third,) = await chat(engine, "done", session_id=first.session_id)
    assert third.step == "Present" and len(brain.distil_requests()) == 1
    doc = await engine.get_session(first.session_id)
    assert doc["steps"]["Explore"]["state"]["criteria"]["source_message_ids"] == ids(doc)


class Wiping(Step):
    def on_enter(self) -> None:
        self.erase_memory()


class Leaving(Step):
    @tool
    def done(self) -> Any:
        """The criteria are complete."""
        return go(Wiping)


async def test_distil_sees_the_messages_an_on_enter_erase_removed() -> None:
    """step distillation, T4: the exit snapshot keeps what a shared-namespace erase wiped."""
    brain = Brain(LYON)

    class TripFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_summary_model(brain.model)

        def config_model(self) -> Any:
            return brain.model

        def define_steps(self) -> list[Step]:
            leaving = Leaving(self).use_memory("trip").distil_on_exit(StayCriteria, key="c")
            return [leaving, Wiping(self).use_memory("trip")]

    engine = FlowEngine(flows=[TripFlow], store=MemoryStore())
    first, second = await chat(engine, "Lyon please", "done")
    (request,) = brain.distil_requests()
    assert request.messages[1].content.endswith(
        "User: Lyon please\nAssistant: re Lyon please\nUser: done\n"
        "Assistant: [called done({})]\nTool result (done): ok"
    )
    doc = await engine.get_session(first.session_id)
    assert contents(doc, "trip") == ["call done", "ok", "re ok"]  # the erase happened
    assert len(doc["steps"]["Leaving"]["state"]["c"]["source_message_ids"]) == 5


# -- erase=True ----------------------------------------------------------------------------------


async def test_distil_erase_archives_and_removes_the_covered_messages_and_recall_finds_them() -> (
    None
):
    """step distillation, M9: stored covered messages are archived and removed; messages
    of the exiting turn follow at the end of the next turn; conversation_search finds them."""
    brain = Brain(LYON, Explore=[], Present=[])
    store = MemoryStore()
    engine = FlowEngine(flows=[trip_flow(brain, erase=True, recall=True)], store=store)
    first, second = await chat(engine, "Lyon please", "done")
    doc = await engine.get_session(first.session_id)
    assert contents(doc) == ["done", "call done", "ok"]  # turn 1's messages were stored
    assert doc["memory"]["explore"]["archived"] == 2
    assert doc["steps"]["Explore"]["state"]["criteria"]["value"]["city"] == "Lyon"
    await chat(engine, "thanks", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert contents(doc) == [] and doc["memory"]["explore"]["archived"] == 5
    archived = await store.search_archive(first.session_id, "explore", "", page_size=50)
    assert [(e["position"], e["message"]["type"]) for e in archived] == [
        (5, "tool"), (4, "ai"), (3, "human"), (2, "ai"), (1, "human"),
    ]  # fmt: skip
    await chat(engine, "back", session_id=first.session_id)
    brain.plan["Explore"] = [tool_call("conversation_search", query="Lyon"), "You said Lyon."]
    (answer,) = await chat(engine, "Where did I want to go?", session_id=first.session_id)
    assert answer.message == "You said Lyon."
    found = brain.model.requests[-1].messages[-1]
    stamp = archived[-1]["compacted_at"]  # M16: when the erase moved them to the archive
    assert isinstance(found, ToolMessage) and found.content == (
        "Earlier messages matching 'Lyon', page 1, newest first:\n"
        f"[compacted {stamp[:10]} {stamp[11:16]} UTC]\n"
        "#2 assistant: re Lyon please\n#1 user: Lyon please"
    )


async def test_distil_erase_never_removes_another_steps_messages() -> None:
    """step distillation: in a shared namespace the erase stops at Present's messages."""
    brain = Brain(LYON)
    engine = FlowEngine(flows=[trip_flow(brain, erase=True, shared=True)], store=MemoryStore())
    results = await chat(engine, "Lyon please", "done", "cheapest?", "thanks")
    doc = await engine.get_session(results[0].session_id)
    assert contents(doc) == ["re ok", "cheapest?", "re cheapest?", "thanks", "re thanks"]
    assert all(i.startswith("Present|") for i in ids(doc))
    assert doc["memory"]["explore"]["archived"] == 5


def test_distil_erase_keeps_a_tool_call_with_its_results() -> None:
    """step distillation, M5: a cut never separates a call from its result."""
    ai_call = AIMessage("", id="A|2", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])
    history = [
        SystemMessage("", id="A|0"),
        HumanMessage("a", id="A|1"),
        ai_call,
        ToolMessage("r", tool_call_id="c1", id="A|3"),
    ]
    covered = {"A|1", "A|2", "A|3"}
    assert erase_cut(history, covered, limit=4) == 4
    assert erase_cut(history, covered, limit=3) == 2  # result not stored
    assert erase_cut(history, covered - {"A|3"}, limit=4) == 2
    assert erase_cut(history, {"A|2", "A|3"}, limit=4) == 1


async def test_distil_erase_after_compaction_clears_the_summary_only_when_emptied() -> None:
    """step distillation, M4, M9, T4: compaction and erase share positions; the summary
    goes only with the last message; the distiller is shown the summary."""
    brain = Brain(LYON)
    store = MemoryStore()
    engine = FlowEngine(flows=[trip_flow(brain, erase=True, compact=True)], store=store)
    results = await chat(engine, "Lyon please", "m2", "m3", "m4")  # 9 messages: 4 evicted
    doc = await engine.get_session(results[0].session_id)
    assert doc["memory"]["explore"]["summary"] == "The user wants Lyon."
    await chat(engine, "done", session_id=results[0].session_id)
    (request,) = brain.distil_requests()
    assert "Summary of earlier messages:\nThe user wants Lyon.\n\n" in request.messages[1].content
    doc = await engine.get_session(results[0].session_id)
    assert contents(doc) == ["done", "call done", "ok"]
    assert doc["memory"]["explore"]["summary"] == "The user wants Lyon."
    await chat(engine, "thanks", session_id=results[0].session_id)
    doc = await engine.get_session(results[0].session_id)
    assert contents(doc) == [] and doc["memory"]["explore"]["summary"] is None
    archived = await store.search_archive(results[0].session_id, "explore", "", page_size=50)
    assert [e["position"] for e in archived] == list(range(11, 0, -1))


class BrokenArchive(MemoryStore):
    async def archive(self, session_id: str, namespace: str, entries: list) -> None:

        raise StoreError("archive collection is read-only")


async def test_distil_erase_with_a_broken_archive_keeps_the_messages_and_the_value() -> None:
    """step distillation, M8, M9: nothing is removed that could not be archived."""
    brain = Brain(LYON)
    engine = FlowEngine(flows=[trip_flow(brain, erase=True)], store=BrokenArchive())
    first, second = await chat(engine, "Lyon please", "done")
    assert second.warnings == [
        "Step distillation could not erase namespace 'explore': the archive could not be "
        "written (archive collection is read-only). The messages were kept; erasing is tried "
        "again at the end of the next turn."
    ]
    doc = await engine.get_session(first.session_id)
    assert len(contents(doc)) == 5 and doc["steps"]["Explore"]["state"]["criteria"]["value"]


# -- failures change nothing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (RuntimeError("model down"), "the summary model raised RuntimeError: model down"),
        ("   ", "the summary model returned an empty reply"),
        ("```json\n```", "the summary model returned an empty reply"),
        ("Lyon, 2 nights", "the reply is not JSON (Expecting value): 'Lyon, 2 nights'"),
        (
            '{"city": "Lyon", "nights": "many"}',
            "the reply does not match StayCriteria: nights: Input should be a valid integer, "
            "unable to parse string as an integer",
        ),
        (
            '["Lyon"]',
            "the reply does not match StayCriteria: (the object): Input should be an object",
        ),
    ],
)
async def test_distil_failure_warns_and_changes_nothing(reply: Any, reason: str) -> None:
    """step distillation, M8: error, empty, invalid JSON, invalid value: nothing changes."""
    brain = Brain(reply)
    store = MemoryStore()
    engine = FlowEngine(flows=[trip_flow(brain, erase=True)], store=store)
    first, second = await chat(engine, "Lyon please", "done")
    warning = "Step distillation skipped: Explore: " + reason + SKIPPED_TAIL
    assert second.warnings == [warning]
    doc = await engine.get_session(first.session_id)
    assert "criteria" not in doc["steps"]["Explore"]["state"]
    assert len(contents(doc)) == 5 and doc["memory"]["explore"]["archived"] == 0
    assert await store.search_archive(first.session_id, "explore", "") == []
    assert doc["warnings"][-1]["message"] == warning
    assert second.usage["summary"]["calls"] == (0 if isinstance(reply, Exception) else 1)


async def test_distil_timeout_warns_and_the_next_exit_succeeds() -> None:
    """step distillation, M8: SummaryConfig.timeout bounds the call; retried on next exit."""
    brain = Brain(HANG, LYON)
    engine = FlowEngine(flows=[trip_flow(brain, config={"timeout": 0.05})], store=MemoryStore())
    results = await chat(engine, "Lyon please", "done")
    assert results[-1].warnings == [
        "Step distillation skipped: Explore: the summary model did not answer within 0.05 s"
        + SKIPPED_TAIL
    ]
    results += await chat(engine, "back", "done", session_id=results[0].session_id)
    assert results[-1].warnings == []
    doc = await engine.get_session(results[0].session_id)
    entry = doc["steps"]["Explore"]["state"]["criteria"]
    assert entry["generation"] == 1 and entry["source_message_ids"] == ids(doc)


# -- definition checks ---------------------------------------------------------------------------


class NotJson(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    thing: Brain


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            (dict,),
            TypeError,
            "Explore.distil_on_exit() takes a pydantic model class (a BaseModel subclass) as "
            "schema, got <class 'dict'>. Define e.g. `class Criteria(BaseModel): city: str | None "
            "= None` and pass the class itself.",
        ),
        (
            (StayCriteria(),),
            TypeError,
            "Explore.distil_on_exit() takes a pydantic model class (a BaseModel subclass) as "
            "schema, got an instance of StayCriteria. Define e.g. `class Criteria(BaseModel): "
            "city: str | None = None` and pass the class itself.",
        ),
        (
            (StayCriteria, {"key": 3}),
            TypeError,
            "Explore.distil_on_exit(key=...) must be a string, got int.",
        ),
        ((StayCriteria, {"key": ""}), FlowDefinitionError, None),
        ((StayCriteria, {"key": "a.b"}), FlowDefinitionError, None),
        ((StayCriteria, {"key": "_prompt"}), FlowDefinitionError, None),
        (
            (StayCriteria, {"erase": "yes"}),
            TypeError,
            "Explore.distil_on_exit(erase=...) must be True or False, got 'yes'.",
        ),
        (
            (StayCriteria, {"prompt": 3}),
            TypeError,
            "Explore.distil_on_exit(prompt=...) must be a string or None, got int.",
        ),
        (
            (StayCriteria, {"prompt": " "}),
            FlowDefinitionError,
            "Explore.distil_on_exit(prompt=' '): the prompt is the distiller's instruction and "
            "cannot be blank. Omit it to use the default instruction.",
        ),
    ],
)
def test_distil_on_exit_rejects_bad_arguments_at_the_call(
    args: tuple, error: type[Exception], message: str | None
) -> None:
    """step distillation, STYLE rule 2: each mistake fails where it is made, saying why."""
    flow = trip_flow(Brain())()
    schema, *rest = args
    with pytest.raises(error) as info:
        Explore(flow).distil_on_exit(schema, **(rest[0] if rest else {}))
    if message is None:
        key = rest[0]["key"]
        message = (
            f"Explore.distil_on_exit(key={key!r}): the state key must start with a letter, "
            "followed by letters, digits, '_' or '-' (no dots: it is read back as a dotted "
            "path, e.g. get_state('notes.value.city')). Use e.g. key='notes'."
        )
    assert str(info.value) == message


def test_distil_on_exit_returns_the_step_for_chaining() -> None:
    """step distillation, T1: the builder chains like use_memory."""
    flow = trip_flow(Brain())()
    step = Explore(flow)
    assert step.distil_on_exit(StayCriteria).use_memory("x") is step


def test_distil_flow_without_a_summary_model_is_refused_by_the_engine() -> None:
    """step distillation, F5: distil_on_exit needs the summary model, checked at start."""
    model = ScriptedChatModel(script=[])

    class NoSummaryFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Explore(self).distil_on_exit(StayCriteria), Present(self)]

    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[NoSummaryFlow], store=MemoryStore())
    assert str(info.value) == (
        "NoSummaryFlow.Explore calls distil_on_exit(), but the flow sets no summary model to "
        "distil with. Call get_memory().set_summary_model('openai:gpt-4o-mini') in the flow's "
        "__init__."
    )


def test_distil_schema_without_a_json_schema_is_refused_by_the_engine() -> None:
    """step distillation, F5: the schema must be showable to the model."""
    model = ScriptedChatModel(script=[])

    class OddFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_summary_model(model)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Explore(self).distil_on_exit(NotJson), Present(self)]

    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[OddFlow], store=MemoryStore())
    assert str(info.value).startswith(
        "OddFlow.Explore.distil_on_exit(NotJson): pydantic cannot build the JSON schema the "
        "model is shown (Cannot generate a JsonSchema for core_schema.IsInstanceSchema"
    )


def test_distil_docstring_examples_hold() -> None:
    """step distillation: the worked examples in `_housekeeping.distillation` are true."""
    outcome = doctest.testmod(picoflow._housekeeping.distillation)
    assert outcome.failed == 0 and outcome.attempted > 0
