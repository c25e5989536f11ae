"""RiskStep's offline model: claims of the last five years, hazards, protections.

A claim needs its year, type and an approximate amount: one said in part is kept and the rest
asked for ("About how much was the 2022 water claim?"). Hazards and protections are booleans
each, read with their negation ("no pool, trampoline or wood stove" is three noes; "a monitored
alarm" is a burglar alarm that is monitored); "none" answers the question just asked.
"""

from __future__ import annotations

import re
from typing import Any

from demo.insurance.offline import faq
from demo.insurance.offline.stage import Context, Found, Stage, error_fields
from demo.insurance.offline.words import amounts, is_no, is_yes, polarity, years

_I = re.IGNORECASE
HAZARDS = ("pool", "trampoline", "woodStove")
PROTECTIONS = ("smokeAlarms", "burglarAlarm", "monitoredAlarm", "sprinklerSystem")
_CLAIM_TYPES = [
    ("water", r"water|leak\w*|flood\w*|pipes?|burst|plumbing|sewer"),
    ("fire", r"fire|smoke damage|kitchen fire|burn(?:ed|t)?"),
    ("wind", r"wind|storm|hail|tree|hurricane|tornado"),
    ("theft", r"theft|burglar\w*|break[- ]?in|stolen|robbery|robbed|vandal\w*"),
    ("liability", r"liability|slip(?:ped)?|fell|dog bite|injur\w*|lawsuit|sued"),
    ("other", r"other"),
]
_CLAIM_TYPE = re.compile(
    r"\b(?:" + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _CLAIM_TYPES) + r")\b", _I
)
_NO_CLAIMS = re.compile(
    r"\b(?:no|zero|none|never\s+(?:had|filed|made)(?:\s+a(?:ny)?)?|haven'?t\s+(?:had|filed|made)"
    r"(?:\s+any)?|not\s+(?:a\s+single|any)|without)\s+(?:\w+\s+)?claims?\b|\bclaims?[- ]free\b|"
    r"\bno\s+cla[i]?ms?\b|\bnever\s+(?:had|filed|made)\s+(?:a|one|any|anything)\b",
    _I,
)
_NOTHING = re.compile(
    r"^\W*(?:no(?:pe)?|none|nothing|nah|neither|never|zero|none of (?:those|them|that)|"
    r"no(?:ne)? (?:to )?(?:all|any|all three|all four)(?: of (?:those|them))?)\W*$",
    _I,
)
_ALL = re.compile(
    r"\b(?:all (?:three|four|of (?:them|those|the above))|everything|yes to all)\b", _I
)
_ONLY = re.compile(r"\b(?:only|just)\b", _I)
_EXCEPT = re.compile(
    r"\b(?:except(?:\s+for)?|but\s+not|other\s+than|apart\s+from|besides|minus)\b", _I
)
_REST_NO = re.compile(
    r"\bthat'?s\s+(?:it|all)\b|"
    r"\b(?:the )?(?:rest|others?|everything else)\s*(?::|=|-|are|is)?\s*(?:no|none|nope)\b|"
    r"\bnothing else\b|\bno (?:to )?(?:the )?(?:rest|others)\b",
    _I,
)
_HAZARD = re.compile(
    r"\b(?P<pool>(?:swimming\s+)?pool)\b|\b(?P<trampoline>trampolines?|tramp)\b|"
    r"\b(?P<woodStove>wood[- ]?(?:burning\s+)?stove|woodstove|wood[- ]burner)\b",
    _I,
)
_PROTECTION = re.compile(
    r"\b(?P<smokeAlarms>smoke\s+(?:alarms?|alrams?|detectors?))\b|"
    r"\b(?P<monitoredAlarm>(?:professionally\s+|centrally\s+)?monitor(?:ed|ing)|adt|central\s+station)\b|"
    r"\b(?P<burglarAlarm>burglar\s+alarms?|security\s+(?:system|alarm)s?|alarm\s+system|"
    r"house\s+alarm|(?<!smoke\s)(?<!fire\s)alarm)\b|"
    r"\b(?P<sprinklerSystem>(?:fire\s+)?sprinklers?(?:\s+system)?)\b",
    _I,
)
_UNMONITORED = re.compile(
    r"\b(?:un-?monitored|self[- ]monitored|not\s+monitored|no\s+monitoring)\b", _I
)

QUESTIONS = {
    "claims": (
        "Have you had any insurance claims in the last five years? For each, tell me the year, "
        "the type (water, fire, wind, theft, liability or other) and roughly how much it was"
    ),
    "hazards": "is there a pool, a trampoline or a wood stove",
    "protections": (
        "does the home have smoke alarms, a burglar alarm, is the alarm professionally "
        "monitored, and is there a sprinkler system"
    ),
}


