"""Framework overhead per turn: a 3-step flow, one tool call and two model calls per turn.

The model answers instantly (no tokens counted, no I/O), so what is measured is picoflow plus
LangChain's own invoke machinery plus the store. A second table measures a BasicFlow-shaped
turn (section 10 of the SPEC): two logic steps chained in the turn and a nested child step,
four model calls. Run by hand:

    .venv/bin/python bench/turn_overhead.py [--turns 200] [--runs 5]

Budget (issue 2, MemoryStore): p50 <= 1.0 ms over turns 1-50, and turns 151-200 at most 2x that.
Budget (issue 11, SQLiteStore): turns 151-200 at most 1.2x turns 1-50, and p50 within 0.5 ms of
MemoryStore's at both ends. Stores run interleaved (one run of each, then the next round), so a
busy moment of the host hits all of them. `--stores memory,sqlite,sqlite-full` adds SQLite with
`synchronous="FULL"` (a disk sync on every save).

A last table measures the same growth paired: turns 1-50 of a new session alternate with turns
151-200 of another, so a slow spell of the host lands on both ends of the comparison. Its turns
are slower than the first table's (each turn finds the other session's objects in the CPU
caches, as a server with many sessions does), and so is what grows with a longer history.

These tables use `ZeroLatencyModel`, which times LangChain's `agenerate` to separate it from
picoflow's work and so turns the engine's unobserved-call fast path off. `--floor-only` prints
the engine-vs-floor table of issue 24, which measures each store both ways.
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
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from picoflow import Flow, FlowEngine, LogicStep, Step, go, tool
from picoflow.stores import MemoryStore, SQLiteStore


class TwoCallModel(BaseChatModel):
    """Odd calls ask for the `advance` tool, even calls reply with text: 2 calls per turn.

    Nothing of LangChain's is overridden above `_agenerate`, as with `ChatOpenAI`, so a turn
    takes the path a production model takes (the unobserved-call shortcut of `picoflow/_invoke`).
    """

    calls: int = 0
    invoke_ms: float = 0.0  # stays 0: nothing times a production-path call

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


class ZeroLatencyModel(TwoCallModel):
    """`TwoCallModel` that also times its own `agenerate`.

    The timing is LangChain's callback, tracing and cache machinery around a model that does
    nothing, so the report can separate picoflow's work from LangChain's. Overriding
    `agenerate` also turns the engine's unobserved-call shortcut off: every call pays
    `agenerate` in full, as the floor's `ainvoke` does.
    """

    async def agenerate(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await super().agenerate(*args, **kwargs)
        finally:
            self.invoke_ms += (time.perf_counter() - start) * 1000


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


def bench_flow(model: TwoCallModel) -> type[Flow]:
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


def basic_flow(model: TwoCallModel) -> type[Flow]:
    class ChainFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            steps = [StartStep, FirstLogic, SecondLogic, AskStep, HelperStep]
            return [cls(self) for cls in steps]

    return ChainFlow


async def one_run(
    store: Any,
    turns: int,
    shape: str = "three-step",
    cpu: list[float] | None = None,
    fast_path: bool = False,
) -> tuple[list[float], list[float]]:
    """Per-turn wall time, and per-turn time outside LangChain's model invoke, in ms.

    `cpu`, when given, receives each turn's CPU time in ms (`time.thread_time`), which a busy
    host inflates far less than wall time. `fast_path=True` (three-step only) uses `TwoCallModel`,
    the production path, which nothing times (`own` is then the whole turn).
    """
    if shape == "three-step":
        model: TwoCallModel = TwoCallModel() if fast_path else ZeroLatencyModel()
    else:
        model = ChainModel()
    flow = bench_flow(model) if shape == "three-step" else basic_flow(model)
    engine = FlowEngine(flows=[flow], store=store)
    session_id = None
    timings, own = [], []
    for turn in range(turns):
        before = model.invoke_ms
        start, start_cpu = time.perf_counter(), time.thread_time()
        result = await engine.run(flow.name, f"user message {turn}", session_id=session_id)
        elapsed = (time.perf_counter() - start) * 1000
        if cpu is not None:
            cpu.append((time.thread_time() - start_cpu) * 1000)
        timings.append(elapsed)
        own.append(elapsed - (model.invoke_ms - before))
        if not result.success:
            raise SystemExit(f"turn {turn} failed: {result.message}")
        session_id = result.session_id
    await engine.aclose()
    return timings, own


ADVANCE_SCHEMA = {
    "type": "function",
    "function": {
        "name": "advance",
        "description": "Move the conversation to the next stage.",
        "parameters": {
            "type": "object",
            "properties": {"note": {"type": "string"}},
            "required": ["note"],
        },
    },
}


async def floor_run(turns: int) -> list[float]:
    """The floor of a turn: the same two model calls through LangChain's `ainvoke`, CPU ms.

    The same model bound to the same tool schema answers the same requests the engine sends:
    the system prompt, the history so far, the user's message; then the tool call and its result
    for the second call. What the engine adds over this is picoflow's own work and the store.
    """
    model = TwoCallModel()
    bound = model.bind_tools([ADVANCE_SCHEMA])
    history: list[BaseMessage] = []
    timings = []
    for turn in range(turns):
        start = time.thread_time()
        system = SystemMessage(f"You are stage Stage{'ABC'[turn % 3]}. Visits so far: {turn}.")
        human = HumanMessage(f"user message {turn}")
        call = await bound.ainvoke([system, *history, human])
        result = ToolMessage("ok", tool_call_id=call.tool_calls[0]["id"])
        reply = await bound.ainvoke([system, *history, human, call, result])
        history += [human, call, result, reply]
        timings.append((time.thread_time() - start) * 1000)
    return timings


async def paired_run(store: Any, turns: int) -> tuple[list[float], list[float]]:
    """Turns 1-50 of one session and 151-200 of another, alternately, in ms.

    The second session is first brought to turn 150 (not timed); then each of the next 50
    rounds times one early turn and one late turn back to back, so a slow spell of a shared
    host lands on both halves of the comparison instead of on one end of a conversation.
    """
    model = ZeroLatencyModel()
    flow = bench_flow(model)
    engine = FlowEngine(flows=[flow], store=store)
    late_id = None
    for turn in range(turns - 50):
        result = await engine.run(flow.name, f"user message {turn}", session_id=late_id)
        late_id = result.session_id
    early_id = None
    early, late = [], []
    for turn in range(50):
        for label, session_id, number in (("early", early_id, turn), ("late", late_id, turn)):
            start = time.perf_counter()
            result = await engine.run(flow.name, f"user message {number}", session_id=session_id)
            elapsed = (time.perf_counter() - start) * 1000
            if not result.success:
                raise SystemExit(f"{label} turn {number} failed: {result.message}")
            (early if label == "early" else late).append(elapsed)
            if label == "early":
                early_id = result.session_id
    await engine.aclose()
    return early, late


def skip_langchain_passes() -> None:
    """Diagnostic only: make LangChain's two passes over a request's messages free.

    `BaseChatModel.agenerate` formats every message for tracing and normalises every message's
    content blocks on each call, two Python loops over the whole request. With a model that
    answers instantly and a history that is never compacted they are what grows with the
    conversation once picoflow and the store are flat; this shows how much. The messages here
    are plain text, which both passes hand back unchanged, so the calls are the same calls.
    """
    from langchain_core.language_models import chat_models

    def unchanged(messages: list[BaseMessage]) -> list[BaseMessage]:
        return list(messages)

    chat_models._format_for_tracing = unchanged  # type: ignore[assignment]
    chat_models._normalize_messages = unchanged  # type: ignore[attr-defined]
    print("Diagnostic: LangChain's per-message passes in agenerate skipped")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


STORES = {
    "memory": lambda tmp: MemoryStore(),
    "sqlite": lambda tmp: SQLiteStore(Path(tmp) / "b.db"),
    "sqlite-full": lambda tmp: SQLiteStore(Path(tmp) / "b.db", synchronous="FULL"),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--stores", default="memory,sqlite", help=f"of {', '.join(STORES)}")
    parser.add_argument("--floor-only", action="store_true", help="only the engine-vs-floor table")
    parser.add_argument(
        "--without-langchain-passes",
        action="store_true",
        help="diagnostic: skip LangChain's two per-message passes in agenerate (see below)",
    )
    return parser.parse_args()


async def main() -> None:
    args = parse_args()
    if args.without_langchain_passes:
        skip_langchain_passes()
    names = args.stores.split(",")
    if args.floor_only:
        await report_floor(names, args.runs, args.turns)
        return
    await report_all(names, args)


async def report_all(names: list[str], args: argparse.Namespace) -> None:
    """Every table: the turns per store, the BasicFlow-shaped turn, the floor, the pairs."""
    print(f"{args.runs} runs x {args.turns} turns; medians over runs of each run's percentile (ms)")
    print("'own' = the turn minus the time inside LangChain's model invoke (picoflow + store)")
    header = ("store", "p50 1-50", "p99 1-50", "p50 151-200", "p99 151-200", "ratio")
    print("{:<18} {:>9} {:>9} {:>12} {:>12} {:>6}".format(*header))
    # Interleaved: a busy spell of the host hits every target. The last target is the
    # BasicFlow-shaped turn (2 logic steps + 1 nested step, 4 model calls) on MemoryStore.
    targets = [(name, "three-step") for name in names] + [("memory", "basic")]
    rows: dict[tuple[str, str], list[tuple[float, ...]]] = {t: [] for t in targets}
    own_rows: dict[tuple[str, str], list[tuple[float, ...]]] = {t: [] for t in targets}
    for _ in range(args.runs):
        for name, shape in targets:
            with tempfile.TemporaryDirectory() as tmp:
                total, own = await one_run(STORES[name](tmp), args.turns, shape)
            rows[(name, shape)].append(_percentiles(total))
            own_rows[(name, shape)].append(_percentiles(own))
    medians = {}
    for name, shape in targets:
        if shape == "basic":
            print("BasicFlow-shaped turn: 2 logic steps + 1 nested step, 4 model calls")
        for label, table in (
            (name, rows[(name, shape)]),
            (f"{name} (own)", own_rows[(name, shape)]),
        ):
            med = [statistics.median(col) for col in zip(*table, strict=True)]
            if shape == "three-step":
                medians[label] = med
            print(
                f"{label:<18} {med[0]:>9.3f} {med[1]:>9.3f} {med[2]:>12.3f} {med[3]:>12.3f} "
                f"{med[2] / med[0]:>6.2f}"
            )
    await report_floor(names, args.runs, args.turns)
    await report_paired(names, args.runs, args.turns)
    for name in names:
        if name != "memory" and "memory" in medians:
            early = medians[name][0] - medians["memory"][0]
            late = medians[name][2] - medians["memory"][2]
            print(f"{name} - memory, p50: {early:+.3f} ms (1-50), {late:+.3f} ms (151-200)")


async def report_floor(names: list[str], runs: int, turns: int) -> None:
    """Print the engine's turn over the floor (`floor_run`), interleaved, medians over runs.

    Budget (issue 24): the engine's turn at most 1.5x the floor at turns 1-50. Each store is
    measured twice: with `TwoCallModel`, the path a production model takes, and with
    `ZeroLatencyModel` ("shortcut off"), whose overridden `agenerate` makes every call pay
    LangChain's `agenerate` in full as the floor does, which isolates picoflow's own work.
    """
    print("Engine vs floor: the same two model calls through ainvoke (p50 of CPU ms per turn)")
    rows = [(name, True) for name in names] + [(name, False) for name in names]
    series: dict[str, list[tuple[float, float]]] = {"floor": []}
    for _ in range(runs):
        floor = await floor_run(turns)
        series["floor"].append((pct(floor[:50], 0.5), pct(floor[-50:], 0.5)))
        for name, fast_path in rows:
            with tempfile.TemporaryDirectory() as tmp:
                cpu: list[float] = []
                await one_run(STORES[name](tmp), turns, cpu=cpu, fast_path=fast_path)
            label = name if fast_path else f"{name}, shortcut off"
            series.setdefault(label, []).append((pct(cpu[:50], 0.5), pct(cpu[-50:], 0.5)))
    base = [statistics.median(col) for col in zip(*series["floor"], strict=True)]
    print(f"{'':<22} {'p50 1-50':>9} {'x floor':>8} {'p50 151-200':>12} {'x floor':>8}")
    for name, table in series.items():
        med = [statistics.median(col) for col in zip(*table, strict=True)]
        print(
            f"{name:<22} {med[0]:>9.3f} {med[0] / base[0]:>8.2f} {med[1]:>12.3f} "
            f"{med[1] / base[1]:>8.2f}"
        )


async def report_paired(names: list[str], runs: int, turns: int) -> None:
    """Print the growth measured by `paired_run`, median over `runs` runs per store."""
    print("Paired: turns 1-50 of a new session alternating with turns 151-200 of another")
    paired: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for _ in range(runs):
        for name in names:
            with tempfile.TemporaryDirectory() as tmp:
                early, late = await paired_run(STORES[name](tmp), turns)
            paired[name].append((pct(early, 0.5), pct(late, 0.5)))
    for name in names:
        early_p50 = statistics.median(e for e, _ in paired[name])
        late_p50 = statistics.median(late for _, late in paired[name])
        ratios = sorted(late / e for e, late in paired[name])
        print(
            f"{name:<18} p50 1-50 {early_p50:.3f}  p50 151-200 {late_p50:.3f}  ratio "
            f"{late_p50 / early_p50:.2f} (per run {', '.join(f'{r:.2f}' for r in ratios)})"
        )


def _percentiles(timings: list[float]) -> tuple[float, float, float, float]:
    early, late = timings[:50], timings[-50:]
    return pct(early, 0.5), pct(early, 0.99), pct(late, 0.5), pct(late, 0.99)


if __name__ == "__main__":
    asyncio.run(main())
