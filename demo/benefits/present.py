"""PicoFlow's benefits presenter (research section 5.4): the exact tables and texts code shows.

The model never writes these: a tool returns them with ``direct(...)``, or a step's
``on_response`` puts them in place of the model's prose while ``needsPresentation`` is set.
"""

from __future__ import annotations

from demo.benefits.jsvalues import money
from demo.benefits.policy import (
    DENTAL_PRICES,
    EOI,
    Json,
    dental_price,
    life_terms,
)

DEPENDENT_CARE_TEXT = (
    "The dependent-care FSA can reimburse eligible work-related childcare expenses under the "
    "fictional demo plan. It is separate from a healthcare FSA, has a $5,000 annual demo limit, "
    "and tax eligibility should be verified with the official plan materials or a tax adviser. "
    "Would you like to elect an annual contribution amount or waive this benefit with $0?"
)
EOI_TEXT = (
    "Evidence of insurability is a separate carrier review for the 3× supplemental-life "
    "election. The enrollment can be submitted now, but coverage above the guaranteed amount "
    "remains pending. No health details are collected in this chat."
)
BENEFICIARY_OPENING = (
    "Your ancillary elections have been recorded.{note} Next, provide the name, relationship, "
    "and percentage allocation for each supplemental-life beneficiary. The total allocation "
    "must equal exactly 100%."
)
EOI_NOTE = (
    " Your 3× supplemental-life election requires evidence of insurability and remains pending "
    "until approved."
)


def _spaced(value: str) -> str:
    return value.replace("_", " ")


def _funding(option: Json) -> str:
    return f"Yes / {money(option['employerHsaContribution'])}" if option["hsaEligible"] else "No"


def _yes(flag: bool) -> str:
    return "Yes" if flag else "No"


