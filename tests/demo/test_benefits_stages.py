"""SPEC D5 (R1, R3, R5, V5): each EmployeeBenefitsFlow tool's refusals and texts, exactly.

A stage is reached with the offline model, then a scripted model makes the one call under test
(the call a real model might make, right or wrong); the tool result it reads, the reply and the
saved state are checked against research section 5.3. The parse-failure sentences reach the
model inside picoflow's invalid-arguments result (R1, R6); every other ``stay`` text is the
whole tool result (R3); ``direct`` texts are the reply (R5); the ``needsPresentation``
fallbacks replace the model's prose once (V5).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from demo.benefits.flow import EmployeeBenefitsFlow
from demo.benefits.offline import offline_provider, respond
from demo.benefits.present import DEPENDENT_CARE_TEXT, EOI_TEXT, dental_table, life_explanation
from demo.benefits.stage import terminal_prompt
from picoflow import FlowEngine
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

FLOW = "EmployeeBenefitsFlow"
TODAY = {"today": "2026-12-07"}
_INTAKE = [
    "E-1042, plan year 2027, qualifying life event: I got married on 2026-11-28",
    "just me, employee only",
    "preventive care only, no prescriptions, in-network only is fine, my priority is the lowest "
    "payroll cost",
    "I'll take HDHP_HSA",
    "HSA, $1000 a year",
    "basic dental, waive vision, 3x life, no short-term or long-term disability",
    "my sister Jo Rivera 100%",
    "waive it with $0",
]
STATES = {
    name: _INTAKE[:count]
    for name, count in [
        ("new", 0),
        ("household", 1),
        ("preferences", 2),
        ("plans", 3),
        ("account", 4),
        ("ancillary", 5),
        ("beneficiary", 6),
        ("dependent", 7),
        ("review", 8),
    ]
}
STEPS = {
    "new": "EligibilityStep",
    "household": "HouseholdStep",
    "preferences": "PreferencesStep",
    "plans": "MedicalPlanStep",
    "account": "HealthAccountStep",
    "ancillary": "AncillaryBenefitsStep",
    "beneficiary": "BeneficiaryStep",
    "dependent": "DependentCareStep",
    "review": "EnrollmentReviewStep",
}
_SNAPSHOTS: dict[str, dict[str, Any] | None] = {}
Override = Callable[[list[BaseMessage], list[str]], AIMessage | str | None]


async def staged(state: str) -> tuple[MemoryStore, str | None]:
    """A fresh store holding a copy of the session that reaches `state` (offline model)."""
    if state not in _SNAPSHOTS:
        store = MemoryStore()
        engine = FlowEngine(
            [EmployeeBenefitsFlow], store=store, providers={"offline": offline_provider}
        )
        session = None
        for line in STATES[state]:
            result = await engine.run(FLOW, line, session_id=session, config=TODAY)
            assert result.success and result.step != "EligibilityStep" or not line, result.message
            session = result.session_id
        _SNAPSHOTS[state] = (await store.load(session)) if session else None
    store, doc = MemoryStore(), copy.deepcopy(_SNAPSHOTS[state])
    if doc is None:
        return store, None
    await store.create({**doc, "revision": 0})
    return store, doc["id"]


def once(reply: AIMessage | str) -> Override:
    """The model's first answer to a human message is `reply`; then it plays offline."""

    def override(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str | None:
        return reply if isinstance(messages[-1], HumanMessage) else None

    return override


def engine_with(store: MemoryStore, override: Override) -> FlowEngine:
    def policy(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
        reply = override(messages, tools)
        return reply if reply is not None else respond(messages, tools)

    flow = EmployeeBenefitsFlow.using(ScriptedChatModel(policy=policy))
    return FlowEngine([flow], store=store)


async def call(state: str, override: Override, said: str = "go on") -> tuple[Any, dict[str, Any]]:
    store, session = await staged(state)
    engine = engine_with(store, override)
    result = await engine.run(FLOW, said, session_id=session, config=TODAY)
    assert result.success, result.message
    doc = await engine.get_session(result.session_id)
    assert doc is not None
    return result, doc


def last_tool_result(doc: dict[str, Any], namespace: str) -> str:
    messages = doc["memory"][namespace]["messages"]
    return next(m["data"]["content"] for m in reversed(messages) if m["type"] == "tool")


WATCHED = (
    "request",
    "decision",
    "household",
    "preferences",
    "selectedPlan",
    "election",
    "confirmedAt",
)


def commitments(doc: dict[str, Any] | None) -> dict[tuple[str, str], Any]:
    """What the session has committed: the watched values of every step."""
    steps = (doc or {}).get("steps", {})
    return {
        (name, key): value
        for name, entry in steps.items()
        for key, value in (entry.get("state") or {}).items()
        if key in WATCHED
    }


NAMESPACE = {
    "new": "benefits-intake",
    "household": "benefits-intake",
    "preferences": "benefits-intake",
    "plans": "benefits-medical",
    "account": "benefits-accounts",
    "ancillary": "benefits-ancillary",
    "beneficiary": "benefits-beneficiaries",
    "dependent": "benefits-dependent-care",
    "review": "benefits-review",
}
REQUEST = {
    "employeeId": "E-1042",
    "planYear": 2027,
    "eventType": "new_hire",
    "eventDate": "2026-12-01",
}
SHARE = {"name": "Jo Rivera", "relationship": "sister", "percentage": 90}
ANCILLARY = {
    "dentalPlan": "basic",
    "visionPlan": "waive",
    "supplementalLifeMultiple": 4,
    "shortTermDisability": False,
    "longTermDisability": False,
}


@pytest.mark.parametrize(
    ("state", "tool", "args", "text"),
    [
        (
            "new",
            "check_benefits_eligibility",
            {**REQUEST, "eventType": "open_enrollment"},
            "For open enrollment, eventDate must be null.",
        ),
        (
            "household",
            "capture_benefits_household",
            {
                "coverageTier": "employee_only",
                "dependents": [{"name": "Leo", "relationship": "child", "birthDate": "2018-06-15"}],
                "spouseHasOtherMedicalCoverage": None,
            },
            "Employee-only coverage cannot include dependents.",
        ),
        (
            "plans",
            "compare_benefits_medical_plans",
            {"planIds": ["EPO_VALUE", "GOLD"]},
            "Choose current plan IDs: EPO_VALUE, HDHP_HSA, PPO_STANDARD.",
        ),
        (
            "plans",
            "check_benefits_provider_network",
            {"planId": "GOLD", "providerName": "Dr. Chen"},
            "Choose a current plan ID: EPO_VALUE, HDHP_HSA, PPO_STANDARD.",
        ),
        (
            "plans",
            "select_benefits_medical_plan",
            {"planId": "GOLD"},
            "Choose one current plan ID: EPO_VALUE, HDHP_HSA, PPO_STANDARD.",
        ),
        (
            "account",
            "capture_benefits_health_account",
            {"accountType": "waive", "employeeAnnualContribution": 100},
            "A waived account must have a zero employee contribution.",
        ),
        (
            "account",
            "capture_benefits_health_account",
            {"accountType": "healthcare_fsa", "employeeAnnualContribution": 100},
            "This demo does not allow a general-purpose healthcare FSA with the HSA-eligible plan.",
        ),
        (
            "beneficiary",
            "capture_benefits_beneficiaries",
            {"beneficiaries": [SHARE]},
            "Beneficiary allocations total 90%; ask the employee either to adjust the current "
            "percentages or add beneficiaries so the complete allocation totals exactly 100%.",
        ),
        (
            "dependent",
            "capture_benefits_dependent_care",
            {"annualContribution": 100},
            "No covered dependent is under age 13 at the start of the plan year in this demo.",
        ),
        (
            "review",
            "change_benefits_health_contribution",
            {"employeeAnnualContribution": 4000},
            "Employee plus employer contributions total $4750, above the $4500 demo limit.",
        ),
        (
            "review",
            "explain_benefits_pending_requirement",
            {"code": " oops "},
            "Current pending requirements: EVIDENCE_OF_INSURABILITY.",
        ),
    ],
)
async def test_r3_each_refusal_is_picoflows_stay_text(
    state: str, tool: str, args: dict[str, Any], text: str
) -> None:
    result, doc = await call(state, once(tool_call(tool, **args)))
    assert last_tool_result(doc, NAMESPACE[state]) == text
    assert result.step == STEPS[state]
    assert commitments(doc) == commitments(_SNAPSHOTS[state])  # nothing saved on a refusal


@pytest.mark.parametrize(
    ("state", "tool", "args", "text"),
    [
        (
            "new",
            "check_benefits_eligibility",
            {**REQUEST, "employeeId": "1042"},
            "Collect employee ID in E-0000 format, plan year, event type, and a YYYY-MM-DD event "
            "date "
            "when applicable.",
        ),
        (
            "new",
            "check_benefits_eligibility",
            {**REQUEST, "eventDate": "2026-02-30"},
            "Collect employee ID in E-0000 format, plan year, event type, and a YYYY-MM-DD event "
            "date "
            "when applicable.",
        ),
        (
            "household",
            "capture_benefits_household",
            {"coverageTier": "couple"},
            "Collect a supported coverage tier, each covered dependent's name, relationship and "
            "birth "
            "date, plus spouse other-coverage status when applicable.",
        ),
        (
            "preferences",
            "capture_benefits_preferences",
            {
                "anticipatedUse": "high",
                "prescriptionUse": "none",
                "networkPreference": "in_network_only",
                "priorities": [],
            },
            "Collect anticipated use, prescription-use frequency, network preference, and at least "
            "one "
            "supported priority.",
        ),
        (
            "account",
            "capture_benefits_health_account",
            {"accountType": "hsa", "employeeAnnualContribution": 1000.5},
            "Collect an account type and whole-dollar annual employee contribution, or waive with "
            "zero "
            "contribution.",
        ),
        (
            "ancillary",
            "capture_benefits_ancillary",
            ANCILLARY,
            "Collect supported dental, vision, supplemental-life, short-term disability, and "
            "long-term "
            "disability elections.",
        ),
        (
            "beneficiary",
            "capture_benefits_beneficiaries",
            {"beneficiaries": [{**SHARE, "percentage": 0}]},
            "Collect at least one beneficiary with name, relationship, and a whole-number "
            "percentage.",
        ),
        (
            "dependent",
            "capture_benefits_dependent_care",
            {"annualContribution": 10001},
            "Collect a whole-dollar annual dependent-care contribution from $0 through the "
            "supported "
            "limit.",
        ),
        (
            "review",
            "submit_benefits_enrollment",
            {"confirmed": False},
            "Ask the employee to confirm submission or end without submitting.",
        ),
    ],
)
async def test_r1_a_schema_failure_carries_picoflows_guidance(
    state: str, tool: str, args: dict[str, Any], text: str
) -> None:
    result, doc = await call(state, once(tool_call(tool, **args)))
    found = last_tool_result(doc, NAMESPACE[state])
    assert found.startswith(f"Error: invalid arguments for tool '{tool}':"), found
    assert f"\n  {text} [type=benefits_arguments" in found
    assert result.step == STEPS[state]
    assert commitments(doc) == commitments(_SNAPSHOTS[state])


@pytest.mark.parametrize(
    ("state", "tool", "args", "reply"),
    [
        ("ancillary", "compare_benefits_dental_options", {}, dental_table("employee_only")),
        ("ancillary", "explain_benefits_life_option", {"multiple": 3}, life_explanation(78000, 3)),
        ("dependent", "explain_benefits_dependent_care", {}, DEPENDENT_CARE_TEXT),
        (
            "review",
            "explain_benefits_pending_requirement",
            {"code": " evidence_of_insurability "},
            EOI_TEXT,
        ),
        (
            "plans",
            "check_benefits_provider_network",
            {"planId": "hdhp_hsa", "providerName": " Dr Chen "},
            "Dr Chen is in network for HSA Advantage HDHP in the fictional demo directory. Recheck "
            "before receiving care.",
        ),
    ],
)
async def test_r5_a_direct_text_is_the_reply(
    state: str, tool: str, args: dict[str, Any], reply: str
) -> None:
    result, _ = await call(state, once(tool_call(tool, **args)))
    assert (result.message, result.step) == (reply, STEPS[state])


async def test_d5_a_plan_id_is_trimmed_and_upper_cased_before_it_is_selected() -> None:
    result, doc = await call(
        "plans", once(tool_call("select_benefits_medical_plan", planId=" ppo_standard "))
    )
    assert result.step == "HealthAccountStep"
    assert doc["steps"]["MedicalPlanStep"]["state"]["selectedPlan"]["planId"] == "PPO_STANDARD"


async def test_d5_a_corrected_contribution_is_saved_on_the_account_step_and_re_rendered() -> None:
    result, doc = await call(
        "review",
        once(tool_call("change_benefits_health_contribution", employeeAnnualContribution=2000)),
    )
    assert "- Health account: HSA, employee $2,000.00 + employer $750.00 annually" in result.message
    state = doc["steps"]["HealthAccountStep"]["state"]
    assert state["election"] == {"accountType": "hsa", "employeeAnnualContribution": 2000}
    assert state["result"]["combinedContribution"] == 2750


PROSE = "Here is what you asked for."


@pytest.mark.parametrize(
    ("state", "said", "starts", "flags"),
    [
        ("preferences", _INTAKE[2], "### 2027 medical plans — employee only", ("MedicalPlanStep",)),
        (
            "ancillary",
            _INTAKE[5],
            "Your ancillary elections have been recorded. Your 3× supplemental-life "
            "election requires evidence of insurability",
            ("BeneficiaryStep",),
        ),
        ("beneficiary", _INTAKE[6], DEPENDENT_CARE_TEXT, ("DependentCareStep",)),
        (
            "dependent",
            _INTAKE[7],
            "### Benefits enrollment review for Alex Rivera",
            ("EnrollmentReviewStep",),
        ),
    ],
)
async def test_v5_entering_a_stage_shows_codes_text_in_place_of_the_models_prose(
    state: str, said: str, starts: str, flags: tuple[str, ...]
) -> None:
    def prose_on_entry(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str | None:
        opener = messages[-1]
        navigation = isinstance(opener, HumanMessage) and opener.additional_kwargs.get("origin")
        return PROSE if navigation else None

    store, session = await staged(state)
    engine = engine_with(store, prose_on_entry)
    entered = await engine.run(FLOW, said, session_id=session)
    assert entered.message.startswith(starts), entered.message
    doc = await engine.get_session(entered.session_id)
    assert doc is not None
    for step in flags:
        assert {"needsPresentation", "pendingRequirements"}.isdisjoint(doc["steps"][step]["state"])
    later = await FlowEngine(
        [EmployeeBenefitsFlow.using(ScriptedChatModel(script=[PROSE]))], store=store
    ).run(FLOW, "thanks", session_id=entered.session_id)
    assert later.message == PROSE  # the flag is gone: the model's own text stands now


async def test_d5_without_a_life_election_dependent_care_shows_the_models_own_text() -> None:
    def prose(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str | None:
        return PROSE if "explain_benefits_dependent_care" in tools else None

    store, session = await staged("ancillary")
    engine = engine_with(store, prose)
    result = await engine.run(
        FLOW, "basic dental, waive vision, no life, no disability", session_id=session
    )
    assert (result.step, result.message) == ("DependentCareStep", PROSE)


@pytest.mark.parametrize(
    ("state", "tool", "closing"),
    [
        ("new", "end_benefits_enrollment", "Confirm that no benefits elections were submitted."),
        (
            "household",
            "end_household_enrollment",
            "Confirm that no household elections were submitted.",
        ),
        (
            "preferences",
            "end_preferences_enrollment",
            "Confirm that no benefits elections were submitted.",
        ),
        (
            "plans",
            "end_medical_plan_enrollment",
            "Confirm that no benefits elections were submitted.",
        ),
        (
            "account",
            "end_health_account_enrollment",
            "Confirm that no benefits elections were submitted.",
        ),
        (
            "ancillary",
            "end_ancillary_enrollment",
            "Confirm that no benefits elections were submitted.",
        ),
        (
            "beneficiary",
            "end_beneficiary_enrollment",
            "Confirm that no benefits elections were submitted.",
        ),
        (
            "dependent",
            "end_dependent_care_enrollment",
            "Confirm that no benefits elections were submitted.",
        ),
        (
            "review",
            "end_reviewed_benefits_enrollment",
            "Confirm that the reviewed elections were not submitted.",
        ),
    ],
)
async def test_d5_every_end_tool_closes_with_the_benefits_terminal_prompt(
    state: str, tool: str, closing: str
) -> None:
    result, doc = await call(state, once(tool_call(tool)), said="I want to stop")
    assert (result.step, result.completed) == ("TerminateSessionStep", True)
    assert doc["steps"]["TerminateSessionStep"]["state"]["_prompt"] == terminal_prompt(closing)
    assert (
        "CommitEnrollmentStep" not in doc["steps"]
        or not doc["steps"]["CommitEnrollmentStep"]["state"]
    )


def test_d5_the_terminal_prompt_is_picoflows() -> None:
    assert terminal_prompt() == (
        "Confirm that no benefits elections were submitted. State that this is a fictional "
        "benefits "
        "demonstration, official plan documents control, and pending coverage is not active until "
        "approved. Do not request payment, government identifiers, health diagnoses, or unrelated "
        "personal information."
    )
