"""``BenefitsPolicy``: PicoFlow's code-owned benefits rules (research section 5.2), exactly.

Eligibility, plan terms, limits, prices, allocations, pending requirements and the enrollment
record are computed here and nowhere else; the model only collects and explains. Every value
is a plain JSON value in PicoFlow's key order, because the enrollment id hashes
``JSON.stringify`` of the application (`demo.benefits.jsvalues`).
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from demo.benefits.jsvalues import js_number, js_stringify, round2
from demo.benefits.schemas import is_iso_day

Json = dict[str, Any]

RULES_VERSION = "benefits-demo-2027.1"
PLAN_YEAR = 2027
OPEN_ENROLLMENT = ("2026-11-01", "2026-11-20")
HSA_LIMITS = {"employee_only": 4500}
HSA_FAMILY_LIMIT = 9000  # every other tier
HEALTHCARE_FSA_LIMIT = 3300
DEPENDENT_CARE_LIMIT = 5000
EVENT_WINDOW_DAYS = 30

EMPLOYEES: dict[str, Json] = {
    "E-1042": {"employeeId": "E-1042", "name": "Alex Rivera", "state": "OR",
               "employmentStatus": "active", "weeklyHours": 40, "hireDate": "2024-06-10",
               "annualSalary": 78000, "payPeriods": 24},
    "E-2040": {"employeeId": "E-2040", "name": "Taylor Morgan", "state": "CA",
               "employmentStatus": "active", "weeklyHours": 20, "hireDate": "2025-02-01",
               "annualSalary": 42000, "payPeriods": 24},
}  # fmt: skip

TIERS = ("employee_only", "employee_spouse", "employee_children", "family")
PLANS: list[Json] = [
    {"planId": "EPO_VALUE", "name": "Value EPO", "type": "EPO",
     "premiums": dict(zip(TIERS, (45, 105, 95, 155), strict=True)),
     "familyDeductible": 2500, "familyOutOfPocketMaximum": 9000, "hsaEligible": False,
     "outOfNetworkCoverage": False,
     "prescriptionCoverage": "$15 / $45 / $90 after applicable rules"},
    {"planId": "HDHP_HSA", "name": "HSA Advantage HDHP", "type": "HDHP",
     "premiums": dict(zip(TIERS, (35, 85, 75, 125), strict=True)),
     "familyDeductible": 5000, "familyOutOfPocketMaximum": 10000, "hsaEligible": True,
     "outOfNetworkCoverage": True, "prescriptionCoverage": "20% after deductible"},
    {"planId": "PPO_STANDARD", "name": "Standard PPO", "type": "PPO",
     "premiums": dict(zip(TIERS, (80, 160, 145, 220), strict=True)),
     "familyDeductible": 3000, "familyOutOfPocketMaximum": 8000, "hsaEligible": False,
     "outOfNetworkCoverage": True, "prescriptionCoverage": "$10 / $40 / $80"},
]  # fmt: skip
"""The catalog in PicoFlow's order; the HDHP's employer HSA money is `employer_hsa`."""
PLAN_IDS = [plan["planId"] for plan in PLANS]
DIRECTORY = {"dr maya chen": {"HDHP_HSA", "PPO_STANDARD"}, "dr chen": {"HDHP_HSA", "PPO_STANDARD"}}
"""The fictional provider directory: a normalised name, the plans it is in network for."""

REASON_HSA = "You prioritized HSA savings and the HDHP includes an employer HSA contribution."
REASON_DEDUCTIBLE = "You prioritized a lower deductible or expect high use."
REASON_NETWORK = "You requested out-of-network flexibility, which the EPO does not provide."
REASON_PRESCRIPTIONS = (
    "Compare prescription terms carefully because you reported regular medication use."
)
REASON_DEFAULT = "The EPO has the lowest simple in-network payroll cost for the stated preferences."
DENTAL_PRICES = {"basic": (28, 12), "premium": (48, 21)}  # (family pricing, employee only)
VISION_PRICES = {"standard": (12, 5)}
LIFE_RATE_PER_1000 = 0.04
SHORT_TERM_DISABILITY, LONG_TERM_DISABILITY = 7.5, 10
EOI = "EVIDENCE_OF_INSURABILITY"


def plan_by_id(plan_id: str) -> Json | None:
    """The catalog entry of `plan_id` (exact ID), or None."""
    return next((plan for plan in PLANS if plan["planId"] == plan_id), None)


def employer_hsa(plan: Json, tier: str) -> int:
    """The plan's employer HSA contribution for `tier` (the HDHP: 750 employee only, else 1500)."""
    if not plan["hsaEligible"]:
        return 0
    return 750 if tier == "employee_only" else 1500


