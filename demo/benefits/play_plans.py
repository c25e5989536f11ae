"""The offline model of MedicalPlanStep and HealthAccountStep.

The plans come from the prompt's PLAN_EVALUATION and the account terms from SELECTED_PLAN and
ACCOUNT_LIMITS, as an LLM would read them. A plan is selected only on an explicit choice: its
ID or name with a choosing verb ("I'll take the PPO"), the plan alone in reply to the table
("HDHP please"), or a yes to a plan read back; a question is answered, never taken as a choice,
and "you pick" gets the rule-based fit read back, not selected.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage
from rapidfuzz.distance import OSA

from demo.benefits.heard import Heard, guard
from demo.benefits.jsvalues import money
from demo.benefits.play_intake import defers
from demo.benefits.reading import amounts_in, is_no, is_question, is_yes
from picoflow.testing import tool_call

_PLANS = {
    "EPO_VALUE": r"epo[_\s-]*value|value[\s-]*epo|\bepo\b|\bvalue\s+(?:plan|one|option)",
    "HDHP_HSA": r"hdhp[_\s-]*hsa|hsa[\s-]*advantage|\bhdhp\b|high[\s-]*deductible|"
    r"\bthe\s+hsa\b(?!\s+(?:account|contribution))|\bhsa\s+(?:plan|one|option)",
    "PPO_STANDARD": r"ppo[_\s-]*standard|standard[\s-]*ppo|\bppo\b|"
    r"\bstandard\s+(?:plan|one|option)",
}
_TYPOS = {"hdhp": "HDHP_HSA", "hdph": "HDHP_HSA", "hhdp": "HDHP_HSA"}
_ORDINAL = re.compile(
    r"\b(?P<n>first|second|third|last|1st|2nd|3rd|top|bottom)\s+(?:one|plan|option|row)\b", re.I
)
_CHOOSE = re.compile(
    r"\b(?:i'?ll\s+(?:take|go\s+with|do|choose|pick|get)|i\s+(?:want|choose|pick|select|prefer|"
    r"'d\s+like|would\s+like|will\s+take|need)|go(?:ing)?\s+(?:with|for)|select|choose|pick|"
    r"enroll\s+(?:me\s+)?in|sign\s+me\s+up|put\s+me\s+(?:in|on|down\s+for)|let'?s\s+(?:do|go)|"
    r"take\s+the|i'?m\s+going\s+with|switch\s+(?:me\s+)?to|lock\s+in|book\s+(?:me\s+)?"
    r"(?:in|the)|get\s+me|give\s+me|make\s+it|i'?ll\s+have|opt\s+for)\b",
    re.I,
)
_RECOMMENDED = re.compile(
    r"recommend|suggest|\bthe\s+fit\b|rule[-\s]based|best\s+fit|your\s+pick|what\s+you\s+said",
    re.I,
)
_CHEAPEST = re.compile(r"cheapest|lowest\s+(?:premium|cost|price)|least\s+expensive", re.I)
_COMPARE = re.compile(
    r"compar|difference|differ\b|\bvs\.?\b|versus|side[\s-]by[\s-]side|stack\s+up", re.I
)
_SHOW = re.compile(
    r"\b(?:show|see|list|display|repeat)\b.*\b(?:plans?|options|table|again)\b|^\W*(?:the\s+)?"
    r"(?:plans|options)\W*$",
    re.I,
)
_PROVIDER = re.compile(
    r"\b(?P<title>dr\.?|doctor)\s+(?P<name>[a-z][\w.'-]*(?:\s+[a-z][\w.'-]*){0,2})", re.I
)
_NOT_NAME = re.compile(
    r"\s+(?:in|for|on|with|the|is|are|covered|under|accept|take|network|at|plan|ppo|hdhp|epo|"
    r"and|or|if|who)\b.*$",
    re.I,
)
_FILLER = re.compile(
    r"\b(?:the|please|pls|plz|ok(?:ay)?|plan|one|option|then|i\s+guess|thanks|thank\s+you|"
    r"yes|yeah|sure|id|that|it|is|medical)\b|[^\w\s]",
    re.I,
)
_HEALTH = re.compile(
    r"diabet|cancer|asthma|pregnan|surgery|insulin|diagnos|condition|chronic", re.I
)


def plans_in(text: str, evaluation: dict[str, Any]) -> list[str]:
    """The plan IDs `text` names, in order said, negated ones ("not the PPO") left out."""
    found: list[tuple[int, str]] = []
    for plan_id, pattern in _PLANS.items():
        for match in re.finditer(pattern, text, re.I):
            before = text[max(0, match.start() - 12) : match.start()].lower()
            if not re.search(r"\bnot\s+(?:the\s+)?$|\bno\s+$|n't\s+want\s+(?:the\s+)?$", before):
                found.append((match.start(), plan_id))
    for match in re.finditer(r"[a-z]{4}", text.lower()):
        typo = _TYPOS.get(match.group()) or (
            "HDHP_HSA"
            if OSA.distance(match.group(), "hdhp") == 1 and "h" in match.group()
            else None
        )
        if typo and not any(abs(at - match.start()) < 4 for at, _ in found):
            found.append((match.start(), typo))
    options = [option["planId"] for option in evaluation.get("options", [])]
    for match in _ORDINAL.finditer(text):
        index = {"first": 0, "1st": 0, "top": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2}
        position = index.get(match["n"].lower(), -1)
        if options:
            found.append((match.start(), options[position]))
    if _RECOMMENDED.search(text) and not is_question(text):
        found.append((_RECOMMENDED.search(text).start(), evaluation.get("recommendedPlanId", "")))  # type: ignore[union-attr]
    ordered = [plan_id for _, plan_id in sorted(found) if plan_id]
    return list(dict.fromkeys(ordered))


def describe(option: dict[str, Any]) -> str:
    """One plan's terms, from the evaluation, as a sentence."""
    hsa = (
        f"HSA-eligible with {money(option['employerHsaContribution'])} employer funding"
        if option["hsaEligible"]
        else "no HSA"
    )
    network = "includes" if option["outOfNetworkCoverage"] else "has no"
    return (
        f"{option['name']} ({option['planId']}): {money(option['premiumPerPayPeriod'])} per "
        f"paycheck ({money(option['annualEmployeePremium'])} a year), family deductible "
        f"{money(option['familyDeductible'])}, family out-of-pocket maximum "
        f"{money(option['familyOutOfPocketMaximum'])}, prescriptions "
        f"{option['prescriptionCoverage']}, {hsa}; it {network} out-of-network coverage"
    )


