"""What the benefits offline model tells the employee after a tool answered instead of moving.

A ``stay`` text is code's verdict (a household rule, an account limit, a beneficiary total) or
an instruction to the model ("Ask whether the covered spouse or partner has access to other
medical coverage."); an error result carries the schema's guidance. Either way the employee
hears what code decided, and what to say next: the model never softens or overrides it.
"""

from __future__ import annotations

import re

from demo.benefits.heard import Heard

_GUIDANCE = re.compile(r"validation error for \w+\n\s+(?P<text>.+?) \[type=", re.S)
_TOTAL = re.compile(r"Beneficiary allocations total (?P<total>\d+)%")
_PENDING = re.compile(r"Current pending requirements: (?P<list>.+)\.$")
NEXT = {
    "capture_benefits_household": "Could you tell me the corrected household?",
    "capture_benefits_health_account": "What annual amount would you like instead, in whole "
    "dollars (or $0 to waive)?",
    "capture_benefits_dependent_care": "Would you like to elect a different annual amount, or "
    "waive it with $0?",
    "submit_benefits_enrollment": "Would you like to submit, or correct the contribution?",
    "select_benefits_medical_plan": "Which plan would you like?",
}


def _next(heard: Heard) -> str:
    return next((question for tool, question in NEXT.items() if tool in heard.tools), "")


def relay(result: str, heard: Heard) -> str:
    """The reply to a tool result that kept the step where it is."""
    guidance = _GUIDANCE.search(result)
    if guidance is not None:
        return f"I still need the right details: {guidance['text']}"
    if result.startswith("Error:"):
        return f"Sorry, that didn't work: {result.removeprefix('Error: ')}"
    total = _TOTAL.search(result)
    if total is not None:
        return (
            f"Those allocations total {total['total']}%. Please adjust the percentages or add "
            "beneficiaries so the complete allocation totals exactly 100%."
        )
    pending = _PENDING.search(result)
    if pending is not None:
        listed = pending["list"]
        return (
            "There are no pending requirements on this enrollment."
            if listed == "none"
            else f"The pending requirements are: {listed}."
        ) + " Would you like to submit?"
    if result.startswith("Ask whether the covered spouse or partner"):
        return "Does your spouse or partner have access to other medical coverage?"
    if result.startswith("Choose"):
        return result.replace("Choose", "Please choose", 1)
    return f"{result} {_next(heard)}".strip()
