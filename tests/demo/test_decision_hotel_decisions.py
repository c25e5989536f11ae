"""DecisionHotelFlow's three decision steps and its search, routed on scripted answers (D1-D5).

With `ScriptedDecisionProvider` the answers are the test's, so each branch of `on_decision`
and `on_decision_error` is checked with PicoFlow's exact reply (the whitespace of its template
literals included); the chat steps keep their offline model. The search is checked over the
real pricing MCP server once, and with a failing and an empty tool of the same contract.
"""

from __future__ import annotations

from typing import Any

import pytest
from decision_hotel_corpus import ALL_AT_ONCE, chat, state_of
from langchain_core.tools import StructuredTool

from demo.decision_hotel.criteria import render_hotel_results
from demo.decision_hotel.flow import PRICING_SERVER, DecisionHotelFlow
from demo.decision_hotel.offline import decision_provider
from demo.decision_hotel.present import NO_MATCH, UNAVAILABLE
from demo.decision_hotel.routing import (
    EXIT_REPLY,
    JUDGE_FALLBACK_TAIL,
    ROUTER_FALLBACK_TAIL,
    UNCLEAR_REPLY,
)
from demo.decision_hotel.search import SearchRequest, search
from picoflow import FlowEngine
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedDecisionProvider

ROUTE = {"destination": "dates", "request_delivery": "prompt_next"}
READY = {"outcome": "ready", "faithful": 0.9}
GOOD = {"grounded": 0.9, "completeness": 2, "clarity": 2}


def scripted(decisions: dict[str, list[Any]], flow: Any = None) -> tuple[FlowEngine, Any]:
    provider = ScriptedDecisionProvider(decisions)
    flow = flow or DecisionHotelFlow.in_process()
    return FlowEngine([flow], store=MemoryStore(), decision_providers=[provider]), provider


def answered() -> dict[str, list[Any]]:
    """The router's answers that capture everything at once, then show the review."""
    fields = ["dates", "budget", "room_type", "amenities", "distance"]
    routes = [{"destination": f, "request_delivery": "apply_request"} for f in fields]
    return {"RouterStep": [*routes, {"destination": "review", "request_delivery": "none"}]}


async def test_d1_router_prompt_precedes_each_questions_own_instructions() -> None:
    engine, provider = scripted({"RouterStep": [ROUTE]})
    await chat(engine, "hello")
    request = provider.requests[0]
    assert set(request.state) == {"criteria", "unresolved", "notice", "request", "prior_requests"}
    assert request.state["unresolved"] == ["dates", "budget", "room_type", "amenities", "distance"]
    assert request.state["notice"] is None and request.state["request"] == "hello"
    destination = request.questions["destination"]["instructions"]
    assert len(destination) == 2 and destination[0].startswith("You are the typed routing boundary")
    assert "CURRENT_DATE: 2026-12-07." in destination[0]
    assert (
        "Current unresolved criteria in collection order: dates, budget, room_type, amenities, "
        "distance." in destination[1]
    )
    assert list(request.questions["destination"]["criteria"]) == [
        "dates", "budget", "room_type", "amenities", "distance", "review", "search", "exit",
        "unclear",
    ]  # fmt: skip


async def test_d1_the_judges_questions_carry_the_prompt_alone() -> None:
    decisions = {
        **answered(),
        "CriteriaReadinessJudgeStep": [READY],
        "PresentationJudgeStep": [GOOD],
    }
    decisions["RouterStep"].append({"destination": "search", "request_delivery": "none"})
    engine, provider = scripted(decisions)
    await chat(engine, ALL_AT_ONCE, "search")
    judge = next(r for r in provider.requests if r.step == "CriteriaReadinessJudgeStep")
    assert set(judge.state) == {"criteria", "deterministicIssues", "request", "prior_requests"}
    assert judge.state["deterministicIssues"] == [] and judge.state["request"] == "search"
    assert len(judge.questions["outcome"]["instructions"]) == 1
    assert (
        "None. Application validation accepts every saved criterion."
        in (judge.questions["outcome"]["instructions"][0])
    )
    present = next(r for r in provider.requests if r.step == "PresentationJudgeStep")
    assert set(present.state) >= {"draft", "hotelFound", "criteria"}
    assert present.questions["completeness"]["criteria"][2] == (
        "Lists matching hotels with total prices and explains how to book or revise"
    )


@pytest.mark.parametrize(
    ("answer", "reply", "completed"),
    [
        ({"destination": "unclear", "request_delivery": "none"}, UNCLEAR_REPLY, False),
        ({"destination": "exit", "request_delivery": "none"}, EXIT_REPLY, True),
    ],
)
async def test_d5_router_unclear_and_exit_replies(answer: Any, reply: str, completed: bool) -> None:
    engine, _ = scripted({"RouterStep": [answer]})
    result = (await chat(engine, "hmm"))[0].result
    assert result is not None and result.message == reply and result.completed is completed
    assert UNCLEAR_REPLY == (
        "I can update dates, nightly budget, room type, amenities, or distance. You can also ask "
        "to review or search the current criteria."
    )
    assert EXIT_REPLY == "Thanks for considering Hilton hotels in Portland."


async def test_d5_search_with_issues_goes_to_the_first_owner_not_the_judge() -> None:
    engine, provider = scripted(
        {"RouterStep": [{"destination": "search", "request_delivery": "none"}]}
    )
    result = (await chat(engine, "search"))[0].result
    assert result is not None and result.step == "DateRangeStep"
    assert [r.step for r in provider.requests] == ["RouterStep"]