def _options(heard: Heard) -> dict[str, dict[str, Any]]:
    evaluation = heard.facts.get("PLAN_EVALUATION") or {}
    return {option["planId"]: option for option in evaluation.get("options", [])}


def _proposed(last_ai: str) -> str | None:
    found = re.search(r"Shall I select [^(]*\((?P<id>[A-Z_]+)\)\?", last_ai)
    return found["id"] if found else None


def _provider(text: str) -> str | None:
    found = _PROVIDER.search(text)
    if found is None:
        return None
    name = _NOT_NAME.sub("", found["name"]).strip(" ?.,!")
    return f"{found['title']} {name}".strip() if name else None


def medical(heard: Heard) -> AIMessage | str:
    """MedicalPlanStep's model: show, compare, check, answer; select on an explicit choice."""
    if not heard.said:
        return tool_call("show_benefits_medical_plans")
    hold = "No problem — no plan is selected. Tell me when you'd like to choose one."
    early = guard(heard, "end_medical_plan_enrollment", hold)
    if early is not None:
        return early
    evaluation = heard.facts.get("PLAN_EVALUATION") or {}
    text = " ".join(said.text for said in heard.latest)
    provider = _provider(text)
    if provider is not None or re.search(r"in[-\s]?network\b.*\b(?:dr|doctor)", text, re.I):
        return _check(
            provider, plans_in(heard.said[-1].text, evaluation) or plans_in(text, evaluation)
        )
    if _COMPARE.search(text):
        return _compare(plans_in(text, evaluation), evaluation)
    if _SHOW.search(text):
        return tool_call("show_benefits_medical_plans")
    return _choice(heard, evaluation)


