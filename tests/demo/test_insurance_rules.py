"""HomeInsuranceQuoteFlow's rules in code (SPEC D5; research section 6.2): the quote
configuration and its schema check, JavaScript's JSON, number format and rounding, the quote id,
the referral reasons, the premiums, the presenter's tables and the flow's "now".

Expected values are written out by hand from the doc's rules (a JSON text typed as
``JSON.stringify`` prints it, its SHA-256 taken with hashlib; premiums multiplied out in the
comments), never produced by the code under test.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from demo.insurance.clock import INVALID_CURRENT_DATE, add_years, current_moment
from demo.insurance.config import CONFIG_PATH, QuoteConfigError, load_quote_config
from demo.insurance.jsjson import js_number, js_round, round2, stringify
from demo.insurance.presenter import comparison_table, money, options_table
from demo.insurance.rating import band_factor, quote, quote_id, reason_codes

NOW = datetime(2026, 12, 7, tzinfo=UTC)
QUALIFICATION = {
    "state": "OR",
    "zip": "97201",
    "purchaseStatus": "own",
    "occupancy": "primary",
    "effectiveDate": "2027-01-15",
}
PROPERTY = {
    "dwellingType": "single_family",
    "yearBuilt": 1998,
    "squareFeet": 2100,
    "stories": 2,
    "construction": "wood_frame",
    "roofMaterial": "composition",
    "roofAgeYears": 6,
    "plumbingUpdatedYear": None,
    "electricalUpdatedYear": 2015,
    "hvacUpdatedYear": 2019,
}
RISK = {
    "claims": [],
    "hazards": {"pool": False, "trampoline": False, "woodStove": False},
    "protections": {
        "smokeAlarms": True,
        "burglarAlarm": True,
        "monitoredAlarm": True,
        "sprinklerSystem": False,
    },
}
COVERAGE = {
    "dwellingCoverage": 450000,
    "deductible": 1000,
    "liabilityLimit": 300000,
    "endorsements": [],
}
APPLICATION = {
    "qualification": QUALIFICATION,
    "property": PROPERTY,
    "risk": RISK,
    "coverage": COVERAGE,
}
APPLICATION_JSON = (
    '{"qualification":{"state":"OR","zip":"97201","purchaseStatus":"own","occupancy":"primary",'
    '"effectiveDate":"2027-01-15"},"property":{"dwellingType":"single_family","yearBuilt":1998,'
    '"squareFeet":2100,"stories":2,"construction":"wood_frame","roofMaterial":"composition",'
    '"roofAgeYears":6,"plumbingUpdatedYear":null,"electricalUpdatedYear":2015,'
    '"hvacUpdatedYear":2019},"risk":{"claims":[],"hazards":{"pool":false,"trampoline":false,'
    '"woodStove":false},"protections":{"smokeAlarms":true,"burglarAlarm":true,'
    '"monitoredAlarm":true,"sprinklerSystem":false}},"coverage":{"dwellingCoverage":450000,'
    '"deductible":1000,"liabilityLimit":300000,"endorsements":[]}}'
)
"""The application as JSON.stringify writes it: no spaces, keys in schema order, null kept."""

PICOFLOW_CONFIG = {
    "carrierName": "Evergreen Home Insurance",
    "rulesVersion": "2027.1-demo",
    "supportedStates": ["OR"],
    "quoteValidDays": 30,
    "baseRatePerThousand": 3.2,
    "deductibleFactors": {"1000": 1, "2500": 0.9, "5000": 0.81},
    "constructionFactors": {"wood_frame": 1.05, "masonry": 0.96, "mixed": 1},
    "occupancyFactors": {"primary": 1, "secondary": 1.18, "rental": 1.3},
    "homeAgeBands": [
        {"maxYears": 10, "factor": 0.92},
        {"maxYears": 25, "factor": 1},
        {"maxYears": 50, "factor": 1.12},
        {"maxYears": 100, "factor": 1.28},
    ],
    "roofAgeBands": [
        {"maxYears": 5, "factor": 0.93},
        {"maxYears": 15, "factor": 1},
        {"maxYears": 25, "factor": 1.17},
    ],
    "claimFactors": {"0": 1, "1": 1.12, "2": 1.35},
    "hazardFactors": {"pool": 1.08, "trampoline": 1.1, "woodStove": 1.07},
    "protectionDiscounts": {"monitoredAlarm": 0.05, "sprinklerSystem": 0.08},
    "endorsementAnnualFees": {"water_backup": 48, "identity_theft": 24, "equipment_breakdown": 36},
    "referralRules": {
        "maxDwellingCoverage": 1500000,
        "maxRoofAgeYears": 25,
        "maxClaimsInFiveYears": 2,
        "maxSingleClaimAmount": 50000,
        "minimumYearBuilt": 1900,
    },
    "tiers": [
        {
            "id": "ESSENTIAL",
            "name": "Essential",
            "factor": 1,
            "dwellingExtensionPercent": 0,
            "minimumLiabilityLimit": 100000,
            "includedEndorsements": [],
        },
        {
            "id": "ENHANCED",
            "name": "Enhanced",
            "factor": 1.13,
            "dwellingExtensionPercent": 10,
            "minimumLiabilityLimit": 500000,
            "includedEndorsements": ["water_backup", "equipment_breakdown"],
        },
        {
            "id": "PREMIER",
            "name": "Premier",
            "factor": 1.26,
            "dwellingExtensionPercent": 25,
            "minimumLiabilityLimit": 1000000,
            "includedEndorsements": ["water_backup", "identity_theft", "equipment_breakdown"],
        },
    ],
}
"""Section 6.2's table, key by key."""


