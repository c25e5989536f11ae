"""Run the returning-guest corpora (``guest_*.txt``) through the real engine (issue 23).

A returning guest is made the honest way: a first session of the same owner books a suite with a
pool and breakfast included (whatever the flow remembers of it is what the corpus starts from).
Each ``== state ==`` section then names where a second session of that guest stands, reached
once by the lines in `STATES` and copied, bank included, for every utterance. Each line is
``category | utterance | expected effect``:

* ``criteria k=v;k=v`` — the next search sends those fields (``room_type``, ``amenities`` as a
  set, ``none`` for no room type, an empty value for no amenities); "search now" is said after
  the utterance when it does not search by itself;
* ``forget`` — after the turn the guest's memory bank is empty and the session goes on;
* ``keep`` — after the turn the bank is as it was and the session goes on.

Every case needs the bank to hold something when its turn starts: a flow that remembers nothing
fails every line ("not a returning guest"), rather than passing the declines by accident.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from corpus import Case, Outcome, read_corpus, report

from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELD_OUT = HERE / "guest_heldout.txt"
TUNING = HERE / "guest_tuning.txt"
HELD_OUT_2 = HERE / "guest_heldout2.txt"
TODAY = "2026-05-15"
OWNER = "guest-a"
CONFIG = {"today": TODAY, "user_id": OWNER}

FIRST_VISIT = [
    "", "Hi, I need a hotel in Portland", "July 1 to July 6",
    "a suite with a pool and breakfast included", "search now", "book number 1",
]  # fmt: skip
"""The first session: it books a suite with a pool and breakfast included."""

STATES: dict[str, list[str]] = {
    "dates": ["", "Hi, I need a hotel in Portland"],
    "offered": ["", "Hi, I need a hotel in Portland", "August 3 to August 7", "under $400"],
    "list": ["", "Hi, I need a hotel in Portland", "August 3 to August 7", "search now"],
}  # fmt: skip
"""Where the second session stands: the dates question, right after the budget (where the room
type comes next), and a list of hotels."""


def engine_on(store: MemoryStore) -> FlowEngine:
    return FlowEngine([HotelFlow.using("offline:hotel")], store=store, providers=PROVIDERS)


async def _talk(engine: FlowEngine, lines: list[str], session: str | None = None) -> str:
    for text in lines:
        result = await engine.run("HotelFlow", text, session, CONFIG if session is None else None)
        assert result.success, result.message
        session = result.session_id
    assert session is not None
    return session


class Runner:
    """Builds the first visit and each state once, then runs every utterance on a copy."""

    def __init__(self) -> None:
        self.bank: list[dict[str, Any]] | None = None
        self.snapshots: dict[str, dict[str, Any]] = {}

    async def remembered(self) -> list[dict[str, Any]]:
        """What the bank holds after the first visit (oldest first)."""
        if self.bank is None:
            store = MemoryStore()
            engine = engine_on(store)
            session = await _talk(engine, FIRST_VISIT)
            doc = await store.load(session)
            assert doc is not None and doc["run_status"] == "completed", "the first visit booked"
            self.bank = list(reversed(await engine.memory_bank(OWNER).list()))
        return self.bank

    async def seeded(self) -> tuple[MemoryStore, FlowEngine]:
        """A fresh store whose bank holds what the first visit left."""
        store = MemoryStore()
        engine = engine_on(store)
        for entry in await self.remembered():
            await engine.memory_bank(OWNER).add(entry["text"], entry["kind"], entry["source"])
        return store, engine

    async def fresh(self, state: str) -> tuple[MemoryStore, FlowEngine, dict[str, Any]]:
        """A seeded store holding a copy of the state's session."""
        if state not in self.snapshots:
            store, engine = await self.seeded()
            doc = await store.load(await _talk(engine, STATES[state]))
            assert doc is not None
            self.snapshots[state] = {**doc, "revision": 0}
        store, engine = await self.seeded()
        doc = copy.deepcopy(self.snapshots[state])
        await store.create(copy.deepcopy(doc))
        return store, engine, doc

    async def run(self, case: Case) -> Outcome:
        """Run one case on a copy of its state and judge the effect."""
        store, engine, doc = await self.fresh(case.state)
        bank = engine.memory_bank(OWNER)
        before = await bank.list()
        if not before:
            return Outcome(
                case, False, "not a returning guest: the first visit left no memory", False
            )
        calls, reply = await _turn(engine, case.utterance, doc["id"])
        acted = any(name in ("chosen_hotel", "end_chat") for name, _ in calls)
        after = await store.load(doc["id"])
        assert after is not None
        kind, _, rest = case.expected.partition(" ")
        left = await bank.list()
        going = after["run_status"] == "running"
        if kind == "forget":
            return Outcome(case, not left and going, f"bank={len(left)} {calls} {reply!r}", acted)
        if kind == "keep":
            ok = left == before and going
            return Outcome(case, ok, f"bank={len(left)} calls={calls} {reply!r}", acted)
        if kind != "criteria":
            raise ValueError(f"Unknown expected effect {kind!r}; use criteria, forget or keep.")
        searched = [a for name, a in calls if name == "capture_choices"]
        if not searched:
            searched = [a for n, a in (await _turn(engine, "search now", doc["id"]))[0]
                        if n == "capture_choices"]  # fmt: skip
        ok = bool(searched) and _criteria_ok(rest, searched[-1])
        return Outcome(case, ok, f"searched={searched[-1:]} calls={calls} {reply!r}", acted)


async def _turn(engine: FlowEngine, text: str, session: str) -> tuple[list[Any], str]:
    calls: list[tuple[str, dict[str, Any]]] = []
    reply = ""
    async for event in engine.stream("HotelFlow", text, session):
        if event.kind == "tool_call":
            calls.append((event.data["name"], dict(event.data["args"])))
        if event.kind == "done" and event.result is not None:
            reply = event.result.message
            if not event.result.success:
                calls.append(("failed", {"message": reply}))
    return calls, reply


def _criteria_ok(expected: str, args: dict[str, Any]) -> bool:
    for pair in expected.split(";"):
        key, _, value = (part.strip() for part in pair.partition("="))
        if key == "amenities":
            wanted = {a.strip() for a in value.split(",") if a.strip()}
            if set(args.get("amenities") or []) != wanted:
                return False
        elif key == "room_type":
            if args.get("room_type") != (None if value == "none" else value):
                return False
        else:
            raise ValueError(f"Unknown criterion {key!r}; use room_type or amenities.")
    return True


async def run_corpus(path: Path) -> list[Outcome]:
    """Every case of ``path``, each on a copy of its state (``corpus.report`` prints them)."""
    runner = Runner()
    return [await runner.run(case) for case in read_corpus(path)]


__all__ = ["HELD_OUT", "HELD_OUT_2", "TUNING", "Case", "Outcome", "read_corpus", "report",
           "run_corpus"]  # fmt: skip