async def test_d5_a_judges_veto_and_a_failing_router_fall_back_on_saved_state() -> None:
    decisions = answered()
    decisions["RouterStep"] += [
        {"destination": "search", "request_delivery": "none"},
        ConnectionError("decision service down"),
    ]
    decisions["CriteriaReadinessJudgeStep"] = [{"outcome": "unclear", "faithful": 0.3}]
    engine, _ = scripted(decisions)
    turns = await chat(engine, ALL_AT_ONCE, "search", "what now")
    judged, failed = turns[1].result, turns[2].result
    assert judged is not None and judged.step == "RouterStep"
    assert judged.message.endswith("- Distance: no preference" + JUDGE_FALLBACK_TAIL)
    assert JUDGE_FALLBACK_TAIL == (
        "\n      I could not verify one clear correction. Tell me which single criterion to update."
    )
    assert failed is not None and failed.success
    assert failed.message.endswith("- Distance: no preference" + ROUTER_FALLBACK_TAIL)
    assert ROUTER_FALLBACK_TAIL == (
        "\n        Say “search” to find hotels, or tell me which criterion to revise."
    )
    doc = await engine.get_session(failed.session_id)
    assert state_of(doc, "CriteriaReadinessJudgeStep")["accepted"] is False


async def test_d5_a_judge_naming_a_field_sends_its_owner_and_an_outage_fails_open() -> None:
    decisions = answered()
    decisions["RouterStep"] += [{"destination": "search", "request_delivery": "none"}] * 2
    decisions["CriteriaReadinessJudgeStep"] = [
        {"outcome": "budget", "faithful": 0.2},
        TimeoutError("slow"),
    ]
    decisions["PresentationJudgeStep"] = [{"grounded": 0.5, "completeness": 2, "clarity": 2}]
    engine, _ = scripted(decisions)
    turns = await chat(engine, ALL_AT_ONCE, "search", "search")
    assert turns[1].result is not None and turns[1].result.step == "BudgetStep"
    shown = turns[2].result
    assert shown is not None and shown.step == "PresentStep"
    doc = await engine.get_session(shown.session_id)
    found = state_of(doc, "PresentStep")["hotelFound"]
    assert shown.message == render_hotel_results(found)  # the draft was not grounded enough
    assert state_of(doc, "PresentationJudgeStep")["accepted"] is False


async def test_d5_a_failing_presentation_judge_shows_the_codes_list() -> None:
    decisions = answered()
    decisions["RouterStep"].append({"destination": "search", "request_delivery": "none"})
    decisions["CriteriaReadinessJudgeStep"] = [READY]
    decisions["PresentationJudgeStep"] = [ConnectionError("down")]
    engine, _ = scripted(decisions)
    shown = (await chat(engine, ALL_AT_ONCE, "search"))[1].result
    assert shown is not None and shown.message.startswith("Here are the matching Portland hotels:")


def tool(answer: Any) -> StructuredTool:
    def search_hotels(**arguments: Any) -> str:
        if isinstance(answer, Exception):
            raise answer
        return str(answer)

    return StructuredTool.from_function(
        func=search_hotels, name="search_hotels", description="x", args_schema=SearchRequest
    )


@pytest.mark.parametrize(
    ("answer", "notice"),
    [
        (RuntimeError("Hotel pricing MCP error: no database"), UNAVAILABLE),
        ("not json", UNAVAILABLE),
        ('{"hotels": []}', NO_MATCH),
    ],
)
async def test_d5_a_search_that_cannot_show_hotels_leaves_a_notice(
    answer: Any, notice: str
) -> None:
    flow = DecisionHotelFlow.using(DecisionHotelFlow().config_model(), search=tool(answer))
    engine = FlowEngine([flow], store=MemoryStore(), decision_providers=[decision_provider()])
    turns = await chat(engine, ALL_AT_ONCE, "search", "ok")
    shown, after = turns[1].result, turns[2].result
    assert shown is not None and (shown.step, shown.message) == ("RouterStep", notice)
    doc = await engine.get_session(shown.session_id)
    assert state_of(doc, "RouterStep")["notice"] is None  # shown once, then cleared
    assert after is not None and after.message != notice
    assert UNAVAILABLE == (
        "Hotel pricing is temporarily unavailable. Your criteria are saved; say “search” to try "
        "again."
    )
    assert NO_MATCH == (
        "No hotels matched all current criteria. Tell me whether to revise budget, room type, "
        "amenities, or distance."
    )


async def test_d5_the_search_goes_over_the_pricing_mcp_server() -> None:
    flow = DecisionHotelFlow.using(DecisionHotelFlow().config_model(), search=PRICING_SERVER)
    engine = FlowEngine([flow], store=MemoryStore(), decision_providers=[decision_provider()])
    try:
        turns = await chat(engine, ALL_AT_ONCE, "search")
        shown = turns[1].result
        assert shown is not None and shown.step == "PresentStep"
        doc = await engine.get_session(shown.session_id)
    finally:
        await engine.aclose()
    expected = search(
        SearchRequest(
            startDate="2026-12-18",
            endDate="2026-12-21",
            amenities=["freeWiFi"],
            roomTypes=["one bed"],
            budget={"min": 100, "max": 200},
        )
    )
    assert state_of(doc, "PresentStep")["hotelFound"] == expected["hotels"]
