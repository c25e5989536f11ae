"""Compaction benchmark: what 200 turns cost with compaction off and on (min 16 / recent 8).

A scripted trip-planning conversation: every user turn updates one of seven "stops" (budget and
city), and every third turn the model calls a tool before it answers. No network, no API key:
the chat model and the summariser are `ScriptedChatModel` policies, and prompt tokens are
counted with LangChain's `count_tokens_approximately`, the same count the scripted model
reports as usage.

Two summarisers are measured. `latest` keeps the newest value of each fact, which is what
the summary prompt asks for (M6) and what a good model does on a conversation that keeps
revising the same few facts; its summary stays bounded. `growing` adds one line per evicted user
message and never drops one: a stress case that shows what an ever-growing summary costs.
Both run with `max_summary_tokens=SUMMARY_BUDGET`. Asked to condense, `latest` keeps the newest
value of each stop; `growing` hands the summary back unchanged (the worst a model can do), so
its summary is bounded only by picoflow cutting it to fit.

Budgets (issue 3), checked on the `latest` run:
- the largest prompt at turns 181-200 is at most 1.5x the largest at turns 11-20, with either
  summariser (issue 11: the growing one too, through the summary budget);
- total prompt tokens are at most 30% of the uncompacted run;
- the live session document is at most 64 KB at turn 200.

Timing: per-turn latency of `engine.run` with a summariser that takes `--latency-ms`, inline
versus `background=True` (the next turn starts after the background summary committed, as
when a person takes longer to type than the summariser takes to answer). Medians of `--runs`.

    .venv/bin/python bench/compaction_tokens.py [--runs 5] [--latency-ms 50] [--per-call]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from picoflow import Flow, FlowEngine, Step, SummaryConfig, tool
from picoflow.memory import CONDENSE_PROMPT
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

TURNS = 200
NAMESPACE = "trip"
CITIES = ["Lyon", "Porto", "Ghent", "Turin", "Krakow", "Bilbao", "Leipzig"]
SUMMARY_PROMPT = SummaryConfig().prompt
SUMMARY_BUDGET = 200  # tokens; the `latest` summary of seven stops takes about 120
_USER = re.compile(r"^User: Turn (\d+): for stop (\d+), budget (\d+) EUR, stay in (\w+)")


def user_message(turn: int) -> str:
    stop = turn % 7
    return (
        f"Turn {turn}: for stop {stop}, budget {150 + 3 * turn} EUR, stay in "
        f"{CITIES[(turn * 3) % 7]}. Please keep the earlier stops as they are and tell me if "
        "anything conflicts with the train times we discussed."
    )


class PlannerStep(Step):
    def get_prompt(self) -> str:
        return (
            "You help the user plan a rail trip through seven stops. Keep every stop's budget "
            "and city, search hotels when the user changes a stop, and answer briefly."
        )

    @tool
    def search_hotels(self, city: str, max_price: int) -> str:
        """Search hotels in a city under a nightly price."""
        return (
            f"3 hotels in {city} under {max_price} EUR: Hotel Central (ref {city[:3].upper()}-"
            f"{max_price}) {max_price - 20} EUR, Station Inn {max_price - 35} EUR, Old Town "
            f"Rooms {max_price - 50} EUR."
        )


def reply(messages: list[BaseMessage], tools: list[str]) -> Any:
    """The chat model: a tool call every third turn, otherwise a ~50-token answer."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"I found options: {last.text[:90]} Shall I hold one of them for you?"
    match = re.match(r"Turn (\d+): for stop (\d+), budget (\d+) EUR, stay in (\w+)", last.text)
    assert match, last.text
    turn, stop, budget, city = match.groups()
    if int(turn) % 3 == 0:
        return tool_call("search_hotels", city=city, max_price=int(budget))
    return (
        f"Noted: stop {stop} is now {city} with a budget of {budget} EUR per night. The other "
        "stops are unchanged, and the 09:40 train still connects with the next leg."
    )


def latest_summary(messages: list[BaseMessage]) -> str:
    """Keep the newest budget and city of each stop (bounded, as M6 asks for)."""
    previous, _, evicted = str(messages[1].text).partition("\n\nMessages to merge")
    facts = dict(
        line.split(": ", 1) for line in previous.splitlines()[1:] if line.startswith("Stop ")
    )
    for line in evicted.splitlines():
        found = _USER.match(line)
        if found:
            turn, stop, budget, city = found.groups()
            facts[f"Stop {stop}"] = f"{city}, budget {budget} EUR (set in turn {turn})"
    return "\n".join(f"{key}: {facts[key]}" for key in sorted(facts))


