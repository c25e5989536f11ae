"""Running one scenario on a target: fixed turns, or a simulated user (X1, X2, X6).

Fixed turns are sent and checked one by one; a simulated user is played by a model until the
goal holds, the session ends or the turns run out.

Each run is a fresh session. A turn that fails to run (`success=False`) ends the run: what
follows would only report the same failure again, so the remaining turns are reported as not
run, which keeps "turns as expected" honest.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from picoflow.scenarios._checks import Observed, check_state, check_turn
from picoflow.scenarios._judge import Judge
from picoflow.scenarios._report import ScenarioReport, TurnReport
from picoflow.scenarios._schema import Scenario, Turn
from picoflow.scenarios._targets import Target

__all__ = ["play", "USER_PROMPT", "OPENING"]

USER_PROMPT = (
    "You play a user talking to an assistant, to test it. Stay in character; write only what "
    "the user would type, one short message at a time, and never play the assistant. "
    "Who you are and what you want:\n"
)
OPENING = "(The conversation begins. Write your first message to the assistant.)"


async def play(
    target: Target,
    scenario: Scenario,
    *,
    source: str = "<scenario>",
    judge: Judge | None = None,
    user: BaseChatModel | None = None,
    run: int = 1,
) -> ScenarioReport:
    """Run `scenario` once, in a fresh session, and report every turn."""
    report = ScenarioReport(
        source=source, flow_name=scenario.flow_name, name=scenario.name, run=run
    )
    if scenario.is_simulated:
        if user is None:
            raise ValueError(
                f"{source} is a simulated-user scenario (persona and goal); give a user model "
                "(--user provider:model, or user= to run_scenario)."
            )
        await _simulate(target, scenario, user, report)
    else:
        await _fixed(target, scenario, judge, report)
    return report


async def _fixed(
    target: Target, scenario: Scenario, judge: Judge | None, report: ScenarioReport
) -> None:
    turns = scenario.turns or []
    for number, turn in enumerate(turns, start=1):
        seen = await _send(target, scenario, turn.input, report.session_id)
        doc = None
        if seen.session_id and turn.expect is not None and turn.expect.state:
            doc = await target.session(seen.session_id)
        entry = _entry(number, turn, seen)
        entry.failures = check_turn(turn, seen, doc)
        if judge is not None and seen.success:
            entry.judge = await judge.verdict(scenario, turn, seen.message)
            if entry.judge is not None and not entry.judge.passed:
                entry.failures.append(f"judge: {entry.judge.reason}")
        report.turns.append(entry)
        report.session_id = seen.session_id or report.session_id
        if not seen.success:
            for later, skipped in enumerate(turns[number:], start=number + 1):
                missed = _entry(later, skipped, None)
                missed.failures = [f"not run: turn {number} failed"]
                report.turns.append(missed)
            return


async def _simulate(
    target: Target, scenario: Scenario, user: BaseChatModel, report: ScenarioReport
) -> None:
    report.simulated = True
    goal = scenario.goal or {}
    messages: list[BaseMessage] = [
        SystemMessage(USER_PROMPT + (scenario.persona or "")),
        HumanMessage(OPENING),
    ]
    missing = ["no turn ran"]
    for number in range(1, scenario.turn_limit + 1):
        said = str((await user.ainvoke(messages)).text).strip()
        messages.append(AIMessage(said))
        seen = await _send(target, scenario, said, report.session_id)
        entry = _entry(number, Turn(input=said), seen)
        if not seen.success:
            entry.failures = [f"the turn failed: {seen.message}"]
        report.turns.append(entry)
        report.session_id = seen.session_id or report.session_id
        if not seen.success:
            missing = entry.failures
            break
        doc = await target.session(seen.session_id) if seen.session_id else None
        missing = check_state(goal, doc)
        if not missing:
            report.goal_reached, report.turns_to_goal = True, number
            return
        if seen.completed:
            missing = [f"the session ended at turn {number}", *missing]
            break
        messages.append(HumanMessage(seen.message))
    else:
        missing = [f"not reached in {scenario.turn_limit} turns", *missing]
    report.goal_reached, report.goal_failure = False, "; ".join(missing)


async def _send(
    target: Target, scenario: Scenario, message: str, session_id: str | None
) -> Observed:
    config: dict[str, Any] | None = scenario.config if session_id is None else None
    return await target.turn(scenario.flow_name, message, session_id, config)


def _entry(number: int, turn: Turn, seen: Observed | None) -> TurnReport:
    expect = turn.expect
    return TurnReport(
        number=number,
        input=turn.input,
        label=turn.label,
        reply=seen.message if seen is not None else "",
        step=seen.step if seen is not None else None,
        completed=seen.completed if seen is not None else False,
        tools=list(seen.tools) if seen is not None else [],
        latency_ms=seen.latency_ms if seen is not None else 0.0,
        expected_step=expect.step if expect is not None else None,
        expected_tools=expect.tools if expect is not None else None,
    )
