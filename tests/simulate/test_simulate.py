"""The compaction simulator: replay stored sessions under other settings.

Two kinds of expectations, neither taken from the simulator itself:

- Hand-built histories whose token counts follow from `count_tokens_approximately`'s rule,
  ceil((characters of content + role) / 4) + 3 per message. With the strings below a user
  message is 7 tokens ("question #01" + "user" = 16 characters), an answer 12 ("answer number
  01 is here ok" + "assistant" = 36) and the system prompt 7 ("Answer." + "system" = 13).
- A real 40-turn session compacted by the engine (M4-M9): the simulator must rebuild the
  uncompacted history from the live document and the archive, and replaying the real setting
  must reproduce, call by call, the requests the scripted model actually received.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.messages.utils import count_tokens_approximately
from support.flows import Agent

from picoflow import (
    Flow,
    FlowDefinitionError,
    FlowEngine,
    SessionNotFoundError,
    Step,
    StoreError,
    SummaryConfig,
)
from picoflow.memory import DEFAULT_SUMMARY_PROMPT
from picoflow.session import new_document, new_session_id
from picoflow.simulate import (
    SimulationReport,
    load_history,
    parse_setting,
    simulate_compaction,
    simulate_document,
)
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel, tool_call, tool_calls

ROOT = Path(__file__).resolve().parents[2]
HUMAN, ANSWER, SYSTEM = 7, 12, 7  # tokens of one message of each kind (see the module doc)
# "Conversation memory for this step:\n" (35) + 400 characters of summary + "system" (6):
# ceil(441 / 4) + 3 = 114 tokens for the memory block of a 100-token summary.
MEMORY_100 = 114


def plain_turns(count: int) -> list[BaseMessage]:
    """`count` turns of one question and one answer, positions 1..2*count."""
    messages: list[BaseMessage] = []
    for number in range(1, count + 1):
        messages.append(HumanMessage(f"question #{number:02d}"))
        messages.append(AIMessage(f"answer number {number:02d} is here ok"))
    return messages


async def store_session(
    store: Any,
    messages: list[BaseMessage],
    *,
    namespace: str = "agent",
    archived: int = 0,
    summary: str | None = None,
) -> dict[str, Any]:
    """Create a session document holding `messages` live, as the engine would store it."""
    doc = new_document(new_session_id(), "AgentFlow", None)
    doc["memory"][namespace] = {
        "messages": [message_to_dict(m) for m in [SystemMessage("Answer."), *messages]],
        "summary": summary,
        "summary_generation": 1 if summary else 0,
        "archived": archived,
    }
    await store.create(doc)
    return doc


async def simulate_one(store: Any, doc: dict[str, Any], settings: list[Any], **kw: Any) -> Any:
    reports = await simulate_compaction(store, doc["id"], settings, **kw)
    assert len(reports) == 1
    return reports[0]


# -- hand-built histories: tokens, evictions, findings ------------------------------------------


async def test_simulator_m4_m5_m7_tokens_and_evictions_match_a_hand_computation() -> None:
    """Six plain turns under 8/2 (M4, M5, M7) and under compaction off.

    At the end of turn 4 the history holds 9 messages (>= 8); inline compaction may evict only
    what was stored before the turn (limit 7), so the cut is min(9 - 2, 7) = 7: positions 1..6.
    Turns 5 and 6 then send the memory block plus H4, A4, H5 (and A5, H6).
    """
    store = MemoryStore()
    doc = await store_session(store, plain_turns(6))
    report = await simulate_one(
        store, doc, [None, SummaryConfig(8, 2)], summary_tokens=100, price_per_million_tokens=1e6
    )
    off, compacted = report.results

    one = HUMAN + ANSWER
    expected_off = [SYSTEM + n * one + HUMAN for n in range(6)]
    assert expected_off == [14, 33, 52, 71, 90, 109]
    assert [call.tokens for call in off.calls] == expected_off
    assert [call.position for call in off.calls] == [2, 4, 6, 8, 10, 12]
    assert off.evictions == [] and off.total_tokens == 369

    tail = [HUMAN + ANSWER + HUMAN, HUMAN + ANSWER + HUMAN + ANSWER + HUMAN]
    expected = expected_off[:4] + [SYSTEM + MEMORY_100 + t for t in tail]
    assert expected == [14, 33, 52, 71, 147, 166]
    assert [call.tokens for call in compacted.calls] == expected
    assert [(e.first, e.last, e.turn) for e in compacted.evictions] == [(1, 6, 4)]
    assert (compacted.summaries, compacted.evicted, compacted.max_call_tokens) == (1, 6, 166)
    assert compacted.turn_tokens[("agent", 5)] == 147
    assert compacted.live_at_end == {"agent": 6}  # H4 .. A6
    assert compacted.findings == []
    # The cost column: a price of 1e6 per million makes the cost the token count itself.
    summary_tokens = compacted.summary_input_tokens + compacted.summary_output_tokens
    assert compacted.cost(1e6) == 483 + summary_tokens
    assert compacted.cost(1e6, summary_price=0) == 483
    assert off.cost(0.5) == 369 * 0.5 / 1e6


async def test_simulator_m5_background_mode_evicts_the_turn_it_just_saved() -> None:
    """Inline compaction may evict only messages stored before the turn; background may not
    be limited that way (it loads the session as the turn saved it).

    8/1 after turn 4 (9 messages): inline cut = min(9 - 1, 7) = 7 (positions 1..6), background
    cut = 8 (positions 1..7, H4 included), which leaves A4 first: a request that opens with an
    assistant message, for the two calls after it (positions 10 and 12).
    """
    store = MemoryStore()
    doc = await store_session(store, plain_turns(6))
    settings = [SummaryConfig(8, 1), SummaryConfig(8, 1, background=True)]
    inline, background = (await simulate_one(store, doc, settings, summary_tokens=100)).results

    assert [(e.first, e.last) for e in inline.evictions] == [(1, 6)]
    assert [(e.first, e.last) for e in background.evictions] == [(1, 7)]
    assert [c.tokens for c in background.calls][4:] == [
        SYSTEM + MEMORY_100 + ANSWER + HUMAN,
        SYSTEM + MEMORY_100 + ANSWER + HUMAN + ANSWER + HUMAN,
    ]
    assert inline.violations == []
    [opens] = background.violations
    assert (opens.kind, opens.position, opens.requests) == ("opens_with_assistant", 8, 2)
    assert opens.message == (
        "2 simulated requests open with an assistant message after the system prompt and "
        "memory (first at position 8, from the call at position 10 on). Anthropic and some "
        "other providers refuse a conversation that does not start with a user message."
    )


async def test_simulator_m5_whole_turns_cut_background_and_inline_at_the_same_turn_start() -> None:
    """With whole_turns, both modes move the cut back to the start of a user turn, which for
    plain turns is the same place, and no request opens with the assistant.

    8/1 after turn 4 (9 messages): inline cut = min(9 - 1, 7) = 7; background 8 (A4) would
    leave a history opening with the assistant, so it moves back to H4 at 7 too.
    """
    store = MemoryStore()
    doc = await store_session(store, plain_turns(6))
    settings = [
        SummaryConfig(8, 1, whole_turns=True),
        SummaryConfig(8, 1, background=True, whole_turns=True),
    ]
    inline, background = (await simulate_one(store, doc, settings, summary_tokens=100)).results

    assert [(e.first, e.last) for e in inline.evictions] == [(1, 6)]
    assert [(e.first, e.last) for e in background.evictions] == [(1, 6)]
    assert [c.tokens for c in background.calls][4:] == [c.tokens for c in inline.calls][4:]
    assert [c.tokens for c in background.calls][4:] == [
        SYSTEM + MEMORY_100 + HUMAN + ANSWER + HUMAN,  # turn 5 sees H4 A4 H5
        SYSTEM + MEMORY_100 + HUMAN + ANSWER + HUMAN + ANSWER + HUMAN,
    ]
    assert inline.violations == [] and background.violations == []


async def test_simulator_a_setting_that_never_triggers_is_flagged() -> None:
    """'Summarization not triggering': 16/8 on a 6-turn session never reaches 16 messages."""
    store = MemoryStore()
    doc = await store_session(store, plain_turns(6))
    report = await simulate_one(store, doc, [SummaryConfig(16, 8)])
    [result] = report.results

    assert result.evictions == []
    [idle] = result.idle
    assert idle.kind == "never_triggered"
    assert idle.message == (
        "Compaction never ran in namespace 'agent': at the end of its turns the history held at "
        f"most 13 messages (min_messages=16) and {SYSTEM + 6 * (HUMAN + ANSWER)} tokens (no "
        "max_tokens). Lower min_messages or set max_tokens if this namespace should be "
        "compacted."
    )
    assert "never compacts" in report.table().splitlines()[2]


async def test_simulator_m5_threshold_reached_but_nothing_evictable_is_flagged() -> None:
    """One turn with six parallel tool calls: 10 messages >= 8, but inline compaction may not
    evict what the turn itself wrote, so the cut point finds nothing (M5 stored prefix)."""
    call = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": f"c{n}"} for n in range(6)])
    results = [ToolMessage("ok", tool_call_id=f"c{n}") for n in range(6)]
    store = MemoryStore()
    doc = await store_session(store, [HumanMessage("go"), call, *results, AIMessage("done")])
    [result] = (await simulate_one(store, doc, [SummaryConfig(8, 6)])).results

    [idle] = result.idle
    assert idle.kind == "nothing_to_evict"
    assert idle.message.startswith(
        "The threshold was reached 1 time(s) in namespace 'agent', but the cut point found "
        "nothing to evict: everything older than the newest 6 messages (recent_messages)"
    )


async def test_simulator_compacting_every_turn_is_flagged_as_churn() -> None:
    """8/6 on plain turns: from turn 4 on, every turn end leaves 9 messages and evicts 2."""
    store = MemoryStore()
    doc = await store_session(store, plain_turns(8))
    [result] = (await simulate_one(store, doc, [SummaryConfig(8, 6)])).results

    assert [(e.first, e.last, e.turn) for e in result.evictions] == [
        (1, 2, 4),
        (3, 4, 5),
        (5, 6, 6),
        (7, 8, 7),
        (9, 10, 8),
    ]
    [churn] = result.churn
    assert churn.message.startswith(
        "Namespace 'agent' is compacted at the end of nearly every turn (5 summaries over "
        "turns 4..8)"
    )


async def test_simulator_coverage_gap_requests_over_the_context_window() -> None:
    """Seed 001's messageLimit < threshold gap, in picoflow's unit: a request larger than the
    model's window holds messages no summary covers yet. With a window of 100 tokens, 'off'
    exceeds it once (109 at position 12) and 8/2 twice (147, 166); max_tokens=100 is a static
    gap (it can only trigger once the window is full)."""
    store = MemoryStore()
    doc = await store_session(store, plain_turns(6))
    settings = [None, SummaryConfig(8, 2), SummaryConfig(8, 2, max_tokens=100)]
    report = await simulate_one(store, doc, settings, summary_tokens=100, context_window=100)
    off, compacted, budget = report.results

    [gap] = off.coverage_gaps
    assert (gap.kind, gap.position, gap.requests) == ("over_window", 12, 1)
    assert gap.message == (
        "1 request exceed the context window of 100 tokens (the largest, 109 tokens, at the "
        "call at position 12, turn 6). The provider refuses them, or a trimming layer drops "
        "messages that no summary covers yet. Lower min_messages or set max_tokens well below "
        "the window."
    )
    assert [(g.kind, g.requests) for g in compacted.coverage_gaps] == [("over_window", 2)]
    assert budget.coverage_gaps[0].kind == "threshold_above_window"
    assert budget.coverage_gaps[0].message.startswith(
        "max_tokens=100 is not below the context window (100 tokens)"
    )
    # Within the window, picoflow's requests always cover every earlier position (M5-M7).
    relaxed = await simulate_one(store, doc, settings[:2], context_window=1000)
    assert [r.findings for r in relaxed.results] == [[], []]


async def test_simulator_m5_violations_in_a_broken_stored_history_are_reported() -> None:
    """A stored history whose call lost its result and whose result lost its call: every
    request that holds them is one a provider refuses (M5)."""
    broken = [
        HumanMessage("first"),  # 1
        AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}]),  # 2, unanswered
        AIMessage("no result came"),  # 3
        HumanMessage("second"),  # 4
        ToolMessage("stray", tool_call_id="c9"),  # 5, no call
        AIMessage("answered"),  # 6
    ]
    store = MemoryStore()
    doc = await store_session(store, broken)
    [result] = (await simulate_one(store, doc, [None])).results

    assert [(v.kind, v.position, v.requests) for v in result.violations] == [
        ("unanswered_call", 2, 2),  # in the requests of the replies at 3 and 6
        ("orphan_result", 5, 1),  # in the request of the reply at 6
    ]
    assert result.violations[1].message == (
        "The tool result at position 5 (call id 'c9') has no call right before it in 1 "
        "simulated request, from the call at position 6 on. Providers refuse such a request."
    )
    assert "2 violations" in (await simulate_one(store, doc, [None])).table()


async def test_simulator_a_real_summary_model_writes_the_summaries() -> None:
    """With `summary_model`, the summariser gets the M6 request and its text is the memory:
    'short' makes a memory block of ceil((35 + 5 + 6) / 4) + 3 = 15 tokens."""
    summariser = ScriptedChatModel(script=["short"])
    store = MemoryStore()
    doc = await store_session(store, plain_turns(5))
    [result] = (
        await simulate_one(store, doc, [SummaryConfig(8, 2)], summary_model=summariser)
    ).results

    assert [c.tokens for c in result.calls][4] == SYSTEM + 15 + HUMAN + ANSWER + HUMAN
    [request] = summariser.requests
    assert request.messages[0].content == DEFAULT_SUMMARY_PROMPT
    assert request.messages[1].content.startswith("Previous summary:\n(none yet)")


# -- reconstruction: live document + archive ----------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_m9_history_is_rebuilt_from_archive_pages_and_live_messages(
    kind: str, tmp_path: Path
) -> None:
    """1,200 archived positions (three archive pages) plus two live messages, in order."""
    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "s.db")
    live = [HumanMessage("live question"), AIMessage("live answer")]
    doc = await store_session(store, live, archived=1200, summary="earlier talk")
    entries = [
        {"position": p, "message": message_to_dict(HumanMessage(f"old {p}"))}
        for p in range(1, 1201)
    ]
    await store.archive(doc["id"], "agent", entries)
    history = (await load_history(store, doc))["agent"]
    await store.aclose()

    assert [p for p, _ in history.messages] == list(range(1, 1203))
    assert history.messages[0][1].content == "old 1"
    assert history.messages[-1][1].content == "live answer"
    assert (history.from_archive, history.missing, history.live_from) == (1200, [], 1201)


async def test_m16_history_tells_when_each_archived_position_was_compacted() -> None:
    store = MemoryStore()
    doc = await store_session(store, plain_turns(1), archived=3, summary="earlier talk")
    stamp = "2026-12-02T06:40:12.345Z"
    await store.archive(
        doc["id"],
        "agent",
        [
            {"position": 1, "message": message_to_dict(HumanMessage("before M16"))},
            *(
                {"position": p, "message": message_to_dict(HumanMessage(f"old {p}")),
                 "compacted_at": stamp}
                for p in (2, 3)
            ),
        ],
    )  # fmt: skip
    history = (await load_history(store, doc))["agent"]

    assert history.compacted_at == {2: stamp, 3: stamp}  # position 1 was archived unstamped
    assert history.from_archive == 3


async def test_simulator_a_document_alone_replays_only_its_live_history() -> None:
    """Without the store, positions before the live part are unknown: the stored summary
    stands in for them (it is in every request, M7) and the notes say so."""
    store = MemoryStore()
    doc = await store_session(store, plain_turns(2), archived=8, summary="x" * 40)
    report = await simulate_document(doc, [None])
    [off] = report.results

    # The stored summary is sent before the live messages: ceil((35 + 40 + 6) / 4) + 3 = 24.
    assert [c.tokens for c in off.calls] == [SYSTEM + 24 + HUMAN, SYSTEM + 24 + 26]
    assert [c.position for c in off.calls] == [10, 12]
    assert report.source == "document"
    assert report.notes == [
        "Simulated from a session document without its store: only the live history is "
        "known, and what was compacted before it is represented by the stored summary.",
        "Namespace 'agent': positions 1..8 were compacted or erased before the live history, "
        "which the stored summary stands in for; they are not replayed.",
    ]


# -- a real compacted session (M4-M9) -----------------------------------------------------------


def conversation_model() -> ScriptedChatModel:
    """Replies decided by the last message: turn n calls one tool (n % 4 == 1), two in parallel
    (n % 4 == 2), replies directly through a tool (n % 4 == 3) or just answers. Summaries are
    always 120 characters, so a 30-token stand-in (120 characters) has exactly their size."""

    def policy(messages: list[BaseMessage], tools: list[str]) -> Any:
        if messages[0].content == DEFAULT_SUMMARY_PROMPT:
            return "S" * 120
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return f"done after {last.content}"
        number = int(str(last.content).split()[-1])
        if number % 4 == 1:
            return tool_call("lookup", query=f"q{number}")
        if number % 4 == 2:
            return tool_calls(("lookup", {"query": "a"}), ("lookup", {"query": "b"}))
        if number % 4 == 3:
            return tool_call("finish", text=f"direct {number}")
        return f"plain answer {number}"

    return ScriptedChatModel(policy=policy)


def agent_engine(store: Any, compact: bool) -> tuple[FlowEngine, ScriptedChatModel]:
    """An engine running AgentFlow on `conversation_model()`, compacted 12/4 if `compact`."""
    model = conversation_model()

    class AgentFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            if compact:
                memory = self.get_memory().set_summary_model(model)
                memory.set_summary_config(12, 4).enable_summary("agent")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Agent(self).use_memory("agent")]

    return FlowEngine(flows=[AgentFlow], store=store), model


async def run_conversation(store: Any, turns: int, compact: bool) -> tuple[str, Any]:
    engine, model = agent_engine(store, compact)
    session_id = None
    for number in range(1, turns + 1):
        result = await engine.run("AgentFlow", f"message {number}", session_id=session_id)
        assert result.success, result.message
        session_id = result.session_id
    assert session_id is not None
    return session_id, model


def comparable(message: BaseMessage) -> dict[str, Any]:
    """A message without what differs between two runs: its random id and usage numbers."""
    data = message_to_dict(message)["data"]
    return {
        key: data.get(key)
        for key in ("type", "content", "tool_calls", "tool_call_id", "additional_kwargs")
    }


def request_tokens(model: ScriptedChatModel) -> list[int]:
    """Tokens of every reply request the model really received (summary calls left out)."""
    return [
        count_tokens_approximately(request.messages)
        for request in model.requests
        if request.metadata.get("picoflow_purpose") != "summary"
    ]


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    """The same 40-turn conversation, once compacted by the engine (12/4) and once not."""

    async def both() -> dict[str, Any]:
        compacted_store, plain_store = MemoryStore(), MemoryStore()
        compacted_id, compacted_model = await run_conversation(compacted_store, 40, True)
        plain_id, plain_model = await run_conversation(plain_store, 40, False)
        return {
            "store": compacted_store,
            "doc": await compacted_store.load(compacted_id),
            "model": compacted_model,
            "plain_doc": await plain_store.load(plain_id),
            "plain_model": plain_model,
        }

    return asyncio.run(both())


async def test_m9_compacted_session_is_rebuilt_exactly_from_archive_and_live(
    runs: dict[str, Any],
) -> None:
    """Archive + live document == the history of the same conversation run uncompacted."""
    doc, plain = runs["doc"], runs["plain_doc"]
    assert doc["memory"]["agent"]["archived"] > 40  # the engine really compacted
    history = (await load_history(runs["store"], doc))["agent"]
    uncompacted = plain["memory"]["agent"]["messages"][1:]

    assert len(history.messages) == len(uncompacted)
    assert [p for p, _ in history.messages] == list(range(1, len(uncompacted) + 1))
    assert history.from_archive == doc["memory"]["agent"]["archived"]
    expected = [comparable(m) for m in messages_from_dict(uncompacted)]
    assert [comparable(m) for _, m in history.messages] == expected


async def test_simulator_replaying_the_real_setting_reproduces_every_real_request(
    runs: dict[str, Any],
) -> None:
    """12/4 with the stored summary's size: the simulated calls are the engine's requests, one
    for one, in tokens; the evicted positions are the archive's; the summaries are as many."""
    doc, store = runs["doc"], runs["store"]
    report = await simulate_one(store, doc, [None, SummaryConfig(12, 4), SummaryConfig(16, 8)])
    off, same, other = report.results
    agent = doc["memory"]["agent"]

    assert [c.tokens for c in same.calls] == request_tokens(runs["model"])
    assert [c.tokens for c in off.calls] == request_tokens(runs["plain_model"])
    evicted = [p for e in same.evictions for p in range(e.first, e.last + 1)]
    assert evicted == list(range(1, agent["archived"] + 1))
    assert same.summaries == agent["summary_generation"]
    assert same.live_at_end == {"agent": len(agent["messages"]) - 1}
    assert off.total_tokens > other.total_tokens > same.total_tokens
    for result in report.results:
        assert [v.kind for v in result.violations if v.kind != "opens_with_assistant"] == []
        assert result.coverage_gaps == []
    # The engine's own cut point (M5 keeps tool exchanges whole, not turns) really sent
    # requests that open with an assistant message; the simulator counts exactly those.
    opening = [
        request
        for request in runs["model"].requests
        if request.metadata.get("picoflow_purpose") != "summary"
        and isinstance(next(m for m in request.messages if m.type != "system"), AIMessage)
    ]
    [opens] = [v for v in same.violations if v.kind == "opens_with_assistant"]
    assert opens.requests == len(opening) > 0
    assert off.violations == []


