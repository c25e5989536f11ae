"""HomeInsuranceQuoteFlow (demo/insurance) against research section 6, through the real engine
and the offline model (SPEC D5): registration, namespaces and openers, tools and their schemas,
the flow's model, summary and idle expiry, the date override, every end tool, the referral, the
final session, and that nothing commits on a guess. The handlers' messages are in
test_insurance_handlers.py, the rules in test_insurance_rules.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from insurance_kit import FLOW, STAGES, TODAY, offline_engine, resume, staged, state, talk

from demo.insurance.base import TerminateSessionStep
from demo.insurance.flow import OFFLINE_MODEL, HomeInsuranceQuoteFlow
from demo.insurance.prompts import OPENERS
from picoflow import EndStep, FlowDefinitionError, FlowEngine, LogicStep, ModelSpec
from picoflow.stores import MemoryStore

TERMINAL = (
    "Remind the customer that no coverage has been bound and no payment has been taken. Do not "
    "discuss unrelated topics."
)


def test_d5_6_steps_namespaces_and_kinds_are_picoflows() -> None:
    flow = HomeInsuranceQuoteFlow()
    assert [(name, step.namespace) for name, step in flow.steps.items()] == [
        ("QualificationStep", "home-quote-intake"),
        ("PropertyStep", "home-quote-intake"),
        ("RiskStep", "home-quote-intake"),
        ("CoverageStep", "home-quote-coverage"),
        ("ReviewStep", "home-quote-review"),
        ("RateQuoteStep", "RateQuoteStep"),
        ("PresentQuoteStep", "home-quote-options"),
        ("ContactStep", "home-quote-contact"),
        ("ReferralStep", "home-quote-referral"),
        ("TerminateSessionStep", "home-quote-terminal"),
    ]
    assert flow.name == FLOW and flow.initial_step() is None  # QualificationStep, registered first
    assert isinstance(flow.steps["RateQuoteStep"], LogicStep)
    assert isinstance(flow.steps["TerminateSessionStep"], EndStep)
    assert isinstance(flow.steps["TerminateSessionStep"], TerminateSessionStep)


@pytest.mark.parametrize(
    ("step", "tools"),
    [
        ("QualificationStep", ["capture_home_qualification", "end_qualification_quote"]),
        ("PropertyStep", ["capture_home_property", "end_property_quote"]),
        ("RiskStep", ["capture_home_risk", "end_risk_quote"]),
        ("CoverageStep", ["capture_home_coverage", "end_coverage_quote"]),
        (
            "ReviewStep",
            ["confirm_home_application", "correct_home_application", "end_review_quote"],
        ),
        (
            "PresentQuoteStep",
            [
                "change_home_quote_deductible",
                "compare_home_quote_options",
                "end_present_quote",
                "select_home_quote_option",
                "show_home_quote_options",
            ],
        ),
        ("ContactStep", ["capture_home_quote_contact", "end_contact_quote"]),
        ("ReferralStep", ["finish_home_quote_referral"]),
    ],
)
async def test_d5_6_3_each_stage_binds_its_tools(step: str, tools: list[str]) -> None:
    stage = {
        "QualificationStep": "qualification",
        "PropertyStep": "property",
        "RiskStep": "risk",
        "CoverageStep": "coverage",
        "ReviewStep": "review",
        "PresentQuoteStep": "options",
        "ContactStep": "contact",
        "ReferralStep": "referral",
    }[step]
    doc = await staged(stage)
    assert doc["current_step"] == step
    _, _, model = await resume(doc, ["what happens next?"])
    assert sorted(model.requests[0].tool_names) == tools


def test_d5_6_1_the_schemas_the_model_sees() -> None:
    flow = HomeInsuranceQuoteFlow()
    qualification = flow.require_tool("capture_home_qualification").schema["function"]["parameters"]
    assert qualification["required"] == [
        "state",
        "zip",
        "purchaseStatus",
        "occupancy",
        "effectiveDate",
    ]
    assert qualification["properties"]["zip"]["pattern"] == r"^\d{5}$"
    assert qualification["properties"]["occupancy"]["enum"] == ["primary", "secondary", "rental"]
    coverage = flow.require_tool("capture_home_coverage").schema["function"]["parameters"]
    assert coverage["properties"]["deductible"]["enum"] == [1000, 2500, 5000]
    assert coverage["properties"]["liabilityLimit"]["enum"] == [100000, 300000, 500000, 1000000]
    review = flow.require_tool("correct_home_application").schema["function"]["parameters"]
    assert review["properties"]["section"]["enum"] == [
        "qualification",
        "property",
        "risk",
        "coverage",
    ]
    assert review["properties"]["change"]["maxLength"] == 500
    compare = flow.require_tool("compare_home_quote_options").schema["function"]["parameters"]
    assert (
        compare["properties"]["optionIds"]["minItems"],
        compare["properties"]["optionIds"]["maxItems"],
    ) == (1, 3)
    for name in ("show_home_quote_options", "end_present_quote", "end_contact_quote"):
        assert flow.require_tool(name).schema["function"]["parameters"].get("properties", {}) == {}


def test_d5_6_the_flow_model_summary_and_call_policy() -> None:
    assert OFFLINE_MODEL == ModelSpec("offline", "insurance", retry_attempts=3, timeout=120.0)
    real = HomeInsuranceQuoteFlow.using("openai:gpt-4o")
    assert real.name == FLOW
    assert real().config_model() == ModelSpec("openai", "gpt-4o", retry_attempts=3, timeout=120.0)
    config = HomeInsuranceQuoteFlow().get_memory().summary_config_for("home-quote-intake")
    assert (config.min_messages, config.recent_messages) == (12, 6)


async def _whole_quote() -> tuple[list[Any], dict[str, Any]]:
    lines = [*STAGES["contact"], "yes please", "Jane Doe, jane@example.com"]
    return await talk(offline_engine(), lines)


async def test_d5_6_a_whole_quote_leaves_picoflows_final_session() -> None:
    results, doc = await _whole_quote()
    assert (results[-1].completed, doc["run_status"], doc["current_step"]) == (
        True,
        "completed",
        "TerminateSessionStep",
    )
    assert doc["sequence"] == [
        "QualificationStep",
        "PropertyStep",
        "RiskStep",
        "CoverageStep",
        "ReviewStep",
        "RateQuoteStep",
        "PresentQuoteStep",
        "ContactStep",
        "TerminateSessionStep",
    ]
    keys = {
        name: sorted(k for k in entry["state"] if k != "_saveOn")
        for name, entry in doc["steps"].items()
    }
    assert keys == {
        "QualificationStep": ["qualification"],
        "PropertyStep": ["property"],
        "RiskStep": ["risk"],
        "CoverageStep": ["coverage"],
        "ReviewStep": ["confirmedAt"],
        "RateQuoteStep": ["quoteResult"],
        "PresentQuoteStep": ["presentedQuoteId", "selectedOption"],
        "ContactStep": ["contact"],
        "ReferralStep": [],
        "TerminateSessionStep": ["_prompt"],
    }
    assert all(entry.get("model") is None for entry in doc["steps"].values())  # no overrides


async def test_d5_6_the_final_values_and_the_closing_line() -> None:
    results, doc = await _whole_quote()
    quote = state(doc, "RateQuoteStep", "quoteResult")
    assert (
        quote["quoteId"]
        == "EHI-20261207-21DB82F9"
        == state(doc, "PresentQuoteStep", "presentedQuoteId")
    )
    assert state(doc, "ReviewStep", "confirmedAt") == "2026-12-07T00:00:00.000Z"
    assert state(doc, "ContactStep", "contact") == {
        "consentToContact": True,
        "name": "Jane Doe",
        "email": "jane@example.com",
        "phone": None,
        "propertyAddress": None,
    }
    assert results[-1].message == (
        "Done: an agent follow-up was requested for Jane Doe at jane@example.com. Your quote is "
        "EHI-20261207-21DB82F9, with Enhanced (ENHANCED) selected, valid through 2027-01-06. No "
        "coverage has been bound and no payment has been taken."
    )
    intake = doc["memory"]["home-quote-intake"]
    assert intake["summary"] and "User: Portland, Oregon 97201" in intake["summary"]  # M7


async def test_d5_6_openers_are_navigation_messages_and_stages_start_empty() -> None:
    _, doc = await talk(offline_engine(), STAGES["contact"])
    for namespace, step in (
        ("home-quote-coverage", "CoverageStep"),
        ("home-quote-review", "ReviewStep"),
        ("home-quote-options", "PresentQuoteStep"),
        ("home-quote-contact", "ContactStep"),
    ):
        first = doc["memory"][namespace]["messages"][1]["data"]
        assert (first["content"], first["additional_kwargs"]) == (
            OPENERS[step],
            {"origin": "navigation"},
        )
    intake = [m["data"]["content"] for m in doc["memory"]["home-quote-intake"]["messages"]]
    summary = doc["memory"]["home-quote-intake"]["summary"] or ""
    for step in ("PropertyStep", "RiskStep"):
        assert OPENERS[step] in intake or f"User: {OPENERS[step]}" in summary


@pytest.mark.parametrize(
    ("stage", "line", "prompt"),
    [
        (
            "qualification",
            "never mind, bye",
            "Thank the customer for considering Evergreen Home Insurance.",
        ),
        (
            "property",
            "cancel this please",
            "Thank the customer and close the unfinished preliminary quote.",
        ),
        ("risk", "stop", "Thank the customer and close the unfinished preliminary quote."),
        ("coverage", "forget it", "Thank the customer and close the unfinished preliminary quote."),
        (
            "review",
            "not today, goodbye",
            "Thank the customer and close the reviewed preliminary quote without rating it.",
        ),
        (
            "options",
            "that's all for now, bye",
            "Thank the customer and provide quote reference EHI-20261207-21DB82F9, valid "
            "through 2027-01-06.",
        ),
        (
            "contact",
            "bye",
            "Confirm that no contact details were retained and provide quote reference "
            "EHI-20261207-21DB82F9.",
        ),
    ],
)
async def test_d5_6_3_every_stage_can_end_with_its_terminal_prompt(
    stage: str, line: str, prompt: str
) -> None:
    doc = await staged(stage)
    results, after, _ = await resume(doc, [line])
    assert results[0].completed and after["current_step"] == "TerminateSessionStep"
    assert state(after, "TerminateSessionStep", "_prompt") == f"{prompt} {TERMINAL}"
    if stage == "contact":
        assert state(after, "ContactStep", "contact") == {
            "consentToContact": False,
            "name": None,
            "email": None,
            "phone": None,
            "propertyAddress": None,
        }


async def test_d5_6_3_a_referral_names_the_recorded_codes_and_closes_when_acknowledged() -> None:
    doc = await staged("referral")
    assert (doc["current_step"], state(doc, "ReferralStep", "reasonCodes")) == (
        "ReferralStep",
        ["UNSUPPORTED_STATE"],
    )
    reply = doc["memory"]["home-quote-referral"]["messages"][-1]["data"]["content"]
    assert "UNSUPPORTED_STATE" in reply and "not a decline" in reply and "$" not in reply
    results, after, _ = await resume(doc, ["ok, understood"])
    assert results[0].completed
    assert state(after, "TerminateSessionStep", "_prompt") == (
        "Thank the customer and explain that an agent would need to review the application "
        f"before any quote could be offered. {TERMINAL}"
    )


async def test_d5_6_a_session_idle_for_30_minutes_starts_over() -> None:
    doc = await staged("property")
    store = MemoryStore()
    engine = offline_engine(store)
    for minutes, fresh in ((29, False), (31, True)):
        idle = (datetime.now(UTC) - timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
        copy = {**doc, "id": f"idle-session-{minutes:04d}", "revision": 0, "updated_at": idle}
        await store.create(copy)
        result = await engine.run(FLOW, "a townhome", session_id=copy["id"])
        assert (result.session_id != copy["id"]) is fresh
        assert result.step == ("QualificationStep" if fresh else "PropertyStep")


async def test_d5_6_the_environment_date_replaces_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME_INSURANCE_FLOW_CURRENT_DATE", "2027-03-01")
    engine = offline_engine()
    first = await engine.run(FLOW, "Oregon 97201")  # no config.today: the variable decides
    second = await engine.run(FLOW, "own, primary, start 2027-02-15", session_id=first.session_id)
    doc = await engine.get_session(second.session_id)
    assert doc is not None and second.step == "QualificationStep"
    assert doc["memory"]["home-quote-intake"]["messages"][-2]["data"]["content"] == (
        "The effective date must be after 2027-03-01 and no more than one year later."
    )
    monkeypatch.setenv("HOME_INSURANCE_FLOW_CURRENT_DATE", "soon")
    failed = await engine.run(FLOW, "2027-04-01", session_id=first.session_id)
    assert not failed.success
    assert failed.message.endswith("HOME_INSURANCE_FLOW_CURRENT_DATE must be a valid date.")
    with pytest.raises(FlowDefinitionError) as error:  # a new engine refuses to start
        FlowEngine([HomeInsuranceQuoteFlow], store=MemoryStore())
    assert str(error.value) == (
        "HomeInsuranceQuoteFlow: HOME_INSURANCE_FLOW_CURRENT_DATE must be a valid date."
    )


@pytest.mark.parametrize(
    ("stage", "lines"),
    [
        ("options", ["Enhanced. hmm, hold on, let me think"]),
        ("options", ["maybe premier?"]),
        ("options", ["enhanced or premier"]),
        ("review", ["looks good. wait, let me double check"]),
        ("review", ["the zip is 97209 and the deductible should be 2500"]),
        ("contact", ["yes, jo@example.com. actually hold on"]),
        ("contact", ["maybe"]),
        ("coverage", ["300k"]),
        ("qualification", ["Oregon 97201, own, primary, start soon"]),
    ],
)
async def test_d5_nothing_commits_on_a_guess(stage: str, lines: list[str]) -> None:
    """A choice taken back, a hedge, two choices or an ambiguous value confirm, select, record
    or end nothing (issue 35's invariant)."""
    doc = await staged(stage)
    results, after, _ = await resume(doc, lines)
    watched: list[tuple[str, str]] = [
        ("QualificationStep", "qualification"),
        ("CoverageStep", "coverage"),
        ("ReviewStep", "confirmedAt"),
        ("PresentQuoteStep", "selectedOption"),
        ("ContactStep", "contact"),
    ]
    assert [state(after, s, k) for s, k in watched] == [state(doc, s, k) for s, k in watched]
    assert after["current_step"] == doc["current_step"] and not results[-1].completed
    assert results[-1].message.strip()


def _intake_requests(model: Any) -> list[Any]:
    return [r for r in model.requests if "capture_home_risk" in r.tool_names]


async def test_d5_6_the_offline_model_reads_the_stage_through_its_summary() -> None:
    """Compaction (12/6) replaces the start of the intake: the risk stage still knows where it
    began, and asks only its own questions."""
    doc = await staged("risk")
    _, after, model = await resume(doc, ["no claims", "none of those"])
    request = _intake_requests(model)[-1]
    assert any("Conversation memory for this step:" in str(m.content) for m in request.messages[:2])
    assert after["current_step"] == "RiskStep"
    assert state(after, "RiskStep", "risk") is None
    assert "smoke alarms" in after["memory"]["home-quote-intake"]["messages"][-1]["data"]["content"]
    assert TODAY == {"today": "2026-12-07"}


@pytest.mark.parametrize(("greeting", "state_read"), [("hi", None), ("ok", None), ("HI", "Hawaii")])
async def test_d5_a_greeting_is_not_a_state_code(greeting: str, state_read: str | None) -> None:
    """Tried as a newcomer would: "hi" to the first question is a greeting, not Hawaii; a code
    that is also a word counts alone only in capitals (issue 35's invariant: no guess)."""
    results, _ = await talk(offline_engine(), [greeting])
    said = results[-1].message
    assert ("Hawaii" in said) == (state_read == "Hawaii"), said
    assert "Oklahoma" not in said, said
