"""What every EmployeeBenefitsFlow stage shares: the role, openers, the clock, the way out.

PicoFlow's stages build their chat prompt as the role, a newline and the stage prompt, always
answer a crossing with their own opener (whatever was forwarded), end with an ``end_<stage>``
tool that closes the session through ``TerminateSessionStep`` with ``benefitsTerminalPrompt``,
and read "now" from ``EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE`` when it is set.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from typing import Any, ClassVar

from langchain_core.messages import BaseMessage, HumanMessage

from demo.benefits.jsvalues import js_stringify
from picoflow import EndStep, Step, ToolResult, go

ROLE = (
    "You are the enrollment assistant of Northstar Works, a fictional employer, running its "
    "2027 benefits enrollment demonstration. Handle one stage at a time. Use only the supplied "
    "records, catalog, decisions, prices, limits, network results and enrollment record; never "
    "invent eligibility, plan terms, tax treatment, provider status, payroll amounts or approval "
    "status. Code owns validation, eligibility, recommendations, limits, pricing, beneficiary "
    "totals, side effects and transitions. Never ask for Social Security numbers, bank or card "
    "data, diagnoses, medication names or evidence-of-insurability health details. Official plan "
    "documents control."
)
DATE_VARIABLE = "EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE"
INVALID_DATE = f"{DATE_VARIABLE} must be a valid date."
NO_ELECTIONS = "Confirm that no benefits elections were submitted."
NAVIGATION = {"origin": "navigation"}


def terminal_prompt(message: str = NO_ELECTIONS) -> str:
    """``benefitsTerminalPrompt(m)``: the closing instruction of every way out."""
    return (
        f"{message} State that this is a fictional benefits demonstration, official plan "
        "documents control, and pending coverage is not active until approved. Do not request "
        "payment, government identifiers, health diagnoses, or unrelated personal information."
    )


def end_enrollment(message: str = NO_ELECTIONS) -> ToolResult:
    """What every ``end_*`` tool returns: the terminal step, told what was (not) submitted."""
    return go(TerminateSessionStep).with_prompt(terminal_prompt(message))


def read_moment(value: Any) -> datetime | None:
    """A date or ISO date-time as an aware UTC moment (a bare date is its UTC midnight)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def current_time(config_today: Any = None) -> datetime:
    """ "Now" for the flow: the session's ``config.today``, else the environment override,
    else the clock.

    Raises:
        ValueError: ``EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE`` is set but is no date
            (PicoFlow's message, exactly).
    """
    fixed = read_moment(config_today)
    if fixed is not None:
        return fixed
    raw = os.environ.get(DATE_VARIABLE)
    if not raw:
        return datetime.now(UTC)
    moment = read_moment(raw)
    if moment is None:
        raise ValueError(INVALID_DATE)
    return moment


def fact(name: str, value: Any) -> str:
    """One named input of a stage prompt, as PicoFlow passes it: ``NAME: <JSON>``."""
    return f"{name}: {js_stringify(value)}"


class BenefitsStep(Step):
    """A stage: role + stage prompt, its own opener on every crossing, optional erase-on-enter."""

    OPENER: ClassVar[str] = ""
    ERASES_ON_ENTER: ClassVar[bool] = True
    # Every stage's end tool closes through `end_enrollment`, a helper the graph cannot read.
    moves_to: ClassVar[tuple[str, ...]] = ("TerminateSessionStep",)

    def stage_prompt(self) -> str:
        """The stage's own instructions, after the role."""
        raise NotImplementedError(
            f"{type(self).__name__} is a benefits stage but does not define stage_prompt()."
        )

    def get_prompt(self) -> str:
        return f"{ROLE}\n{self.stage_prompt()}"

    def now(self) -> datetime:
        """The flow's "now" (see `current_time`)."""
        return current_time(self.get_context("config.today"))

    def on_enter(self) -> None:
        if self.ERASES_ON_ENTER:  # PicoFlow's steps 5-10 and 12 start their stage afresh
            self.erase_memory()

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        # PicoFlow ignores any forwarded message: the stage opens with its own instruction
        return HumanMessage(self.OPENER, additional_kwargs=dict(NAVIGATION))


class TerminateSessionStep(EndStep):
    """PicoFlow's framework terminal step: completes the session, says the closing prompt."""
