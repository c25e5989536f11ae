"""X6: a simulated user, played by a model, talks to the flow until the goal holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from demo.hotel.guest import guest_provider
from picoflow import FlowEngine
from picoflow.scenarios import SuiteReport, run_scenario
from picoflow.scenarios._cli import main
from picoflow.stores import MemoryStore

# Ten guests: (dates, budget, room, amenities, distance, compare, choice, booked room type).
GUESTS = [
    ("July 1 to July 6", "under $250", "two beds", "wifi and parking", "no preference",
     "compare 1 and 2 on price", "book number 1", "two beds"),
    ("July 10 to July 12", "no preference", "a suite", "a pool", "no preference",
     "", "book 1", "suite"),
    ("Aug 3 to Aug 7", "max 300", "one bed", "no", "within 10 miles of the airport",
     "", "book number 2", "one bed"),
    ("June 20 to June 22", "around 200", "two queens", "a gym", "no limit",
     "compare 1,2 on amenities", "book 2", "two beds"),
    ("next weekend", "under 400", "king bed", "pets", "no preference", "", "book 1", "one bed"),
    ("Sept 1 to Sept 4", "up to $500 a night", "suite", "wifi", "close to downtown",
     "", "book the first one", "suite"),
    ("7/15 to 7/20", "150 to 300", "two beds", "free parking", "no preference",
     "compare 1 and 3 on price", "book number 3", "two beds"),
    ("tomorrow for 2 nights", "no budget", "one bed", "breakfast", "no preference",
     "", "book 1", "one bed"),
    ("October 9 to October 11", "under $350", "any", "no preference", "no",
     "", "book number 1", None),
    ("July 4 to July 8", "200ish", "two beds", "wifi, pool", "no preference",
     "compare 1 and 2 on amenities", "book 1", "two beds"),
]  # fmt: skip


def persona(guest: tuple[Any, ...]) -> str:
    keys = ("dates", "budget", "room", "amenities", "distance", "compare", "choice")
    lines = [f"{key}: {value}" for key, value in zip(keys, guest, strict=False) if value]
    return "You are a guest who wants to book a hotel in Portland.\n" + "\n".join(lines)


def scenario(guest: tuple[Any, ...]) -> dict[str, Any]:
    goal: dict[str, Any] = {"PresentStep.booking.confirmation": {"matches": r"^HF-\d{6}$"}}
    if guest[-1] is not None:
        goal["PresentStep.booking.room_type"] = guest[-1]
    return {
        "flowName": "HotelFlow",
        "config": {"today": "2026-05-15"},
        "persona": persona(guest),
        "goal": goal,
        "max_turns": 12,
    }


async def test_x6_simulated_guests_reach_the_goal_on_hotel_flow(offline: None) -> None:
    from demo.hotel.flow import HotelFlow

    engine = FlowEngine([HotelFlow], store=MemoryStore())
    suite = SuiteReport()
    for number, guest in enumerate(GUESTS, start=1):
        wants = scenario(guest) | {"name": f"guest {number}"}
        suite.runs.append(await run_scenario(engine, wants, user=guest_provider()))
    failed = {run.name: run.goal_failure for run in suite.runs if not run.passed}
    assert suite.scores["goal_rate"] >= 0.9, failed
    for reason in failed.values():  # each failure says which goal check did not hold
        assert reason is not None and "state PresentStep.booking." in reason, reason
    reached = [run.turns_to_goal for run in suite.runs if run.goal_reached]
    assert suite.scores["turns_to_goal"] == round(sum(reached) / len(reached), 2)
    assert all(run.simulated and run.session_id for run in suite.runs)


async def test_x6_a_goal_not_reached_says_which_check_failed_and_why(offline: None) -> None:
    from demo.hotel.flow import HotelFlow

    engine = FlowEngine([HotelFlow], store=MemoryStore())
    wants = scenario(GUESTS[0])
    wants["goal"] = {"PresentStep.booking.room_type": "penthouse"}
    report = await run_scenario(engine, wants, user=guest_provider())
    assert not report.passed and report.goal_reached is False
    assert report.goal_failure == (
        "the session ended at turn 9; state PresentStep.booking.room_type: expected "
        "'penthouse', got 'two beds'"
    )
    assert report.failures == [f"goal: {report.goal_failure}"]
    assert report.summary().startswith("FAIL <dict>: 9/9 turns as expected, goal not reached")

    wants["max_turns"] = 3
    short = await run_scenario(engine, wants, user=guest_provider())
    assert short.goal_failure == (
        "not reached in 3 turns; state PresentStep.booking.room_type: expected 'penthouse', "
        "got nothing (the path is absent)"
    )
    assert [turn.input for turn in short.turns] == [
        "Hi! I need a hotel in Portland.", "July 1 to July 6", "under $250",
    ]  # fmt: skip


async def test_x6_the_user_model_sees_the_persona_and_the_replies(offline: None) -> None:
    from demo.hotel.flow import HotelFlow

    user = guest_provider()
    wants = scenario(GUESTS[1]) | {"max_turns": 2}
    await run_scenario(FlowEngine([HotelFlow], store=MemoryStore()), wants, user=user)
    second = user.requests[1].messages
    assert second[0].content.endswith(wants["persona"])
    assert [m.type for m in second] == ["system", "human", "ai", "human"]
    assert second[2].content == "Hi! I need a hotel in Portland."
    assert "Portland" in second[3].content  # the assistant's reply, as the user hears it


def test_x6_simulated_scenario_files_run_with_their_user_model(
    offline: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "guest.scenario.json"
    path.write_text(json.dumps(scenario(GUESTS[2]) | {"userModel": "offline:guest"}))
    report = tmp_path / "out.json"
    args = ["run", str(path), "--flows", "demo.hotel.flow:HotelFlow", "--report", str(report)]
    assert main(args) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert f"PASS {path}: " in out and ", goal reached in " in out
    scores = json.loads(report.read_text())["scores"]
    assert scores["goal_rate"] == 1.0


async def test_x6_a_simulated_scenario_without_a_user_model_is_refused(city_engine) -> None:
    wants = {"flowName": "CityFlow", "persona": "Ana", "goal": {"AskStep.city": "Lisbon"}}
    with pytest.raises(ValueError) as refused:
        await run_scenario(city_engine, wants)
    assert str(refused.value) == (
        "<dict> is a simulated-user scenario (persona and goal); give a user model (--user "
        "provider:model, or user= to run_scenario)."
    )
