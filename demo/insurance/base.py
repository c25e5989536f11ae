"""What every stage of HomeInsuranceQuoteFlow shares: its opener, "now", the configuration,
the application read from its owners, and the way to the terminal step.

Steps name each other by their persisted names (``go("ReviewStep")``), so the stage modules
need not import each other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from langchain_core.messages import BaseMessage, HumanMessage

from demo.insurance.clock import current_moment
from demo.insurance.config import QuoteConfig, load_quote_config
from demo.insurance.prompts import OPENERS, terminal_prompt
from picoflow import EndStep, Step, ToolResult, go

NAVIGATION = {"origin": "navigation"}
"""The mark of a framework opener: ``get_conversation`` leaves such messages out (D4)."""

OWNERS = {
    "qualification": "QualificationStep",
    "property": "PropertyStep",
    "risk": "RiskStep",
    "coverage": "CoverageStep",
}
"""Each application section and the step that saves it (under the section's name)."""


class QuoteFacts(Step):
    """What the stages and the rating step read: "now", the configuration, the application."""

    def now(self) -> datetime:
        """The flow's "now" (``config.today``, else the environment override, else the clock)."""
        return current_moment(self.get_context("config.today"))

    def today(self) -> str:
        """ "Now" as YYYY-MM-DD."""
        return self.now().date().isoformat()

    def quote_config(self) -> QuoteConfig:
        """The validated quote configuration."""
        return load_quote_config()

    def section(self, section: str) -> Any:
        """One saved section of the application, or None."""
        return self.flow.get_step(OWNERS[section]).get_state(section)

    def application(self) -> dict[str, Any]:
        """The four sections, in the order of the application (None where not saved)."""
        return {section: self.section(section) for section in OWNERS}

    def quote_result(self) -> dict[str, Any] | None:
        """The latest rated quote, or None."""
        found = self.flow.get_step("RateQuoteStep").get_state("quoteResult")
        return found if isinstance(found, dict) else None


class QuoteStep(QuoteFacts):
    """A stage with an opener; an erasing stage starts from an empty history every time."""

    erase_on_enter: ClassVar[bool] = False

    def opener(self) -> HumanMessage:
        """This stage's opener, marked as navigation rather than the customer's words."""
        return HumanMessage(OPENERS[self.name], additional_kwargs=dict(NAVIGATION))

    def on_enter(self) -> Any:
        if self.erase_on_enter:
            self.erase_memory()

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        """The opener, always: these stages start from their own instruction."""
        return self.opener()

    def terminate(self, message: str) -> ToolResult:
        """Close the quote: the terminal step's model says `message` with the reminder."""
        return go("TerminateSessionStep").with_prompt(terminal_prompt(message))


class IntakeStep(QuoteStep):
    """A collecting stage (qualification, property, risk, coverage) that also takes corrections.

    Sent here from the review with ``correctionMode``, it hears the customer's own correction
    instead of its opener, fixes its value and goes back to a fresh review in the same turn.
    """

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        if self.get_state("correctionMode") and message is not None:
            return message
        return self.opener()

    def correcting(self) -> bool:
        """Whether this stage was sent here by a correction from the review."""
        return bool(self.get_state("correctionMode"))

    def captured(self, update: dict[str, Any]) -> bool:
        """Save the section, clear the correction keys; whether this was a correction."""
        correcting = self.correcting()
        self.save_state(update)
        self.remove_state("correctionMode")
        self.remove_state("correctionRequest")
        return correcting


class TerminateSessionStep(EndStep):
    """PicoFlow's framework terminal step: entering it completes the session (R8).

    Its model closes with the terminal prompt the transition carried.
    """
