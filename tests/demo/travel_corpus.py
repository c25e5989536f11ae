"""TravelFlow's adapter to the corpus kit (``support.corpus_kit``) for ``travel_*.txt``.

Each ``== state ==`` section names a session state, reached once by the lines in `STATES` and
then copied for every utterance, so each utterance is the next thing a traveller types there.
Each line is ``category | utterance | expected effect``:

* ``plan k=v;k=v`` — the planner submits a plan this turn with those fields (``intent``,
  ``origin``, ``destination``, ``depart``, ``return``, ``nights``, ``adults``, ``class``,
  ``budget``; text compared without case, dates as ``YYYY-MM-DD``);
* ``ask`` — no plan is submitted: the planner answers or asks back;
* ``book N`` — the traveller books the N-th package presented, and the session completes;
* ``none`` — nothing is booked: the synthesiser answers;
* ``back`` — from the packages, back to the planner with the plan kept (issue 35 item 4):
  the session is at PlannerStep, nothing is booked and the plan is the one before.

The judge reads only the stored session, so one corpus measures any port of the flow (the
plan's field names are mapped to the ones above).
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

from support.corpus_kit import Outcome, Replay, Replayer

from demo.travel.flow import PICOFLOW_TODAY, TravelFlow
from demo.travel.offline import offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELD_OUT = HERE / "travel_heldout.txt"
TUNING = HERE / "travel_tuning.txt"
TUNING_35 = HERE / "travel_tuning35.txt"  # issue 35: withdrawals, corrections, past dates

CHOICES = ("book",)
"""The only effect that may complete a session: booking the package the traveller chose."""

STATES: dict[str, list[str]] = {
    "start": [],
    "asked": ["hi, I'd like to plan a trip"],
    "partial": ["I want to fly from London to Paris"],
    "packages": ["from London to Lisbon on 2025-06-10 for 3 nights, 2 adults"],
}


class TravelReplayer(Replayer):
    """Judges the stored session only (`judge`), with the reply added to the detail."""

    flow = "TravelFlow"
    states = STATES
    config = {"today": PICOFLOW_TODAY}  # the corpora were written against PicoFlow's day

    def engine(self, store: MemoryStore) -> FlowEngine:
        return FlowEngine([TravelFlow], store=store, providers={"offline": offline_provider})

    async def judge(self, replay: Replay) -> Outcome:
        ok, detail = judge(replay.case.expected, replay.before, replay.after)
        acted = replay.after.get("run_status") == "completed"  # a package booked, or goodbye
        return Outcome(replay.case, ok, f"{detail} reply={replay.last.reply!r}", acted)


def _state(doc: dict[str, Any] | None, step: str) -> dict[str, Any]:
    return dict(((doc or {}).get("steps") or {}).get(step, {}).get("state") or {})


def submitted_plan(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """The plan the planner submitted, in the corpus's field names; None if there is none."""
    state = _state(doc, "PlannerStep")
    if "travelPlan" in state:
        raw = state["travelPlan"]
        depart = str(raw.get("departure_date") or "")[:10]
        return {
            "intent": raw.get("user_intent"),
            "origin": raw.get("origin"),
            "destination": raw.get("destination"),
            "depart": depart,
            "return": str(raw.get("return_date") or "")[:10],
            "nights": raw.get("duration_days"),
            "adults": raw.get("adults", 1),
            "class": str(raw.get("travel_class") or "ECONOMY").lower(),
            "budget": raw.get("budget"),
        }
    if "plan" in state:  # the first port's shape
        raw = state["plan"]
        back = date.fromisoformat(raw["depart"]) + timedelta(days=raw["nights"])
        return {
            "intent": raw["intent"],
            "origin": raw["origin"],
            "destination": raw["destination"],
            "depart": raw["depart"],
            "return": back.isoformat(),
            "nights": raw["nights"],
            "adults": raw["adults"],
            "class": raw["cabin"],
            "budget": raw.get("budget"),
        }
    return None


def _same(got: Any, wanted: str) -> bool:
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        try:
            return float(got) == float(wanted)
        except ValueError:
            return False
    return str(got).strip().lower() == wanted.strip().lower()


def _packages(doc: dict[str, Any] | None) -> tuple[list[Any], Any]:
    state = _state(doc, "SynthesizerStep")
    return list(state.get("packages") or []), state.get("chosenPackage", state.get("chosen"))


def judge(expected: str, before: dict[str, Any] | None, after: dict[str, Any]) -> tuple[bool, str]:
    """Whether the turn from `before` to `after` had the `expected` effect."""
    kind, _, rest = expected.partition(" ")
    plan = submitted_plan(after)
    fresh = plan is not None and plan != submitted_plan(before)
    done = after.get("run_status") == "completed"
    if kind == "plan":
        if not fresh or plan is None:
            return False, "no plan submitted"
        wanted = dict(pair.split("=", 1) for pair in rest.split(";"))
        wrong = {k: plan.get(k) for k, v in wanted.items() if not _same(plan.get(k), v)}
        return not wrong, f"wrong fields {wrong}" if wrong else "ok"
    if kind == "ask":
        return not fresh and not done, f"plan={plan}" if fresh else "ok"
    packages, chosen = _packages(after)
    if kind == "book":
        offered, _ = _packages(before)
        number = int(rest)
        ok = done and len(offered) >= number and chosen == offered[number - 1]
        return ok, f"chose {chosen!r} of {len(offered)}"
    if kind == "none":
        return not done and chosen is None, f"chose {chosen!r}"
    if kind == "back":
        step = (after.get("sequence") or [None])[-1]
        kept = plan is not None and plan == submitted_plan(before)
        return step == "PlannerStep" and not done and kept, f"at {step}, plan {plan}"
    raise ValueError(f"Unknown expected effect {expected!r}; use plan, ask, book, none or back.")
