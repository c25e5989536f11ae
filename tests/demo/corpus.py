"""The hotel's adapter to the corpus kit (``support.corpus_kit``) for ``utterances.txt``.

Each section of the corpus names a session state, reached once by a short scripted
conversation and then copied for every utterance, so each utterance is the next thing a guest
types in that state. Each line is ``category | utterance | expected effect``:

* ``book N`` — books hotel number N of the list; ``end`` — ends the conversation;
* ``none`` — no tool and no state change (a reply, usually a question back);
* ``answer N,M topic`` — answers from the catalog about hotels N, M ("-" for the whole list,
  "*" for any topic); nothing changes;
* ``compare N,M [feature]`` — goes to or draws a comparison of exactly those hotels;
* ``page N``, ``sort KEY`` — shows a page of the list, or the list in another order;
* ``search`` — back to the criteria (or a new search); ``back`` — from a comparison to the list;
* ``criteria k=v;k=v`` — the criteria the next search sends (``search now`` is said after the
  utterance when it does not search by itself); ``same`` — the criteria do not change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hotel_chat import TODAY, offline_engine
from support.corpus_kit import Case, Outcome, Replay, Replayer, talk

from picoflow import FlowEngine
from picoflow.stores import MemoryStore

CORPUS = Path(__file__).with_name("utterances.txt")
TUNING_35 = Path(__file__).with_name("hotel_tuning35.txt")  # issue 35: corrections, withdrawals

STATES: dict[str, list[str]] = {
    "area": [""],
    "declined": ["", "I need a room in Seattle"],
    "explore_dates": ["", "Hi, I need a hotel in Portland"],
    "explore_budget": ["", "Hi, I need a hotel in Portland", "July 1 to July 6"],
    "explore_room": ["", "Hi, I need a hotel in Portland", "July 1 to July 6", "under $300"],
    "explore_amenities": [
        "", "Hi, I need a hotel in Portland", "July 1 to July 6", "under $300", "two beds",
    ],
    "explore_distance": [
        "", "Hi, I need a hotel in Portland", "July 1 to July 6", "under $300", "two beds",
        "wifi",
    ],
    "explore_summary": [
        "", "Hi, I need a hotel in Portland", "July 1 to July 6", "under $300", "two beds",
        "wifi", "no preference",
    ],
    "list": ["", "Hi, I need a hotel in Portland", "July 1 to July 6", "search now"],
    "list_budget": [
        "", "Hi, I need a hotel in Portland", "July 1 to July 6", "under $200", "search now",
    ],
    "asked": [
        "", "Hi, I need a hotel in Portland", "July 1 to July 6", "search now",
        "does number 3 have a pool?",
    ],
    "page2": ["", "Hi, I need a hotel in Portland", "July 1 to July 6", "search now", "more"],
    "by_airport": [
        "", "Hi, I need a hotel in Portland", "July 1 to July 6", "search now",
        "sort by distance to the airport",
    ],
    "compare": [
        "", "Hi, I need a hotel in Portland", "July 1 to July 6", "search now",
        "compare 2 and 4 on price",
    ],
}  # fmt: skip
"""How each state of the corpus is reached."""

CHOICES = ("book", "end")

KNOWN_MISSES = frozenset(
    {
        # "wify": four letters, and words that short are read only as written ("wife")
        ("explore_amenities", "a pool and free wify"),
    }
)
"""The corpus lines known not to be understood, as (state, utterance): any other miss fails the
test, and a known one that passes must be taken off (issue 25 item 7)."""


class HotelReplayer(Replayer):
    """The hotel's replay: a criteria case is judged on the search its turn leads to."""

    flow = "HotelFlow"
    states = STATES
    config = {"today": TODAY}
    judge_failed_turns = True  # `judge` reads the "failed" call, and a criteria case its search

    def __init__(self) -> None:
        super().__init__()
        self.baselines: dict[str, dict[str, Any]] = {}

    def engine(self, store: MemoryStore) -> FlowEngine:
        return offline_engine(store)

    async def judge(self, replay: Replay) -> Outcome:
        case, calls = replay.case, replay.last.calls
        assert replay.before is not None
        outcome = judge(case, calls, replay.before, replay.after)
        if case.expected.split()[0] in ("criteria", "same"):
            searched = [a for name, a in calls if name == "capture_choices"]
            probed = searched
            if not probed:
                probe = await talk(replay.engine, self.flow, "search now", replay.session)
                probed = [a for name, a in probe.calls if name == "capture_choices"]
            baseline = await self.baseline(case.state)
            if case.expected == "same":  # no search now, and the next search is unchanged
                ok = not searched and (probed[-1] if probed else {}) == baseline
            else:
                ok = _criteria_ok(case.expected, probed, baseline)
            outcome = Outcome(case, ok, f"searched with {probed} (calls={calls})", outcome.acted)
        return outcome

    async def baseline(self, state: str) -> dict[str, Any]:
        """The criteria "search now" sends from ``state`` as it is."""
        if state not in self.baselines:
            _, engine, doc, _ = await self.stage(state)
            assert doc is not None
            calls = (await talk(engine, self.flow, "search now", doc["id"])).calls
            self.baselines[state] = next((a for n, a in calls if n == "capture_choices"), {})
        return self.baselines[state]