def application(**changes: Any) -> dict[str, Any]:
    """The worked application with dotted-path changes ("property.roofAgeYears"=26)."""
    app = copy.deepcopy(APPLICATION)
    for dotted, value in changes.items():
        section, _, key = dotted.partition("__")
        app[section][key] = value
    return app


def test_d5_6_2_the_quote_configuration_is_picoflows_exactly() -> None:
    assert json.loads(CONFIG_PATH.read_text(encoding="utf-8")) == PICOFLOW_CONFIG
    config = load_quote_config()
    assert [tier.id for tier in config.tiers] == ["ESSENTIAL", "ENHANCED", "PREMIER"]
    assert config.deductible_factor(2500) == 0.9


def test_d5_6_2_a_configuration_off_its_schema_is_refused_with_the_field(tmp_path: Path) -> None:
    broken = copy.deepcopy(PICOFLOW_CONFIG)
    broken["tiers"][1]["factor"] = "high"
    broken["surcharge"] = 2
    path = tmp_path / "quote-config.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(QuoteConfigError) as error:
        load_quote_config(path)
    assert str(error.value) == (
        f"The quote configuration {path} does not fit its schema: tiers.1.factor: Input should "
        "be a valid number, unable to parse string as a number; surcharge: Extra inputs are not "
        "permitted. Fix these fields; see demo/insurance/config.py for the schema."
    )


def test_d5_6_2_a_table_missing_a_key_and_a_file_that_is_no_json_are_refused(
    tmp_path: Path,
) -> None:
    short = copy.deepcopy(PICOFLOW_CONFIG)
    del short["claimFactors"]["2"]
    path = tmp_path / "short.json"
    path.write_text(json.dumps(short), encoding="utf-8")
    with pytest.raises(
        QuoteConfigError, match=r"claimFactors must give all 3 keys, got \['0', '1'\]"
    ):
        load_quote_config(path)
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{carrierName: 1", encoding="utf-8")
    with pytest.raises(QuoteConfigError, match="is not JSON"):
        load_quote_config(garbled)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (8000.0, "8000"),
        (3.2, "3.2"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (-0.5, "-0.5"),
        (1608.77, "1608.77"),
        (0.1 + 0.2, "0.30000000000000004"),
        (float("nan"), "null"),
    ],
)
def test_d5_numbers_are_written_as_javascript_writes_them(value: float, text: str) -> None:
    assert js_number(value) == text


def test_d5_stringify_is_json_stringify() -> None:
    value = {"b": [1, 2.0, None, True], "a": 'é "q"\n\u0001', "c": {}}
    assert stringify(value) == '{"b":[1,2,null,true],"a":"é \\"q\\"\\n\\u0001","c":{}}'
    assert stringify(APPLICATION) == APPLICATION_JSON


