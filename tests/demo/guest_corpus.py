"""The returning guest's adapter to the corpus kit (``support.corpus_kit``) for ``guest_*.txt``
(issue 23).

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

from pathlib import Path
from typing import Any

from support.corpus_kit import Outcome, Replay, Replayer, talk

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


class GuestReplayer(Replayer):
    """Each store is seeded with the bank the first visit left, so every case is a return."""

    flow = "HotelFlow"
    states = STATES
    config = CONFIG
    judge_failed_turns = True  # a "keep" or "forget" is judged on the bank and the session

    def __init__(self) -> None:
        super().__init__()
        self.bank: list[dict[str, Any]] | None = None

    def engine(self, store: MemoryStore) -> FlowEngine:
        return FlowEngine([HotelFlow.using("offline:hotel")], store=store, providers=PROVIDERS)

    async def remembered(self) -> list[dict[str, Any]]:
        """What the bank holds after the first visit (oldest first)."""
        if self.bank is None:
            store = MemoryStore()
            engine = self.engine(store)
            session = await self.converse(engine, FIRST_VISIT)
            assert session is not None
            doc = await store.load(session)
            assert doc is not None and doc["run_status"] == "completed", "the first visit booked"
            self.bank = list(reversed(await engine.memory_bank(OWNER).list()))
        return self.bank

    async def prepare(self, engine: FlowEngine) -> list[dict[str, Any]]:
        """Seed the bank with what the first visit left; what it then holds."""
        for entry in await self.remembered():
            await engine.memory_bank(OWNER).add(entry["text"], entry["kind"], entry["source"])
        return await engine.memory_bank(OWNER).list()

    async def judge(self, replay: Replay) -> Outcome:
        case, before = replay.case, replay.context
        if not before:
            return Outcome(
                case, False, "not a returning guest: the first visit left no memory", False
            )
        calls, reply = replay.last.calls, replay.last.reply
        acted = any(name in ("chosen_hotel", "end_chat") for name, _ in calls)
        kind, _, rest = case.expected.partition(" ")
        left = await replay.engine.memory_bank(OWNER).list()
        going = replay.after["run_status"] == "running"
        if kind == "forget":
            return Outcome(case, not left and going, f"bank={len(left)} {calls} {reply!r}", acted)
        if kind == "keep":
            ok = left == before and going
            return Outcome(case, ok, f"bank={len(left)} calls={calls} {reply!r}", acted)
        if kind != "criteria":
            raise ValueError(f"Unknown expected effect {kind!r}; use criteria, forget or keep.")
        searched = [a for name, a in calls if name == "capture_choices"]
        if not searched:
            probe = await talk(replay.engine, self.flow, "search now", replay.session)
            searched = [a for n, a in probe.calls if n == "capture_choices"]
        ok = bool(searched) and _criteria_ok(rest, searched[-1])
        return Outcome(case, ok, f"searched={searched[-1:]} calls={calls} {reply!r}", acted)


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
