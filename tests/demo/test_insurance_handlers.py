"""HomeInsuranceQuoteFlow's tool handlers (SPEC D5; research section 6.3): every validation
message, refused argument and route of the doc, with the stage's call scripted and the rest of
the conversation played by the offline model (`insurance_kit.resume`).
"""

from __future__ import annotations

from typing import Any

import pytest
from insurance_kit import resume, staged, state, tool_results

from picoflow.testing import tool_call

Q = {
    "state": "or",
    "zip": "97201",
    "purchaseStatus": "own",
    "occupancy": "primary",
    "effectiveDate": "2027-01-15",
}
P = {
    "dwellingType": "townhome",
    "yearBuilt": 1998,
    "squareFeet": 1800,
    "stories": 2,
    "construction": "mixed",
    "roofMaterial": "metal",
    "roofAgeYears": 4,
    "plumbingUpdatedYear": None,
    "electricalUpdatedYear": 2015,
    "hvacUpdatedYear": None,
}
R = {
    "claims": [{"year": 2024, "type": "water", "amount": 8000.0}],
    "hazards": {"pool": True, "trampoline": False, "woodStove": False},
    "protections": {
        "smokeAlarms": True,
        "burglarAlarm": False,
        "monitoredAlarm": False,
        "sprinklerSystem": False,
    },
}
C = {
    "dwellingCoverage": 450000,
    "deductible": 2500,
    "liabilityLimit": 300000,
    "endorsements": ["identity_theft"],
}
PARSE = {
    "capture_home_qualification": "Collect a valid two-letter state, five-digit ZIP, purchase "
    "status, occupancy, and YYYY-MM-DD effective date.",
    "capture_home_property": "Collect valid dwelling, construction, roof, size, story, and "
    "system-update facts before continuing.",
    "capture_home_risk": "Collect claims with year, type, and amount, plus every hazard and "
    "protection boolean.",
    "capture_home_coverage": "Use a supported dwelling amount, deductible, liability limit, and "
    "endorsement list.",
    "capture_home_quote_contact": "Collect explicit consent, a valid name and email when "
    "consent is yes, and nullable optional fields.",
}


@pytest.mark.parametrize(
    ("effective", "feedback"),
    [
        (
            "2026-12-07",
            "The effective date must be after 2026-12-07 and no more than one year later.",
        ),
        (
            "2027-12-08",
            "The effective date must be after 2026-12-07 and no more than one year later.",
        ),
        ("2027-12-07", "ok"),
        ("2026-12-08", "ok"),
    ],
)
async def test_d5_6_3_the_effective_date_window(effective: str, feedback: str) -> None:
    doc = await staged("qualification")
    call = tool_call("capture_home_qualification", **{**Q, "effectiveDate": effective})
    results, after, _ = await resume(
        doc, ["OR 97201, own, primary"], capture_home_qualification=[call]
    )
    assert tool_results(after, "home-quote-intake")[-1] == feedback
    moved = feedback == "ok"
    assert (results[0].step == "PropertyStep") is moved
    assert (state(after, "QualificationStep", "qualification") is not None) is moved


