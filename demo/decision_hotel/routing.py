"""RouterStep and CriteriaReadinessJudgeStep: the two decision steps of the intake (§3.2).

The router decides where each request of the intake goes; code owns everything else: a
notice the search left is shown first (the decision still ran, its answers are discarded),
"search" goes to the readiness judge only when validation accepts every criterion, and a
request with a value goes to its owner with the request forwarded (``apply_request``) so the
owner has something new to parse. The judge reviews the saved criteria against what the guest
said; validation can veto it, never the other way round.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import HumanMessage

from demo.decision_hotel.criteria import (
    OWNERS,
    next_field,
    render_criteria_summary,
    unresolved,
)
from demo.decision_hotel.questions import readiness_questions, routing_questions
from demo.decision_hotel.shared import (
    answers_json,
    choice_of,
    issues_for,
    noul_of,
    snapshot_for,
    today_for,
)
from picoflow import (
    DecisionContext,
    DecisionErrorContext,
    DecisionStep,
    ToolResult,
    direct_to,
    finish,
    go,
)
from picoflow.decisions import DecisionAnswers

UNCLEAR_REPLY = (
    "I can update dates, nightly budget, room type, amenities, or distance. You can also ask to "
    "review or search the current criteria."
)
EXIT_REPLY = "Thanks for considering Hilton hotels in Portland."
REVIEW_TAIL = "\n\nTell me what to revise, or say “search” when ready."
ROUTER_FALLBACK_TAIL = (
    "\n        Say “search” to find hotels, or tell me which criterion to revise."
)
JUDGE_FALLBACK_TAIL = (
    "\n      I could not verify one clear correction. Tell me which single criterion to update."
)
"""The two replies whose whitespace is PicoFlow's template literals' (eight and six spaces)."""


PROMPT_OPENER = "Continue."


def owner_of(target: Any) -> str:
    """The collector of a field, or of the first of a list of issues (``nextStep``)."""
    return OWNERS[next_field(target)]


def ask(target: Any) -> ToolResult:
    """Go to the owner of `target` to have it ask for its criterion (``go(nextStep(...))``).

    PicoFlow's bare go leaves the collector the request the router just read ("search", a
    value already saved); a collector told to hand such requests back would hand it back, and
    the two would pass it to and fro. The owner hears a navigation opener instead (left out
    of every decision's requests), so it asks.
    """
    opener = HumanMessage(PROMPT_OPENER, additional_kwargs={"origin": "navigation"})
    return go(owner_of(target)).with_message(opener)


COLLECTORS = tuple(OWNERS.values())


class RouterStep(DecisionStep):
    """The typed routing boundary of the intake: one destination, one delivery, per request."""

    moves_to = (*COLLECTORS, "CriteriaReadinessJudgeStep", finish)  # owners are computed

    def get_prompt(self) -> str:
        # The current date is the port's addition: "next friday" is reflected or not only
        # against a day (PicoFlow's router could not tell).
        return (
            "You are the typed routing boundary of a Portland Hilton hotel search. The "
            "structured decision state is the source of truth: never invent or alter a saved "
            "preference. Return one destination and a request_delivery consistent with it. "
            f"CURRENT_DATE: {today_for(self).isoformat()}."
        )

    def define_questions(self) -> dict[str, Any]:
        return routing_questions(unresolved(issues_for(self)))

    def get_decision_facts(self) -> dict[str, Any]:
        return {
            "criteria": snapshot_for(self),
            "unresolved": unresolved(issues_for(self)),
            "notice": self.get_state("notice"),
        }

    def on_decision(self, answers: DecisionAnswers, context: DecisionContext) -> Any:
        notice = self.get_state("notice")
        if notice:  # the search's notice first; this decision's answers are discarded
            self.save_state({"notice": None})
            return direct_to(RouterStep, notice)
        destination = choice_of(answers, "destination")
        delivery = choice_of(answers, "request_delivery")
        self.save_state({"lastRoute": destination, "lastDecision": answers_json(answers)})
        if destination == "unclear":
            return direct_to(RouterStep, UNCLEAR_REPLY)
        if destination == "exit":
            return finish(EXIT_REPLY)
        if destination == "review":
            return direct_to(RouterStep, render_criteria_summary(snapshot_for(self)) + REVIEW_TAIL)
        if destination == "search":
            issues = issues_for(self)
            return ask(issues) if issues else go("CriteriaReadinessJudgeStep")
        if delivery == "apply_request" and self._first_delivery(destination):
            forwarded = HumanMessage(context.request, additional_kwargs={"origin": "user"})
            return go(owner_of(destination)).with_message(forwarded)  # something to parse
        return ask(destination)

    def _first_delivery(self, destination: str) -> bool:
        """Whether the request goes to `destination` for the first time this turn.

        The port's guard: an owner that saved the request and still sees it "not reflected"
        (a model and the router reading it apart) would be sent it again and again until the
        turn's round limit fails it; the second time, the owner asks instead.
        """
        sent = list(self.get_transient_state("delivered") or [])
        if destination in sent:
            return False
        self.save_transient_state({"delivered": [*sent, destination]})
        return True

    def on_decision_error(self, context: DecisionErrorContext) -> Any:
        """From saved state only: the new request was not understood."""
        notice = self.get_state("notice")
        if notice:
            self.save_state({"notice": None})
            return direct_to(RouterStep, notice)
        issues = issues_for(self)
        if issues:
            return ask(issues)
        summary = render_criteria_summary(snapshot_for(self))
        return direct_to(RouterStep, summary + ROUTER_FALLBACK_TAIL)


READY_NOUL = 0.75


class CriteriaReadinessJudgeStep(DecisionStep):
    """A semantic reviewer of the saved criteria before a search; validation stays the owner."""

    moves_to = (*COLLECTORS, "SearchHotelsStep", "RouterStep")

    def get_prompt(self) -> str:
        criteria = json.dumps(snapshot_for(self), indent=2)
        issues = issues_for(self)
        listed = "\n".join(
            f"{i}. {issue.field}: {issue.message}" for i, issue in enumerate(issues, 1)
        )
        return (
            "You are a semantic reviewer of saved hotel search criteria, not the policy owner. "
            f"CURRENT_DATE: {today_for(self).isoformat()}.\n"
            f"NORMALIZED_CRITERIA:\n{criteria}\n"
            "DETERMINISTIC_ISSUES:\n"
            f"{listed or 'None. Application validation accepts every saved criterion.'}\n"
            "Compare the criteria with the latest and prior requests. When an issue is reported, "
            "choose that field and score faithful toward false. The history is bounded: missing "
            "evidence is not a contradiction. With no issue, default to ready and score faithful "
            "toward true unless a request explicitly contradicts a saved value. Name a field only "
            "for an explicit miss or contradiction; an explicit no preference counts as "
            "answered. Choose unclear when several requests conflict or no single correction "
            "resolves it."
        )

    def define_questions(self) -> dict[str, Any]:
        return readiness_questions()

    def get_decision_facts(self) -> dict[str, Any]:
        return {
            "criteria": snapshot_for(self),
            "deterministicIssues": [issue.to_json() for issue in issues_for(self)],
        }

    def on_decision(self, answers: DecisionAnswers, context: DecisionContext) -> Any:
        issues = issues_for(self)
        outcome = choice_of(answers, "outcome")
        faithful = noul_of(answers, "faithful")
        accepted = not issues and outcome == "ready" and faithful >= READY_NOUL
        self.save_state({"review": answers_json(answers), "accepted": accepted})
        if issues:  # the code's veto
            return ask(issues)
        if accepted:
            return go("SearchHotelsStep")
        if outcome in OWNERS:
            return ask(outcome)
        summary = render_criteria_summary(snapshot_for(self))
        return direct_to(RouterStep, summary + JUDGE_FALLBACK_TAIL)

    def on_decision_error(self, context: DecisionErrorContext) -> Any:
        """Fail open: the search is read-only, so an outage does not block it."""
        issues = issues_for(self)
        return ask(issues) if issues else go("SearchHotelsStep")
