"""PicoFlow's ``RatingEngine``: eligibility, referral reasons, the quote id and the premiums.

All of it is code, never the model's: the model collects facts, this decides. ``quote`` takes
the application ``{qualification, property, risk, coverage}`` (that key order, each value as
its step saved it) and "now", and returns the quote result a step saves as ``quoteResult``.

Worked example (the scenario's home, rated on 2026-12-07): 450,000 of dwelling at 3.2 per
thousand is 1,440; built 1998 (28 years: 1.12), a 6-year roof (1.0), wood frame (1.05), primary
(1.0), 1,000 deductible (1.0), no claims (1.0), no hazards, a monitored alarm (1 - 0.05): base
1,608.768. Essential is round2(1,608.768) = 1,608.77 a year, 134.06 a month.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from demo.insurance.clock import add_days
from demo.insurance.config import AgeBand, QuoteConfig, Tier
from demo.insurance.jsjson import iso_string, round2, stringify

APPLICATION_KEYS = ("qualification", "property", "risk", "coverage")
"""The application's keys, in the order JSON.stringify writes them for the quote id."""


def quote_id(application: dict[str, Any], now: datetime) -> str:
    """``EHI-<YYYYMMDD>-<first 8 hex of SHA-256(JSON.stringify(application)), upper-cased>``."""
    digest = hashlib.sha256(stringify(application).encode("utf-8")).hexdigest()
    return f"EHI-{now:%Y%m%d}-{digest[:8].upper()}"


def reason_codes(config: QuoteConfig, application: dict[str, Any], now: datetime) -> list[str]:
    """The referral reasons, in PicoFlow's order, each once."""
    rules = config.referralRules
    home, coverage = application["property"], application["coverage"]
    recent = [c for c in application["risk"]["claims"] if c["year"] >= now.year - 5]
    checks = [
        ("UNSUPPORTED_STATE", application["qualification"]["state"] not in config.supportedStates),
        ("HIGH_DWELLING_LIMIT", coverage["dwellingCoverage"] > rules.maxDwellingCoverage),
        ("ROOF_AGE_REVIEW", home["roofAgeYears"] > rules.maxRoofAgeYears),
        ("HISTORIC_HOME_REVIEW", home["yearBuilt"] < rules.minimumYearBuilt),
        ("CLAIMS_FREQUENCY_REVIEW", len(recent) > rules.maxClaimsInFiveYears),
        ("LARGE_CLAIM_REVIEW", any(c["amount"] > rules.maxSingleClaimAmount for c in recent)),
    ]
    return list(dict.fromkeys(code for code, failed in checks if failed))


def band_factor(bands: list[AgeBand], years: int) -> float:
    """The first band whose ``maxYears`` is at least `years`, else the last one."""
    return next((band.factor for band in bands if years <= band.maxYears), bands[-1].factor)


def base_premium(config: QuoteConfig, application: dict[str, Any], now: datetime) -> float:
    """The annual premium before the tier factor and the endorsement fees (see the module)."""
    qualification, home = application["qualification"], application["property"]
    risk, coverage = application["risk"], application["coverage"]
    hazards = 1.0
    for hazard, factor in config.hazardFactors.items():
        if risk["hazards"][hazard]:
            hazards *= factor
    discount = 1.0
    for protection, share in config.protectionDiscounts.items():
        if risk["protections"][protection]:
            discount -= share
    claims = config.claimFactors[str(min(len(risk["claims"]), 2))]  # type: ignore[index]
    return float(
        coverage["dwellingCoverage"]
        / 1000
        * config.baseRatePerThousand
        * band_factor(config.homeAgeBands, max(0, now.year - home["yearBuilt"]))
        * band_factor(config.roofAgeBands, home["roofAgeYears"])
        * config.constructionFactors[home["construction"]]
        * config.occupancyFactors[qualification["occupancy"]]
        * config.deductible_factor(coverage["deductible"])
        * claims
        * hazards
        * discount
    )


def option(
    config: QuoteConfig, tier: Tier, base: float, coverage: dict[str, Any]
) -> dict[str, Any]:
    """One tier's option: requested then included endorsements (each once), its premiums."""
    endorsements = list(dict.fromkeys([*coverage["endorsements"], *tier.includedEndorsements]))
    fees = sum(config.endorsementAnnualFees[e] for e in endorsements)
    annual = round2(base * tier.factor + fees)
    return {
        "id": tier.id,
        "name": tier.name,
        "annualPremium": annual,
        "monthlyPremium": round2(annual / 12),
        "dwellingCoverage": coverage["dwellingCoverage"],
        "dwellingExtensionPercent": tier.dwellingExtensionPercent,
        "deductible": coverage["deductible"],
        "liabilityLimit": max(coverage["liabilityLimit"], tier.minimumLiabilityLimit),
        "endorsements": endorsements,
    }


def quote(config: QuoteConfig, application: dict[str, Any], now: datetime) -> dict[str, Any]:
    """``RatingEngine.quote(application, now)``: the decision, reasons, id, dates and options.

    The decision is ``unsupported`` (the state), ``referral`` (any other reason) or
    ``eligible``; only an eligible quote has options.
    """
    ordered = {key: application[key] for key in APPLICATION_KEYS}
    reasons = reason_codes(config, ordered, now)
    decision = (
        "unsupported" if "UNSUPPORTED_STATE" in reasons else "referral" if reasons else "eligible"
    )
    options: list[dict[str, Any]] = []
    if decision == "eligible":
        base = base_premium(config, ordered, now)
        options = [option(config, tier, base, ordered["coverage"]) for tier in config.tiers]
    return {
        "quoteId": quote_id(ordered, now),
        "decision": decision,
        "reasonCodes": reasons,
        "generatedAt": iso_string(now),
        "validThrough": iso_string(add_days(now, config.quoteValidDays))[:10],
        "rulesVersion": config.rulesVersion,
        "options": options,
    }
