"""DecisionHotelFlow's offline models read words, never guess (D5, issue 35's rules).

The reading of the five criteria (corrections, withdrawals, questions that ask for nothing,
signs, typos of months), the offline decision model's three judgements from their facts, and
the router's guard against handing one request to its owner twice in a turn.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from decision_hotel_corpus import ALL_AT_ONCE, chat, engine_on
from test_decision_hotel_criteria import complete

from demo.decision_hotel.criteria import render_hotel_results
from demo.decision_hotel.flow import DecisionHotelFlow
from demo.decision_hotel.offline import ROOM_QUESTION
from demo.decision_hotel.offline_decide import presentation, readiness, route
from demo.decision_hotel.offline_present import draft
from demo.decision_hotel.questions import presentation_questions
from demo.decision_hotel.reading import read
from picoflow import FlowEngine
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedDecisionProvider

TODAY = date(2026, 12, 7)


def test_d5_one_message_may_name_every_criterion() -> None:
    said = read("portland dec 14-17, max 180/night, a suite, parking, 5 miles from downtown", TODAY)
    assert said.mentions() == ["dates", "budget", "room_type", "amenities", "distance"]
    assert (said.start, said.end) == (date(2026, 12, 14), date(2026, 12, 17))
    assert said.budget == {"max": 180.0} and said.room_type == "suite"
    assert said.amenities is not None and said.amenities.wanted == ["freeParking"]
    assert said.distance == {"cityCenter": 5.0}


def test_d5_the_later_value_wins_and_a_withdrawn_one_says_nothing() -> None:
    assert read("under 200, no wait, 250", TODAY).budget == {"max": 250.0}
    corrected = read("dec 15 to 18, no wait, 16 to 19", TODAY)
    assert (corrected.start, corrected.end) == (date(2026, 12, 16), date(2026, 12, 19))
    taken_back = read("two beds, under 300... hmm actually hold on", TODAY)
    assert taken_back.withdrawn and taken_back.mentions() == []


def test_d5_what_is_not_a_value_is_not_read_as_one() -> None:
    assert read("need a room decmber 20 to 23", TODAY).budget is None  # days, not $20-$23
    assert read("under 200, is breakfast included?", TODAY).mentions() == ["budget"]
    assert read("do you have suites?", TODAY).room_type is None
    assert read("can I get a suite?", TODAY).room_type == "suite"
    double = read("a double room", TODAY)
    assert double.room_type is None and double.room_unclear  # one double bed, or two? asked
    near = read("close to the airport", TODAY)
    assert near.distance is None and near.distance_vague  # how many miles? asked
    assert read("-50 max", TODAY).budget == {"max": -50.0}  # the tool refuses it, not a guess
    assert read("$150-250", TODAY).budget == {"min": 150.0, "max": 250.0}
    assert read("150-250", TODAY).budget is None  # a price only as the budget's answer


def test_d5_days_just_gone_are_not_moved_a_year_on() -> None:
    passed = read("dec 1 to dec 4", TODAY)
    assert (passed.start, passed.end) == (date(2026, 12, 1), date(2026, 12, 4))
    rolled = read("dec 30 to jan 2", TODAY)
    assert (rolled.start, rolled.end) == (date(2026, 12, 30), date(2027, 1, 2))
    later = read("jan 5 to jan 9", TODAY)
    assert later.start == date(2027, 1, 5)
    one_end = read("arriving dec 22", TODAY)
    assert (one_end.start, one_end.end) == (date(2026, 12, 22), None)


def test_d5_amenity_changes_apply_to_what_was_asked_before() -> None:
    added = read("also a gym", TODAY).amenities
    assert added is not None and added.applied_to(["freeWiFi"]) == ["freeWiFi", "fitnessCenter"]
    dropped = read("I dont need the pool anymore", TODAY).amenities
    assert dropped is not None and dropped.applied_to(["freeWiFi", "indoorPool"]) == ["freeWiFi"]
    restated = read("wifi and parking, no pets", TODAY).amenities
    assert restated is not None and restated.applied_to(["indoorPool"]) == [
        "freeWiFi",
        "freeParking",
    ]


def facts(request: str, criteria: dict[str, Any], prior: list[str] | None = None) -> dict[str, Any]:
    return {
        "criteria": criteria,
        "unresolved": [],
        "notice": None,
        "request": request,
        "prior_requests": prior or [],
        "deterministicIssues": [],
    }


def test_d5_the_offline_router_routes_from_the_request_and_the_saved_criteria() -> None:
    saved = complete()
    assert route(facts("search", saved), TODAY) == ("search", "none")
    assert route(facts("search please", saved), TODAY) == ("review", "none")  # literal only
    assert route(facts("make it two beds", saved), TODAY) == ("room_type", "apply_request")
    assert route(facts("one bed", saved), TODAY) == ("review", "none")  # already reflected
    assert route(facts("tell me a joke", saved), TODAY) == ("unclear", "none")
    assert route(facts("bye", saved), TODAY) == ("exit", "none")
    empty = {**facts("hello", complete(BudgetStep={"answered": False})), "unresolved": ["budget"]}
    assert route(empty, TODAY) == ("budget", "prompt_next")


def test_d5_the_offline_readiness_judge_names_only_an_explicit_contradiction() -> None:
    saved = complete()  # budget 100-200 saved
    assert readiness(facts("search", saved, ["between 100 and 200", "200"]), TODAY) == (
        "ready",
        0.95,
    )
    assert readiness(facts("search", saved, ["under 300"]), TODAY) == ("budget", 0.2)
    both = facts("search", saved, ["under 300", "two beds"])
    assert readiness(both, TODAY) == ("unclear", 0.2)
    issues = {**facts("search", saved), "deterministicIssues": [{"field": "dates", "message": "x"}]}
    assert readiness(issues, TODAY) == ("dates", 0.1)


def test_d5_the_offline_presentation_judge_checks_the_draft_against_the_results() -> None:
    found = [{"hotelName": "A Inn", "total": 300.0}, {"hotelName": "B Inn", "total": 410.5}]
    questions = {
        k: {"criteria": getattr(q, "criteria", None)} for k, q in presentation_questions().items()
    }

    def judged(text: str) -> tuple[float, float, float]:
        answers = presentation({"draft": text, "hotelFound": found}, questions)
        return (
            answers["grounded"]["noul"],
            answers["completeness"]["score"],
            answers["clarity"]["score"],
        )

    assert judged(draft(found)) == (0.95, 2, 2)
    assert judged(render_hotel_results(found)) == (0.95, 2, 2)
    assert judged(draft(found).replace("$410.50", "$399.00"))[0] == 0.05  # an invented price
    assert judged(draft(found, "A Inn is booked for you."))[0] == 0.05  # a booking claim
    assert judged(draft(found[:1]))[1] == 1  # a hotel left out
    assert judged("Happy to help!") == (0.95, 0, 0)


async def test_d5_the_router_never_hands_one_request_to_its_owner_twice_in_a_turn() -> None:
    again = {"destination": "room_type", "request_delivery": "apply_request"}
    first = {"destination": "room_type", "request_delivery": "prompt_next"}
    provider = ScriptedDecisionProvider({"RouterStep": [first, again, again]})
    flow = DecisionHotelFlow.in_process()
    engine = FlowEngine([flow], store=MemoryStore(), decision_providers=[provider])
    turns = await chat(engine, "hi", "one bed")
    assert turns[1].result is not None and turns[1].result.success
    # the guest's words, then the forwarded request, then the owner asks: no round-limit failure
    assert [name for name, _ in turns[1].calls] == ["capture_room_type", "capture_room_type"]
    assert turns[1].reply == ROOM_QUESTION


async def test_d5_a_question_about_a_hotel_is_neither_a_booking_nor_a_revision() -> None:
    turns = await chat(engine_on(MemoryStore()), ALL_AT_ONCE, "search", "does the 2nd have a gym?")
    assert turns[-1].calls == [] and turns[-1].result is not None
    assert turns[-1].reply.startswith("I can only show each hotel's name and total price here.")
