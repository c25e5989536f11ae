"""One way to replay a demo's utterance corpus through the real engine (issue "One house", 7).

Every demo corpus (``tests/demo/utterances.txt``, ``*_tuning.txt``, ``*_heldout*.txt``) has the
same shape, so it is read and replayed here once; a demo's adapter (``tests/demo/*corpus.py``)
says only what is its own: how its engine is built, how each state is reached, and how an
outcome is judged against the expectation.

The file format: blank lines and ``#`` lines are skipped; ``== state ==`` opens a section, a
point of the conversation reached once by scripted turns and then copied for every case, so
each case is the next thing a person types there; every other line is
``category | turns | expected``. The turns are one utterance, or several separated by `` // ``
(a short conversation judged after its last turn). What ``expected`` means is the adapter's:
the kit keeps it as written and never parses it.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from picoflow import FlowEngine, TurnResult
from picoflow.stores import MemoryStore

Doc = dict[str, Any]
"""A stored session document, as `MemoryStore.load` returns it."""

Call = tuple[str, dict[str, Any]]
"""A tool call a turn made: the tool's name and its arguments."""

TURN_SEPARATOR = " // "


@dataclass(frozen=True)
class Case:
    """One line of a corpus: where it is said, what is said, and the effect it must have."""

    state: str
    category: str
    utterance: str
    expected: str
    line: int
    source: str = ""  # the corpus file's stem, so a failure names the file as well as the line

    @property
    def turns(self) -> tuple[str, ...]:
        """The utterance split into the turns it sends (one, unless it holds `` // ``)."""
        return tuple(turn.strip() for turn in self.utterance.split(TURN_SEPARATOR))


@dataclass
class Outcome:
    """How one case went; ``acted`` records a booking or an ending, which only a choice may make."""

    case: Case
    ok: bool
    detail: str
    acted: bool = False


@dataclass
class Turn:
    """One turn as the judges need it: its tool calls (in order) and its result.

    A failed turn adds a ``("failed", {"message": ...})`` call, so a judge that reads only the
    calls still sees the failure.
    """

    calls: list[Call]
    result: TurnResult | None

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.success

    @property
    def reply(self) -> str:
        return self.result.message if self.result is not None else ""


@dataclass
class Replay:
    """Everything a judge may look at once a case's turns have run."""

    case: Case
    store: MemoryStore
    engine: FlowEngine
    session: str
    before: Doc | None  # the state's session before the turns; None for a new session
    after: Doc
    turns: list[Turn]
    context: Any  # what `Replayer.prepare` returned for this case

    @property
    def last(self) -> Turn:
        return self.turns[-1]


def read_corpus(path: Path, states: Collection[str] | None = None) -> list[Case]:
    """The cases of a corpus file, in order; with `states`, a section naming any other fails.

    Checking the sections when the file is read names the line, rather than failing later with
    a bare `KeyError` when the case runs.
    """
    cases, state = [], ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("== ") and line.endswith(" =="):
            state = line[3:-3].strip()
            if states is not None and state not in states:
                raise ValueError(f"{path.name}:{number}: unknown state {state!r}")
            continue
        category, utterance, expected = (part.strip() for part in line.split(" | "))
        cases.append(Case(state, category, utterance, expected, number, path.stem))
    return cases


async def talk(
    engine: FlowEngine,
    flow: str,
    text: str,
    session: str | None = None,
    config: dict[str, Any] | None = None,
) -> Turn:
    """Send one line as a streamed turn, so the tool calls are seen as well as the result.

    `FlowEngine.run` and `FlowEngine.stream` run the same turn; streaming costs nothing more
    and lets the judges that read tool calls share this one way of sending a line.
    """
    calls: list[Call] = []
    result = None
    async for event in engine.stream(flow, text, session, config):
        if event.kind == "tool_call":
            calls.append((event.data["name"], dict(event.data["args"])))
        if event.kind == "done":
            result = event.result
    if result is None or not result.success:
        calls.append(("failed", {"message": result.message if result else "no result"}))
    return Turn(calls, result)


