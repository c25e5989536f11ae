"""SPEC D5: EmployeeBenefitsFlow (demo/benefits) against research section 5, through the engine.

Registration, namespaces, kinds and per-step models (section 5's table), each stage's tools
and their schemas (5.1, 5.3), a complete enrollment and its final session (5.3, 5.4, "Final
session"), the date override and its invalid-value message, idle expiry (V10), the intake
summary (M3) and the guess invariant on the offline model. test_benefits_stages.py drives each
tool's refusals; test_benefits_policy.py the rules themselves.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from demo.benefits.flow import (
    OFFLINE_COMPLEX_MODEL,
    OFFLINE_MODEL,
    PICOFLOW_COMPLEX_MODEL,
    PICOFLOW_MODEL,
    EmployeeBenefitsFlow,
)
from demo.benefits.offline import offline_provider, respond
from demo.benefits.review import read_enrollment_application, record_prompt
from demo.benefits.stage import INVALID_DATE, current_time, terminal_prompt
from picoflow import EndStep, FlowEngine, LogicStep, ModelSpec
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel

FLOW = "EmployeeBenefitsFlow"
TODAY = {"today": "2026-12-07"}
FAMILY = [
    "E-1042, plan year 2027, new hire, I started on 2026-12-01",
    "family: my wife Sam Rivera born 1990-04-02, she has no other coverage, and our kids Leo "
    "2018-06-15 and Mia 2021-09-30",
    "moderate use, occasional prescriptions, out of network flexibility, my priorities are hsa "
    "savings and lowest payroll cost",
    "ok, I'll take the HDHP",
    "the max",
    "premium dental, standard vision, 3x life, short-term yes, long-term no",
    "Sam Rivera, wife, 60%, Leo Rivera, son, 40%",
    "3000 a year",
    "yes, submit it",
]


class Recorder:
    """A provider whose models answer with the offline policy and record what they were sent."""

    def __init__(self) -> None:
        self.models: list[tuple[ModelSpec, ScriptedChatModel]] = []

    def __call__(self, spec: ModelSpec) -> ScriptedChatModel:
        model = ScriptedChatModel(policy=respond)
        self.models.append((spec, model))
        return model

    def tools_by_step(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for _, model in self.models:
            for request in model.requests:
                step = (request.messages[0].id or "").split("|")[0]
                if not step:
                    continue  # a summary call: its messages carry no step's id
                schemas = {
                    t["function"]["name"]: t["function"]["parameters"] for t in request.tools
                }
                found.setdefault(step, {}).update(schemas)
        return found


async def talk(
    engine: FlowEngine, lines: list[str], config: dict[str, Any] | None = None
) -> tuple[list[Any], dict[str, Any]]:
    results, session = [], None
    for line in lines:
        result = await engine.run(FLOW, line, session_id=session, config=config or TODAY)
        assert result.success, result.message
        results.append(result)
        session = result.session_id
    doc = await engine.get_session(session)
    assert doc is not None
    return results, doc


def offline_engine(providers: Any = None) -> FlowEngine:
    return FlowEngine(
        [EmployeeBenefitsFlow],
        store=MemoryStore(),
        providers={"offline": providers or offline_provider},
    )


def human_texts(doc: dict[str, Any], namespace: str) -> list[str]:
    messages = doc["memory"][namespace]["messages"]
    return [m["data"]["content"] for m in messages if m["type"] == "human"]


def test_d5_registration_order_kinds_namespaces_and_initial_step() -> None:
    flow = EmployeeBenefitsFlow()
    assert [(name, step.namespace) for name, step in flow.steps.items()] == [
        ("EligibilityStep", "benefits-intake"),
        ("HouseholdStep", "benefits-intake"),
        ("PreferencesStep", "benefits-intake"),
        ("PlanEvaluationStep", "PlanEvaluationStep"),
        ("MedicalPlanStep", "benefits-medical"),
        ("HealthAccountStep", "benefits-accounts"),
        ("AncillaryBenefitsStep", "benefits-ancillary"),
        ("BeneficiaryStep", "benefits-beneficiaries"),
        ("DependentCareStep", "benefits-dependent-care"),
        ("EnrollmentReviewStep", "benefits-review"),
        ("CommitEnrollmentStep", "CommitEnrollmentStep"),
        ("IneligibleBenefitsStep", "benefits-ineligible"),
        ("TerminateSessionStep", "benefits-terminal"),
    ]
    assert flow.initial_step() is None  # the first registered: EligibilityStep
    logic = [name for name, step in flow.steps.items() if isinstance(step, LogicStep)]
    assert logic == ["PlanEvaluationStep", "CommitEnrollmentStep"]
    assert isinstance(flow.steps["TerminateSessionStep"], EndStep)


def test_d5_models_call_policy_and_summary_are_picoflows() -> None:
    assert PICOFLOW_MODEL == ModelSpec("openai", "gpt-4o", retry_attempts=3, timeout=120.0)
    assert PICOFLOW_COMPLEX_MODEL == ModelSpec(
        "openai", "gpt-5.1", {"reasoning": {"effort": "low"}}, timeout=120.0
    )
    assert OFFLINE_MODEL == ModelSpec("offline", "benefits", timeout=120.0)
    assert OFFLINE_COMPLEX_MODEL.params == {"reasoning": {"effort": "low"}}
    memory = EmployeeBenefitsFlow().get_memory()
    assert memory.enabled_namespaces == ["benefits-intake"]
    assert (memory.summary_config.min_messages, memory.summary_config.recent_messages) == (14, 8)
    assert memory.summary_model == OFFLINE_MODEL
    real = EmployeeBenefitsFlow.using(PICOFLOW_MODEL, complex=PICOFLOW_COMPLEX_MODEL)
    assert real.name == FLOW
    assert (real().config_model(), real().complex()) == (PICOFLOW_MODEL, PICOFLOW_COMPLEX_MODEL)
    with pytest.raises(ValueError, match="'offline:benefits' and 'offline:benefits-complex'"):
        offline_provider(ModelSpec("offline", "medical"))


TOOLS = {
    "EligibilityStep": ["check_benefits_eligibility", "end_benefits_enrollment"],
    "HouseholdStep": ["capture_benefits_household", "end_household_enrollment"],
    "PreferencesStep": ["capture_benefits_preferences", "end_preferences_enrollment"],
    "MedicalPlanStep": [
        "check_benefits_provider_network",
        "compare_benefits_medical_plans",
        "end_medical_plan_enrollment",
        "select_benefits_medical_plan",
        "show_benefits_medical_plans",
    ],
    "HealthAccountStep": ["capture_benefits_health_account", "end_health_account_enrollment"],
    "AncillaryBenefitsStep": [
        "capture_benefits_ancillary",
        "compare_benefits_dental_options",
        "end_ancillary_enrollment",
        "explain_benefits_life_option",
    ],
    "BeneficiaryStep": ["capture_benefits_beneficiaries", "end_beneficiary_enrollment"],
    "DependentCareStep": [
        "capture_benefits_dependent_care",
        "end_dependent_care_enrollment",
        "explain_benefits_dependent_care",
    ],
    "EnrollmentReviewStep": [
        "change_benefits_health_contribution",
        "end_reviewed_benefits_enrollment",
        "explain_benefits_pending_requirement",
        "show_benefits_enrollment_review",
        "submit_benefits_enrollment",
    ],
    "TerminateSessionStep": [],
}
"""Research section 5.3's tools, stage by stage (the ineligible exit's is checked apart)."""


async def test_d5_each_stage_offers_picoflows_tools_and_the_complex_model() -> None:
    recorder = Recorder()
    _, doc = await talk(offline_engine(recorder), FAMILY)
    bound = recorder.tools_by_step()
    assert {step: sorted(found) for step, found in bound.items()} == TOOLS
    request = bound["EligibilityStep"]["check_benefits_eligibility"]
    assert request["required"] == ["employeeId", "planYear", "eventType"]
    assert request["properties"]["employeeId"]["pattern"] == "^E-\\d{4}$"
    assert request["properties"]["eventType"]["enum"] == [
        "open_enrollment",
        "new_hire",
        "qualifying_life_event",
    ]
    efforts = {
        (spec.name, spec.params.get("reasoning", {}).get("effort")) for spec, _ in recorder.models
    }
    assert efforts == {("benefits", None), ("benefits-complex", "low")}
    complex_steps = [name for name, entry in doc["steps"].items() if entry.get("model")]
    assert complex_steps == [
        "MedicalPlanStep",
        "HealthAccountStep",
        "AncillaryBenefitsStep",
        "BeneficiaryStep",
        "DependentCareStep",
        "EnrollmentReviewStep",
    ]
    assert doc["steps"]["MedicalPlanStep"]["model"]["name"] == "benefits-complex"


async def test_d5_the_ineligible_exit_offers_its_one_tool() -> None:
    recorder = Recorder()
    await talk(offline_engine(recorder), ["E-2040, plan year 2027, new hire on 2026-12-01", "ok"])
    assert sorted(recorder.tools_by_step()["IneligibleBenefitsStep"]) == [
        "finish_ineligible_benefits"
    ]


async def test_d5_a_complete_enrollment_leaves_picoflows_final_session() -> None:
    results, doc = await talk(offline_engine(), FAMILY)
    assert [r.step for r in results] == [
        "HouseholdStep",
        "PreferencesStep",
        "MedicalPlanStep",
        "HealthAccountStep",
        "AncillaryBenefitsStep",
        "BeneficiaryStep",
        "DependentCareStep",
        "EnrollmentReviewStep",
        "TerminateSessionStep",
    ]
    assert (doc["run_status"], doc["current_step"], results[-1].completed) == (
        "completed",
        "TerminateSessionStep",
        True,
    )
    assert doc["sequence"] == [
        "EligibilityStep",
        "HouseholdStep",
        "PreferencesStep",
        "PlanEvaluationStep",
        "MedicalPlanStep",
        "HealthAccountStep",
        "AncillaryBenefitsStep",
        "BeneficiaryStep",
        "DependentCareStep",
        "EnrollmentReviewStep",
        "CommitEnrollmentStep",
        "TerminateSessionStep",
    ]
    state = {name: entry["state"] for name, entry in doc["steps"].items()}
    record = state["CommitEnrollmentStep"]["enrollmentRecord"]
    assert record["status"] == "submitted_with_pending_requirements"
    assert record["pendingRequirements"] == ["EVIDENCE_OF_INSURABILITY"]
    # 125 (HDHP, family) + 76.86 (ancillary) + 7500 / 24 + 3000 / 24
    assert record["totalPayrollDeductionPerPayPeriod"] == 639.36
    assert record["submittedAt"] == "2026-12-07T00:00:00.000Z"
    assert state["EnrollmentReviewStep"]["confirmedAt"] == "2026-12-07T00:00:00.000Z"
    assert state["TerminateSessionStep"]["_prompt"] == terminal_prompt(record_prompt(record))
    assert "total estimated payroll deduction $639.36 per paycheck" in record_prompt(record)
    for step in ("MedicalPlanStep", "BeneficiaryStep", "DependentCareStep", "EnrollmentReviewStep"):
        assert "needsPresentation" not in state[step], step
    assert "pendingRequirements" not in state["BeneficiaryStep"]
    assert list(doc["memory"]) == [
        "benefits-intake",
        "benefits-medical",
        "benefits-accounts",
        "benefits-ancillary",
        "benefits-beneficiaries",
        "benefits-dependent-care",
        "benefits-review",
        "benefits-terminal",
    ]
    opener = (
        "Ask about broad care-use and plan priorities without requesting diagnoses or medication "
        "names."
    )
    assert opener in human_texts(doc, "benefits-intake")  # the stage's own opener, always
    assert (
        human_texts(doc, "benefits-medical")[0] == "Show the current medical plan options exactly."
    )
    assert (
        human_texts(doc, "benefits-review")[0]
        == "Show the authoritative benefits enrollment review."
    )


async def test_d5_a_stage_erases_its_memory_on_entry_and_opens_with_its_own_line() -> None:
    """T3, T4: steps 5-10 and 12 start from an empty namespace; the opener ignores what was
    forwarded and is marked as navigation."""
    engine = offline_engine()
    results, doc = await talk(engine, FAMILY[:4])
    medical = doc["memory"]["benefits-medical"]["messages"]
    assert [m["type"] for m in medical[:2]] == ["system", "human"]
    assert medical[1]["data"]["additional_kwargs"] == {"origin": "navigation"}
    assert human_texts(doc, "benefits-accounts") == [
        "Explain the available health account and collect an annual employee contribution."
    ]


def test_d5_the_date_override_and_its_invalid_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE", "2026-11-10")
    assert current_time() == datetime(2026, 11, 10, tzinfo=UTC)
    assert current_time("2026-12-07") == datetime(2026, 12, 7, tzinfo=UTC)  # config.today wins
    monkeypatch.setenv("EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE", "2026-11-10T08:30:00Z")
    assert current_time() == datetime(2026, 11, 10, 8, 30, tzinfo=UTC)
    monkeypatch.setenv("EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE", "soon")
    with pytest.raises(ValueError) as caught:
        current_time()
    assert (
        str(caught.value)
        == INVALID_DATE
        == ("EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE must be a valid date.")
    )
    monkeypatch.delenv("EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE")
    assert abs(current_time() - datetime.now(UTC)) < timedelta(minutes=1)


async def test_d5_the_override_reaches_the_prompt_and_the_eligibility_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE", "2026-11-10")
    recorder = Recorder()
    engine = offline_engine(recorder)
    result = await engine.run(FLOW, "E-1042, plan year 2027, open enrollment")
    assert result.step == "HouseholdStep"  # 2026-11-10 is inside the open-enrollment window
    prompt = recorder.models[0][1].requests[0].messages[0].content
    assert 'CURRENT_DATE: "2026-11-10"' in prompt
    monkeypatch.setenv("EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE", "not a date")
    failed = await engine.run(FLOW, "hi")
    assert not failed.success
    assert "EMPLOYEE_BENEFITS_FLOW_CURRENT_DATE must be a valid date." in failed.message


def test_v10_a_session_idle_for_45_minutes_starts_afresh() -> None:
    flow = EmployeeBenefitsFlow()
    now = datetime.now(UTC)
    fresh = {"updated_at": (now - timedelta(minutes=44)).isoformat()}
    assert flow.migrate_session(fresh) is fresh
    assert flow.migrate_session({"updated_at": (now - timedelta(minutes=45)).isoformat()}) is None


async def test_v10_an_idle_session_is_replaced_by_a_new_one() -> None:
    store = MemoryStore()
    engine = FlowEngine(
        [EmployeeBenefitsFlow], store=store, providers={"offline": offline_provider}
    )
    first = await engine.run(FLOW, FAMILY[0], config=TODAY)
    doc = await store.load(first.session_id)
    assert doc is not None
    old = copy.deepcopy(doc) | {"id": "idle-session-0000000001", "revision": 0}
    old["updated_at"] = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    await store.create(old)
    again = await engine.run(FLOW, "just me", session_id="idle-session-0000000001")
    assert again.session_id != "idle-session-0000000001" and again.step == "EligibilityStep"


async def test_m3_a_long_intake_is_summarised_and_its_facts_still_count() -> None:
    lines = [
        "hello",
        "E-1042",
        "plan year 2027",
        "new hire",
        "my first day was 2026-12-01",
        "hmm who can I cover?",
        "me and my wife",
        "her name is Sam Rivera",
        "Sam was born 1990-04-02",
        "she has no other coverage",
    ]
    results, doc = await talk(offline_engine(), lines)
    intake = doc["memory"]["benefits-intake"]
    assert intake["summary_generation"] >= 1 and intake["archived"] > 0
    assert all(not r.warnings for r in results)
    household = doc["steps"]["HouseholdStep"]["state"]["household"]
    assert household == {
        "coverageTier": "employee_spouse",
        "dependents": [{"name": "Sam Rivera", "relationship": "spouse", "birthDate": "1990-04-02"}],
        "spouseHasOtherMedicalCoverage": False,
    }


class Stub:
    """A flow stand-in that has saved nothing (read_enrollment_application reads only state)."""

    def get_step_state(self, step: type, path: str | None = None) -> None:
        return None


def test_d5_an_incomplete_application_names_the_missing_part() -> None:
    with pytest.raises(RuntimeError) as caught:
        read_enrollment_application(Stub())  # type: ignore[arg-type]
    assert str(caught.value) == "Enrollment application requires EligibilityStep.request."


WATCHED = ("request", "household", "preferences", "selectedPlan", "election", "confirmedAt")


def commitments(doc: dict[str, Any] | None) -> dict[tuple[str, str], Any]:
    steps = (doc or {}).get("steps", {})
    return {
        (name, key): value
        for name, entry in steps.items()
        for key, value in (entry.get("state") or {}).items()
        if key in WATCHED
    }


@pytest.mark.parametrize(
    ("lines", "step"),
    [
        (
            ["E-1042, plan year 2027, new hire 2026-12-01. hmm wait, let me check the date"],
            "EligibilityStep",
        ),
        (["E-1042, 2027, new hire on 03/04/2026"], "EligibilityStep"),  # reads two ways
        (["my number is 1042, 2027, new hire 2026-12-01"], "EligibilityStep"),  # no E-0000
        (FAMILY[:3] + ["you pick"], "MedicalPlanStep"),
        (FAMILY[:3] + ["the ppo or the epo"], "MedicalPlanStep"),
        (FAMILY[:3] + ["what's the deductible on the PPO?"], "MedicalPlanStep"),
        (FAMILY[:8] + ["looks good"], "EnrollmentReviewStep"),
        (FAMILY[:8] + ["submit it. actually no, hold on"], "EnrollmentReviewStep"),
    ],
)
async def test_d5_nothing_commits_on_a_guess(lines: list[str], step: str) -> None:
    """Issue 35's invariant: a withdrawn, ambiguous or deferred choice commits nothing."""
    engine = offline_engine()
    before = None
    if lines[:-1]:
        _, before = await talk(engine, lines[:-1])
    session = before["id"] if before else None
    result = await engine.run(FLOW, lines[-1], session_id=session, config=TODAY)
    after = await engine.get_session(result.session_id)
    assert (result.step, result.completed) == (step, False), result.message
    assert commitments(after) == commitments(before)