async def test_simulator_whole_turns_removes_the_assistant_first_requests(
    runs: dict[str, Any],
) -> None:
    """M5 + whole_turns: the same session replayed with whole-turn cuts has no request that
    opens with the assistant, at a few more tokens (the cut lands earlier)."""
    doc, store = runs["doc"], runs["store"]
    settings = [SummaryConfig(12, 4), SummaryConfig(12, 4, whole_turns=True)]
    strict, whole = (await simulate_one(store, doc, settings)).results
    assert [v.kind for v in strict.violations] == ["opens_with_assistant"]
    assert whole.violations == [] and whole.coverage_gaps == []
    assert whole.total_tokens >= strict.total_tokens


async def test_simulator_erased_positions_are_reported_and_restart_the_replay() -> None:
    """T4: erased messages use up their positions without being archived. Two plain turns,
    then an erase by a tool: positions 1..5 (H1 A1 H2 A2 H3) vanish; the call to `forget`
    and its result take positions 6 and 7."""
    model = ScriptedChatModel(script=["a1", "a2", tool_call("forget"), "a3"])

    class ForgetFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Agent(self).use_memory("agent")]

    store = MemoryStore()
    engine = FlowEngine(flows=[ForgetFlow], store=store)
    session_id = None
    for text in ["one", "two", "three"]:
        session_id = (await engine.run("ForgetFlow", text, session_id=session_id)).session_id
    doc = await store.load(session_id)
    report = await simulate_one(store, doc, [None])

    assert report.histories["agent"].missing == [(1, 5)]
    # The replies at 2 and 4 were erased with their requests; the call at 6 was made with
    # the erased history, which is unknown, so it counts the system prompt alone.
    assert [(c.position, c.messages) for c in report.results[0].calls] == [(6, 1), (8, 3)]
    assert report.results[0].calls[0].tokens == SYSTEM
    assert report.notes == [
        "Namespace 'agent': positions 1..5 are neither live nor archived (erased with "
        "erase_memory()); the replay restarts after them, so the call right after the "
        "erase is counted without the erased messages."
    ]
    # After the erase, picoflow really sends a history that opens with the forget call.
    assert [v.kind for v in report.results[0].violations] == ["opens_with_assistant"]