@pytest.mark.parametrize(
    ("tool", "args", "stage", "namespace"),
    [
        ("capture_home_qualification", {**Q, "zip": "9720"}, "qualification", "home-quote-intake"),
        (
            "capture_home_qualification",
            {**Q, "effectiveDate": "2027-02-30"},
            "qualification",
            "home-quote-intake",
        ),
        (
            "capture_home_qualification",
            {**Q, "state": "Oregon"},
            "qualification",
            "home-quote-intake",
        ),
        ("capture_home_property", {**P, "dwellingType": "condo"}, "property", "home-quote-intake"),
        ("capture_home_property", {**P, "roofAgeYears": 76}, "property", "home-quote-intake"),
        (
            "capture_home_risk",
            {**R, "protections": {"smokeAlarms": True}},
            "risk",
            "home-quote-intake",
        ),
        ("capture_home_coverage", {**C, "deductible": 2000}, "coverage", "home-quote-coverage"),
        (
            "capture_home_coverage",
            {**C, "dwellingCoverage": 99_999},
            "coverage",
            "home-quote-coverage",
        ),
        (
            "capture_home_quote_contact",
            {
                "consentToContact": True,
                "name": "Jo",
                "email": "jo-at-x",
                "phone": None,
                "propertyAddress": None,
            },
            "contact",
            "home-quote-contact",
        ),
    ],
)
async def test_d5_6_1_arguments_off_the_schema_get_picoflows_text_and_save_nothing(
    tool: str, args: dict[str, Any], stage: str, namespace: str
) -> None:
    doc = await staged(stage)
    _, after, _ = await resume(doc, ["here you go"], **{tool: [tool_call(tool, **args)]})
    feedback = tool_results(after, namespace)[-1]
    assert feedback.startswith(f"Error: invalid arguments for tool '{tool}'")
    assert PARSE[tool] in feedback
    assert after["current_step"] == doc["current_step"]
    section = {
        "qualification": "qualification",
        "property": "property",
        "risk": "risk",
        "coverage": "coverage",
        "contact": "contact",
    }[stage]
    owner = doc["current_step"]
    assert state(after, owner, section) == state(doc, owner, section)


async def test_d5_6_3_the_state_is_upper_cased_and_another_state_is_referred() -> None:
    doc = await staged("qualification")
    call = tool_call("capture_home_qualification", **{**Q, "state": "wa"})
    results, after, _ = await resume(doc, ["WA 98101"], capture_home_qualification=[call])
    assert state(after, "QualificationStep", "qualification")["state"] == "WA"
    assert results[0].step == "ReferralStep"
    assert (
        state(after, "ReferralStep", "decision"),
        state(after, "ReferralStep", "reasonCodes"),
    ) == (
        "unsupported",
        ["UNSUPPORTED_STATE"],
    )


@pytest.mark.parametrize(
    ("changes", "feedback"),
    [
        ({"yearBuilt": 2027}, "The year built cannot be in the future."),
        (
            {"plumbingUpdatedYear": 1990},
            "The plumbing update year must be between the year built and 2026, or null.",
        ),
        (
            {"electricalUpdatedYear": 2027},
            "The electrical update year must be between the year built and 2026, or null.",
        ),
        (
            {"hvacUpdatedYear": 1997},
            "The HVAC update year must be between the year built and 2026, or null.",
        ),
        ({"hvacUpdatedYear": 1998, "plumbingUpdatedYear": 2026}, "ok"),
    ],
)
async def test_d5_6_3_property_years_against_this_year(
    changes: dict[str, Any], feedback: str
) -> None:
    doc = await staged("property")
    call = tool_call("capture_home_property", **{**P, **changes})
    results, after, _ = await resume(doc, ["townhome"], capture_home_property=[call])
    assert tool_results(after, "home-quote-intake")[-1] == feedback
    assert (results[0].step == "RiskStep") is (feedback == "ok")


async def test_d5_6_3_a_claim_year_in_the_future_is_refused_and_amounts_follow_js() -> None:
    doc = await staged("risk")
    future = {**R, "claims": [{"year": 2027, "type": "fire", "amount": 100}]}
    calls = [tool_call("capture_home_risk", **future), tool_call("capture_home_risk", **R)]
    results, after, _ = await resume(
        doc, ["a fire next year", "sorry, 2024"], capture_home_risk=calls
    )
    assert "A claim year cannot be in the future." in tool_results(after, "home-quote-intake")
    assert results[-1].step == "CoverageStep"
    assert state(after, "RiskStep", "risk")["claims"] == [
        {"year": 2024, "type": "water", "amount": 8000}
    ]