def plan_table(evaluation: Json) -> str:
    """The plan options for the household's tier, the rule-based fit and its reasons."""
    lines = [
        f"### {evaluation['planYear']} medical plans — {_spaced(evaluation['coverageTier'])}",
        "",
        "| ID | Plan | Per paycheck | Annual payroll | Family deductible | Family out-of-pocket "
        "max | HSA / employer funding | Out-of-network |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for option in evaluation["options"]:
        amounts = " | ".join(
            money(option[key])
            for key in (
                "premiumPerPayPeriod",
                "annualEmployeePremium",
                "familyDeductible",
                "familyOutOfPocketMaximum",
            )
        )
        lines.append(
            f"| {option['planId']} | {option['name']} | {amounts} | {_funding(option)} | "
            f"{_yes(option['outOfNetworkCoverage'])} |"
        )
    lines += ["", f"**Rule-based fit:** {evaluation['recommendedPlanId']}"]
    lines += [f"- {reason}" for reason in evaluation["recommendationReasons"]]
    lines += [
        "",
        f"Fictional demo terms under rules {evaluation['rulesVersion']}; this is decision "
        "support, not financial, tax, or medical advice. Verify the official plan documents and "
        "provider directory.",
    ]
    return "\n".join(lines)


def comparison_table(options: list[Json]) -> str:
    """Two or three plans side by side, prescription terms included."""
    lines = [
        "### Medical plan comparison",
        "",
        "| Plan | Per paycheck | Annual payroll | Family deductible | Family OOP max | "
        "Prescription terms | HSA / employer funding | Out-of-network |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for option in options:
        lines.append(
            f"| {option['name']} ({option['planId']}) | {money(option['premiumPerPayPeriod'])} | "
            f"{money(option['annualEmployeePremium'])} | {money(option['familyDeductible'])} | "
            f"{money(option['familyOutOfPocketMaximum'])} | {option['prescriptionCoverage']} | "
            f"{_funding(option)} | {_yes(option['outOfNetworkCoverage'])} |"
        )
    lines += [
        "",
        "These are fictional demo terms. Verify official plan documents before enrolling.",
    ]
    return "\n".join(lines)


def dental_table(tier: str) -> str:
    """The dental options priced for the tier (family pricing for every tier but employee only)."""
    basic, premium = (money(dental_price(option, tier)) for option in DENTAL_PRICES)
    return "\n".join(
        [
            "### Dental options",
            "",
            "| Option | Per paycheck | Annual maximum | Orthodontia |",
            "|---|---:|---:|---|",
            f"| Basic | {basic} | $1,500.00 | Not included |",
            f"| Premium | {premium} | $2,500.00 | 50% up to a $2,000.00 lifetime maximum |",
            "| Waive | $0.00 | — | — |",
            "",
            "Fictional demo terms; the official certificate controls.",
        ]
    )


def life_explanation(salary: int, multiple: int) -> str:
    """What a supplemental-life multiple covers and costs, and whether it needs EOI."""
    coverage, cost = life_terms(salary, multiple)
    if multiple == 3:
        evidence = (
            "This amount requires evidence of insurability. The election can be submitted, but "
            "coverage above the guaranteed amount remains pending until approved."
        )
    else:
        evidence = (
            "This amount does not require evidence of insurability under the fictional demo rules."
        )
    return " ".join(
        [
            f"Supplemental life at {multiple}× salary provides {money(coverage)} of fictional demo "
            f"coverage for {money(cost)} per paycheck.",
            evidence,
            "No health details are collected in this chat.",
        ]
    )


def beneficiary_opening(pending: list[str]) -> str:
    """BeneficiaryStep's first reply: the ancillary elections are recorded, and what comes next."""
    return BENEFICIARY_OPENING.format(note=EOI_NOTE if EOI in pending else "")


def _elected(flag: bool) -> str:
    return "elected" if flag else "waived"


def review(application: Json) -> str:
    """The authoritative enrollment review of the application as it stands."""
    employee = application["eligibility"]["employee"]
    request, household = application["request"], application["household"]
    plan, account = application["selectedMedicalPlan"], application["healthAccountResult"]
    ancillary = application["ancillary"]
    names = ", ".join(person["name"] for person in household["dependents"]) or "no dependents"
    people = application["beneficiaries"]["beneficiaries"]
    named = ", ".join(f"{b['name']} {b['percentage']}%" for b in people) or "none"
    pending = ", ".join(ancillary["pendingRequirements"]) or "none"
    kind = application["healthAccount"]["accountType"].upper()
    bullets = [
        f"Plan year / event: {request['planYear']} / {_spaced(request['eventType'])}",
        f"Household: {household['coverageTier']} with {names}",
        f"Medical: {plan['name']} ({plan['planId']}), {money(plan['premiumPerPayPeriod'])} per "
        "paycheck",
        f"Health account: {kind}, employee {money(account['employeeContribution'])} + employer "
        f"{money(account['employerContribution'])} annually",
        f"Dental / vision: {ancillary['dentalPlan']} / {ancillary['visionPlan']}",
        f"Supplemental life: {ancillary['supplementalLifeMultiple']}× salary "
        f"({money(ancillary['supplementalLifeCoverage'])})",
        f"Disability: short-term {_elected(ancillary['shortTermDisability'])}; long-term "
        f"{_elected(ancillary['longTermDisability'])}",
        f"Beneficiaries: {named}",
        f"Dependent-care FSA: {money(application['dependentCare']['annualContribution'])} annually",
        f"Ancillary payroll cost: {money(ancillary['employeePremiumPerPayPeriod'])} per paycheck",
        f"Pending requirements: {pending}",
    ]
    return "\n".join(
        [
            f"### Benefits enrollment review for {employee['name']}",
            "",
            *(f"- {bullet}" for bullet in bullets),
            "",
            "Confirm submission or request a contribution correction. Official plan documents "
            "control, and pending evidence-of-insurability coverage is not active until approved.",
        ]
    )