class Replayer:
    """Builds each state once, then runs every case on a fresh copy of it.

    A demo's adapter subclasses it, setting `flow`, `states` (the lines that reach each state;
    none for a new session) and `config` (sent with a new session's first turn), and
    overriding `engine` and `judge`, and `prepare` when each store needs something first. A
    fresh store and engine per case keep one case from leaking into the next.
    """

    flow: str = ""
    states: Mapping[str, Sequence[str]] = {}
    config: dict[str, Any] | None = None
    judge_failed_turns = False
    """False: a failed turn fails its case at once. True: the judge sees it (as a "failed"
    call) and decides, as the hotel's judges always have."""

    def __init__(self) -> None:
        self._snapshots: dict[str, Doc | None] = {}

    def engine(self, store: MemoryStore) -> FlowEngine:
        """The demo's engine on `store`."""
        raise NotImplementedError

    async def prepare(self, engine: FlowEngine) -> Any:
        """Set up a new store before its session is made (nothing by default); the judge gets
        the value back as `Replay.context`."""
        return None

    async def judge(self, replay: Replay) -> Outcome:
        """Whether the case's turns had the expected effect."""
        raise NotImplementedError

    def read(self, path: Path) -> list[Case]:
        """The cases of `path`, checked against this demo's states."""
        return read_corpus(path, self.states)

    async def replay(self, *paths: Path) -> list[Outcome]:
        """Every case of every file, in order, on one set of snapshots."""
        return [await self.run(case) for path in paths for case in self.read(path)]

    async def converse(self, engine: FlowEngine, lines: Iterable[str]) -> str | None:
        """Say `lines` in a new session, each turn required to succeed; its id (None if none)."""
        session = None
        for text in lines:
            turn = await talk(engine, self.flow, text, session, self._first(session))
            assert turn.ok, turn.reply
            assert turn.result is not None
            session = turn.result.session_id
        return session

    async def snapshot(self, state: str) -> Doc | None:
        """A copy of the session that reaches `state` (None when it is a new session)."""
        if state not in self._snapshots:
            doc = None
            store = MemoryStore()
            engine = self.engine(store)
            await self.prepare(engine)
            session = await self.converse(engine, self.states[state])
            if session is not None:
                loaded = await store.load(session)
                assert loaded is not None
                doc = {**loaded, "revision": 0}  # a new session in a fresh store
            self._snapshots[state] = doc
        found = self._snapshots[state]
        return copy.deepcopy(found) if found is not None else None

    async def stage(self, state: str) -> tuple[MemoryStore, FlowEngine, Doc | None, Any]:
        """A fresh store and engine holding a copy of `state`'s session, and what `prepare` said."""
        before = await self.snapshot(state)
        store = MemoryStore()
        engine = self.engine(store)
        context = await self.prepare(engine)
        if before is not None:
            await store.create(copy.deepcopy(before))
        return store, engine, before, context

    async def run(self, case: Case) -> Outcome:
        """Run one case's turns on a copy of its state, then judge the effect."""
        store, engine, before, context = await self.stage(case.state)
        session = before["id"] if before is not None else None
        turns: list[Turn] = []
        for text in case.turns:
            turn = await talk(engine, self.flow, text, session, self._first(session))
            turns.append(turn)
            if not turn.ok and not self.judge_failed_turns:
                return Outcome(case, False, f"turn failed: {turn.reply}")
            session = turn.result.session_id if turn.result is not None else session
        assert session is not None
        after = await store.load(session)
        assert after is not None
        return await self.judge(Replay(case, store, engine, session, before, after, turns, context))

    def _first(self, session: str | None) -> dict[str, Any] | None:
        return self.config if session is None else None


def effects(expected: str) -> set[str]:
    """The kinds of effect an expectation names ("book 3" is {"book"}; clauses split at ";")."""
    return {clause.split()[0] for clause in expected.split(";") if clause.split()}


def acted_on_a_guess(outcomes: Sequence[Outcome], choices: Collection[str]) -> list[Outcome]:
    """The cases that booked, chose or ended (``acted``) on a line that is no such choice — its
    expectation names none of `choices` — or that acted otherwise than the choice it names (the
    case failed: another hotel, the withdrawn slot, the first of two values). The invariant
    of issue 35 item 1, asserted over every corpus line of the four demos: this is empty."""
    return [
        o for o in outcomes if o.acted and not (effects(o.case.expected) & set(choices) and o.ok)
    ]


def accuracy(outcomes: Sequence[Outcome]) -> float:
    """The share of cases understood (0 for none)."""
    return sum(o.ok for o in outcomes) / max(1, len(outcomes))


def report(outcomes: Sequence[Outcome], known: frozenset[tuple[str, str]] = frozenset()) -> str:
    """Accuracy per category, then the misses ("KNOWN" for those in ``known``, else "FAIL")."""
    total, good = Counter[str](), Counter[str]()
    for outcome in outcomes:
        total[outcome.case.category] += 1
        good[outcome.case.category] += outcome.ok
    lines = [f"{'category':<14} {'ok':>4} {'all':>4} {'accuracy':>9}"]
    for category in sorted(total):
        share = good[category] / total[category]
        lines.append(f"{category:<14} {good[category]:>4} {total[category]:>4} {share:>9.1%}")
    right, count = sum(good.values()), sum(total.values())
    lines.append(f"{'overall':<14} {right:>4} {count:>4} {right / max(1, count):>9.1%}")
    for outcome in outcomes:
        if not outcome.ok:
            case = outcome.case
            mark = "KNOWN" if (case.state, case.utterance) in known else "FAIL"
            lines.append(
                f"{mark} {case.source}:{case.line} [{case.state}] {case.utterance!r}: "
                f"{outcome.detail}"
            )
    return "\n".join(lines)


def wants_report(config: Any) -> bool:
    """Whether the accuracy table is printed: only when asked, with ``-v`` or
    ``--corpus-report``, so a passing ``make test`` prints no "FAIL" line."""
    return bool(config.getoption("verbose") >= 0 or config.getoption("corpus_report"))


def misses_problem(outcomes: Sequence[Outcome], known: frozenset[tuple[str, str]]) -> str:
    """What is wrong with the misses ("" when nothing): lines missed that are not known misses
    (the figure dropped), or known misses now understood (the figure rose: pin it)."""
    new = [o.case for o in outcomes if not o.ok and (o.case.state, o.case.utterance) not in known]
    fixed = [o.case for o in outcomes if o.ok and (o.case.state, o.case.utterance) in known]
    problems = []
    if new:
        listed = "; ".join(f"{case.line} [{case.state}] {case.utterance!r}" for case in new)
        problems.append(f"{len(new)} line(s) no longer understood (the figure dropped): {listed}")
    if fixed:
        listed = "; ".join(f"[{case.state}] {case.utterance!r}" for case in fixed)
        problems.append(f"now understood, remove from KNOWN_MISSES: {listed}")
    return "\n".join(problems)
