"""The search and the presentation of DecisionHotelFlow (research §3.2).

SearchHotelsStep (a logic step) re-validates and calls ``search_hotels`` — the pricing MCP
server's tool, or the same contract in process — and hands the results to PresentStep, or a
notice to the router. PresentStep's model writes a draft; the guest never reads a draft
directly: PresentationJudgeStep checks it against the trusted results and shows it, or the
code's own rendering of them. Booking, the confirmation number and the exits are code.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import Field

from demo.decision_hotel.criteria import render_hotel_results, to_search_request
from demo.decision_hotel.questions import presentation_questions
from demo.decision_hotel.routing import COLLECTORS, EXIT_REPLY, ask
from demo.decision_hotel.search import TOOL_NAME, hotels_of
from demo.decision_hotel.shared import (
    answers_json,
    issues_for,
    noul_of,
    score_of,
    snapshot_for,
    today_for,
)
from picoflow import (
    DecisionContext,
    DecisionErrorContext,
    DecisionStep,
    FlowPrompt,
    LogicStep,
    Step,
    ToolResult,
    direct_to,
    finish,
    go,
    stay,
    tool,
)
from picoflow.decisions import DecisionAnswers

logger = logging.getLogger(__name__)

UNAVAILABLE = (
    "Hotel pricing is temporarily unavailable. Your criteria are saved; say “search” to try again."
)
NO_MATCH = (
    "No hotels matched all current criteria. Tell me whether to revise budget, room type, "
    "amenities, or distance."
)
PRESENT_OPENER = "Present the current matching hotels."
NOT_LISTED = "Choose a hotel name or number from the current result list."


class SearchHotelsStep(LogicStep):
    """Prices the saved criteria; the router shows a notice when nothing can be shown."""

    moves_to = (*COLLECTORS, "RouterStep", "PresentStep")

    async def run_logic(self) -> ToolResult:
        issues = issues_for(self)
        if issues:
            return ask(issues)
        snapshot = snapshot_for(self)
        request = to_search_request(snapshot, today_for(self))
        try:
            found = hotels_of(await self.call_tool(TOOL_NAME, request))
        except Exception:  # any pricing failure: an MCP error result, a server gone, bad JSON
            logger.warning("hotel pricing failed", exc_info=True)
            return go("RouterStep").with_state({"notice": UNAVAILABLE})
        if not found:
            return go("RouterStep").with_state({"notice": NO_MATCH})
        judged = self.flow.get_step("CriteriaReadinessJudgeStep").get_state("accepted")
        return go("PresentStep").with_state(
            {"hotelFound": found, "criteria": snapshot, "criteriaReviewAccepted": judged is True}
        )


class PresentStep(Step):
    """Lists the results; books one, sends a revision back to the router, or ends."""

    def on_enter(self) -> None:
        self.erase_memory()  # each presentation starts afresh: the results are in state

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        if isinstance(message, AIMessage) and message.additional_kwargs.get("direct"):
            return message  # the judge's direct_to: PicoFlow's onCrossing never sees it
        return HumanMessage(PRESENT_OPENER)

    def get_prompt(self) -> str:
        found = json.dumps(self.get_state("hotelFound") or [], indent=2)
        return (
            "You present Portland Hilton hotel search results. Present only the hotels of the "
            "trusted JSON below, numbered, each with its hotelName and its total in US "
            "currency. Say the user may book a hotel by name or number, or revise the dates, "
            "budget, room type, amenities or distance. Call chosen_hotel only for an explicit "
            "booking; call revise_search for every criteria change or new search. Never compare "
            "or invent prices, amenities, availability or booking status.\n"
            f"HOTEL_FOUND_INFO:\n{found}\n" + FlowPrompt.END_CHAT
        )

    def on_response(self, reply: Any) -> Any:
        """A draft is never shown directly: the presentation judge decides."""
        draft = reply if isinstance(reply, str) else json.dumps(reply)
        self.save_state({"draft": draft})
        return go("PresentationJudgeStep")

    @tool
    def chosen_hotel(
        self,
        hotelName: Annotated[
            str, Field(min_length=1, description="The hotel's name, or its number in the list.")
        ],
    ) -> Any:
        """Book one hotel from the presented result list."""
        found: list[dict[str, Any]] = self.get_state("hotelFound") or []
        wanted = hotelName.strip()
        hotel = None
        if wanted.isdigit() and 1 <= int(wanted) <= len(found):
            hotel = found[int(wanted) - 1]
        if hotel is None:
            hotel = next((h for h in found if h["hotelName"].lower() == wanted.lower()), None)
        if hotel is None:
            return stay(NOT_LISTED)
        number = 100000 + secrets.randbelow(900000)
        self.save_state({"selectedHotel": hotel, "confirmationNumber": number})
        return finish(
            f"{hotel['hotelName']} is booked with confirmation #{number}. "
            "Thank you for choosing Hilton."
        )

    @tool
    def revise_search(self) -> Any:
        """Return any requested criteria revision to the decision router."""
        asked = self._last_request()
        route = go("RouterStep")
        return route.with_message(asked) if asked is not None else route

    @tool
    def terminate_session(self) -> Any:
        """End the conversation when the user clearly wants to stop."""
        return finish(EXIT_REPLY)

    def _last_request(self) -> HumanMessage | None:
        """The guest's newest message here (PicoFlow's ``getLastMessage()`` at that moment)."""
        for message in reversed(self.get_messages()):
            if isinstance(message, HumanMessage) and message.text != PRESENT_OPENER:
                return HumanMessage(message.text, additional_kwargs={"origin": "user"})
        return None


GROUNDED_NOUL = 0.85
MIN_SCORE = 1.5
MIN_CONFIDENCE = 0.75


class PresentationJudgeStep(DecisionStep):
    """Reviews a results draft against the trusted results; judges, never rewrites."""

    moves_to = ("PresentStep",)  # direct_to: the draft or the code's list, shown there

    def get_prompt(self) -> str:
        return (
            "Review a hotel results draft against the trusted hotelFound. Reject invented or "
            "changed hotel names, prices, amenities, availability or booking claims. A complete "
            "draft lists the hotel names with their total prices and says how to book or "
            "revise. Judge the draft; do not rewrite it."
        )

    def define_questions(self) -> dict[str, Any]:
        return presentation_questions()

    def get_decision_facts(self) -> dict[str, Any]:
        present = self.flow.get_step("PresentStep")
        return {
            "draft": present.get_state("draft") or "",
            "hotelFound": present.get_state("hotelFound") or [],
            "criteria": present.get_state("criteria") or {},
        }

    def on_decision(self, answers: DecisionAnswers, context: DecisionContext) -> Any:
        completeness, clarity = score_of(answers, "completeness"), score_of(answers, "clarity")
        accepted = (
            noul_of(answers, "grounded") >= GROUNDED_NOUL
            and completeness.score >= MIN_SCORE
            and completeness.confidence >= MIN_CONFIDENCE
            and clarity.score >= MIN_SCORE
            and clarity.confidence >= MIN_CONFIDENCE
        )
        self.save_state({"review": answers_json(answers), "accepted": accepted})
        facts = context.facts
        shown = facts["draft"] if accepted else render_hotel_results(facts["hotelFound"])
        return direct_to("PresentStep", shown)

    def on_decision_error(self, context: DecisionErrorContext) -> Any:
        """Fail closed on prose: the guest reads the code's rendering of the results."""
        found = self.flow.get_step("PresentStep").get_state("hotelFound") or []
        return direct_to("PresentStep", render_hotel_results(found))