def hsa_limit(tier: str) -> int:
    """The tier's HSA limit."""
    return HSA_LIMITS.get(tier, HSA_FAMILY_LIMIT)


def parse_day(value: str) -> date | None:
    """A ``YYYY-MM-DD`` string as a date, None when it is not a real day."""
    return date.fromisoformat(value) if is_iso_day(value) else None


def age_on(birth: date, day: date) -> int:
    """Whole years on `day` (UTC calendar years, minus one before the birthday)."""
    return day.year - birth.year - ((day.month, day.day) < (birth.month, birth.day))


# -- eligibility ---------------------------------------------------------------------------


def evaluate_eligibility(request: Json, now: datetime) -> Json:
    """``evaluateEligibility``: the reason codes in PicoFlow's order, and the deadline."""
    employee = EMPLOYEES.get(request["employeeId"])
    codes: list[str] = []
    if employee is None:
        codes.append("EMPLOYEE_NOT_FOUND")
    else:
        if employee["employmentStatus"] != "active":
            codes.append("EMPLOYMENT_NOT_ACTIVE")
        if employee["weeklyHours"] < 30:
            codes.append("MINIMUM_HOURS_NOT_MET")
    if request["planYear"] != PLAN_YEAR:
        codes.append("UNSUPPORTED_PLAN_YEAR")
    deadline = _event_window(request, now, codes)
    return {
        "eligible": not codes,
        "reasonCodes": codes,
        "enrollmentDeadline": deadline,
        "employee": dict(employee) if employee is not None else None,
        "rulesVersion": RULES_VERSION,
    }


def _event_window(request: Json, now: datetime, codes: list[str]) -> str | None:
    """The enrollment deadline; adds the window's reason code when it is closed."""
    today = now.astimezone(UTC).date().isoformat()
    if request["eventType"] == "open_enrollment":
        if not OPEN_ENROLLMENT[0] <= today <= OPEN_ENROLLMENT[1]:
            codes.append("OPEN_ENROLLMENT_CLOSED")
        return OPEN_ENROLLMENT[1]
    event = parse_day(request.get("eventDate") or "")
    if event is None:
        codes.append("EVENT_DATE_REQUIRED")
        return None
    start = datetime(event.year, event.month, event.day, tzinfo=UTC)
    elapsed = (now.astimezone(UTC) - start) // timedelta(days=1)  # whole days, floored
    if elapsed < 0 or elapsed > EVENT_WINDOW_DAYS:
        codes.append("EVENT_WINDOW_CLOSED")
    return (event + timedelta(days=EVENT_WINDOW_DAYS)).isoformat()


# -- household -----------------------------------------------------------------------------


HOUSEHOLD_MESSAGES = (
    "Only one covered spouse or domestic partner is supported in this demo.",
    "Employee-only coverage cannot include dependents.",
    "Employee-plus-spouse coverage requires exactly one spouse or domestic partner and no "
    "children.",
    "Employee-plus-children coverage requires at least one child and no spouse or partner.",
    "Family coverage requires one spouse or partner and at least one child.",
    "Ask whether the covered spouse or partner has access to other medical coverage.",
    "Spouse other-coverage status must be null when no spouse or partner is covered.",
)
"""`validate_household`'s messages, in the order it checks them."""


def validate_household(household: Json, plan_year: int) -> str | None:
    """``validateHousehold``: the first failure's message, None when the household is valid."""
    people = household["dependents"]
    partners = [d for d in people if d["relationship"] in ("spouse", "domestic_partner")]
    children = [d for d in people if d["relationship"] == "child"]
    tier, other_coverage = household["coverageTier"], household.get("spouseHasOtherMedicalCoverage")
    checks = [
        (len(partners) > 1, HOUSEHOLD_MESSAGES[0]),
        (tier == "employee_only" and bool(people), HOUSEHOLD_MESSAGES[1]),
        (
            tier == "employee_spouse" and (len(partners) != 1 or bool(children)),
            HOUSEHOLD_MESSAGES[2],
        ),
        (tier == "employee_children" and (not children or bool(partners)), HOUSEHOLD_MESSAGES[3]),
        (tier == "family" and (len(partners) != 1 or not children), HOUSEHOLD_MESSAGES[4]),
        (bool(partners) and other_coverage is None, HOUSEHOLD_MESSAGES[5]),
        (not partners and other_coverage is not None, HOUSEHOLD_MESSAGES[6]),
    ]
    for failed, message in checks:
        if failed:
            return message
    return _dependent_ages(people, date(plan_year, 1, 1))


def _dependent_ages(people: list[Json], start: date) -> str | None:
    for person in people:
        birth = parse_day(person["birthDate"])
        if birth is None or birth >= start:
            return f"{person['name']}'s birth date must be before the plan year."
        if person["relationship"] == "child" and age_on(birth, start) >= 26:
            return f"{person['name']} is outside this demo's standard dependent-child age rule."
    return None