def _choice(heard: Heard, evaluation: dict[str, Any]) -> AIMessage | str:
    """A selection on an explicit choice; an answer to a question; else the way forward."""
    final, options = re.sub(r"\bw/\s*", "with ", heard.said[-1].text), _options(heard)
    named = plans_in(final, evaluation)
    proposal = _proposed(heard.last_ai)
    if proposal and is_yes(final) and not named:
        return tool_call("select_benefits_medical_plan", planId=proposal)
    if is_question(final) or (proposal and is_no(final)):
        return _answer(final, named, evaluation, options)
    if len(named) == 1 and (_CHOOSE.search(final) or _bare(final)):
        return tool_call("select_benefits_medical_plan", planId=named[0])
    if len(named) > 1:
        listed = " or ".join(f"{options[i]['name']} ({i})" for i in named if i in options)
        return f"Which one would you like to select: {listed}?"
    if _CHEAPEST.search(final) and options:  # a plan by description: read back, never taken
        cheapest = min(options.values(), key=lambda option: option["premiumPerPayPeriod"])
        return (
            f"The lowest per-paycheck premium is {describe(cheapest)}. Shall I select "
            f"{cheapest['name']} ({cheapest['planId']})?"
        )
    return _nudge(final, evaluation, options)


def _bare(text: str) -> bool:
    """Whether `text` names a plan and nothing else ("HDHP please", "the PPO one")."""
    rest = text
    for pattern in (*_PLANS.values(), _ORDINAL.pattern, _RECOMMENDED.pattern):
        rest = re.sub(pattern, " ", rest, flags=re.I)
    rest = re.sub(
        r"\b(?:hdhp|hdph|hhdp|hsa|epo|ppo|value|standard|advantage)\b", " ", rest, flags=re.I
    )
    return not _FILLER.sub(" ", rest).strip()


def _check(provider: str | None, named: list[str]) -> AIMessage | str:
    if provider is None:
        return "Which provider should I look up, and for which plan?"
    if len(named) != 1:
        return (
            f"Which plan should I check {provider} against: EPO_VALUE, HDHP_HSA or PPO_STANDARD? "
            "Network status depends on the plan."
        )
    return tool_call("check_benefits_provider_network", planId=named[0], providerName=provider)


def _compare(named: list[str], evaluation: dict[str, Any]) -> AIMessage:
    every = [option["planId"] for option in evaluation.get("options", [])]
    if len(named) == 1:
        recommended = str(evaluation.get("recommendedPlanId", ""))
        named = [named[0], recommended] if recommended != named[0] else every
    if len(named) < 2:
        named = every
    return tool_call("compare_benefits_medical_plans", planIds=named[:3])


def _answer(
    text: str, named: list[str], evaluation: dict[str, Any], options: dict[str, dict[str, Any]]
) -> str:
    recommended = evaluation.get("recommendedPlanId", "")
    if _RECOMMENDED.search(text) or re.search(r"\bwhich\b.*\b(?:best|should)\b", text, re.I):
        reasons = " ".join(evaluation.get("recommendationReasons", []))
        return (
            f"The rule-based fit for your stated preferences is {recommended}: {reasons} It is "
            "decision support, not a guarantee or advice. Which plan would you like to select?"
        )
    if _CHEAPEST.search(text) and not named:
        cheapest = min(options.values(), key=lambda option: option["premiumPerPayPeriod"])
        return (
            f"The lowest per-paycheck premium is {describe(cheapest)}. Which plan would you like?"
        )
    chosen = [options[plan_id] for plan_id in named if plan_id in options] or list(options.values())
    listed = "; ".join(describe(option) for option in chosen)
    return f"{listed}. Which plan would you like to select?"


def _nudge(text: str, evaluation: dict[str, Any], options: dict[str, dict[str, Any]]) -> str:
    recommended = evaluation.get("recommendedPlanId", "")
    name = options.get(recommended, {}).get("name", recommended)
    if defers(text):
        return (
            f"I can't choose a plan for you. The rule-based fit for your preferences is {name} "
            f"({recommended}). Shall I select {name} ({recommended})?"
        )
    note = "You don't need to share health details here. " if _HEALTH.search(text) else ""
    return (
        f"{note}Which plan would you like: EPO_VALUE, HDHP_HSA or PPO_STANDARD? I can also "
        "compare plans or check whether a provider is in network."
    )


# -- the health account --------------------------------------------------------------------

