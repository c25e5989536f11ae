"""DecisionHotelFlow, ported point by point from PicoFlow's demo (research §3).

    RouterStep ◇──apply_request / prompt_next──▶ Date / Budget / RoomType / Amenity / Distance
        ▲   └─search──▶ CriteriaReadinessJudgeStep ◇──ready──▶ SearchHotelsStep (logic)
        │                                                            │ search_hotels (MCP)
        └──── notice / revise_search ◀──── PresentStep ◀─────────────┘
                                            │ draft ▲ direct_to
                                            ▼       │
                                        PresentationJudgeStep ◇

A Portland (Hilton) hotel booking with decision steps as the router and as two judges. Five
chat collectors own one criterion each in the shared ``intake`` namespace; code validates
(`demo.decision_hotel.criteria`), searches over MCP, renders the fallbacks and books. The
flow's model is ``offline:decision_hotel`` and its decisions ``offline:decision_hotel-decide``
(both from `demo.decision_hotel.offline`), so it runs with no key and no network;
``DecisionHotelFlow.using("openai:gpt-4o", decide="openai:gpt-4o-mini")`` runs it on real ones.
"""

from __future__ import annotations

import importlib.util
import sys
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from demo.decision_hotel.collectors import (
    AmenityStep,
    BudgetStep,
    DateRangeStep,
    DistanceStep,
    RoomTypeStep,
)
from demo.decision_hotel.offline import CHAT_MODEL, DECIDE_MODEL, offline_provider
from demo.decision_hotel.present import PresentationJudgeStep, PresentStep, SearchHotelsStep
from demo.decision_hotel.routing import CriteriaReadinessJudgeStep, RouterStep
from demo.decision_hotel.search import TOOL_NAME
from demo.decision_hotel.search_tool import in_process_tool
from demo.decision_hotel.shared import INTAKE, PRESENT
from demo.decision_hotel.today import env_today
from picoflow import (
    DecisionOptions,
    EndStep,
    Flow,
    ModelLike,
    ModelSpec,
    Step,
    session_idle_ms,
    turn_window,
)
from picoflow.mcp import MCPServer

RETRY_ATTEMPTS = 1
"""PicoFlow's ``retryAttempts: 2`` counts every attempt; picoflow's counts the retries."""
CALL_TIMEOUT = 60.0  # configLlmCallPolicy() {timeoutMs: 60_000}
OFFLINE_MODEL = ModelSpec(
    "offline", CHAT_MODEL, retry_attempts=RETRY_ATTEMPTS, timeout=CALL_TIMEOUT
)
OFFLINE_DECISIONS = f"offline:{DECIDE_MODEL}"
DECISION_TIMEOUT = 15.0  # configDecision() {timeoutMs: 15_000, maxRetries: 2}
DECISION_RETRIES = 2
ROOT = Path(__file__).resolve().parents[2]
PRICING_SERVER = MCPServer(
    "hotel-pricing",
    {
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "demo.decision_hotel.pricing_server"],
        "cwd": str(ROOT),
    },
    tools=(TOOL_NAME,),
    timeout=10.0,
)
"""PicoFlow's MCP client: stdio, a 10 s timeout, one tool."""
IN_PROCESS_SEARCH = in_process_tool()
"""The same tool in this process: no child, no ``mcp`` extra (tests, a minimal install)."""


@lru_cache(maxsize=1)
def has_mcp() -> bool:
    """Whether the ``mcp`` extra (the SDK and langchain-mcp-adapters) is installed."""
    return all(importlib.util.find_spec(name) for name in ("mcp", "langchain_mcp_adapters"))


class DecisionHotelFlow(Flow):
    """Portland hotel search: a decision router, five collectors, two judges, a booking."""

    chat_model: ClassVar[ModelLike | None] = None
    decision_model: ClassVar[str | None] = None
    search_tool: ClassVar[Any] = None
    """What SearchHotelsStep calls as ``search_hotels``: the pricing MCP server (the default
    when the ``mcp`` extra is installed), or the same contract in process."""
    idle_limit: ClassVar[timedelta | None] = None
    """A session idle this long starts afresh; PicoFlow's flow has no limit, nor this one."""
    providers: ClassVar[dict[str, Any]] = {"offline": offline_provider}
    max_tool_rounds: ClassVar[int] = 24
    """One message may fill every criterion: five captures, each with a router decision."""

    def __init__(self) -> None:
        super().__init__()
        # Issue 25: every namespace stays bounded whatever the guest does; the criteria live
        # in state, so the intake keeps its last turns only (the judges read at most five).
        memory = self.get_memory()
        memory.set_policy(INTAKE, turn_window(max_turns=12, keep_turns=6))
        memory.set_policy(PRESENT, turn_window(max_turns=8, keep_turns=4))

    @classmethod
    def using(
        cls, model: ModelLike, *, decide: str | None = None, search: Any = None
    ) -> type[DecisionHotelFlow]:
        """This flow on `model`, deciding with `decide` (a "provider:model" string) and
        searching with `search`; it keeps the persisted flow name "DecisionHotelFlow"."""
        attrs = {"name": cls.name, "chat_model": model, "decision_model": decide}
        if search is not None:
            attrs["search_tool"] = search
        return type(cls.name, (cls,), attrs)

    @classmethod
    def in_process(cls) -> type[DecisionHotelFlow]:
        """This flow searching in process (the MCP server's contract, no child process)."""
        return type(cls.name, (cls,), {"name": cls.name, "search_tool": IN_PROCESS_SEARCH})

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def config_decision(self) -> DecisionOptions:
        model = self.decision_model or OFFLINE_DECISIONS
        return DecisionOptions(model=model, timeout=DECISION_TIMEOUT, max_retries=DECISION_RETRIES)

    async def init(self) -> None:
        env_today()  # a malformed HOTEL_FLOW_CURRENT_DATE fails the turn, before any step

    def migrate_session(self, doc: dict[str, Any]) -> dict[str, Any] | None:
        limit = self.idle_limit
        if limit is not None and session_idle_ms(doc) >= limit.total_seconds() * 1000:
            return None  # PicoFlow's onRestoreSessionDoc returning null: a fresh session
        return doc

    def define_steps(self) -> list[Step]:
        search = self.search_tool
        if search is None:
            search = PRICING_SERVER if has_mcp() else IN_PROCESS_SEARCH
        return [
            RouterStep(self).use_memory(INTAKE),
            DateRangeStep(self).use_memory(INTAKE),
            BudgetStep(self).use_memory(INTAKE),
            RoomTypeStep(self).use_memory(INTAKE),
            AmenityStep(self).use_memory(INTAKE),
            DistanceStep(self).use_memory(INTAKE),
            CriteriaReadinessJudgeStep(self).use_memory(INTAKE),
            SearchHotelsStep(self).use_tools(search),
            PresentStep(self).use_memory(PRESENT),
            PresentationJudgeStep(self).use_memory(PRESENT),
            EndStep(self).use_memory("end"),  # PicoFlow's TerminateSessionStep, never reached
        ]
