"""PresentQuoteStep's offline model: show, compare, re-rate with another deductible, select.

Options are read from the prompt's QUOTE_RESULT by name or id ("Enhanced", "PREMIER"), by
position ("the middle one", "option 2") or by what sets them apart ("the cheapest", "the one
with identity theft"). A hedge ("maybe Enhanced?") is read back as a question and a yes
selects it; a choice taken back, a question or a deductible the rules do not offer selects
nothing. The tables themselves are the flow's: the model only calls the tools.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.insurance.offline import faq, words
from demo.insurance.offline.transcript import Event, events, facts
from demo.insurance.offline.words import fuzzy
from demo.insurance.presenter import endorsement_list, label, money
from demo.reading import corrections
from picoflow.testing import tool_call

_I = re.IGNORECASE
_COMPARE = re.compile(r"\b(?:compare|comparison|side by side|difference|differ|vs\.?|versus)\b", _I)
_SHOW = re.compile(
    r"\b(?:show|see|display|list)\b.*\b(?:options|table|quote|again|them)\b|"
    r"^\W*(?:options|again)\W*$",
    _I,
)
_DEDUCTIBLE = re.compile(r"\bdeductible\b", _I)
_SELECT = re.compile(
    r"\b(?:take|choose|chose|pick|select|go\s+with|want|like|get|buy|purchase|prefer|sign\s+me\s+up|"
    r"i'?ll\s+have|let'?s\s+do|book|that\s+one|sounds\s+good|works\s+for\s+me)\b",
    _I,
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|probably|might|thinking\s+(?:about|of)|leaning|not\s+sure|considering)\b",
    _I,
)
_POSITIONS = {
    0: r"\b(?:first|1st|option\s*(?:#\s*)?1|number\s+one|#1|basic|base)\b",
    1: r"\b(?:second|2nd|middle|option\s*(?:#\s*)?2|number\s+two|#2|mid)\b",
    2: r"\b(?:third|3rd|last|option\s*(?:#\s*)?3|number\s+three|#3)\b",
}
_CHEAPEST = re.compile(
    r"\b(?:cheapest|lowest(?:\s+price)?|least\s+expensive|most\s+affordable|"
    r"lowest\s+premium)\b",
    _I,
)
_PRICIEST = re.compile(r"\b(?:most\s+expensive|priciest|highest\s+premium)\b", _I)
_MOST_COVER = re.compile(r"\b(?:most|highest|best|full(?:est)?)\s+(?:coverage|protection)\b", _I)
_PROPOSED = re.compile(r"Shall I select (?P<name>.+?) \((?P<id>[A-Z_]+)\)")


def respond(messages: Sequence[BaseMessage]) -> AIMessage | str:
    """The options model's reply."""
    known = facts(str(messages[0].text))
    quote = known.get("QUOTE_RESULT") or {}
    options = list(quote.get("options") or [])
    history = events(messages)
    last = history[-1] if history else Event("opener")
    if last.kind == "opener":
        return tool_call("show_home_quote_options")
    if last.kind == "result":
        return f"{last.text} {_menu(options)}"
    return _answer(last.text, options, quote, history)


def _answer(
    text: str, options: list[dict[str, Any]], quote: dict[str, Any], history: list[Event]
) -> AIMessage | str:
    if words.has_sensitive(text):
        return f"{words.SENSITIVE_REPLY} {_menu(options)}"
    if corrections.withdrawn(text):
        return f"No problem: nothing is selected. {_menu(options)}"
    said = corrections.settle(text)
    named = named_options(said, options)
    if _DEDUCTIBLE.search(said) or (
        re.search(r"\b(?:1,?000|2,?500|5,?000|[125](?:\.5)?k)\b", said) and not named
    ):
        return _deductible(said, options)
    if words.wants_to_stop(said) and not named:
        return tool_call("end_present_quote")
    if _COMPARE.search(said):
        ids = [o["id"] for o in named] if len(named) >= 2 else [o["id"] for o in options]
        return tool_call("compare_home_quote_options", optionIds=ids[:3])
    if _SHOW.search(said) and not named:
        return tool_call("show_home_quote_options")
    proposed = _proposal(history)
    if proposed and words.is_yes(said) and not named:
        return tool_call("select_home_quote_option", optionId=proposed)
    return _choice(said, named, options, quote)