PER_PERIOD = re.compile(
    r"per\s+(?:pay\s*check|pay\s+period|check|month|week)|a\s+(?:month|paycheck|week)|monthly|"
    r"bi-?weekly|each\s+(?:paycheck|month)|every\s+(?:paycheck|month)",
    re.I,
)
_MAX = re.compile(
    r"\bmax(?:imum|ed|\s+out)?\b|as\s+much\s+as\s+(?:i\s+can|i'?m\s+allowed|i\s+am\s+allowed|"
    r"possible|allowed|permitted)|full\s+(?:amount|limit)|the\s+limit\b|all\s+i\s+can",
    re.I,
)
_HSA = re.compile(r"\bhsa\b|health\s+savings", re.I)
_FSA = re.compile(r"\bfsa\b|flexible\s+spending", re.I)
WAIVE = re.compile(
    r"\bwaive|\bno\s+(?:thanks|thank\s+you|account|hsa|fsa|contributions?)\b|\bskip|don'?t\s+"
    r"(?:want|need)|not\s+(?:interested|now|this\s+year)|\bdecline|\bnone\b|opt\s+out|\bpass\b|"
    r"\bzero\b|^\W*no\W*$",
    re.I,
)
_TAX = re.compile(r"\btax", re.I)


def account_intro(plan: dict[str, Any], limits: dict[str, Any]) -> str:
    """What the account is, its limit and the employer part, and the question."""
    kind = "an HSA (health savings account)" if plan.get("hsaEligible") else "a healthcare FSA"
    employer = limits.get("employerContribution", 0)
    limit = limits.get("annualLimit", 0)
    part = (
        f" The employer contributes {money(employer)}, which counts toward the limit, so you can "
        f"contribute up to {money(limit - employer)} yourself."
        if employer
        else ""
    )
    return (
        f"With {plan.get('name')} ({plan.get('planId')}) you can use {kind}. The fictional demo "
        f"limit is {money(limit)} a year.{part} How much would you like to contribute for the "
        "year, in whole dollars? You can also waive it with $0."
    )


def health_account(heard: Heard) -> AIMessage | str:
    """HealthAccountStep's model: explain the account, take an annual whole-dollar amount."""
    plan = heard.facts.get("SELECTED_PLAN") or {}
    limits = heard.facts.get("ACCOUNT_LIMITS") or {}
    if not heard.said:
        return account_intro(plan, limits)
    hold = "No problem — nothing has been recorded. Tell me the amount when you're ready."
    early = guard(heard, "end_health_account_enrollment", hold)
    if early is not None:
        return early
    final = heard.said[-1].text
    if is_question(final) and not amounts_in(final):
        if _TAX.search(final):
            return (
                "I can't give tax advice; please check the official plan materials or a tax "
                "adviser. " + account_intro(plan, limits)
            )
        return account_intro(plan, limits)
    return _election(heard, plan, limits)


def _said_amount(heard: Heard, limits: dict[str, Any]) -> tuple[str | None, float | None, bool]:
    """The account type, the amount and whether it was per pay period, as said so far."""
    kind: str | None = None
    amount: float | None = None
    per_period = False
    for said in heard.kept():
        text = said.text
        kind = "hsa" if _HSA.search(text) else "healthcare_fsa" if _FSA.search(text) else kind
        found = amounts_in(text)
        if found:  # a number said wins over "the max": code judges it against the limit
            amount, per_period = found[-1], bool(PER_PERIOD.search(text))
        elif _MAX.search(text):
            amount = float(limits.get("annualLimit", 0) - limits.get("employerContribution", 0))
        elif WAIVE.search(text):
            kind, amount = "waive", 0.0
    return kind, amount, per_period


def _election(heard: Heard, plan: dict[str, Any], limits: dict[str, Any]) -> AIMessage | str:
    kind, amount, per_period = _said_amount(heard, limits)
    if amount is None:
        if defers(heard.said[-1].text):
            return "I can't choose the amount for you. " + account_intro(plan, limits)
        return (
            "How much would you like to contribute for the year, in whole dollars, or would you "
            "like to waive it with $0?"
        )
    if per_period:
        return "Please give me the amount as an annual total in whole dollars."
    if amount != int(amount):
        return "The contribution must be in whole dollars. What annual amount would you like?"
    if kind is None:
        kind = "waive" if amount == 0 else "hsa" if plan.get("hsaEligible") else "healthcare_fsa"
    return tool_call(
        "capture_benefits_health_account", accountType=kind, employeeAnnualContribution=int(amount)
    )