def _claim_type(match: re.Match[str]) -> str:
    return next(name for name, value in match.groupdict().items() if value)


def _read_claims(text: str, found: Found, context: Context) -> None:
    """Each claim type mentioned, with the nearest unused year and amount around it."""
    draft = context.draft
    asking = "claims" in context.asking
    if not asking and not re.search(r"\bcla[i]?ms?\b|\bfiled\b", text, _I):
        return  # "a burglar alarm" is no theft claim
    partial = [dict(c) for c in draft.get("_partial", [])]
    types = [(m.start(), _claim_type(m)) for m in _CLAIM_TYPE.finditer(text)]
    said_years = [(start, year) for year, start in years(text)]
    money = [(a.start, a.value) for a in amounts(text) if not 1990 <= a.value <= 2100 or a.money]
    if not types and asking and partial:
        _complete_partial(partial[-1], said_years, money)
    new = []
    for start, kind in types:
        year = _nearest(said_years, start)
        amount = _nearest(money, start)
        new.append({"year": year, "type": kind, "amount": amount})
    if _NO_CLAIMS.search(text) or (asking and not types and not partial and _NOTHING.match(text)):
        found.values["claims"], found.values["_partial"] = [], []
        return
    if not new and not partial:
        return
    _keep_claims(found, context, [*partial, *new] if new else partial)


def _nearest(options: list[tuple[int, Any]], start: int) -> Any:
    if not options:
        return None
    best = min(options, key=lambda item: abs(item[0] - start))
    options.remove(best)
    return best[1]


def _complete_partial(claim: dict[str, Any], said_years: list[Any], money: list[Any]) -> None:
    if claim.get("year") is None and said_years:
        claim["year"] = said_years.pop(0)[1]
    if claim.get("amount") is None and money:
        claim["amount"] = money.pop(0)[1]


def _keep_claims(found: Found, context: Context, claims: list[dict[str, Any]]) -> None:
    cutoff = context.today.year - 5
    old = [c for c in claims if c.get("year") is not None and c["year"] < cutoff]
    claims = [c for c in claims if c not in old]
    complete = [c for c in claims if c["year"] is not None and c["amount"] is not None]
    partial = [c for c in claims if c not in complete]
    earlier = [c for c in context.draft.get("claims") or [] if c not in complete]
    found.values["_partial"] = partial
    if old:
        listed = ", ".join(str(c["year"]) for c in old)
        found.problems.append(f"I only need claims from {cutoff} on, so I left out {listed}.")
    if partial:
        found.values.pop("claims", None)
        context.draft.pop("claims", None)
        found.named.append("claims")
    elif complete or old:
        found.values["claims"] = [*earlier, *complete]


def _read_flags(
    text: str, found: Found, pattern: re.Pattern[str], names: tuple[str, ...], asking: bool
) -> None:
    """Booleans named with their polarity; "none", "all", "only X" for the question asked."""
    marks = {
        m.start(): next(k for k, v in m.groupdict().items() if v) for m in pattern.finditer(text)
    }
    states = polarity(text, pattern)
    exception = _EXCEPT.search(text)
    if (
        exception
        and marks
        and re.search(r"\b(?:all|everything|every)\b", text[: exception.start()], _I)
    ):
        found.values.update(dict.fromkeys(names, True))  # "all of them except sprinklers"
        states = {start: start < exception.start() for start in marks}
    for start, name in marks.items():
        found.values[name] = states.get(start, True)
    named = set(marks.values())
    if not named:
        if asking and _NOTHING.match(text):
            found.values.update(dict.fromkeys(names, False))
        elif asking and _ALL.search(text):
            found.values.update(dict.fromkeys(names, True))
        elif asking and is_yes(text):
            found.named.extend(names)
        elif asking and is_no(text):
            found.values.update(dict.fromkeys(names, False))
        return
    if _ONLY.search(text) or _REST_NO.search(text):
        found.values.update({name: False for name in names if name not in named})


