"""Framework overhead per turn: a 3-step flow, one tool call and two model calls per turn.

The model answers instantly (no tokens counted, no I/O), so what is measured is picoflow plus
LangChain's own invoke machinery plus the store. A second table measures a BasicFlow-shaped
turn (section 10 of the SPEC): two logic steps chained in the turn and a nested child step,
four model calls. Run by hand:

    .venv/bin/python bench/turn_overhead.py [--turns 200] [--runs 5]

Budget (issue 2, MemoryStore): p50 <= 1.0 ms over turns 1-50, and turns 151-200 at most 2x that.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from picoflow import Flow, FlowEngine, LogicStep, Step, go, tool
from picoflow.stores import MemoryStore, SQLiteStore


class ZeroLatencyModel(BaseChatModel):
    """Odd calls ask for the `advance` tool, even calls reply with text: 2 calls per turn.

    It also times its own `agenerate` (LangChain's callback, tracing and cache machinery around
    a model that does nothing), so the report can separate picoflow's work from LangChain's.
    """

    calls: int = 0
    invoke_ms: float = 0.0

    async def agenerate(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await super().agenerate(*args, **kwargs)
        finally:
            self.invoke_ms += (time.perf_counter() - start) * 1000

    @property
    def _llm_type(self) -> str:
        return "zero-latency"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        self.calls += 1
        if self.calls % 2:
            reply = AIMessage(
                "", tool_calls=[{"name": "advance", "args": {"note": "n"}, "id": f"c{self.calls}"}]
            )
        else:
            reply = AIMessage(f"Reply number {self.calls // 2}.")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages, stop)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)


class _Stage(Step):
    next_stage: type[Step]

    def get_prompt(self) -> str:
        return f"You are stage {self.name}. Visits so far: {self.get_state('visits')}."

    @tool
    def advance(self, note: str) -> Any:
        """Move the conversation to the next stage."""
        self.save_state({"visits": (self.get_state("visits") or 0) + 1, "note": note})
        return go(self.next_stage)


class StageA(_Stage):
    pass


class StageB(_Stage):
    pass


class StageC(_Stage):
    pass


StageA.next_stage, StageB.next_stage, StageC.next_stage = StageB, StageC, StageA


def bench_flow(model: ZeroLatencyModel) -> type[Flow]:
    class BenchFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [StageA(self), StageB(self), StageC(self)]

    return BenchFlow


class ChainModel(ZeroLatencyModel):
    """For the BasicFlow-shaped turn: decides from the bound tools and the last message."""

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        self.calls += 1
        tools = [t["function"]["name"] for t in kw.get("tools") or []]
        last = messages[-1]
        name = ""
        if "begin" in tools and str(last.content).startswith("user message"):
            name = "begin"
        elif "ask_child" in tools and last.type == "human":
            name = "ask_child"
        if name:
            call = {"name": name, "args": {}, "id": f"c{self.calls}"}
            return ChatResult(
                generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))]
            )
        reply = AIMessage(f"Reply number {self.calls}.")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages, stop, **kw)


class StartStep(Step):
    @tool
    def begin(self) -> Any:
        """Start the chain."""
        return go(FirstLogic).with_state({"n": (self.get_state("n") or 0) + 1})


class FirstLogic(LogicStep):
    async def run_logic(self) -> Any:
        return go(SecondLogic).with_state({"seen": True})


class SecondLogic(LogicStep):
    async def run_logic(self) -> Any:
        return go(AskStep)


class AskStep(Step):
    def on_crossing(self, message: Any, prior_step: str | None) -> Any:
        return HumanMessage("Go on.")  # every turn the same shape: the model asks the helper

    @tool
    async def ask_child(self) -> Any:
        """Ask the nested helper."""
        answer = await self.run_step(HelperStep, "question")
        return go(StartStep).with_state({"answer": answer})


class HelperStep(Step):
    pass


def basic_flow(model: ZeroLatencyModel) -> type[Flow]:
    class ChainFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            steps = [StartStep, FirstLogic, SecondLogic, AskStep, HelperStep]
            return [cls(self) for cls in steps]

    return ChainFlow


async def one_run(
    store: Any, turns: int, shape: str = "three-step"
) -> tuple[list[float], list[float]]:
    """Per-turn wall time, and per-turn time outside LangChain's model invoke, in ms."""
    model = ZeroLatencyModel() if shape == "three-step" else ChainModel()
    flow = bench_flow(model) if shape == "three-step" else basic_flow(model)
    engine = FlowEngine(flows=[flow], store=store)
    session_id = None
    timings, own = [], []
    for turn in range(turns):
        before = model.invoke_ms
        start = time.perf_counter()
        result = await engine.run(flow.name, f"user message {turn}", session_id=session_id)
        elapsed = (time.perf_counter() - start) * 1000
        timings.append(elapsed)
        own.append(elapsed - (model.invoke_ms - before))
        if not result.success:
            raise SystemExit(f"turn {turn} failed: {result.message}")
        session_id = result.session_id
    await engine.aclose()
    return timings, own


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.runs} runs x {args.turns} turns; medians over runs of each run's percentile (ms)")
    print("'own' = the turn minus the time inside LangChain's model invoke (picoflow + store)")
    header = ("store", "p50 1-50", "p99 1-50", "p50 151-200", "p99 151-200", "ratio")
    print("{:<14} {:>9} {:>9} {:>12} {:>12} {:>6}".format(*header))
    for name, shape in (("memory", "three-step"), ("sqlite", "three-step"), ("memory", "basic")):
        rows, own_rows = [], []
        if shape == "basic":
            print("BasicFlow-shaped turn: 2 logic steps + 1 nested step, 4 model calls")
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                store = MemoryStore() if name == "memory" else SQLiteStore(str(Path(tmp) / "b.db"))
                total, own = await one_run(store, args.turns, shape)
            rows.append(_percentiles(total))
            own_rows.append(_percentiles(own))
        for label, table in ((name, rows), (f"{name} (own)", own_rows)):
            med = [statistics.median(col) for col in zip(*table, strict=True)]
            print(
                f"{label:<14} {med[0]:>9.3f} {med[1]:>9.3f} {med[2]:>12.3f} {med[3]:>12.3f} "
                f"{med[2] / med[0]:>6.2f}"
            )


def _percentiles(timings: list[float]) -> tuple[float, float, float, float]:
    early, late = timings[:50], timings[-50:]
    return pct(early, 0.5), pct(early, 0.99), pct(late, 0.5), pct(late, 0.99)


if __name__ == "__main__":
    asyncio.run(main())