# -- medical plans -------------------------------------------------------------------------


def plan_option(plan: Json, tier: str, pay_periods: int) -> Json:
    """A catalog plan priced for `tier` (PicoFlow's option shape is inferred: its fields)."""
    premium = plan["premiums"][tier]
    return {
        "planId": plan["planId"],
        "name": plan["name"],
        "type": plan["type"],
        "premiumPerPayPeriod": premium,
        "annualEmployeePremium": premium * pay_periods,
        "familyDeductible": plan["familyDeductible"],
        "familyOutOfPocketMaximum": plan["familyOutOfPocketMaximum"],
        "hsaEligible": plan["hsaEligible"],
        "employerHsaContribution": employer_hsa(plan, tier),
        "outOfNetworkCoverage": plan["outOfNetworkCoverage"],
        "prescriptionCoverage": plan["prescriptionCoverage"],
    }


def evaluate_plans(request: Json, employee: Json, household: Json, preferences: Json) -> Json:
    """The rule-based fit and every plan priced for the household's tier."""
    tier = household["coverageTier"]
    plan_id, reasons = recommend(preferences)
    return {
        "planYear": request["planYear"],
        "rulesVersion": RULES_VERSION,
        "coverageTier": tier,
        "recommendedPlanId": plan_id,
        "recommendationReasons": reasons,
        "options": [plan_option(plan, tier, employee["payPeriods"]) for plan in PLANS],
    }


def recommend(preferences: Json) -> tuple[str, list[str]]:
    """PicoFlow's recommendation rules, in their order."""
    priorities = preferences["priorities"]
    plan_id, reasons = "EPO_VALUE", []
    if "hsa_savings" in priorities:
        plan_id = "HDHP_HSA"
        reasons.append(REASON_HSA)
    if "lower_deductible" in priorities or preferences["anticipatedUse"] == "high":
        plan_id = "PPO_STANDARD"
        reasons.append(REASON_DEDUCTIBLE)
    elif (
        preferences["networkPreference"] == "out_of_network_flexibility" and plan_id == "EPO_VALUE"
    ):
        plan_id = "PPO_STANDARD"
        reasons.append(REASON_NETWORK)
    if preferences["prescriptionUse"] == "regular":
        reasons.append(REASON_PRESCRIPTIONS)
    return plan_id, reasons or [REASON_DEFAULT]


def normalised_provider(name: str) -> str:
    """A provider name as the directory keys it: lower case, ``[a-z0-9 ]`` only, single spaces."""
    return " ".join(re.sub(r"[^a-z0-9 ]", "", name.lower()).split())


def provider_network(plan: Json, provider_name: str) -> Json:
    """The directory's answer for a provider (as typed) and a plan; ``inNetwork`` None if
    the directory does not know the provider."""
    plans = DIRECTORY.get(normalised_provider(provider_name))
    if plans is None:
        message = (
            f"{provider_name} is not in the fictional demo directory. Verify network status "
            "with the carrier before enrolling."
        )
        return {"inNetwork": None, "message": message}
    inside = plan["planId"] in plans
    status = "in network" if inside else "out of network"
    message = (
        f"{provider_name} is {status} for {plan['name']} in the fictional demo directory. "
        "Recheck before receiving care."
    )
    return {"inNetwork": inside, "message": message}


# -- accounts, ancillary, dependent care ---------------------------------------------------


ACCOUNT_MESSAGES = (
    "An HSA election requires the HSA-eligible HDHP.",
    "This demo does not allow a general-purpose healthcare FSA with the HSA-eligible plan.",
    "A waived account must have a zero employee contribution.",
)


def evaluate_health_account(plan: Json, tier: str, election: Json) -> Json:
    """``evaluateHealthAccount``: the limit, the employer part and the first failure."""
    kind, employee = election["accountType"], election["employeeAnnualContribution"]
    limit = {"hsa": hsa_limit(tier), "healthcare_fsa": HEALTHCARE_FSA_LIMIT}.get(kind, 0)
    employer = employer_hsa(plan, tier) if kind == "hsa" else 0
    combined = employee + employer
    failures = [
        (kind == "hsa" and not plan["hsaEligible"], ACCOUNT_MESSAGES[0]),
        (kind == "healthcare_fsa" and plan["hsaEligible"], ACCOUNT_MESSAGES[1]),
        (kind == "waive" and employee != 0, ACCOUNT_MESSAGES[2]),
        (
            combined > limit,
            f"Employee plus employer contributions total ${js_number(combined)}, above the "
            f"${js_number(limit)} demo limit.",
        ),
    ]
    reason = next((message for failed, message in failures if failed), None)
    return {
        "accepted": reason is None,
        "reason": reason or "Election is within the fictional demo plan limits.",
        "annualLimit": limit,
        "employerContribution": employer,
        "employeeContribution": employee,
        "combinedContribution": combined,
    }