def _choice(
    said: str, named: list[dict[str, Any]], options: list[dict[str, Any]], quote: dict[str, Any]
) -> AIMessage | str:
    asking = words.is_question(said)
    if len(named) > 1:
        return f"Which one would you like: {' or '.join(label(o) for o in named)}?"
    if named and (asking or _HEDGE.search(said)):
        option = named[0]
        lead = f"{describe(option)} " if asking else ""
        return f"{lead}Shall I select {label(option)} for an agent follow-up?"
    if named:
        return tool_call("select_home_quote_option", optionId=named[0]["id"])
    if asking:
        answer = (
            faq.common_answer(said, {})
            if not re.search(r"\binclude|cover|differ", said, _I)
            else None
        )
        return f"{answer or _overview(options)} {_menu(options)}"
    return f"Sorry, I didn't catch which option. {_menu(options)}"


def named_options(text: str, options: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The options `text` names, by name or id, position or description, in order said."""
    found: list[tuple[int, dict[str, Any]]] = []
    for index, option in enumerate(options):
        for pattern in (rf"\b{re.escape(option['name'])}\b", rf"\b{re.escape(option['id'])}\b"):
            found += [(m.start(), option) for m in re.finditer(pattern, text, _I)]
        if index in _POSITIONS and len(options) == 3:
            found += [(m.start(), option) for m in re.finditer(_POSITIONS[index], text, _I)]
    if options:
        by_price = sorted(options, key=lambda o: o["annualPremium"])
        cover = max(options, key=lambda o: (o["liabilityLimit"], o["dwellingExtensionPercent"]))
        for described, option in (
            (_CHEAPEST, by_price[0]),
            (_PRICIEST, by_price[-1]),
            (_MOST_COVER, cover),
        ):
            found += [(m.start(), option) for m in described.finditer(text)]
    if not found:  # a misspelled name: "enhaced"
        names = {option["name"]: option for option in options}
        found = [(start, names[name]) for start, name in fuzzy(text, list(names))]
    if not found and re.search(r"\bidentity\b", text, _I):
        with_it = [o for o in options if "identity_theft" in o["endorsements"]]
        found = [(0, with_it[0])] if len(with_it) == 1 else []
    ordered = [option for _, option in sorted(found, key=lambda item: item[0])]
    return list({option["id"]: option for option in ordered}.values())


def _deductible(text: str, options: list[dict[str, Any]]) -> AIMessage | str:
    values = [a.value for a in words.amounts(text) if a.value < 50_000]
    if re.search(r"\b(?:lowest|smallest|minimum)\b", text, _I):
        values = [1000.0]
    elif re.search(r"\b(?:highest|largest|biggest|maximum)\b", text, _I):
        values = [5000.0]
    current = options[0]["deductible"] if options else None
    if not values:
        now = f"It is {money(current)} now. " if current else ""
        return f"{now}Which deductible would you like: $1,000, $2,500 or $5,000?"
    value = values[-1]
    if value not in (1000, 2500, 5000):
        return "The deductible can be $1,000, $2,500 or $5,000. Which would you like?"
    if value == current:
        return f"Your deductible is already {money(value)}. {_menu(options)}"
    return tool_call("change_home_quote_deductible", deductible=int(value))


def _proposal(history: list[Event]) -> str | None:
    """The option the assistant's last message offered to select, if the customer answers it."""
    said = [event for event in history if event.kind == "ai"]
    if not said or history.index(said[-1]) != len(history) - 2:
        return None
    match = _PROPOSED.search(said[-1].text)
    return match["id"] if match else None


def describe(option: dict[str, Any]) -> str:
    """One option in a sentence, from the quote's own figures."""
    return (
        f"{label(option)}: {money(option['annualPremium'])} a year (about "
        f"{money(option['monthlyPremium'])} a month), dwelling {money(option['dwellingCoverage'])} "
        f"with a {option['dwellingExtensionPercent']}% extension, {money(option['deductible'])} "
        f"deductible, {money(option['liabilityLimit'])} liability, endorsements: "
        f"{endorsement_list(option)}."
    )


def _overview(options: list[dict[str, Any]]) -> str:
    return " ".join(describe(option) for option in options)


def _menu(options: list[dict[str, Any]]) -> str:
    names = ", ".join(label(option) for option in options)
    return f"You can compare options, change the deductible, or select one ({names})."