@pytest.mark.parametrize(
    ("value", "rounded"),
    [
        (1.005, 1.01),
        (2.675, 2.68),
        (1608.768, 1608.77),
        (158.4925, 158.49),
        (0.125, 0.13),
        (1901.90784, 1901.91),
        (10.0, 10),
    ],
)
def test_d5_round2_is_math_round_with_epsilon(value: float, rounded: float) -> None:
    assert round2(value) == rounded
    assert js_round(2.5) == 3 and js_round(-2.5) == -2 and round(2.5) == 2  # ties go up in JS


def test_d5_6_2_the_quote_id_is_sha256_of_the_exact_json() -> None:
    digest = hashlib.sha256(APPLICATION_JSON.encode("utf-8")).hexdigest()[:8].upper()
    assert digest == "21DB82F9"
    assert quote_id(APPLICATION, NOW) == "EHI-20261207-21DB82F9"
    assert quote(load_quote_config(), APPLICATION, NOW)["quoteId"] == "EHI-20261207-21DB82F9"


def test_d5_6_2_the_quote_id_follows_javascripts_numbers_and_the_application_order() -> None:
    claim = {"year": 2024, "type": "water", "amount": 8000.0}
    with_float = application(risk__claims=[claim])
    text = APPLICATION_JSON.replace(
        '"claims":[]', '"claims":[{"year":2024,"type":"water","amount":8000}]'
    )
    expected = hashlib.sha256(text.encode()).hexdigest()[:8].upper()
    assert quote_id(with_float, NOW) == f"EHI-20261207-{expected}"  # 8000.0 is JS's 8000
    shuffled = {key: with_float[key] for key in ("coverage", "risk", "property", "qualification")}
    assert quote(load_quote_config(), shuffled, NOW)["quoteId"] == f"EHI-20261207-{expected}"
    accented = application(qualification__zip="97201é")
    text = APPLICATION_JSON.replace('"97201"', '"97201é"')
    assert quote_id(accented, NOW).endswith(hashlib.sha256(text.encode()).hexdigest()[:8].upper())


@pytest.mark.parametrize(
    ("changes", "codes"),
    [
        ({}, []),
        ({"qualification__state": "WA"}, ["UNSUPPORTED_STATE"]),
        ({"coverage__dwellingCoverage": 1_500_000}, []),
        ({"coverage__dwellingCoverage": 1_500_001}, ["HIGH_DWELLING_LIMIT"]),
        ({"property__roofAgeYears": 25}, []),
        ({"property__roofAgeYears": 26}, ["ROOF_AGE_REVIEW"]),
        ({"property__yearBuilt": 1900}, []),
        ({"property__yearBuilt": 1899}, ["HISTORIC_HOME_REVIEW"]),
        ({"risk__claims": [{"year": 2021, "type": "wind", "amount": 50_000}] * 2}, []),
        (
            {"risk__claims": [{"year": 2021, "type": "wind", "amount": 1}] * 3},
            ["CLAIMS_FREQUENCY_REVIEW"],
        ),
        ({"risk__claims": [{"year": 2020, "type": "fire", "amount": 1}] * 3}, []),
        (
            {"risk__claims": [{"year": 2024, "type": "fire", "amount": 50_001}]},
            ["LARGE_CLAIM_REVIEW"],
        ),
        ({"risk__claims": [{"year": 2019, "type": "fire", "amount": 90_000}]}, []),
        (
            {
                "qualification__state": "TX",
                "property__roofAgeYears": 30,
                "coverage__dwellingCoverage": 1_600_000,
                "property__yearBuilt": 1850,
                "risk__claims": [{"year": 2025, "type": "theft", "amount": 60_000}] * 3,
            },
            [
                "UNSUPPORTED_STATE",
                "HIGH_DWELLING_LIMIT",
                "ROOF_AGE_REVIEW",
                "HISTORIC_HOME_REVIEW",
                "CLAIMS_FREQUENCY_REVIEW",
                "LARGE_CLAIM_REVIEW",
            ],
        ),
    ],
)
def test_d5_6_2_referral_reasons_in_order_with_their_thresholds(
    changes: dict[str, Any], codes: list[str]
) -> None:
    """Claims count from the current UTC year minus five (2021 on, rated in 2026)."""
    assert reason_codes(load_quote_config(), application(**changes), NOW) == codes