def growing_summary(messages: list[BaseMessage]) -> str:
    """Never drop a line: one line per evicted user message, appended to the old summary."""
    previous, _, evicted = str(messages[1].text).partition("\n\nMessages to merge")
    lines = [ln for ln in previous.splitlines()[1:] if ln and ln != "(none yet)"]
    for line in evicted.splitlines():
        found = _USER.match(line)
        if found:
            turn, stop, budget, city = found.groups()
            lines.append(f"Turn {turn}: stop {stop} -> {city}, {budget} EUR")
    return "\n".join(lines)


def latest_condensed(text: str) -> str:
    """Condense as `latest` summarises: one line per stop, its newest value."""
    facts = dict(line.split(": ", 1) for line in text.splitlines() if line.startswith("Stop "))
    return "\n".join(f"{key}: {facts[key]}" for key in sorted(facts)) or text


def unchanged(text: str) -> str:
    """A condenser that does nothing: the worst case, left to picoflow's cut."""
    return text


SUMMARISERS = {"latest": latest_summary, "growing": growing_summary}
CONDENSERS = {"latest": latest_condensed, "growing": unchanged}
CONDENSE_START = CONDENSE_PROMPT.split("{budget}")[0]


@dataclass
class Run:
    """What one 200-turn conversation cost."""

    prompts: list[list[int]] = field(default_factory=list)  # per turn: prompt tokens per call
    summary_prompts: list[int] = field(default_factory=list)
    summary_outputs: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # seconds per engine.run
    doc_bytes: int = 0
    archive_entries: int = 0
    archive_bytes: int = 0
    final_summary_tokens: int = 0
    dropped_facts: int = 0  # values the dropped-fact check reported over the session


def make_engine(
    summariser: str | None, *, background: bool = False, latency: float = 0.0
) -> tuple[FlowEngine, ScriptedChatModel]:
    summarise = SUMMARISERS[summariser] if summariser else None
    condense = CONDENSERS[summariser] if summariser else None

    async def policy(messages: list[BaseMessage], tools: list[str]) -> Any:
        if messages[0].text.startswith(CONDENSE_START):
            assert condense is not None
            return condense(str(messages[1].text).removeprefix("Summary to shorten:\n"))
        if messages[0].text == SUMMARY_PROMPT:
            assert summarise is not None
            if latency:
                await asyncio.sleep(latency)  # a summariser that takes time to answer
            return summarise(messages)
        return reply(messages, tools)

    model = ScriptedChatModel(policy=policy)

    class TripFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            if summarise is not None:
                memory = self.get_memory().set_summary_model(model)
                memory.set_summary_config(
                    16, 8, background=background, max_summary_tokens=SUMMARY_BUDGET
                ).enable_summary(NAMESPACE)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [PlannerStep(self).use_memory(NAMESPACE)]

    return FlowEngine(flows=[TripFlow], store=MemoryStore()), model


async def converse(
    summariser: str | None, *, background: bool = False, latency: float = 0.0
) -> Run:
    engine, model = make_engine(summariser, background=background, latency=latency)
    run, session_id, seen = Run(), None, 0
    for turn in range(1, TURNS + 1):
        started = time.perf_counter()
        result = await engine.run("TripFlow", user_message(turn), session_id=session_id)
        run.latencies.append(time.perf_counter() - started)
        assert result.success, result.message
        session_id = result.session_id
        await engine.wait_for_background()  # the person types slower than the summariser
        new, seen = model.requests[seen:], len(model.requests)
        calls = [r for r in new if r.metadata.get("picoflow_purpose") == "reply"]
        run.prompts.append([count_tokens_approximately(r.messages) for r in calls])
        for request in new:
            if request.metadata.get("picoflow_purpose") == "summary":
                run.summary_prompts.append(count_tokens_approximately(request.messages))
    assert session_id is not None
    await measure_storage(engine, session_id, run)
    await engine.aclose()
    return run


async def measure_storage(engine: FlowEngine, session_id: str, run: Run) -> None:
    doc = await engine.get_session(session_id)
    assert doc is not None
    run.doc_bytes = len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())
    summary = doc["memory"][NAMESPACE]["summary"] or ""
    run.dropped_facts = doc["memory"][NAMESPACE]["dropped_facts"]
    run.final_summary_tokens = count_tokens_approximately([HumanMessage(summary)])
    page = 1
    while entries := await engine.store.search_archive(
        session_id, NAMESPACE, "", page=page, page_size=100
    ):
        run.archive_entries += len(entries)
        run.archive_bytes += len(json.dumps(entries, separators=(",", ":")).encode())
        page += 1


