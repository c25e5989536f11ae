"""PicoFlow's ``QuotePresenter``: the options table and the comparison, as the customer reads them.

The tables are made here, from the saved quote, and sent verbatim (``direct``): the model never
writes a premium. Money is en-US dollars with two decimals (``$1,608.77``), as JavaScript's
``Intl.NumberFormat("en-US", {style: "currency", currency: "USD"})`` writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

OPTIONS_HEADER = (
    "| Option | Annual premium | Monthly estimate | Dwelling | Extension | Deductible | Liability "
    "| Endorsements |"
)
OPTIONS_RULE = "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
COMPARISON_HEADER = (
    "| Option | Annual premium | Monthly estimate | Deductible | Liability | Extension "
    "| Endorsements |"
)
COMPARISON_RULE = "| --- | ---: | ---: | ---: | ---: | ---: | --- |"


def money(value: float) -> str:
    """``$`` and en-US grouping, two decimals: ``money(1608.768) == "$1,608.77"``."""
    return f"${value:,.2f}"


def endorsement_list(option: dict[str, Any]) -> str:
    """The option's endorsements joined with ", ", or "None"."""
    return ", ".join(option["endorsements"]) or "None"


def label(option: dict[str, Any]) -> str:
    """``Enhanced (ENHANCED)``."""
    return f"{option['name']} ({option['id']})"


def options_table(quote: dict[str, Any]) -> str:
    """Every option of an eligible quote, the validity line and what the customer can do."""
    rows = [
        f"| {label(o)} | {money(o['annualPremium'])} | {money(o['monthlyPremium'])} | "
        f"{money(o['dwellingCoverage'])} | {o['dwellingExtensionPercent']}% | "
        f"{money(o['deductible'])} | {money(o['liabilityLimit'])} | {endorsement_list(o)} |"
        for o in quote["options"]
    ]
    return "\n".join(
        [
            f"### Preliminary home insurance quote {quote['quoteId']}",
            "",
            OPTIONS_HEADER,
            OPTIONS_RULE,
            *rows,
            "",
            f"Valid through {quote['validThrough']} under demo rules {quote['rulesVersion']}. "
            "This is a non-binding estimate, not proof of insurance or an offer to bind coverage.",
            "You can compare options, change the deductible, or select an option for an agent "
            "follow-up.",
        ]
    )


def comparison_table(options: Sequence[dict[str, Any]]) -> str:
    """The chosen options side by side, in the order asked for, and the next question."""
    rows = [
        f"| {label(o)} | {money(o['annualPremium'])} | {money(o['monthlyPremium'])} | "
        f"{money(o['deductible'])} | {money(o['liabilityLimit'])} | "
        f"{o['dwellingExtensionPercent']}% | {endorsement_list(o)} |"
        for o in options
    ]
    return "\n".join(
        [
            "### Quote comparison",
            "",
            COMPARISON_HEADER,
            COMPARISON_RULE,
            *rows,
            "",
            "Would you like to select one, compare different options, or change the deductible?",
        ]
    )
