"""Shared helpers of the HomeInsuranceQuoteFlow tests: the offline engine, conversations staged
once and copied, and an engine whose model is scripted for one stage and offline elsewhere.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.insurance.flow import HomeInsuranceQuoteFlow
from demo.insurance.offline import offline_provider, respond
from picoflow import FlowEngine, TurnResult
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel

TODAY = {"today": "2026-12-07"}
FLOW = "HomeInsuranceQuoteFlow"

INTAKE = [
    "hi, I'd like a home insurance quote",
    "Portland, Oregon 97201",
    "we own it, it's our primary residence, start January 15",
    "single family house built in 1998",
    "2,100 sq ft, two stories, wood frame",
    "asphalt shingles, about 6 years old",
    "plumbing never updated, electrical 2015, furnace replaced 2019",
    "no claims",
    "no pool, trampoline or wood stove",
    "smoke alarms and a monitored burglar alarm, no sprinklers",
]
STAGES: dict[str, list[str]] = {
    "qualification": INTAKE[:1],
    "property": INTAKE[:3],
    "risk": INTAKE[:7],
    "coverage": INTAKE,
    "review": [*INTAKE, "450k to rebuild, $1,000 deductible, 300k liability, no endorsements"],
}
STAGES["options"] = [*STAGES["review"], "looks good"]
STAGES["contact"] = [*STAGES["options"], "I'll take Enhanced"]
STAGES["referral"] = ["hi", "Seattle, Washington 98101", "we own it, primary, start jan 15"]

_STAGED: dict[str, dict[str, Any]] = {}


def offline_engine(store: MemoryStore | None = None) -> FlowEngine:
    """The flow on its offline model."""
    return FlowEngine(
        [HomeInsuranceQuoteFlow],
        store=store or MemoryStore(),
        providers={"offline": offline_provider},
    )


async def talk(
    engine: FlowEngine, lines: Sequence[str], session: str | None = None
) -> tuple[list[TurnResult], dict[str, Any]]:
    """Say `lines` (a new session gets today's date); every turn must succeed."""
    results = []
    for line in lines:
        result = await engine.run(
            FLOW, line, session_id=session, config=TODAY if not session else None
        )
        assert result.success, result.message
        results.append(result)
        session = result.session_id
    doc = await engine.get_session(session or "")
    assert doc is not None
    return results, doc


async def staged(stage: str) -> dict[str, Any]:
    """A copy of the session the offline model reaches with `STAGES[stage]`."""
    if stage not in _STAGED:
        _, doc = await talk(offline_engine(), STAGES[stage])
        _STAGED[stage] = doc
    return copy.deepcopy(_STAGED[stage])


def hybrid(**queues: list[AIMessage | str]) -> ScriptedChatModel:
    """A model that answers a step offering tool `name` from ``queues[name]`` while it lasts,
    and offline otherwise, so a test scripts one stage's call and lets the rest run."""

    def policy(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
        for marker, queue in queues.items():
            if marker in tools and queue:
                return queue.pop(0)
        return respond(messages, tools)

    return ScriptedChatModel(policy=policy)


async def resume(
    doc: dict[str, Any], lines: Sequence[str], **queues: list[AIMessage | str]
) -> tuple[list[TurnResult], dict[str, Any], ScriptedChatModel]:
    """Go on from `doc` with the hybrid model; failed turns are returned, not asserted."""
    model = hybrid(**queues)
    store = MemoryStore()
    await store.create({**copy.deepcopy(doc), "revision": 0})  # a new session in this store
    engine = FlowEngine([HomeInsuranceQuoteFlow.using(model)], store=store)
    results = []
    for line in lines:
        results.append(await engine.run(FLOW, line, session_id=doc["id"]))
    after = await store.load(doc["id"])
    assert after is not None
    return results, after, model


def state(doc: dict[str, Any], step: str, key: str | None = None) -> Any:
    """A step's saved state, or one key of it."""
    found = doc["steps"].get(step, {}).get("state", {})
    return found if key is None else found.get(key)


def tool_results(doc: dict[str, Any], namespace: str) -> list[str]:
    """The tool results of a namespace, in order."""
    return [
        m["data"]["content"] for m in doc["memory"][namespace]["messages"] if m["type"] == "tool"
    ]