def _criteria_ok(expected: str, searched: list[dict[str, Any]], baseline: dict[str, Any]) -> bool:
    if not searched:
        return False
    args = searched[-1]
    wanted = dict(baseline)
    for pair in expected.removeprefix("criteria").strip().split(";"):
        key, _, value = pair.strip().partition("=")
        wanted.update(_expected_field(key, value, baseline))
    return all(args.get(key) == value for key, value in wanted.items()) or _amenity_sets(
        args, wanted
    )


def _amenity_sets(args: dict[str, Any], wanted: dict[str, Any]) -> bool:
    rest = {k: v for k, v in wanted.items() if k != "amenities"}
    return all(args.get(k) == v for k, v in rest.items()) and set(
        args.get("amenities") or []
    ) == set(wanted.get("amenities") or [])


def _expected_field(key: str, value: str, baseline: dict[str, Any]) -> dict[str, Any]:
    if key == "dates":
        start, _, end = value.partition("..")
        return {"dates": [{"start": start, "end": end}]}
    if key == "amenities":
        return {"amenities": [a.strip() for a in value.split(",") if a.strip()]}
    if key in ("airport", "downtown"):
        return {f"max_miles_to_{key}": None if value == "none" else float(value)}
    if key == "room_type":
        return {"room_type": None if value == "none" else value}
    return {key: None if value == "none" else float(value)}


def offers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["steps"].get("PresentStep", {}).get("state", {}).get("offers", []))


def _names(doc: dict[str, Any], numbers: str) -> set[str]:
    if numbers == "-":
        return set()
    by_number = {offer["number"]: offer["name"] for offer in offers(doc)}
    return {by_number[int(n)] for n in numbers.split(",")}


def _state(doc: dict[str, Any]) -> Any:
    steps = doc["steps"]
    return (
        doc.get("run_status"),
        doc["sequence"][-1] if doc.get("sequence") else None,
        steps.get("PresentStep", {}).get("state", {}),
        steps.get("CompareStep", {}).get("state", {}).get("compared"),
        steps.get("ExploreStep", {}).get("state", {}),
    )


def judge(case: Case, calls: list[Any], before: Any, after: Any) -> Outcome:
    """Whether the turn had the expected effect."""
    names = [name for name, _ in calls]
    if "failed" in names:
        return Outcome(case, False, f"turn failed: {calls}", False)
    acted = "chosen_hotel" in names or "end_chat" in names or after.get("run_status") == "completed"
    kind, _, rest = case.expected.partition(" ")
    ok, detail = _check(kind, rest, calls, before, after)
    return Outcome(case, ok, detail or f"calls={calls}", acted)


def _check(  # noqa: C901 - one branch per kind of expected effect, as the docstring lists
    kind: str, rest: str, calls: list[Any], before: Any, after: Any
) -> tuple[bool, str]:
    names = [name for name, _ in calls]
    args = {name: a for name, a in calls}
    unchanged = _state(before) == _state(after)
    if kind == "book":
        booked = args.get("chosen_hotel", {}).get("hotel")
        return booked in _names(before, rest) and after.get("run_status") == "completed", ""
    if kind == "end":
        return "end_chat" in names and "chosen_hotel" not in names, ""
    if kind == "none":
        return not names and unchanged, ""
    if kind == "answer":
        numbers, _, topic = rest.partition(" ")
        asked = args.get("answer_question")
        if asked is None or not unchanged:
            return False, ""
        same = set(asked["hotels"]) == _names(before, numbers)
        return same and topic in ("*", asked["topic"]), ""
    if kind == "compare":
        numbers, _, feature = rest.partition(" ")
        picked = args.get("generate_comparison") or args.get("go_compare")
        if picked is None:
            return False, ""
        same = set(picked["hotels"]) == _names(before, numbers)
        return same and feature in ("", picked.get("feature")), ""
    if kind == "page":
        return args.get("show_hotels", {}).get("page") == int(rest), ""
    if kind == "sort":
        return args.get("show_hotels", {}).get("sort_by") == rest, ""
    if kind == "search":
        return "search_again" in names or "capture_choices" in names, ""
    if kind in ("criteria", "same"):
        return True, ""  # judged on the search it leads to (HotelReplayer.judge)
    if kind == "back":
        return names[:1] == ["resume_booking"] and "go_compare" not in names, ""
    raise ValueError(f"Unknown expected effect {kind!r}")