async def test_d5_6_3_review_refuses_a_false_confirmation_and_an_incomplete_application() -> None:
    doc = await staged("review")
    calls = [tool_call("confirm_home_application", confirmed=False)]
    _, after, _ = await resume(doc, ["hmm"], confirm_home_application=calls)
    feedback = tool_results(after, "home-quote-review")[-1]
    assert "Ask the customer to confirm or request a correction." in feedback
    assert state(after, "ReviewStep", "confirmedAt") is None
    del doc["steps"]["CoverageStep"]["state"]["coverage"]
    calls = [tool_call("confirm_home_application", confirmed=True)]
    results, after, _ = await resume(doc, ["yes"], confirm_home_application=calls)
    assert tool_results(after, "home-quote-review")[-1] == (
        "The application is incomplete. Ask which section the customer wants to finish."
    )
    assert results[0].step == "ReviewStep" and state(after, "ReviewStep", "confirmedAt") is None


async def test_d5_6_3_a_correction_goes_to_its_owner_and_back_in_the_same_turn() -> None:
    doc = await staged("review")
    call = tool_call("correct_home_application", section="coverage", change="deductible 5000")
    results, after, _ = await resume(
        doc, ["please make the deductible 5000"], confirm_home_application=[call]
    )
    assert results[0].step == "ReviewStep"
    assert after["sequence"][-2:] == ["CoverageStep", "ReviewStep"]
    assert state(after, "CoverageStep", "coverage")["deductible"] == 5000
    coverage = state(after, "CoverageStep")
    assert "correctionMode" not in coverage and "correctionRequest" not in coverage
    forwarded = [
        m for m in after["memory"]["home-quote-coverage"]["messages"] if m["type"] == "human"
    ]
    assert forwarded[-1]["data"]["content"] == "please make the deductible 5000"
    assert state(after, "ReviewStep", "lastCorrection") == {
        "section": "coverage",
        "change": "deductible 5000",
    }
    results, after, _ = await resume(after, ["yes, that's right"])
    assert results[0].step == "PresentQuoteStep"
    assert "lastCorrection" not in state(after, "ReviewStep")


async def test_d5_6_3_rating_requires_every_section() -> None:
    doc = await staged("options")
    del doc["steps"]["RiskStep"]["state"]["risk"]
    calls = [tool_call("change_home_quote_deductible", deductible=5000)]
    results, after, _ = await resume(doc, ["5000 deductible"], show_home_quote_options=calls)
    assert not results[0].success
    assert "RateQuoteStep requires RiskStep.risk." in results[0].message
    assert (after["steps"], after["current_step"]) == (doc["steps"], "PresentQuoteStep")
    assert after["error"][-1]["message"].endswith("RateQuoteStep requires RiskStep.risk.")


async def test_d5_6_3_options_are_compared_by_normalised_current_ids_only() -> None:
    doc = await staged("options")
    calls = [
        tool_call("compare_home_quote_options", optionIds=["basic"]),
        tool_call("compare_home_quote_options", optionIds=[" premier", "essential ", "PREMIER"]),
    ]
    results, after, _ = await resume(doc, ["compare"], show_home_quote_options=calls)
    feedback = tool_results(after, "home-quote-options")
    assert "Choose only current option IDs: ESSENTIAL, ENHANCED, PREMIER." in feedback
    rows = [
        line for line in results[0].message.splitlines() if line.startswith("| ") and "(" in line
    ]
    assert [row.split(" | ")[0] for row in rows] == [
        "| Premier (PREMIER)",
        "| Essential (ESSENTIAL)",
    ]


