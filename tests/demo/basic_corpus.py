"""Run a BasicFlow corpus (``basic_heldout.txt``, ``basic_tuning.txt``) through the real engine.

Each section (``== state ==``) names a point of the conversation, reached once by the scripted
turns in `STATES` and copied for every line, so each line is the next thing a user types there
(``start``: the first message of a new session). Each line is
``category | utterance | effects``, the effects separated by ``;``:

* ``step NAME`` — the step the cursor is on after the turn;
* ``cities NYC,LA`` — the cities the weather gate has accepted after the turn (``-``: none);
* ``fav color=..,movie=..,season=..`` — the favourites finally saved, after the questions still
  open are answered with `PROBE` (so a single answer is judged by what it leads to);
* ``asks color`` — the reply asks about that favourite; nothing is saved;
* ``name X``, ``dob YYYY-MM-DD``, ``address street|city|ST|zip`` — the values saved
  (compared without regard to case);
* ``none`` — nothing saved and the step unchanged (a question back, a request to say it again);
* ``end`` — the session ended without saving anything; ``completed`` — the session ended.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demo.basic.flow import BasicFlow
from demo.basic.offline import offline_provider
from picoflow import FlowEngine, TurnResult
from picoflow.session import new_session_id
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELD_OUT = HERE / "basic_heldout.txt"
HELD_OUT_2 = HERE / "basic_heldout2.txt"
TUNING = HERE / "basic_tuning.txt"

_TO_FAVORITES = ["NYC and LA"]
_FAVORITES = ["blue", "Alien", "winter"]
STATES: dict[str, list[str]] = {
    "start": [],
    "favorites": _TO_FAVORITES,
    "favorites_movie": [*_TO_FAVORITES, "blue"],
    "favorites_season": [*_TO_FAVORITES, "blue", "Alien"],
    "name": [*_TO_FAVORITES, *_FAVORITES],
    "dob": [*_TO_FAVORITES, *_FAVORITES, "My name is Ada Lovelace"],
    "address": [*_TO_FAVORITES, *_FAVORITES, "My name is Ada Lovelace", "1990-03-14"],
}
"""How each state is reached (the favourites as the flow asks for them)."""

PROBE = {"color": "red", "movie": "Alien", "season": "spring"}
_ASKS = {"color": re.compile(r"colou?r", re.I), "movie": re.compile(r"movie|film", re.I)}
_ASKS["season"] = re.compile(r"season", re.I)


@dataclass(frozen=True)
class Case:
    state: str
    category: str
    utterance: str
    expected: str
    line: int


@dataclass
class Outcome:
    case: Case
    ok: bool
    detail: str


def read_corpus(path: Path) -> list[Case]:
    """The cases of a corpus file, in order."""
    cases, state = [], ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("== ") and line.endswith(" =="):
            state = line[3:-3].strip()
            if state not in STATES:
                raise ValueError(f"{path.name}:{number}: unknown state {state!r}")
            continue
        category, utterance, expected = (part.strip() for part in line.split(" | "))
        cases.append(Case(state, category, utterance, expected, number))
    return cases


def _engine(store: MemoryStore) -> FlowEngine:
    return FlowEngine([BasicFlow], store=store, providers={"offline": offline_provider})


def facts(doc: dict[str, Any]) -> dict[str, Any]:
    """What the session has recorded, read the same way whatever shape the port gives it."""
    steps = {name: entry.get("state", {}) for name, entry in doc["steps"].items()}
    weather = steps.get("WeatherStep", {})
    cities = {key.removeprefix("cityName_") for key, on in weather.items() if on is True}
    favorites = steps.get("FavoritesStep", {}).get("favorites")
    if isinstance(favorites, dict):
        favorites = {
            "color": favorites.get("favoriteColor", favorites.get("color")),
            "movie": favorites.get("favoriteMovie"),
            "season": favorites.get("favoriteSeason"),
        }
    dob_state = steps.get("DOBStep", {})
    dob = None
    if all(isinstance(dob_state.get(k), int | float) for k in ("year", "month", "day")):
        year, month, day = (int(dob_state[k]) for k in ("year", "month", "day"))
        dob = f"{year:04d}-{month:02d}-{day:02d}"
    dob = dob or steps.get("AddressStep", {}).get("dob")
    address = steps.get("AddressStep", {}).get("address")
    return {
        "step": doc.get("current_step"),
        "completed": doc.get("run_status") == "completed",
        "cities": frozenset(cities) or _old_gate(steps),
        "favorites": favorites,
        "name": steps.get("NameStep", {}).get("name"),
        "dob": dob,
        "address": address if isinstance(address, dict) else None,
    }


def _old_gate(steps: dict[str, Any]) -> frozenset[str]:
    """The first port passed the gate with both cities at once and kept their weather."""
    passed = "weather" in steps.get("FavoritesStep", {})
    return frozenset(("NYC", "LA")) if passed else frozenset()


class Runner:
    """Builds each state once, then runs every utterance on a fresh copy of it.

    One engine and store serve every case: each copy is a new session (its own id).
    """

    def __init__(self) -> None:
        self.snapshots: dict[str, dict[str, Any] | None] = {}
        self.store = MemoryStore()
        self.engine = _engine(self.store)

    async def snapshot(self, state: str) -> dict[str, Any] | None:
        if state not in self.snapshots:
            doc = None
            session = None
            for text in STATES[state]:
                result = await self.engine.run("BasicFlow", text, session)
                assert result.success, result.message
                session = result.session_id
            if session is not None:
                loaded = await self.store.load(session)
                assert loaded is not None
                doc = {**loaded, "revision": 0}
            self.snapshots[state] = doc
        found = self.snapshots[state]
        return copy.deepcopy(found) if found is not None else None

    async def run(self, case: Case) -> Outcome:
        """Run one case on a copy of its state and judge the effect."""
        before = await self.snapshot(case.state)
        session = None
        if before is not None:
            session = new_session_id()
            await self.store.create({**copy.deepcopy(before), "id": session})
        engine = self.engine
        result = await engine.run("BasicFlow", case.utterance, session)
        if not result.success:
            return Outcome(case, False, f"turn failed: {result.message}")
        after = await self.store.load(result.session_id)  # type: ignore[arg-type]
        assert after is not None
        old = facts(before) if before is not None else None
        new = facts(after)
        ok, detail = True, ""
        for clause in (c.strip() for c in case.expected.split(";")):
            kind, _, rest = clause.partition(" ")
            good, why = await _check(kind, rest.strip(), old, new, result, engine)
            if not good:
                ok, detail = False, f"{clause}: {why}"
                break
        return Outcome(case, ok, detail or "ok")


_EMPTY = {"step": "WeatherStep", "completed": False, "cities": frozenset()}


async def _check(  # noqa: C901 - one branch per kind of effect, as the docstring lists
    kind: str,
    rest: str,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    result: TurnResult,
    engine: FlowEngine,
) -> tuple[bool, str]:
    said = f"reply {result.message!r}, facts {_shown(new)}"
    if kind == "step":
        return new["step"] == rest, said
    if kind == "cities":
        wanted = frozenset() if rest == "-" else frozenset(rest.split(","))
        return new["cities"] == wanted, said
    if kind == "fav":
        wanted = dict(pair.split("=", 1) for pair in rest.split(","))
        got = new["favorites"] or await _probe(engine, result)
        if not got:
            return False, f"no favourites saved ({said})"
        return all(_same(got.get(k), v) for k, v in wanted.items()), f"saved {got}"
    if kind == "asks":
        pattern = _ASKS[rest]
        asked = bool(pattern.search(result.message)) and new["favorites"] is None
        return asked and new["step"] == "FavoritesStep", said
    if kind == "name":
        return _same(new["name"], rest), said
    if kind == "dob":
        return new["dob"] == rest, said
    if kind == "address":
        street, city, state, zip_code = rest.split("|")
        wanted = {"street": street, "city": city, "state": state, "zip": zip_code}
        got = new["address"] or {}
        return all(_same(got.get(k), v) for k, v in wanted.items()), said
    if kind == "none":
        base = old if old is not None else {**new, **_EMPTY}
        same = {k: v for k, v in new.items()} == {k: v for k, v in base.items()}
        return same, said
    if kind == "end":
        base = old if old is not None else {**new, **_EMPTY}
        keep = ("cities", "favorites", "name", "dob", "address")
        unchanged = all(new.get(k) == base.get(k) for k in keep)
        return new["completed"] and unchanged, said
    if kind == "completed":
        return new["completed"], said
    raise ValueError(f"Unknown effect {kind!r}")


async def _probe(engine: FlowEngine, result: TurnResult) -> dict[str, Any] | None:
    """Answer the favourites questions still open with `PROBE`; the favourites then saved."""
    session, reply = result.session_id, result.message
    for _ in range(3):
        found = [(m.start(), item) for item, p in _ASKS.items() if (m := p.search(reply))]
        if not found:
            return None
        answer = PROBE[min(found)[1]]
        turn = await engine.run("BasicFlow", answer, session)
        if not turn.success:
            return None
        doc = await engine.get_session(turn.session_id)
        saved = facts(doc)["favorites"] if doc is not None else None
        if saved:
            return dict(saved)
        session, reply = turn.session_id, turn.message
    return None


def _same(got: Any, wanted: str) -> bool:
    return isinstance(got, str) and got.strip().casefold() == wanted.strip().casefold()


def _shown(facts_: dict[str, Any]) -> dict[str, Any]:
    return {k: (sorted(v) if isinstance(v, frozenset) else v) for k, v in facts_.items() if v}


def report(outcomes: list[Outcome]) -> str:
    """Accuracy per category, then the failures."""
    total, good = Counter[str](), Counter[str]()
    for outcome in outcomes:
        total[outcome.case.category] += 1
        good[outcome.case.category] += outcome.ok
    lines = [f"{'category':<14} {'ok':>4} {'all':>4} {'accuracy':>9}"]
    for category in sorted(total):
        share = good[category] / total[category]
        lines.append(f"{category:<14} {good[category]:>4} {total[category]:>4} {share:>9.1%}")
    overall = sum(good.values()) / max(1, sum(total.values()))
    lines.append(
        f"{'overall':<14} {sum(good.values()):>4} {sum(total.values()):>4} {overall:>9.1%}"
    )
    for outcome in outcomes:
        if not outcome.ok:
            case = outcome.case
            lines.append(f"FAIL {case.line} [{case.state}] {case.utterance!r}: {outcome.detail}")
    return "\n".join(lines)


async def measure(path: Path) -> tuple[float, str]:
    """The accuracy of one corpus file and its report."""
    runner = Runner()
    outcomes = [await runner.run(case) for case in read_corpus(path)]
    return sum(o.ok for o in outcomes) / max(1, len(outcomes)), report(outcomes)