def read(text: str, context: Context) -> Found:
    """The risk facts `text` states."""
    found = Found()
    _read_claims(text, found, context)
    _read_flags(text, found, _HAZARD, HAZARDS, "pool" in context.asking)
    _read_flags(text, found, _PROTECTION, PROTECTIONS, "smokeAlarms" in context.asking)
    if _UNMONITORED.search(text):
        found.values["monitoredAlarm"] = False
        if "burglarAlarm" not in found.values and re.search(
            r"\b(?:un-?monitored|self[- ]monitored)\b", text, _I
        ):
            found.values["burglarAlarm"] = True
    elif found.values.get("monitoredAlarm"):
        found.values["burglarAlarm"] = True
    elif found.values.get("burglarAlarm") is False and "monitoredAlarm" not in found.values:
        found.values["monitoredAlarm"] = False
    return found


def question(fields: tuple[str, ...], draft: dict[str, Any] | None = None) -> str:
    """What the model asks for `fields` (a claim said in part: what it still needs)."""
    partial = (draft or {}).get("_partial")
    if "claims" in fields and partial:
        return partial_question(partial)
    if "claims" in fields:
        return QUESTIONS["claims"] + "?"
    hazards = [name for name in fields if name in HAZARDS]
    protections = [name for name in fields if name in PROTECTIONS]
    asked = []
    if hazards:
        asked.append(
            QUESTIONS["hazards"]
            if len(hazards) == 3
            else "is there " + " or ".join(_HAZARD_WORDS[n] for n in hazards)
        )
    if protections:
        asked.append(
            QUESTIONS["protections"]
            if len(protections) == 4
            else "does the home have " + " and ".join(_PROTECTION_WORDS[n] for n in protections)
        )
    text = "; and ".join(asked) or QUESTIONS["hazards"]
    return text[0].upper() + text[1:] + "?"


_HAZARD_WORDS = {"pool": "a pool", "trampoline": "a trampoline", "woodStove": "a wood stove"}
_PROTECTION_WORDS = {
    "smokeAlarms": "smoke alarms",
    "burglarAlarm": "a burglar alarm",
    "monitoredAlarm": "professional alarm monitoring",
    "sprinklerSystem": "a sprinkler system",
}


def partial_question(partial: list[dict[str, Any]]) -> str:
    """What a claim said in part still needs."""
    claim = partial[-1]
    what = f"the {claim['type']} claim" if claim.get("type") else "that claim"
    if claim.get("year") is None and claim.get("amount") is None:
        return f"What year was {what}, and roughly how much was it?"
    if claim.get("year") is None:
        return f"What year was {what}?"
    return f"About how much was {what} from {claim['year']}?"


def say(name: str, value: Any) -> str:
    """A fact read back."""
    if name == "claims":
        if not value:
            return "no claims"
        return ", ".join(f"a {c['type']} claim in {c['year']} (${c['amount']:,.0f})" for c in value)
    words = {**_HAZARD_WORDS, **_PROTECTION_WORDS}
    if name in words:
        return ("" if value else "no ") + words[name].removeprefix("a ")
    return str(value)


def answer(text: str, known: dict[str, Any]) -> str | None:
    """The risk stage's answers, then the common ones."""
    lowered = text.lower()
    if re.search(r"\b(?:claim|claims)\b", lowered) and re.search(
        r"\b(?:count|what|which|small)\b", lowered
    ):
        return (
            "Any claim you filed on a home policy in the last five years counts, even a small one."
        )
    if re.search(r"\bmonitor", lowered):
        return "Monitored means a company watches the alarm around the clock and calls for help."
    if re.search(r"\b(?:eligib|qualify|approved|declin)", lowered):
        return "Eligibility is decided by our rules after you review your answers, not by me."
    return faq.common_answer(text, known)


def rejected(feedback: str) -> tuple[str, ...]:
    """The fields a refusal clears."""
    if feedback.startswith("A claim year"):
        return ("claims",)
    return error_fields(feedback)


def args(draft: dict[str, Any]) -> dict[str, Any]:
    """capture_home_risk's arguments."""
    return {
        "claims": [
            {"year": c["year"], "type": c["type"], "amount": c["amount"]} for c in draft["claims"]
        ],
        "hazards": {name: draft[name] for name in HAZARDS},
        "protections": {name: draft[name] for name in PROTECTIONS},
    }


def flatten(saved: dict[str, Any]) -> dict[str, Any]:
    """The saved section as draft fields."""
    return {
        "claims": list(saved.get("claims", [])),
        **saved.get("hazards", {}),
        **saved.get("protections", {}),
    }


STAGE = Stage(
    tool="capture_home_risk",
    end_tool="end_risk_quote",
    fact="RISK",
    groups=(("claims",), HAZARDS, PROTECTIONS),
    read=read,
    question=question,
    args=args,
    flatten=flatten,
    say=say,
    intro="Thanks! Next, claims and safety.",
    answer=answer,
    rejected=rejected,
)