async def test_d5_6_3_a_selection_needs_a_current_id_and_a_new_quote_drops_it() -> None:
    doc = await staged("options")
    calls = [
        tool_call("select_home_quote_option", optionId="GOLD"),
        tool_call("select_home_quote_option", optionId=" enhanced "),
    ]
    results, after, _ = await resume(doc, ["gold please"], show_home_quote_options=calls)
    assert "Choose one current option ID: ESSENTIAL, ENHANCED, PREMIER." in tool_results(
        after, "home-quote-options"
    )
    assert results[0].step == "ContactStep"
    assert state(after, "PresentQuoteStep", "selectedOption")["id"] == "ENHANCED"
    old_id = state(after, "RateQuoteStep", "quoteResult")["quoteId"]
    after["current_step"] = "PresentQuoteStep"  # back at the table, as before the selection
    calls = [tool_call("change_home_quote_deductible", deductible=5000)]
    results, after, _ = await resume(after, ["5000 deductible"], show_home_quote_options=calls)
    new = state(after, "RateQuoteStep", "quoteResult")
    assert new["quoteId"] != old_id and new["options"][0]["deductible"] == 5000
    assert state(after, "PresentQuoteStep", "presentedQuoteId") == new["quoteId"]
    assert state(after, "PresentQuoteStep", "selectedOption") is None
    assert state(after, "CoverageStep", "coverage") == {
        "dwellingCoverage": 450000,
        "deductible": 5000,
        "liabilityLimit": 300000,
        "endorsements": [],
    }
    assert results[0].message.startswith(f"### Preliminary home insurance quote {new['quoteId']}")


async def test_d5_6_3_the_table_replaces_a_reply_until_it_was_shown() -> None:
    doc = await staged("review")
    calls = ["Here are your options, roughly $1,600 a year."]  # the model forgot the tool
    results, after, _ = await resume(doc, ["looks good"], show_home_quote_options=calls)
    assert results[0].message.startswith("### Preliminary home insurance quote EHI-20261207-")
    assert "needsPresentation" not in state(after, "PresentQuoteStep")


async def test_d5_6_3_the_options_need_an_eligible_quote() -> None:
    doc = await staged("options")
    doc["steps"]["RateQuoteStep"]["state"]["quoteResult"]["decision"] = "referral"
    results, _, _ = await resume(doc, ["show me again"])
    assert not results[0].success
    assert "PresentQuoteStep requires an eligible quote result." in results[0].message


@pytest.mark.parametrize(
    ("args", "feedback", "contact"),
    [
        (
            {
                "consentToContact": True,
                "name": "Jo Kim",
                "email": None,
                "phone": None,
                "propertyAddress": None,
            },
            "When contact consent is yes, collect both name and a valid email address.",
            None,
        ),
        (
            {
                "consentToContact": False,
                "name": "Jo Kim",
                "email": "jo@example.com",
                "phone": "5035550100",
                "propertyAddress": None,
            },
            "ok",
            {
                "consentToContact": False,
                "name": None,
                "email": None,
                "phone": None,
                "propertyAddress": None,
            },
        ),
        (
            {
                "consentToContact": True,
                "name": " Jo Kim ",
                "email": "jo@example.com",
                "phone": None,
                "propertyAddress": "12 Oak St, Portland",
            },
            "ok",
            {
                "consentToContact": True,
                "name": "Jo Kim",
                "email": "jo@example.com",
                "phone": None,
                "propertyAddress": "12 Oak St, Portland",
            },
        ),
    ],
)
async def test_d5_6_3_contact_consent_and_its_fields(
    args: dict[str, Any], feedback: str, contact: dict[str, Any] | None
) -> None:
    doc = await staged("contact")
    calls = [tool_call("capture_home_quote_contact", **args)]
    results, after, _ = await resume(doc, ["here"], capture_home_quote_contact=calls)
    assert tool_results(after, "home-quote-contact")[-1] == feedback
    assert state(after, "ContactStep", "contact") == contact
    assert results[0].completed is (contact is not None)
    if contact is not None:
        who = (
            "Confirm that an agent follow-up was requested for Jo Kim at jo@example.com."
            if contact["consentToContact"]
            else "Confirm that no agent follow-up details were retained."
        )
        quote = state(after, "RateQuoteStep", "quoteResult")
        assert state(after, "TerminateSessionStep", "_prompt") == (
            f"{who} Provide quote {quote['quoteId']} and selected Enhanced (ENHANCED), valid "
            "through 2027-01-06. Remind the customer that no coverage has been bound and no "
            "payment has been taken. Do not discuss unrelated topics."
        )
