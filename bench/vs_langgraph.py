"""In process, picoflow against LangGraph on the same flow, and against the floor (issue 39).

The flow is `turn_overhead.py`'s: three stages, and every turn the model asks for the `advance`
tool (which counts a visit and moves to the next stage) and then replies, so a turn is two model
calls and one tool. The LangGraph version is what a user would write for it: a state with the
messages, the stage and the visits; an `agent` node that prompts the same model with the stage's
system prompt and the history; a `tools` node that runs `advance` and moves the stage;
`tools_condition` between them; a checkpointer (`InMemorySaver` or `AsyncSqliteSaver`). The floor
is `turn_overhead.floor_run`: the same two calls through `ainvoke`, with nothing stored.

    .venv/bin/python bench/vs_langgraph.py [--runs 3] [--turns 200]

Each run drives one session per target for `--turns` turns, targets interleaved run by run;
figures are the process's CPU time per turn (`time.process_time`, which counts SQLite's worker
threads too and which a busy host inflates far less than wall time), p50 over turns 1-50 and the
last 50, medians over runs. Goals (issue 39): picoflow at least 15x LangGraph at turns 1-50 and
20x at 151-200, and at most 1.5x the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import statistics
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

try:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import tools_condition
except ImportError as missing:
    raise SystemExit(
        f"bench/vs_langgraph.py needs the dev extra ({missing.name} is missing): "
        ".venv/bin/pip install -e '.[dev]'"
    ) from missing

from turn_overhead import ADVANCE_SCHEMA, TwoCallModel, bench_flow, floor_run, pct

from picoflow import FlowEngine
from picoflow.stores import MemoryStore, SQLiteStore

NEXT = {"StageA": "StageB", "StageB": "StageC", "StageC": "StageA"}


class StageState(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]
    stage: str
    visits: Annotated[int, operator.add]


def stage_graph() -> StateGraph:
    """The three-stage flow in LangGraph: the model node, the tool node, the condition."""
    bound = TwoCallModel().bind_tools([ADVANCE_SCHEMA])

    async def agent(state: StageState) -> dict[str, Any]:
        prompt = f"You are stage {state['stage']}. Visits so far: {state['visits']}."
        return {"messages": [await bound.ainvoke([SystemMessage(prompt), *state["messages"]])]}

    async def tools(state: StageState) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)  # tools_condition routes here only after a tool call
        call = last.tool_calls[0]
        answer = ToolMessage("ok", tool_call_id=call["id"], name=call["name"])
        return {"messages": [answer], "stage": NEXT[state["stage"]], "visits": 1}

    builder = StateGraph(StageState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


async def langgraph_run(store: str, tmp: str, turns: int) -> list[float]:
    """CPU ms per turn of one LangGraph thread."""
    builder = stage_graph()
    if store == "memory":
        return await _graph_turns(builder.compile(checkpointer=InMemorySaver()), turns)
    async with AsyncSqliteSaver.from_conn_string(str(Path(tmp) / "lg.db")) as saver:
        await saver.setup()
        return await _graph_turns(builder.compile(checkpointer=saver), turns)


async def _graph_turns(graph: Any, turns: int) -> list[float]:
    config = {"configurable": {"thread_id": "one"}}
    timings = []
    for turn in range(turns):
        update: dict[str, Any] = {"messages": [HumanMessage(f"user message {turn}")]}
        if turn == 0:
            update |= {"stage": "StageA", "visits": 0}
        start = time.process_time()
        await graph.ainvoke(update, config)
        timings.append((time.process_time() - start) * 1000)
    return timings


async def picoflow_run(store: str, tmp: str, turns: int) -> list[float]:
    """CPU ms per turn of one picoflow session (the production model path)."""
    flow = bench_flow(TwoCallModel())
    sessions = MemoryStore() if store == "memory" else SQLiteStore(Path(tmp) / "p.db")
    engine = FlowEngine(flows=[flow], store=sessions)
    session_id, timings = None, []
    for turn in range(turns):
        start = time.process_time()
        result = await engine.run(flow.name, f"user message {turn}", session_id=session_id)
        timings.append((time.process_time() - start) * 1000)
        if not result.success:
            raise SystemExit(f"picoflow turn {turn} failed: {result.message}")
        session_id = result.session_id
    await engine.aclose()
    return timings


TARGETS = ("floor", "picoflow-memory", "picoflow-sqlite", "langgraph-memory", "langgraph-sqlite")


async def one(target: str, turns: int) -> list[float]:
    if target == "floor":
        return await floor_run(turns)
    kind, store = target.split("-")
    with tempfile.TemporaryDirectory() as tmp:
        runner = picoflow_run if kind == "picoflow" else langgraph_run
        return await runner(store, tmp, turns)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    if args.turns < 100:
        raise SystemExit("--turns must be at least 100 (turns 1-50 and the last 50)")
    series: dict[str, list[tuple[float, float]]] = {t: [] for t in TARGETS}
    for number in range(args.runs):
        for target in TARGETS[number % len(TARGETS) :] + TARGETS[: number % len(TARGETS)]:
            cpu = await one(target, args.turns)
            series[target].append((pct(cpu[:50], 0.5), pct(cpu[-50:], 0.5)))
        print(f"run {number + 1} done ({time.strftime('%H:%M:%S')})", flush=True)
    med = {t: [statistics.median(c) for c in zip(*rows, strict=True)] for t, rows in series.items()}
    late = f"{args.turns - 49}-{args.turns}"
    print(f"\n{args.runs} interleaved runs of {args.turns} turns; p50 of CPU ms per turn, medians")
    print(f"{'target':<18} {'1-50':>7} {late:>8} {'x floor':>8} {'x floor late':>13}")
    for target, (early, last) in med.items():
        print(
            f"{target:<18} {early:>7.3f} {last:>8.3f} {early / med['floor'][0]:>8.2f} "
            f"{last / med['floor'][1]:>13.2f}"
        )
    print("LangGraph / picoflow (goals: >= 15 at 1-50, >= 20 late; picoflow <= 1.5x the floor):")
    for store in ("memory", "sqlite"):
        ours, theirs = med[f"picoflow-{store}"], med[f"langgraph-{store}"]
        print(f"  {store:<7} 1-50 {theirs[0] / ours[0]:.1f}x, {late} {theirs[1] / ours[1]:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