# -- bad inputs ---------------------------------------------------------------------------------


async def test_simulator_bad_arguments_say_what_was_wrong() -> None:
    store = MemoryStore()
    doc = await store_session(store, plain_turns(1))
    with pytest.raises(SessionNotFoundError) as missing:
        await simulate_compaction(store, ["no-such-session-id"], [None])
    assert str(missing.value) == (
        "Session 'no-such-session-id' is not in the store, so there is nothing to simulate. "
        "Check the id (TurnResult.session_id) and that this is the store the engine used; "
        "deleted and expired sessions are gone."
    )
    with pytest.raises(ValueError) as unknown:
        await simulate_compaction(store, doc["id"], [None], namespaces=["explore"])
    assert str(unknown.value) == (
        f"Session '{doc['id']}' has no namespace 'explore'; its namespaces are 'agent'. Pass "
        "some of them, or namespaces=None to replay them all."
    )
    with pytest.raises(ValueError) as empty:
        await simulate_compaction(store, doc["id"], [])
    assert str(empty.value) == (
        "No settings to simulate: pass at least one SummaryConfig, or None for compaction "
        "off, e.g. settings=[None, SummaryConfig(16, 8)]."
    )
    with pytest.raises(TypeError, match=r"^settings\[1\] is '16/8'; pass SummaryConfig"):
        await simulate_compaction(store, doc["id"], [None, "16/8"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="^context_window must be a positive integer"):
        await simulate_compaction(store, doc["id"], [None], context_window=0)
    with pytest.raises(ValueError, match="^Not a session document: expected the dict"):
        await simulate_document({"memory": {}}, [None])


async def test_simulator_namespaces_are_replayed_one_by_one_and_can_be_chosen() -> None:
    """Two namespaces: turns are counted per namespace (the note says what that costs), and
    `namespaces=` limits the replay to the ones asked for."""
    store = MemoryStore()
    doc = await store_session(store, plain_turns(2))
    doc["memory"]["end"] = {
        "messages": [message_to_dict(m) for m in [SystemMessage("Bye."), *plain_turns(1)]],
        "summary": None,
        "summary_generation": 0,
        "archived": 0,
    }
    await store.save(doc, 0)

    both = await simulate_one(store, doc, [None])
    only_end = await simulate_one(store, doc, [None], namespaces=["end"])

    assert [(c.namespace, c.turn, c.position) for c in both.results[0].calls] == [
        ("agent", 1, 2),
        ("agent", 2, 4),
        ("end", 1, 2),
    ]
    assert both.notes[-1].startswith("Turns are counted per namespace.")
    # "Bye." + "system" is 10 characters: ceil(10 / 4) + 3 = 6 tokens, then one question.
    assert [c.tokens for c in only_end.results[0].calls] == [6 + HUMAN]
    assert list(only_end.histories) == ["end"] and only_end.notes == []


async def test_simulator_summary_model_strings_use_the_built_in_providers() -> None:
    """A `ModelLike` string is resolved like a flow's model; an unknown provider fails first,
    before the store is read (F5's message)."""
    store = MemoryStore()
    doc = await store_session(store, plain_turns(1))
    with pytest.raises(FlowDefinitionError) as unknown:
        await simulate_compaction(store, doc["id"], [None], summary_model="acme:small")
    assert str(unknown.value) == (
        "simulate_compaction(summary_model=...): unknown model provider 'acme' in "
        "'acme:small'. Known providers: anthropic, azure_openai, deepseek, google_genai, "
        "ollama, openai, openrouter. Register it with FlowEngine(providers={'acme': factory})."
    )


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"session_ids": []}, ValueError, "session_ids must be a session id or a non-empty list"),
        ({"settings": "16/8"}, TypeError, "settings must be a list of SummaryConfig or None"),
        ({"summary_tokens": 0}, ValueError, "summary_tokens must be a positive integer"),
        ({"price_per_million_tokens": -1}, ValueError, "price_per_million_tokens must be 0 or"),
        ({"summary_price_per_million_tokens": "1"}, TypeError, "summary_price_per_million_"),
    ],
)
async def test_simulator_invalid_arguments_fail_before_the_store_is_read(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    arguments: dict[str, Any] = {"session_ids": "any-id", "settings": [None], **kwargs}
    with pytest.raises(error, match="^" + message):
        await simulate_compaction(MemoryStore(), **arguments)


async def test_simulator_a_newer_session_document_is_refused() -> None:
    doc = new_document(new_session_id(), "AgentFlow", None)
    doc["schema_version"] = 99
    with pytest.raises(StoreError, match="has schema_version 99, but this picoflow reads up to"):
        await simulate_document(doc, [None])


def test_simulator_setting_strings_follow_m3() -> None:
    assert parse_setting("off") is None
    assert parse_setting(" 16/8 ") == SummaryConfig(16, 8)
    assert parse_setting("16/8", max_tokens=4000) == SummaryConfig(16, 8, max_tokens=4000)
    assert parse_setting("16/8", whole_turns=True) == SummaryConfig(16, 8, whole_turns=True)
    with pytest.raises(ValueError) as too_many:
        parse_setting("16/20")
    assert str(too_many.value) == (
        "Invalid setting '16/20': recent_messages must be an integer from 1 to min_messages - 2 "
        "(14), got 20. Write MIN/RECENT with MIN >= 8 and 1 <= RECENT <= MIN - 2, e.g. 16/8."
    )
    with pytest.raises(ValueError) as garbled:
        parse_setting("sixteen")
    assert str(garbled.value) == (
        "Invalid setting 'sixteen': write MIN/RECENT, e.g. 16/8 (min_messages/recent_messages), "
        "or 'off' for no compaction."
    )


# -- the command line ---------------------------------------------------------------------------


def simulate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "picoflow.simulate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_simulator_cli_prints_the_comparison_of_a_sqlite_session(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    doc = await store_session(store, plain_turns(6))
    await store.aclose()
    url = f"sqlite:///{path}"  # an absolute path brings its own slash: four in all

    done = await asyncio.to_thread(
        simulate_cli,
        *("--store", url, "--session", doc["id"], "--setting", "off", "--setting", "8/2"),
        *("--summary-tokens", "100", "--price", "1000000", "--details"),
    )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Session {doc['id']}"
    assert lines[1] == (
        "namespace 'agent': 12 messages (0 from the archive), 6 turns, 6 model calls; the real "
        "run wrote 0 summaries"
    )
    assert lines[2].split() == [
        *("setting", "calls", "tokens", "max/call", "max/turn", "summaries", "evicted"),
        *("summary", "tokens", "cost", "findings"),
    ]
    assert lines[3].split() == ["off", "6", "369", "109", "109", "0", "0", "0", "$369.0000", "-"]
    assert lines[4].split()[:7] == ["8/2", "6", "483", "166", "166", "1", "6"]
    assert lines[-2:] == ["off agent: none", "8/2 agent: 1..6@4"]


@pytest.mark.parametrize(
    "args,status,message",
    [
        (["--setting", "16/20"], 2, "Invalid setting '16/20': recent_messages must be"),
        (["--setting", "off", "--context-window", "0"], 2, "context_window must be a positive"),
        ([], 2, "no --setting given: pass at least one, e.g. --setting off --setting 16/8"),
        (["--setting", "off"], 1, "error: Session 'unknown-id' is not in the store"),
    ],
)
async def test_simulator_cli_refuses_bad_input_with_a_reason(
    args: list[str], status: int, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    await store_session(store, plain_turns(1))
    await store.aclose()

    done = await asyncio.to_thread(
        simulate_cli, "--store", f"sqlite:///{path}", "--session", "unknown-id", *args
    )

    assert done.returncode == status
    assert message in done.stderr
    assert done.stdout == ""


async def test_simulator_cli_refuses_a_missing_sqlite_file(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    done = await asyncio.to_thread(
        simulate_cli, "--store", f"sqlite:///{missing}", "--session", "x", "--setting", "off"
    )
    assert done.returncode == 2
    assert f"No SQLite file at '{missing}'" in done.stderr
    assert not missing.exists()


async def test_simulator_report_table_lists_settings_in_order() -> None:
    """The table is plain text: one header, one row per setting, in the order given."""
    store = MemoryStore()
    doc = await store_session(store, plain_turns(2))
    report: SimulationReport = await simulate_one(store, doc, [SummaryConfig(16, 8), None])

    rows = report.table().splitlines()
    assert [row.split()[0] for row in rows[2:4]] == ["16/8", "off"]
    with pytest.raises(KeyError, match="No setting labelled '8/4' was simulated"):
        report.result("8/4")


# -- replaying the kept revisions (W1) ------------------------------------------------------------


async def run_line(store: Any, compact: bool, script: list[Any]) -> str:
    """Run `script` on one session: "message N" turns, and ("rewind", revision) rewinds."""
    engine, _ = agent_engine(store, compact)
    session_id = None
    for item in script:
        if isinstance(item, tuple):
            assert session_id is not None
            await engine.rewind(session_id, item[1])
            continue
        result = await engine.run("AgentFlow", item, session_id=session_id)
        assert result.success, result.message
        session_id = result.session_id
    assert session_id is not None
    return session_id  # the engine stays open: closing it would close the caller's store


def turns_of(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """Type, content and tool calls of each message; the scripted model numbers its call ids
    across all calls, summaries included, so the ids of two runs differ."""
    return [
        (m.type, m.content, [(c["name"], c["args"]) for c in getattr(m, "tool_calls", [])])
        for m in messages
    ]


REWOUND = [f"message {n}" for n in range(1, 13)] + [("rewind", 5)]
REWOUND += [f"message {n}" for n in range(21, 31)]
CURRENT_LINE = [f"message {n}" for n in range(1, 7)] + [f"message {n}" for n in range(21, 31)]


@pytest.mark.parametrize("make_store", [MemoryStore, "sqlite"])
async def test_w1_revisions_replay_the_line_the_session_continues_after_a_rewind(
    make_store: Any, tmp_path: Path
) -> None:
    """Turns 7-12 were compacted, then taken back by a rewind; turns 21-30 reuse their
    positions. The archive keeps the first entry at each position (M9), so it still holds the
    turns taken back; the kept revisions rebuild the conversation the session continues,
    which must equal the same conversation run uncompacted, message for message."""
    store = SQLiteStore(tmp_path / "s.db") if make_store == "sqlite" else make_store()
    session_id = await run_line(store, True, REWOUND)
    plain_store = MemoryStore()
    plain = await plain_store.load(await run_line(plain_store, False, CURRENT_LINE))
    assert plain is not None
    expected = turns_of(messages_from_dict(plain["memory"]["agent"]["messages"][1:]))
    doc = await store.load(session_id)
    assert doc is not None and doc["memory"]["agent"]["archived"] > 24  # compacted after too

    from_archive = (await load_history(store, doc))["agent"]
    assert turns_of([m for _, m in from_archive.messages]) != expected  # the rewound turns
    history = (await load_history(store, doc, revisions=True))["agent"]
    assert turns_of([m for _, m in history.messages]) == expected
    assert history.from_revisions > 0
    assert history.from_archive + history.from_revisions + (len(expected) - doc["memory"][
        "agent"]["archived"]) == len(expected)  # fmt: skip

    reports = await simulate_compaction(store, session_id, [None], revisions=True)
    described = reports[0].table().splitlines()[0]
    assert f"({history.from_archive} from the archive, {history.from_revisions} from kept " \
        "revisions)" in described  # fmt: skip
    await store.aclose()


async def test_w1_revisions_need_a_store_that_keeps_history() -> None:
    class NoHistory:
        """A store of one's own without history(): the revisions cannot be read."""

        def __init__(self) -> None:
            self.inner = MemoryStore()

        def __getattr__(self, name: str) -> Any:
            if name in ("history", "load_revision"):
                raise AttributeError(name)
            return getattr(self.inner, name)

    store = NoHistory()
    doc = await store_session(store.inner, plain_turns(2))
    with pytest.raises(TypeError) as caught:
        await simulate_compaction(store, doc["id"], [None], revisions=True)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "NoHistory keeps no revision history (it has no history() and load_revision()), so "
        "there are no revisions to replay; run the simulation without revisions (the "
        "document and the archive)."
    )
    assert len(await simulate_compaction(store, doc["id"], [None])) == 1  # type: ignore[arg-type]


async def test_w1_simulator_cli_replays_the_kept_revisions(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    session_id = await run_line(store, True, REWOUND)
    doc = await store.load(session_id)
    assert doc is not None
    history = (await load_history(store, doc, revisions=True))["agent"]
    await store.aclose()
    args = ("--store", f"sqlite:///{path}", "--session", session_id, "--setting", "off")

    plain, replayed = await asyncio.gather(
        asyncio.to_thread(simulate_cli, *args),
        asyncio.to_thread(simulate_cli, *args, "--revisions"),
    )

    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines()[1].startswith(
        f"namespace 'agent': {len(history.messages)} messages ({history.from_archive} from the "
        f"archive, {history.from_revisions} from kept revisions)"
    )
    assert "from kept revisions" not in plain.stdout