def account_limits(plan: Json, tier: str) -> Json:
    """``ACCOUNT_LIMITS``: a zero election of the plan's account (HSA for the HDHP, else FSA)."""
    kind = "hsa" if plan["hsaEligible"] else "healthcare_fsa"
    return evaluate_health_account(
        plan, tier, {"accountType": kind, "employeeAnnualContribution": 0}
    )


def life_terms(salary: int, multiple: int) -> tuple[int, float]:
    """Supplemental life coverage and its cost per paycheck for a salary multiple."""
    coverage = salary * multiple
    return coverage, round2(coverage / 1000 * LIFE_RATE_PER_1000)


def dental_price(option: str, tier: str) -> int:
    """Dental per paycheck: family pricing for every tier but employee only."""
    family, alone = DENTAL_PRICES[option]
    return family if tier != "employee_only" else alone


def quote_ancillary(election: Json, tier: str, salary: int) -> Json:
    """``quoteAncillary``: the election, its premium per paycheck, coverage and pending items."""
    family = tier != "employee_only"
    cost = 0.0
    if election["dentalPlan"] != "waive":
        cost += dental_price(election["dentalPlan"], tier)
    if election["visionPlan"] != "waive":
        cost += VISION_PRICES["standard"][0 if family else 1]
    multiple = election["supplementalLifeMultiple"]
    coverage, life_cost = life_terms(salary, multiple)
    cost += life_cost
    cost += SHORT_TERM_DISABILITY if election["shortTermDisability"] else 0
    cost += LONG_TERM_DISABILITY if election["longTermDisability"] else 0
    return {
        **election,
        "employeePremiumPerPayPeriod": round2(cost),
        "supplementalLifeCoverage": coverage,
        "pendingRequirements": [EOI] if multiple == 3 else [],
    }


def evaluate_dependent_care(household: Json, plan_year: int, election: Json) -> Json:
    """``evaluateDependentCare``: eligible children are under 13 on Jan 1 of the plan year."""
    start = date(plan_year, 1, 1)
    names = [
        person["name"]
        for person in household["dependents"]
        if person["relationship"] == "child"
        and (birth := parse_day(person["birthDate"])) is not None
        and age_on(birth, start) < 13
    ]
    amount = election["annualContribution"]
    if amount > 0 and not names:
        reason = "No covered dependent is under age 13 at the start of the plan year in this demo."
    elif amount > DEPENDENT_CARE_LIMIT:
        reason = f"The election exceeds the ${DEPENDENT_CARE_LIMIT} fictional demo limit."
    else:
        reason = None
    return {
        "accepted": reason is None,
        "reason": reason or "Election is within the fictional demo plan limit.",
        "annualLimit": DEPENDENT_CARE_LIMIT,
        "eligibleDependentNames": names,
    }


# -- the record ----------------------------------------------------------------------------


def js_iso(moment: datetime) -> str:
    """``Date.prototype.toISOString``: UTC, milliseconds, ``Z``."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def enrollment_id(application: Json) -> str:
    """``BEN-<planYear>-`` + the first 10 hex digits of SHA-256(JSON.stringify(application))."""
    digest = hashlib.sha256(js_stringify(application).encode("utf-8")).hexdigest()
    return f"BEN-{application['request']['planYear']}-{digest[:10].upper()}"


def create_enrollment(application: Json, now: datetime) -> Json:
    """``createEnrollment``: the record of a confirmed application."""
    request, ancillary = application["request"], application["ancillary"]
    pay_periods = application["eligibility"]["employee"]["payPeriods"]
    pending = list(ancillary["pendingRequirements"])
    total = round2(
        application["selectedMedicalPlan"]["premiumPerPayPeriod"]
        + ancillary["employeePremiumPerPayPeriod"]
        + application["healthAccount"]["employeeAnnualContribution"] / pay_periods
        + application["dependentCare"]["annualContribution"] / pay_periods
    )
    return {
        "enrollmentId": enrollment_id(application),
        "employeeId": request["employeeId"],
        "planYear": request["planYear"],
        "status": "submitted_with_pending_requirements" if pending else "submitted",
        "submittedAt": js_iso(now),
        "effectiveDate": f"{request['planYear']}-01-01",
        "medicalPlanId": application["selectedMedicalPlan"]["planId"],
        "coverageTier": application["household"]["coverageTier"],
        "totalPayrollDeductionPerPayPeriod": total,
        "pendingRequirements": pending,
        "rulesVersion": RULES_VERSION,
    }
