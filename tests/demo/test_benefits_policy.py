"""SPEC D5: EmployeeBenefitsFlow's BenefitsPolicy, presenter and JS value habits, exactly.

Research section 5.2 (the policy), 5.4 (the presenter) and section 7's traps (JS rounding,
en-US money, byte-exact ``JSON.stringify`` under the SHA-256 id, UTC date arithmetic), checked
as pure functions; test_benefits_flow.py checks them through the engine.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from demo.benefits import policy
from demo.benefits.jsvalues import js_number, js_stringify, money, round2, to_fixed2
from demo.benefits.present import (
    DEPENDENT_CARE_TEXT,
    beneficiary_opening,
    comparison_table,
    dental_table,
    life_explanation,
    plan_table,
)

NOW = datetime(2026, 12, 7, 15, 30, tzinfo=UTC)
ALEX = policy.EMPLOYEES["E-1042"]


def request(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "employeeId": "E-1042",
        "planYear": 2027,
        "eventType": "new_hire",
        "eventDate": "2026-12-01",
    }
    return {**base, **changes}


def test_d5_tables_and_limits_are_picoflows() -> None:
    assert policy.RULES_VERSION == "benefits-demo-2027.1"
    assert policy.OPEN_ENROLLMENT == ("2026-11-01", "2026-11-20")
    assert (policy.hsa_limit("employee_only"), policy.hsa_limit("family")) == (4500, 9000)
    assert (policy.HEALTHCARE_FSA_LIMIT, policy.DEPENDENT_CARE_LIMIT) == (3300, 5000)
    assert list(policy.EMPLOYEES) == ["E-1042", "E-2040"]
    assert policy.EMPLOYEES["E-2040"] == {
        "employeeId": "E-2040",
        "name": "Taylor Morgan",
        "state": "CA",
        "employmentStatus": "active",
        "weeklyHours": 20,
        "hireDate": "2025-02-01",
        "annualSalary": 42000,
        "payPeriods": 24,
    }
    assert policy.PLAN_IDS == ["EPO_VALUE", "HDHP_HSA", "PPO_STANDARD"]
    premiums = {plan["planId"]: list(plan["premiums"].values()) for plan in policy.PLANS}
    assert premiums == {
        "EPO_VALUE": [45, 105, 95, 155],
        "HDHP_HSA": [35, 85, 75, 125],
        "PPO_STANDARD": [80, 160, 145, 220],
    }
    hdhp = policy.plan_by_id("HDHP_HSA")
    assert hdhp is not None
    assert (policy.employer_hsa(hdhp, "employee_only"), policy.employer_hsa(hdhp, "family")) == (
        750,
        1500,
    )


@pytest.mark.parametrize(
    ("changes", "codes", "deadline"),
    [
        ({}, [], "2026-12-31"),
        ({"eventDate": "2026-12-07"}, [], "2027-01-06"),  # 0 whole days
        ({"eventDate": "2026-11-07"}, [], "2026-12-07"),  # 30 whole days
        ({"eventDate": "2026-11-06"}, ["EVENT_WINDOW_CLOSED"], "2026-12-06"),  # 31
        ({"eventDate": "2026-12-08"}, ["EVENT_WINDOW_CLOSED"], "2027-01-07"),  # the future
        ({"eventDate": None}, ["EVENT_DATE_REQUIRED"], None),
        (
            {"eventType": "open_enrollment", "eventDate": None},
            ["OPEN_ENROLLMENT_CLOSED"],
            "2026-11-20",
        ),
        ({"employeeId": "E-2040"}, ["MINIMUM_HOURS_NOT_MET"], "2026-12-31"),
        ({"employeeId": "E-0001"}, ["EMPLOYEE_NOT_FOUND"], "2026-12-31"),
        (
            {"employeeId": "E-2040", "planYear": 2028, "eventDate": None},
            ["MINIMUM_HOURS_NOT_MET", "UNSUPPORTED_PLAN_YEAR", "EVENT_DATE_REQUIRED"],
            None,
        ),
    ],
)
def test_d5_eligibility_reason_codes_in_order(
    changes: dict[str, object], codes: list[str], deadline: str | None
) -> None:
    decision = policy.evaluate_eligibility(request(**changes), NOW)
    assert (decision["eligible"], decision["reasonCodes"]) == (not codes, codes)
    assert decision["enrollmentDeadline"] == deadline
    assert list(decision) == [
        "eligible",
        "reasonCodes",
        "enrollmentDeadline",
        "employee",
        "rulesVersion",
    ]
    assert decision["rulesVersion"] == "benefits-demo-2027.1"


def test_d5_open_enrollment_is_open_inside_its_window_and_inactive_staff_are_refused() -> None:
    inside = datetime(2026, 11, 20, 23, 59, tzinfo=UTC)
    decision = policy.evaluate_eligibility(
        request(eventType="open_enrollment", eventDate=None), inside
    )
    assert decision["eligible"] and decision["employee"]["name"] == "Alex Rivera"
    policy.EMPLOYEES["E-3000"] = {**ALEX, "employeeId": "E-3000", "employmentStatus": "leave"}
    try:
        assert policy.evaluate_eligibility(request(employeeId="E-3000"), NOW)["reasonCodes"] == [
            "EMPLOYMENT_NOT_ACTIVE"
        ]
    finally:
        del policy.EMPLOYEES["E-3000"]


def person(name: str, relationship: str, birth: str) -> dict[str, str]:
    return {"name": name, "relationship": relationship, "birthDate": birth}


SAM, LEO = person("Sam", "spouse", "1990-04-02"), person("Leo", "child", "2018-06-15")


@pytest.mark.parametrize(
    ("tier", "people", "other", "message"),
    [
        (
            "family",
            [SAM, person("Jo", "domestic_partner", "1991-01-01"), LEO],
            False,
            "Only one covered spouse or domestic partner is supported in this demo.",
        ),
        ("employee_only", [LEO], None, "Employee-only coverage cannot include dependents."),
        (
            "employee_spouse",
            [SAM, LEO],
            False,
            "Employee-plus-spouse coverage requires exactly one spouse or domestic partner and no "
            "children.",
        ),
        (
            "employee_children",
            [SAM],
            False,
            "Employee-plus-children coverage requires at least one child and no spouse or partner.",
        ),
        (
            "family",
            [LEO],
            None,
            "Family coverage requires one spouse or partner and at least one child.",
        ),
        (
            "employee_spouse",
            [SAM],
            None,
            "Ask whether the covered spouse or partner has access to other medical coverage.",
        ),
        (
            "employee_children",
            [LEO],
            True,
            "Spouse other-coverage status must be null when no spouse or partner is covered.",
        ),
        (
            "employee_children",
            [person("Max", "child", "2027-01-01")],
            None,
            "Max's birth date must be before the plan year.",
        ),
        (
            "employee_children",
            [person("Max", "child", "2026-02-30")],
            None,
            "Max's birth date must be before the plan year.",
        ),
        (
            "employee_children",
            [person("Ana", "child", "2001-01-01")],
            None,
            "Ana is outside this demo's standard dependent-child age rule.",
        ),
        ("employee_children", [person("Ana", "child", "2001-01-02")], None, None),  # 25 then
        ("family", [SAM, LEO], True, None),
    ],
)
def test_d5_household_rules_first_failure(
    tier: str, people: list[dict[str, str]], other: bool | None, message: str | None
) -> None:
    household = {"coverageTier": tier, "dependents": people, "spouseHasOtherMedicalCoverage": other}
    assert policy.validate_household(household, 2027) == message


def prefs(use: str = "moderate", rx: str = "none", net: str = "in_network_only", *p: str) -> dict:
    return {
        "anticipatedUse": use,
        "prescriptionUse": rx,
        "networkPreference": net,
        "priorities": list(p),
    }


@pytest.mark.parametrize(
    ("preferences", "plan_id", "reasons"),
    [
        (
            prefs("moderate", "none", "in_network_only", "lowest_payroll_cost"),
            "EPO_VALUE",
            [policy.REASON_DEFAULT],
        ),
        (
            prefs("moderate", "none", "in_network_only", "hsa_savings"),
            "HDHP_HSA",
            [policy.REASON_HSA],
        ),
        (
            prefs("high", "none", "in_network_only", "hsa_savings"),
            "PPO_STANDARD",
            [policy.REASON_HSA, policy.REASON_DEDUCTIBLE],
        ),
        (
            prefs("moderate", "none", "out_of_network_flexibility", "lowest_payroll_cost"),
            "PPO_STANDARD",
            [policy.REASON_NETWORK],
        ),
        (
            prefs("moderate", "none", "out_of_network_flexibility", "hsa_savings"),
            "HDHP_HSA",
            [policy.REASON_HSA],
        ),
        (
            prefs("moderate", "regular", "in_network_only", "lowest_payroll_cost"),
            "EPO_VALUE",
            [policy.REASON_PRESCRIPTIONS],
        ),
    ],
)
def test_d5_recommendation_rules_in_order(
    preferences: dict, plan_id: str, reasons: list[str]
) -> None:
    assert policy.recommend(preferences) == (plan_id, reasons)


@pytest.mark.parametrize(
    ("plan_id", "tier", "kind", "amount", "accepted", "reason", "limit", "employer"),
    [
        (
            "HDHP_HSA",
            "employee_only",
            "hsa",
            3750,
            True,
            "Election is within the fictional demo plan limits.",
            4500,
            750,
        ),
        (
            "HDHP_HSA",
            "employee_only",
            "hsa",
            3751,
            False,
            "Employee plus employer contributions total $4501, above the $4500 demo limit.",
            4500,
            750,
        ),
        (
            "HDHP_HSA",
            "family",
            "hsa",
            7500,
            True,
            "Election is within the fictional demo plan limits.",
            9000,
            1500,
        ),
        (
            "PPO_STANDARD",
            "family",
            "hsa",
            100,
            False,
            "An HSA election requires the HSA-eligible HDHP.",
            9000,
            0,
        ),
        (
            "HDHP_HSA",
            "family",
            "healthcare_fsa",
            100,
            False,
            "This demo does not allow a general-purpose healthcare FSA with the HSA-eligible plan.",
            3300,
            0,
        ),
        (
            "EPO_VALUE",
            "family",
            "healthcare_fsa",
            3301,
            False,
            "Employee plus employer contributions total $3301, above the $3300 demo limit.",
            3300,
            0,
        ),
        (
            "EPO_VALUE",
            "family",
            "waive",
            5,
            False,
            "A waived account must have a zero employee contribution.",
            0,
            0,
        ),
        (
            "EPO_VALUE",
            "family",
            "waive",
            0,
            True,
            "Election is within the fictional demo plan limits.",
            0,
            0,
        ),
    ],
)
def test_d5_health_account_limits_and_messages(
    plan_id: str,
    tier: str,
    kind: str,
    amount: int,
    accepted: bool,
    reason: str,
    limit: int,
    employer: int,
) -> None:
    plan = policy.plan_option(policy.plan_by_id(plan_id) or {}, tier, 24)
    result = policy.evaluate_health_account(
        plan, tier, {"accountType": kind, "employeeAnnualContribution": amount}
    )
    assert result == {
        "accepted": accepted,
        "reason": reason,
        "annualLimit": limit,
        "employerContribution": employer,
        "employeeContribution": amount,
        "combinedContribution": amount + employer,
    }


def test_d5_ancillary_quote_prices_life_cost_and_eoi() -> None:
    election = {
        "dentalPlan": "premium",
        "visionPlan": "standard",
        "supplementalLifeMultiple": 3,
        "shortTermDisability": True,
        "longTermDisability": True,
    }
    family = policy.quote_ancillary(election, "family", 78000)
    assert family == {
        **election,
        "employeePremiumPerPayPeriod": 86.86,  # 48 + 12 + round2(234000 / 1000 * 0.04) + 7.5 + 10
        "supplementalLifeCoverage": 234000,
        "pendingRequirements": ["EVIDENCE_OF_INSURABILITY"],
    }
    alone = {
        **election,
        "dentalPlan": "basic",
        "supplementalLifeMultiple": 1,
        "longTermDisability": False,
    }
    quote = policy.quote_ancillary(alone, "employee_only", 42000)
    assert (quote["employeePremiumPerPayPeriod"], quote["pendingRequirements"]) == (26.18, [])
    waived = {
        **alone,
        "dentalPlan": "waive",
        "visionPlan": "waive",
        "supplementalLifeMultiple": 0,
        "shortTermDisability": False,
    }
    assert policy.quote_ancillary(waived, "family", 78000)["employeePremiumPerPayPeriod"] == 0


@pytest.mark.parametrize(
    ("people", "amount", "accepted", "reason", "names"),
    [
        (
            [SAM],
            1,
            False,
            "No covered dependent is under age 13 at the start of the plan year in this demo.",
            [],
        ),
        ([SAM], 0, True, "Election is within the fictional demo plan limit.", []),
        (
            [LEO, person("Kai", "child", "2014-01-02")],
            5001,
            False,
            "The election exceeds the $5000 fictional demo limit.",
            ["Leo", "Kai"],
        ),
        (
            [person("Kai", "child", "2013-12-31")],
            10,
            False,
            "No covered dependent is under age 13 at the start of the plan year in this demo.",
            [],
        ),
    ],
)
def test_d5_dependent_care_children_under_13(
    people: list[dict[str, str]], amount: int, accepted: bool, reason: str, names: list[str]
) -> None:
    household = {"coverageTier": "family", "dependents": people}
    result = policy.evaluate_dependent_care(household, 2027, {"annualContribution": amount})
    assert result == {
        "accepted": accepted,
        "reason": reason,
        "annualLimit": 5000,
        "eligibleDependentNames": names,
    }


def test_d5_provider_directory_normalises_names_and_keeps_them_as_typed() -> None:
    ppo, epo = policy.plan_by_id("PPO_STANDARD") or {}, policy.plan_by_id("EPO_VALUE") or {}
    assert policy.provider_network(ppo, "Dr.  Maya   Chen!") == {
        "inNetwork": True,
        "message": "Dr.  Maya   Chen! is in network for Standard PPO in the fictional demo "
        "directory. Recheck before receiving care.",
    }
    assert policy.provider_network(epo, "dr chen")["inNetwork"] is False
    assert policy.provider_network(epo, "Maya Chen") == {
        "inNetwork": None,
        "message": "Maya Chen is not in the fictional demo directory. Verify network status with "
        "the carrier before enrolling.",
    }


def test_d5_js_rounding_number_format_and_money() -> None:
    assert (round2(1.005), round2(2.675), round2(9.36), round2(0.125)) == (1.01, 2.68, 9.36, 0.13)
    assert (js_number(10.0), js_number(7.5), js_number(3), js_number(0.1 + 0.2)) == (
        "10",
        "7.5",
        "3",
        "0.30000000000000004",
    )
    assert (money(1080), money(0), money(234000), money(76.855)) == (
        "$1,080.00",
        "$0.00",
        "$234,000.00",
        "$76.86",
    )
    assert (to_fixed2(88.666666), to_fixed2(1234.5)) == ("88.67", "1234.50")
    assert js_stringify({"a": 10.0, "b": [True, None, "é\n"], "c": {"d": 7.5}}) == (
        '{"a":10,"b":[true,null,"é\\n"],"c":{"d":7.5}}'
    )


def test_d5_enrollment_record_id_total_and_status() -> None:
    application = {
        "request": request(),
        "eligibility": policy.evaluate_eligibility(request(), NOW),
        "selectedMedicalPlan": {"planId": "HDHP_HSA", "premiumPerPayPeriod": 35},
        "household": {"coverageTier": "employee_only", "dependents": []},
        "healthAccount": {"accountType": "hsa", "employeeAnnualContribution": 1000},
        "ancillary": {"employeePremiumPerPayPeriod": 12, "pendingRequirements": []},
        "dependentCare": {"annualContribution": 100},
    }
    record = policy.create_enrollment(application, NOW)
    digest = hashlib.sha256(js_stringify(application).encode()).hexdigest()[:10].upper()
    assert record == {
        "enrollmentId": f"BEN-2027-{digest}",
        "employeeId": "E-1042",
        "planYear": 2027,
        "status": "submitted",
        "submittedAt": "2026-12-07T15:30:00.000Z",
        "effectiveDate": "2027-01-01",
        "medicalPlanId": "HDHP_HSA",
        "coverageTier": "employee_only",
        "totalPayrollDeductionPerPayPeriod": 92.83,  # 35 + 12 + 1000 / 24 + 100 / 24
        "pendingRequirements": [],
        "rulesVersion": "benefits-demo-2027.1",
    }
    application["ancillary"] = {
        "employeePremiumPerPayPeriod": 12,
        "pendingRequirements": ["EVIDENCE_OF_INSURABILITY"],
    }
    assert (
        policy.create_enrollment(application, NOW)["status"]
        == "submitted_with_pending_requirements"
    )


def evaluation(tier: str = "employee_only") -> dict:
    preferences = prefs("moderate", "regular", "in_network_only", "hsa_savings")
    household = {"coverageTier": tier, "dependents": []}
    return policy.evaluate_plans(request(), ALEX, household, preferences)


def test_d5_presenter_plan_table_and_comparison_exactly() -> None:
    assert plan_table(evaluation()).splitlines() == [
        "### 2027 medical plans — employee only",
        "",
        "| ID | Plan | Per paycheck | Annual payroll | Family deductible | Family out-of-pocket "
        "max | HSA / employer funding | Out-of-network |",
        "|---|---|---:|---:|---:|---:|---|---|",
        "| EPO_VALUE | Value EPO | $45.00 | $1,080.00 | $2,500.00 | $9,000.00 | No | No |",
        "| HDHP_HSA | HSA Advantage HDHP | $35.00 | $840.00 | $5,000.00 | $10,000.00 | Yes / "
        "$750.00 | Yes |",
        "| PPO_STANDARD | Standard PPO | $80.00 | $1,920.00 | $3,000.00 | $8,000.00 | No | Yes |",
        "",
        "**Rule-based fit:** HDHP_HSA",
        f"- {policy.REASON_HSA}",
        f"- {policy.REASON_PRESCRIPTIONS}",
        "",
        "Fictional demo terms under rules benefits-demo-2027.1; this is decision support, not "
        "financial, tax, or medical advice. Verify the official plan documents and provider "
        "directory.",
    ]
    options = evaluation("family")["options"]
    assert comparison_table([options[2], options[0]]).splitlines() == [
        "### Medical plan comparison",
        "",
        "| Plan | Per paycheck | Annual payroll | Family deductible | Family OOP max | "
        "Prescription terms | HSA / employer funding | Out-of-network |",
        "|---|---:|---:|---:|---:|---|---|---|",
        "| Standard PPO (PPO_STANDARD) | $220.00 | $5,280.00 | $3,000.00 | $8,000.00 | $10 / $40 / "
        "$80 | No | Yes |",
        "| Value EPO (EPO_VALUE) | $155.00 | $3,720.00 | $2,500.00 | $9,000.00 | $15 / $45 / $90 "
        "after applicable rules | No | No |",
        "",
        "These are fictional demo terms. Verify official plan documents before enrolling.",
    ]


def test_d5_presenter_dental_life_dependent_care_and_beneficiary_texts() -> None:
    assert dental_table("employee_spouse").splitlines()[4:7] == [
        "| Basic | $28.00 | $1,500.00 | Not included |",
        "| Premium | $48.00 | $2,500.00 | 50% up to a $2,000.00 lifetime maximum |",
        "| Waive | $0.00 | — | — |",
    ]
    assert "| Basic | $12.00 |" in dental_table("employee_only")
    assert life_explanation(78000, 3) == (
        "Supplemental life at 3× salary provides $234,000.00 of fictional demo coverage for $9.36 "
        "per paycheck. This amount requires evidence of insurability. The election can be "
        "submitted, but coverage above the guaranteed amount remains pending until approved. No "
        "health details are collected in this chat."
    )
    assert life_explanation(42000, 1) == (
        "Supplemental life at 1× salary provides $42,000.00 of fictional demo coverage for $1.68 "
        "per paycheck. This amount does not require evidence of insurability under the fictional "
        "demo rules. No health details are collected in this chat."
    )
    assert DEPENDENT_CARE_TEXT.startswith("The dependent-care FSA can reimburse eligible")
    assert DEPENDENT_CARE_TEXT.endswith("waive this benefit with $0?")
    assert beneficiary_opening([]) == (
        "Your ancillary elections have been recorded. Next, provide the name, relationship, and "
        "percentage allocation for each supplemental-life beneficiary. The total allocation must "
        "equal exactly 100%."
    )
    assert beneficiary_opening(["EVIDENCE_OF_INSURABILITY"]).startswith(
        "Your ancillary elections have been recorded. Your 3× supplemental-life election requires "
        "evidence of insurability and remains pending until approved. Next,"
    )
