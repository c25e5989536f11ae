"""The offline model of EmployeeBenefitsFlow: plays every step's model from the request alone.

Like an LLM behind an API it sees only what the flow sends: the stage's prompt (its inputs as
``NAME: <JSON>`` lines), the namespace's messages and the bound tool names. It knows the stage
by its tools, reads the employee's words of that stage (`demo.benefits.heard`), calls the
stage's tools once a value is explicit and asks otherwise; a tool's ``stay`` text or error is
told to the employee. Without tools it is the summariser (it keeps the employee's messages,
word for word) or the closing step (it says what the terminal prompt instructs).
``offline:benefits`` and ``offline:benefits-complex`` are the same rules: the "complex" model
differs in PicoFlow by its reasoning, which rules do not have.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from demo.benefits.heard import Heard, hear
from demo.benefits.play_ancillary import ancillary
from demo.benefits.play_household import household
from demo.benefits.play_intake import eligibility, ineligible, preferences
from demo.benefits.play_plans import health_account, medical
from demo.benefits.play_review import beneficiaries, dependent_care, review
from demo.benefits.relay import relay
from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel

Player = Callable[[Heard], AIMessage | str]
STAGES: list[tuple[str, str | None, Player]] = [
    ("check_benefits_eligibility", None, eligibility),
    ("capture_benefits_household", "Collect the people who should be covered.", household),
    (
        "capture_benefits_preferences",
        "Ask about broad care-use and plan priorities without requesting diagnoses or "
        "medication names.",
        preferences,
    ),
    ("select_benefits_medical_plan", "Show the current medical plan options exactly.", medical),
    (
        "capture_benefits_health_account",
        "Explain the available health account and collect an annual employee contribution.",
        health_account,
    ),
    (
        "capture_benefits_ancillary",
        "Begin with dental and vision choices, then collect life and disability elections.",
        ancillary,
    ),
    (
        "capture_benefits_beneficiaries",
        "Collect life-insurance beneficiary names, relationships, and percentages.",
        beneficiaries,
    ),
    (
        "capture_benefits_dependent_care",
        "Render the authoritative dependent-care FSA explanation and election question exactly.",
        dependent_care,
    ),
    ("submit_benefits_enrollment", "Show the authoritative benefits enrollment review.", review),
    (
        "finish_ineligible_benefits",
        "Explain the code-owned eligibility result and next step.",
        ineligible,
    ),
]
"""Each stage: the tool that tells it apart, its opener, and its player."""
MODELS = ("benefits", "benefits-complex")


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    if not tools:
        system = messages[0].text if messages else ""
        return (
            summary(messages)
            if system.startswith("You write the running summary")
            else (closing(system))
        )
    for tool, opener, player in STAGES:
        if tool in tools:
            if isinstance(messages[-1], ToolMessage):
                return relay(messages[-1].text, hear(messages, tools, opener))
            return player(hear(messages, tools, opener))
    return "Sorry, I can't help with that here."


def summary(messages: list[BaseMessage]) -> str:
    """The summariser's answer: the earlier messages, word for word, oldest first.

    Every fact of an intake stage is something the employee said or was told, so keeping the
    lines (the stage openers among them) keeps every fact and every stage boundary.
    """
    body = messages[-1].text if messages else ""
    lines = [line for line in body.splitlines() if line.startswith(("User: ", "Assistant:"))]
    return "\n".join(lines) or "User: (nothing yet)"


_RECORD = re.compile(
    r"Confirm enrollment (?P<id>\S+) for plan year (?P<year>\d+)\. State status (?P<status>\S+), "
    r"effective date (?P<date>\S+), medical plan (?P<plan>\S+), and total estimated payroll "
    r"deduction (?P<total>\$[\d.,]+) per paycheck\. List pending requirements: (?P<pending>[^.]+)\."
)
DEMO_NOTE = (
    "This is a fictional benefits demonstration: official plan documents control, and pending "
    "coverage is not active until approved."
)


def closing(prompt: str) -> str:
    """The terminal step's reply, saying what its prompt instructs, and nothing else."""
    record = _RECORD.search(prompt)
    if record is not None:
        pending = record["pending"]
        return (
            f"Your enrollment {record['id']} for plan year {record['year']} is recorded. Status: "
            f"{record['status']}; effective date {record['date']}; medical plan {record['plan']}; "
            f"total estimated payroll deduction {record['total']} per paycheck. Pending "
            f"requirements: {pending}. No payment was taken in this chat. {DEMO_NOTE}"
        )
    if "recommend contacting the fictional benefits team" in prompt:
        return (
            "No elections were submitted. Please contact the fictional Northstar Works benefits "
            f"team for a review. {DEMO_NOTE} Goodbye!"
        )
    if "reviewed elections were not submitted" in prompt:
        return f"Understood — the reviewed elections were not submitted. {DEMO_NOTE} Goodbye!"
    if "no household elections were submitted" in prompt:
        return f"Understood — no household elections were submitted. {DEMO_NOTE} Goodbye!"
    return f"Understood — no benefits elections were submitted. {DEMO_NOTE} Goodbye!"


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:benefits"`` and ``"offline:benefits-complex"``."""
    if spec.name not in MODELS:
        raise ValueError(
            "The EmployeeBenefitsFlow offline provider has two models, 'offline:benefits' and "
            f"'offline:benefits-complex'; got 'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