def largest(run: Run, first: int, last: int) -> int:
    return max(max(calls) for calls in run.prompts[first - 1 : last])


def total(run: Run) -> int:
    return sum(sum(calls) for calls in run.prompts)


def print_token_table(off: Run, runs: dict[str, Run]) -> None:
    names = ["off", *runs]
    print("Prompt tokens per reply call, largest in each block of 20 turns")
    print("| turns | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for first in range(1, TURNS + 1, 20):
        cells = [str(largest(r, first, first + 19)) for r in [off, *runs.values()]]
        print(f"| {first}-{first + 19} | " + " | ".join(cells) + " |")
    print()


def print_budget(off: Run, name: str, run: Run) -> None:
    early, late = largest(run, 11, 20), largest(run, 181, 200)
    ratio = total(run) / total(off)
    with_summaries = (total(run) + sum(run.summary_prompts)) / total(off)
    checks = [
        ("largest prompt, turns 181-200 vs 11-20", f"{late} / {early} = {late / early:.2f}x",
         late <= 1.5 * early, "<= 1.5x"),
        ("total reply prompt tokens vs off", f"{total(run)} / {total(off)} = {ratio:.1%}",
         ratio <= 0.30, "<= 30%"),
        ("  ... counting summary prompts too", f"{with_summaries:.1%}", with_summaries <= 0.30,
         "<= 30%"),
        ("live session document at turn 200", f"{run.doc_bytes / 1024:.1f} KB",
         run.doc_bytes <= 64 * 1024, "<= 64 KB"),
    ]  # fmt: skip
    print(f"Budget, summariser '{name}' (16/8):")
    for label, value, ok, budget in checks:
        print(f"  {label:<42} {value:<28} {budget:<9} {'met' if ok else 'MISSED'}")
    print(
        f"  summary calls {len(run.summary_prompts)}, their prompt tokens "
        f"{sum(run.summary_prompts)} (median {statistics.median(run.summary_prompts):.0f}); "
        f"final summary {run.final_summary_tokens} tokens; dropped-fact check reported "
        f"{run.dropped_facts} values"
    )
    print(
        f"  archive: {run.archive_entries} messages, {run.archive_bytes / 1024:.1f} KB; "
        f"uncompacted document would be {off.doc_bytes / 1024:.1f} KB"
    )
    print()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def print_timing(runs: int, latency_ms: float) -> None:
    modes = {"off": (None, False), "inline": ("latest", False), "background": ("latest", True)}
    print(
        f"Turn latency of engine.run in ms (summariser answers in {latency_ms:g} ms), "
        f"median of {runs} runs"
    )
    print("| mode | p50 | p90 | p99 | max |")
    print("|---|---|---|---|---|")
    for mode, (summariser, background) in modes.items():
        rows = []
        for _ in range(runs):
            run = await converse(summariser, background=background, latency=latency_ms / 1000)
            ms = [s * 1000 for s in run.latencies]
            rows.append([percentile(ms, p) for p in (0.5, 0.9, 0.99, 1.0)])
        cells = [f"{statistics.median(column):.2f}" for column in zip(*rows, strict=True)]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    print()


def print_per_call(off: Run, runs: dict[str, Run]) -> None:
    """Every reply call: the script is the same in every run, so the calls line up."""
    print("turn,call," + ",".join(["off", *runs]))
    columns = [off.prompts, *(run.prompts for run in runs.values())]
    for turn, calls in enumerate(zip(*columns, strict=True), 1):
        for index, tokens in enumerate(zip(*calls, strict=True), 1):
            print(f"{turn},{index}," + ",".join(map(str, tokens)))
    print()


async def main(runs: int, latency_ms: float, per_call: bool) -> None:
    logging.getLogger("picoflow").setLevel(logging.ERROR)  # dropped-fact warnings are counted
    off = await converse(None)
    compacted = {name: await converse(name) for name in SUMMARISERS}
    print(f"{TURNS} turns, a tool call every third turn; compaction min 16 / recent 8\n")
    if per_call:
        print_per_call(off, compacted)
    print_token_table(off, compacted)
    for name, run in compacted.items():
        print_budget(off, name, run)
    await print_timing(runs, latency_ms)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timing runs per mode")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="summariser latency")
    parser.add_argument("--per-call", action="store_true", help="print every call's tokens")
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.latency_ms, options.per_call))