def test_d5_6_2_the_decision_and_options_follow_the_reasons() -> None:
    config = load_quote_config()
    unsupported = quote(config, application(qualification__state="WA"), NOW)
    referral = quote(config, application(property__roofAgeYears=30), NOW)
    assert (unsupported["decision"], unsupported["options"]) == ("unsupported", [])
    assert (referral["decision"], referral["reasonCodes"], referral["options"]) == (
        "referral",
        ["ROOF_AGE_REVIEW"],
        [],
    )


def test_d5_6_2_premiums_of_the_worked_example() -> None:
    """450 × 3.2 × 1.12 (28 years) × 1 (6-year roof) × 1.05 (wood) × 1 × 1 × 1 × (1 − 0.05)
    = 1,608.768; Enhanced 1,608.768 × 1.13 + 48 + 36 = 1,901.90784; Premier × 1.26 + 108 =
    2,135.04768; each monthly is annual / 12, rounded."""
    result = quote(load_quote_config(), APPLICATION, NOW)
    assert result == {
        "quoteId": "EHI-20261207-21DB82F9",
        "decision": "eligible",
        "reasonCodes": [],
        "generatedAt": "2026-12-07T00:00:00.000Z",
        "validThrough": "2027-01-06",
        "rulesVersion": "2027.1-demo",
        "options": [
            {
                "id": "ESSENTIAL",
                "name": "Essential",
                "annualPremium": 1608.77,
                "monthlyPremium": 134.06,
                "dwellingCoverage": 450000,
                "dwellingExtensionPercent": 0,
                "deductible": 1000,
                "liabilityLimit": 300000,
                "endorsements": [],
            },
            {
                "id": "ENHANCED",
                "name": "Enhanced",
                "annualPremium": 1901.91,
                "monthlyPremium": 158.49,
                "dwellingCoverage": 450000,
                "dwellingExtensionPercent": 10,
                "deductible": 1000,
                "liabilityLimit": 500000,
                "endorsements": ["water_backup", "equipment_breakdown"],
            },
            {
                "id": "PREMIER",
                "name": "Premier",
                "annualPremium": 2135.05,
                "monthlyPremium": 177.92,
                "dwellingCoverage": 450000,
                "dwellingExtensionPercent": 25,
                "deductible": 1000,
                "liabilityLimit": 1000000,
                "endorsements": ["water_backup", "identity_theft", "equipment_breakdown"],
            },
        ],
    }


def test_d5_6_2_every_factor_multiplies_and_endorsements_are_requested_then_included() -> None:
    """600 × 3.2 × 0.92 (new) × 0.93 (roof ≤ 5) × 0.96 (masonry) × 1.3 (rental) × 0.81 (5,000)
    × 1.35 (3 old claims: min 2) × 1.08 × 1.1 × 1.07 × (1 − 0.05 − 0.08): Essential plus the
    identity theft fee asked for."""
    old = [{"year": 2015, "type": "other", "amount": 10}] * 3
    app = application(
        qualification__occupancy="rental",
        property__yearBuilt=2020,
        property__roofAgeYears=5,
        property__construction="masonry",
        coverage__dwellingCoverage=600_000,
        coverage__deductible=5000,
        coverage__endorsements=["identity_theft"],
        coverage__liabilityLimit=1_000_000,
        risk__claims=old,
        risk__hazards={"pool": True, "trampoline": True, "woodStove": True},
        risk__protections={
            "smokeAlarms": True,
            "burglarAlarm": True,
            "monitoredAlarm": True,
            "sprinklerSystem": True,
        },
    )
    base = 600 * 3.2 * 0.92 * 0.93 * 0.96 * 1.3 * 0.81 * 1.35 * (1.08 * 1.1 * 1.07) * 0.87
    options = quote(load_quote_config(), app, NOW)["options"]
    assert [o["annualPremium"] for o in options] == [
        round2(base + 24),
        round2(base * 1.13 + 24 + 48 + 36),
        round2(base * 1.26 + 108),
    ]
    assert options[1]["endorsements"] == ["identity_theft", "water_backup", "equipment_breakdown"]
    assert [o["liabilityLimit"] for o in options] == [1_000_000] * 3


