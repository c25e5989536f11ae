"""The offline model of BeneficiaryStep, DependentCareStep and EnrollmentReviewStep.

Beneficiaries are captured once each has a name, a relationship and a whole percentage (code
checks the total). A dependent-care question is answered by the explanation tool, at once. The
review is shown by its tool; only an explicit confirmation submits, a contribution correction
goes through its tool, and a pending requirement is explained by code's text.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage

from demo.benefits.heard import Heard
from demo.benefits.jsvalues import money
from demo.benefits.people import Share, shares_in
from demo.benefits.play_intake import defers
from demo.benefits.play_plans import PER_PERIOD, WAIVE
from demo.benefits.reading import amounts_in, is_question, is_yes, wants_to_stop
from picoflow.testing import tool_call

_RATIO = re.compile(r"\b(?P<a>\d{1,2})\s*/\s*(?P<b>\d{1,2})\b")


def _merge(known: list[Share], found: list[Share]) -> None:
    for share in found:
        same = next(
            (
                k
                for k in known
                if (
                    share.name
                    and k.name
                    and k.name.split()[0].lower() == share.name.split()[0].lower()
                )
                or (k.name is None and share.relationship and k.relationship == share.relationship)
            ),
            None,
        )
        if same is None:
            known.append(share)
            continue
        if share.name and (same.name is None or len(share.name) > len(same.name)):
            same.name = share.name  # "Leo" then "Leo Rivera": the full name
        same.relationship = share.relationship or same.relationship
        same.percentage = share.percentage if share.percentage is not None else same.percentage


def beneficiaries(heard: Heard) -> AIMessage | str:
    """BeneficiaryStep's model: every beneficiary complete, then the capture."""
    if not heard.said:
        return (
            "Please tell me each supplemental-life beneficiary's name, relationship and "
            "percentage; the total must be exactly 100%."
        )
    final = heard.said[-1].text
    if heard.withdrawn():
        return (
            "No problem — nothing has been recorded. Tell me the beneficiaries when you're ready."
        )
    if wants_to_stop(final):
        return tool_call("end_beneficiary_enrollment")
    known: list[Share] = []
    for said in heard.said:
        if said.withdrawn:
            continue
        ratio = _RATIO.search(said.text)
        if ratio and len(known) == 2 and not shares_in(_RATIO.sub(" ", said.text)):
            known[0].percentage, known[1].percentage = int(ratio["a"]), int(ratio["b"])
            continue
        _merge(known, shares_in(said.text))
    question = _missing(known)
    if question is not None:
        return ("I can't decide the allocation for you. " if defers(final) else "") + question
    return tool_call(
        "capture_benefits_beneficiaries",
        beneficiaries=[
            {"name": s.name, "relationship": s.relationship, "percentage": s.percentage}
            for s in known
        ],
    )


def _missing(known: list[Share]) -> str | None:
    if not known:
        return (
            "Who should be the beneficiary? Please give each person's name, relationship and "
            "percentage (whole numbers totalling 100%)."
        )
    for share in known:
        who = share.name or f"your {share.relationship}"
        if share.name is None:
            return f"What is {who}'s full name?"
        if share.relationship is None:
            return f"How is {who} related to you?"
        if share.percentage is None:
            return f"What percentage should {who} receive (a whole number)?"
    return None


# -- dependent care ------------------------------------------------------------------------

_COVERS = re.compile(
    r"what\b.*\b(?:cover|pay|for|is|does|use|reimburse|count|qualif|eligible|mean)|how\s+does|"
    r"explain|tell\s+me\s+(?:more|about)|what'?s\s+(?:a|an|the|that|this)|\bcovers?\b|\bpays?\s+for",
    re.I,
)


def dependent_care(heard: Heard) -> AIMessage | str:
    """DependentCareStep's model: the explanation from its tool, then an amount or $0."""
    if not heard.said:
        return tool_call("explain_benefits_dependent_care")
    final = heard.said[-1].text
    if heard.withdrawn():
        return "No problem — nothing has been recorded. Tell me the amount when you're ready."
    if wants_to_stop(final):
        return tool_call("end_dependent_care_enrollment")
    found = amounts_in(final)
    if is_question(final) and not found:
        return tool_call("explain_benefits_dependent_care")
    if not found and WAIVE.search(final):
        return tool_call("capture_benefits_dependent_care", annualContribution=0)
    if not found:
        lead = "I can't choose the amount for you. " if defers(final) else ""
        return lead + (
            "What annual dependent-care FSA amount would you like, in whole dollars, or $0 to "
            "waive it?"
        )
    amount = found[-1]
    if PER_PERIOD.search(final):
        return "Please give me the dependent-care amount as an annual total in whole dollars."
    if amount != int(amount):
        return "The contribution must be in whole dollars. What annual amount would you like?"
    return tool_call("capture_benefits_dependent_care", annualContribution=int(amount))


