"""BasicFlow's adapter to the corpus kit (``support.corpus_kit``) for ``basic_*.txt``.

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

import re
from pathlib import Path
from typing import Any

from support.corpus_kit import Outcome, Replay, Replayer, Turn

from demo.basic.flow import BasicFlow
from demo.basic.offline import offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELD_OUT = HERE / "basic_heldout.txt"
HELD_OUT_2 = HERE / "basic_heldout2.txt"
TUNING = HERE / "basic_tuning.txt"
TUNING_35 = HERE / "basic_tuning35.txt"  # issue 35: corrections, withdrawals, fillers, units

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

CHOICES = ("end", "completed", "address")
"""The effects that may end the session: a goodbye, or the address (the flow's last answer)."""

PROBE = {"color": "red", "movie": "Alien", "season": "spring"}
_ASKS = {"color": re.compile(r"colou?r", re.I), "movie": re.compile(r"movie|film", re.I)}
_ASKS["season"] = re.compile(r"season", re.I)


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


class BasicReplayer(Replayer):
    """Judges every ``;``-separated effect of a line, the first that fails naming the miss."""

    flow = "BasicFlow"
    states = STATES

    def engine(self, store: MemoryStore) -> FlowEngine:
        return FlowEngine([BasicFlow], store=store, providers={"offline": offline_provider})

    async def judge(self, replay: Replay) -> Outcome:
        old = facts(replay.before) if replay.before is not None else None
        new = facts(replay.after)
        for clause in (c.strip() for c in replay.case.expected.split(";")):
            kind, _, rest = clause.partition(" ")
            good, why = await _check(kind, rest.strip(), old, new, replay.last, replay.engine)
            if not good:
                return Outcome(replay.case, False, f"{clause}: {why}", new["completed"])
        return Outcome(replay.case, True, "ok", new["completed"])


_EMPTY = {"step": "WeatherStep", "completed": False, "cities": frozenset()}


async def _check(  # noqa: C901 - one branch per kind of effect, as the docstring lists
    kind: str,
    rest: str,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    turn: Turn,
    engine: FlowEngine,
) -> tuple[bool, str]:
    said = f"reply {turn.reply!r}, facts {_shown(new)}"
    if kind == "step":
        return new["step"] == rest, said
    if kind == "cities":
        wanted = frozenset() if rest == "-" else frozenset(rest.split(","))
        return new["cities"] == wanted, said
    if kind == "fav":
        wanted = dict(pair.split("=", 1) for pair in rest.split(","))
        got = new["favorites"] or await _probe(engine, turn)
        if not got:
            return False, f"no favourites saved ({said})"
        return all(_same(got.get(k), v) for k, v in wanted.items()), f"saved {got}"
    if kind == "asks":
        pattern = _ASKS[rest]
        asked = bool(pattern.search(turn.reply)) and new["favorites"] is None
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


async def _probe(engine: FlowEngine, turn: Turn) -> dict[str, Any] | None:
    """Answer the favourites questions still open with `PROBE`; the favourites then saved."""
    assert turn.result is not None
    session, reply = turn.result.session_id, turn.reply
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