def test_d5_6_2_an_age_band_is_the_first_that_holds_it_else_the_last() -> None:
    bands = load_quote_config().homeAgeBands
    assert [band_factor(bands, age) for age in (0, 10, 11, 25, 26, 100, 230)] == [
        0.92,
        0.92,
        1,
        1,
        1.12,
        1.28,
        1.28,
    ]


def test_d5_6_2_the_presenter_tables_are_exact() -> None:
    result = quote(load_quote_config(), APPLICATION, NOW)
    assert options_table(result).splitlines() == [
        "### Preliminary home insurance quote EHI-20261207-21DB82F9",
        "",
        "| Option | Annual premium | Monthly estimate | Dwelling | Extension | Deductible | "
        "Liability | Endorsements |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        "| Essential (ESSENTIAL) | $1,608.77 | $134.06 | $450,000.00 | 0% | $1,000.00 | "
        "$300,000.00 | None |",
        "| Enhanced (ENHANCED) | $1,901.91 | $158.49 | $450,000.00 | 10% | $1,000.00 | "
        "$500,000.00 | water_backup, equipment_breakdown |",
        "| Premier (PREMIER) | $2,135.05 | $177.92 | $450,000.00 | 25% | $1,000.00 | "
        "$1,000,000.00 | water_backup, identity_theft, equipment_breakdown |",
        "",
        "Valid through 2027-01-06 under demo rules 2027.1-demo. This is a non-binding estimate, "
        "not proof of insurance or an offer to bind coverage.",
        "You can compare options, change the deductible, or select an option for an agent "
        "follow-up.",
    ]
    assert comparison_table(result["options"][2:0:-1]).splitlines() == [
        "### Quote comparison",
        "",
        "| Option | Annual premium | Monthly estimate | Deductible | Liability | Extension | "
        "Endorsements |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        "| Premier (PREMIER) | $2,135.05 | $177.92 | $1,000.00 | $1,000,000.00 | 25% | "
        "water_backup, identity_theft, equipment_breakdown |",
        "| Enhanced (ENHANCED) | $1,901.91 | $158.49 | $1,000.00 | $500,000.00 | 10% | "
        "water_backup, equipment_breakdown |",
        "",
        "Would you like to select one, compare different options, or change the deductible?",
    ]
    assert money(1234567.891) == "$1,234,567.89"


def test_d5_6_now_is_config_today_else_the_environment_else_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME_INSURANCE_FLOW_CURRENT_DATE", "2027-03-01T15:30:00Z")
    assert current_moment() == datetime(2027, 3, 1, 15, 30, tzinfo=UTC)
    assert current_moment("2026-12-07") == NOW  # the session's day wins
    monkeypatch.setenv("HOME_INSURANCE_FLOW_CURRENT_DATE", "2027-03-01")
    assert current_moment() == datetime(2027, 3, 1, tzinfo=UTC)  # a date is its UTC midnight
    monkeypatch.setenv("HOME_INSURANCE_FLOW_CURRENT_DATE", "  ")
    assert abs((current_moment() - datetime.now(UTC)).total_seconds()) < 60
    monkeypatch.setenv("HOME_INSURANCE_FLOW_CURRENT_DATE", "next tuesday")
    with pytest.raises(ValueError) as error:
        current_moment("2026-12-07")
    assert (
        str(error.value)
        == INVALID_CURRENT_DATE
        == ("HOME_INSURANCE_FLOW_CURRENT_DATE must be a valid date.")
    )


def test_d5_6_one_year_later_is_set_utc_full_year() -> None:
    assert add_years(datetime(2028, 2, 29, tzinfo=UTC), 1) == datetime(2029, 3, 1, tzinfo=UTC)
    assert add_years(NOW, 1) == datetime(2027, 12, 7, tzinfo=UTC)
