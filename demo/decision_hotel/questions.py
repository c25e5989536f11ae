"""The decision questions of DecisionHotelFlow, exactly as PicoFlow asks them (research §3.3).

Each map is built afresh for every decision (`define_questions` runs per call), the router's
from the criteria saved at that moment, so its instructions name what is still unresolved.
"""

from __future__ import annotations

from collections.abc import Sequence

from picoflow import ChoiceQuestion, NoulQuestion, ScoreQuestion

DESTINATIONS: dict[str, str] = {
    "dates": "Set or revise check-in and checkout dates",
    "budget": "Set or revise minimum or maximum nightly budget",
    "room_type": "Set or revise one bed, two beds, or suite",
    "amenities": "Set or revise hotel amenity preferences",
    "distance": "Set or revise airport or city-center distance limits",
    "review": "Display the currently saved criteria only, without running a hotel search",
    "search": (
        "Execute a hotel search and show matching hotels; choose this for the exact request "
        "“search”"
    ),
    "exit": "End the hotel conversation without booking",
    "unclear": "The request is ambiguous or outside this hotel flow",
}
DELIVERIES: dict[str, str] = {
    "apply_request": (
        "The latest request contains a criterion value or revision that is not yet reflected "
        "in the saved criteria"
    ),
    "prompt_next": (
        "The latest request contains no unapplied criterion value and unresolved criteria "
        "remain, so the next collector should prompt"
    ),
    "none": (
        "The latest request is for review, search, exit, or an unclear or out-of-scope action, "
        "so no collector should receive it"
    ),
}


def unresolved_sentence(fields: Sequence[str]) -> str:
    """``Current unresolved criteria in collection order: <u>.``"""
    return f"Current unresolved criteria in collection order: {', '.join(fields) or 'none'}."


def routing_questions(fields: Sequence[str]) -> dict[str, ChoiceQuestion]:
    """``buildRoutingQuestions``: `destination` and `request_delivery`, for these unresolved
    fields."""
    unresolved = unresolved_sentence(fields)
    destination = (
        "Choose exactly one destination from the saved criteria and the latest request. "
        f"{unresolved} The exact request “search” is search, never review. An explicit request "
        "to review the criteria is review; an explicit wish to stop is exit. A request that "
        "sets or revises a criterion not yet reflected in the saved criteria goes to that "
        "criterion; a criterion already reflected does not go back to it but to the first "
        "unresolved criterion. When no criterion is named and some are unresolved, choose the "
        "first unresolved one. When all are resolved and the latest criterion request is "
        "reflected, choose review, never an automatic search. Choose unclear only for an "
        "ambiguous or out-of-scope request."
    )
    delivery = (
        "Classify the request independently of destination, comparing it with the saved "
        f"criteria. {unresolved} apply_request: the latest request holds a criterion value or "
        "revision not yet reflected in the saved criteria. prompt_next: it holds no unapplied "
        "criterion value and unresolved criteria remain, so the next collector should prompt. "
        "none: it is for review, search, exit, or an unclear or out-of-scope action, so no "
        "collector should receive it."
    )
    return {
        "destination": ChoiceQuestion(dict(DESTINATIONS), instructions=destination),
        "request_delivery": ChoiceQuestion(dict(DELIVERIES), instructions=delivery),
    }


OUTCOMES: dict[str, str] = {
    "ready": "The saved criteria reflect the latest requests and are ready to search",
    "dates": "Dates are missing, ambiguous, or contradict the latest correction",
    "budget": "Budget is missing, ambiguous, or contradicts the latest correction",
    "room_type": "Room type is missing, ambiguous, or contradicts the latest correction",
    "amenities": "Amenities are missing, ambiguous, or contradict the latest correction",
    "distance": "Distance limits are missing, ambiguous, or contradict the latest correction",
    "unclear": "More than one criterion is unresolved or the conversation is ambiguous",
}
FAITHFUL_TRUE = (
    "The normalized criteria faithfully reflect the latest corrections and explicit "
    "no-preference choices"
)
FAITHFUL_FALSE = "One or more normalized criteria miss or contradict the latest user request"


def readiness_questions() -> dict[str, ChoiceQuestion | NoulQuestion]:
    """The readiness judge's `outcome` (choice) and `faithful` (noul)."""
    return {
        "outcome": ChoiceQuestion(dict(OUTCOMES)),
        "faithful": NoulQuestion(true=FAITHFUL_TRUE, false=FAITHFUL_FALSE),
    }


GROUNDED = (
    "Are all hotel names and prices in the draft supported by hotelFound, with no invented "
    "booking or amenity claim?"
)
COMPLETENESS = [
    "Missing the result list",
    "Lists hotels but omits an important action",
    "Lists matching hotels with total prices and explains how to book or revise",
]
CLARITY = ["Confusing", "Understandable", "Clear numbered choices"]


def presentation_questions() -> dict[str, NoulQuestion | ScoreQuestion]:
    """The presentation judge's `grounded` (noul), `completeness` and `clarity` (scores)."""
    return {
        "grounded": NoulQuestion(GROUNDED),
        "completeness": ScoreQuestion(list(COMPLETENESS)),
        "clarity": ScoreQuestion(list(CLARITY)),
    }