# -- review --------------------------------------------------------------------------------

_SUBMIT = re.compile(
    r"\bsubmit|\bconfirm(?:ed)?\b|\bgo\s+ahead\b|\bfinali[sz]e|\bsend\s+it|\block\s+it\s+in|"
    r"\bfile\s+it|\bproceed\b|\bcomplete\s+(?:it|my|the)\b",
    re.I,
)
_LATER = re.compile(
    r"\blater\b|another\s+(?:time|day)|some\s+other\s+time|tomorrow|next\s+week|come\s+back",
    re.I,
)
_NOT_YET = re.compile(
    r"\b(?:don'?t|do\s+not|not|never)\s+(?:submit|confirm|send|finali[sz]e|yet)|\bnot\s+yet\b|"
    r"\bwait\b|\bhold\b",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:change|lower|raise|increase|decrease|reduce|bump|update|make|set|adjust|correct|"
    r"drop|up|cut|switch)\b|\binstead\b|\bto\s+\$?\d",
    re.I,
)
_ACCOUNT = re.compile(r"\bhsa\b|\bfsa\b|contribut|health\s+account|account", re.I)
_EOI = re.compile(r"\beoi\b|evidence\s+of\s+insurability|insurability", re.I)
_PENDING = re.compile(r"\bpending\b|requirement", re.I)
_READ_BACK = re.compile(r"change your health-account contribution to \$(?P<amount>[\d,]+)")
_OTHER_CHANGE = re.compile(
    r"\b(?:dental|vision|life|disability|beneficiar|plan|ppo|hdhp|epo|dependent)", re.I
)


def _pending(heard: Heard) -> list[str]:
    application: dict[str, Any] = heard.facts.get("APPLICATION") or {}
    return list((application.get("ancillary") or {}).get("pendingRequirements") or [])


def review(heard: Heard) -> AIMessage | str:
    """EnrollmentReviewStep's model: show, correct, explain; submit on explicit confirmation."""
    if not heard.said:
        return tool_call("show_benefits_enrollment_review")
    final = heard.said[-1].text
    if heard.withdrawn() or _NOT_YET.search(final):
        return "Nothing has been submitted. Tell me when you'd like to submit, or what to correct."
    if wants_to_stop(final) and (_LATER.search(final) or not _SUBMIT.search(final)):
        return tool_call("end_reviewed_benefits_enrollment")
    if _LATER.search(final):  # "I'll submit it later": not a confirmation
        return "Nothing has been submitted. Come back when you'd like to submit."
    if _EOI.search(final) or (_PENDING.search(final) and is_question(final)):
        return _explain_pending(final, heard)
    return _decide(final, heard)


def _decide(final: str, heard: Heard) -> AIMessage | str:
    """A correction, an answer, or the submission on an explicit confirmation."""
    found = amounts_in(final)
    back = _READ_BACK.search(heard.last_ai)
    if back and is_yes(final) and not found:
        amount = int(back["amount"].replace(",", ""))
        return tool_call("change_benefits_health_contribution", employeeAnnualContribution=amount)
    if found:
        return _correction(final, found[-1])
    if is_question(final):
        return (
            "The review above shows every election as recorded. I can correct the health-account "
            "contribution or explain a pending requirement. Would you like to submit?"
        )
    if _SUBMIT.search(final) or (is_yes(final) and "submi" in heard.last_ai.lower()):
        return tool_call("submit_benefits_enrollment", confirmed=True)
    if _OTHER_CHANGE.search(final) and _CHANGE.search(final):
        return (
            "In this review I can correct only the health-account contribution; the other "
            "elections stay as recorded. Would you like to submit, or correct the contribution?"
        )
    return (
        "Would you like me to submit this enrollment, or correct the health-account contribution?"
    )


def _correction(text: str, amount: float) -> AIMessage | str:
    if PER_PERIOD.search(text):
        return "Please give me the corrected contribution as an annual total in whole dollars."
    if amount != int(amount):
        return "The contribution must be in whole dollars. What annual amount would you like?"
    if _ACCOUNT.search(text) or _CHANGE.search(text):
        return tool_call(
            "change_benefits_health_contribution", employeeAnnualContribution=int(amount)
        )
    return f"Shall I change your health-account contribution to {money(int(amount))[:-3]} a year?"


def _explain_pending(text: str, heard: Heard) -> AIMessage | str:
    if _EOI.search(text):
        return tool_call("explain_benefits_pending_requirement", code="EVIDENCE_OF_INSURABILITY")
    pending = _pending(heard)
    if not pending:
        return "There are no pending requirements on this enrollment. Would you like to submit?"
    return tool_call("explain_benefits_pending_requirement", code=pending[0])
