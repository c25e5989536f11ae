"""The simulator's API: load a session's history, replay it per setting, report and compare.

`picoflow.simulate` re-exports the public names; the replay itself is in `_replay`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from picoflow.errors import SessionNotFoundError
from picoflow.memory import SummaryConfig
from picoflow.models import ModelLike
from picoflow.session import check_schema
from picoflow.simulate import _checks as checks
from picoflow.simulate._args import Options, check_options, session_ids_of
from picoflow.simulate._checks import Finding
from picoflow.simulate._history import NamespaceHistory, build_history, read_archive
from picoflow.simulate._replay import (
    Eviction,
    ModelCall,
    NamespaceReplay,
    Replay,
)
from picoflow.simulate._revisions import revision_messages
from picoflow.simulate._table import format_details, format_table
from picoflow.stores.base import Store

__all__ = [
    "SettingResult",
    "SimulationReport",
    "load_history",
    "parse_setting",
    "simulate_compaction",
    "simulate_document",
]

VIOLATIONS = (checks.ORPHAN_RESULT, checks.UNANSWERED_CALL, checks.OPENS_WITH_ASSISTANT)
COVERAGE_GAPS = (checks.OVER_WINDOW, checks.THRESHOLD_ABOVE_WINDOW)
IDLE = (checks.NEVER_TRIGGERED, checks.NOTHING_TO_EVICT)
CHURN = (checks.CHURN,)


@dataclass(frozen=True)
class SettingResult:
    """What one setting would have done to a session, over the replayed namespaces.

    Attributes:
        setting: The simulated `SummaryConfig`, or None for compaction off.
        calls: Every replayed model call with its request's approximate prompt tokens.
        evictions: Every simulated compaction (one summary each), in replay order.
        findings: Invariant violations, coverage gaps and idle settings (see `Finding`).
        summary_input_tokens: Tokens the summariser would have read, all compactions.
        summary_output_tokens: Tokens of the simulated summaries.
        live_at_end: Live messages per namespace after the last turn (system slot excluded).
    """

    setting: SummaryConfig | None
    calls: list[ModelCall] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    live_at_end: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """`off`, or `MIN/RECENT` plus `max_tokens=N`, `background`, `whole_turns` when set."""
        setting = self.setting
        if setting is None:
            return "off"
        label = f"{setting.min_messages}/{setting.recent_messages}"
        if setting.max_tokens is not None:
            label += f" max_tokens={setting.max_tokens}"
        label += " background" if setting.background else ""
        return label + (" whole_turns" if setting.whole_turns else "")

    @property
    def summaries(self) -> int:
        """How many summaries the setting would have written."""
        return len(self.evictions)

    @property
    def evicted(self) -> int:
        """How many messages it would have evicted to the archive."""
        return sum(eviction.count for eviction in self.evictions)

    @property
    def total_tokens(self) -> int:
        """Prompt tokens of all model calls together."""
        return sum(call.tokens for call in self.calls)

    @property
    def max_call_tokens(self) -> int:
        """The largest request."""
        return max((call.tokens for call in self.calls), default=0)

    @property
    def turn_tokens(self) -> dict[tuple[str, int], int]:
        """Prompt tokens per `(namespace, turn)`: a turn may make several calls (tool rounds)."""
        totals: dict[tuple[str, int], int] = {}
        for call in self.calls:
            key = (call.namespace, call.turn)
            totals[key] = totals.get(key, 0) + call.tokens
        return totals

    @property
    def max_turn_tokens(self) -> int:
        """The most prompt tokens one turn sent."""
        return max(self.turn_tokens.values(), default=0)

    @property
    def violations(self) -> list[Finding]:
        """Requests a provider would refuse (M5, first message)."""
        return [f for f in self.findings if f.kind in VIOLATIONS]

    @property
    def coverage_gaps(self) -> list[Finding]:
        """Messages that would be neither in a request nor in a summary."""
        return [f for f in self.findings if f.kind in COVERAGE_GAPS]

    @property
    def idle(self) -> list[Finding]:
        """Namespaces where the setting never compacted anything."""
        return [f for f in self.findings if f.kind in IDLE]

    @property
    def churn(self) -> list[Finding]:
        """Namespaces compacted at nearly every turn end (too little threshold margin)."""
        return [f for f in self.findings if f.kind in CHURN]

    def cost(self, price: float, summary_price: float | None = None) -> float:
        """Prompt cost at `price` per million tokens, plus summaries at `summary_price`.

        Replies are the replayed ones under every setting, so their cost does not differ and is
        left out; summary tokens (read and written) are priced at `summary_price`, or `price`.
        """
        per_summary = price if summary_price is None else summary_price
        summary = self.summary_input_tokens + self.summary_output_tokens
        return (self.total_tokens * price + summary * per_summary) / 1_000_000


@dataclass(frozen=True)
class SimulationReport:
    """The simulation of one session under every setting; `table()` compares them.

    Attributes:
        session_id: The session's id.
        source: `"store"` (live document and archive) or `"document"` (live document only).
        histories: What was known of each replayed namespace.
        results: One `SettingResult` per setting, in the order given.
        notes: What the reader should know about the input (unknown or erased positions).
        context_window: The window requests were checked against, if any.
        price_per_million_tokens: For the cost column, if given.
        summary_price_per_million_tokens: For summary calls; defaults to the price.
    """

    session_id: str
    source: Literal["store", "document"]
    histories: dict[str, NamespaceHistory]
    results: list[SettingResult]
    notes: list[str] = field(default_factory=list)
    context_window: int | None = None
    price_per_million_tokens: float | None = None
    summary_price_per_million_tokens: float | None = None

    def result(self, label: str) -> SettingResult:
        """The result of the setting with this label (`"off"`, `"16/8"`, ...)."""
        for result in self.results:
            if result.label == label:
                return result
        labels = ", ".join(repr(r.label) for r in self.results)
        raise KeyError(f"No setting labelled {label!r} was simulated; the labels are {labels}.")

    def table(self) -> str:
        """A plain-text comparison of the settings, then the findings and notes."""
        return format_table(self)

    def details(self) -> str:
        """The evicted ranges of every setting, per namespace, as `first..last@turn`."""
        return format_details(self)


async def simulate_compaction(
    store: Store,
    session_ids: str | Sequence[str],
    settings: Sequence[SummaryConfig | None],
    *,
    namespaces: Sequence[str] | None = None,
    summary_tokens: int | None = None,
    summary_model: ModelLike | None = None,
    context_window: int | None = None,
    price_per_million_tokens: float | None = None,
    summary_price_per_million_tokens: float | None = None,
    revisions: bool = False,
) -> list[SimulationReport]:
    """Replay stored sessions under each setting; one report per session, nothing written.

    Args:
        store: The store the sessions live in; its archive supplies the evicted messages.
        session_ids: One id or several.
        settings: `SummaryConfig`s to compare; `None` stands for compaction off.
        namespaces: Namespaces to replay; None replays every namespace of each session.
        summary_tokens: Size of a simulated summary. None: the stored summary's size, or
            `DEFAULT_SUMMARY_TOKENS` where the namespace has none.
        summary_model: A model that writes real summaries instead (costs real calls).
        context_window: Check every request against this many tokens (a coverage gap).
        price_per_million_tokens: Adds a cost column.
        summary_price_per_million_tokens: Price of summary tokens; defaults to the price.
        revisions: Rebuild each namespace from the session's kept revisions too (W1): the
            current line's messages win over the archive's, which may hold turns an undo,
            rewind or edit took back, and fill what the archive trimmed or never had.

    Raises:
        SessionNotFoundError: a session id is not in the store.
        ValueError, TypeError: an argument is invalid (the message says which and why), or
            `revisions=True` with a store that keeps no history.
    """
    ids = session_ids_of(session_ids)
    options = check_options(
        settings,
        namespaces,
        summary_tokens,
        summary_model,
        context_window,
        (price_per_million_tokens, summary_price_per_million_tokens),
    )
    return [await _simulate_stored(store, one, options, revisions) for one in ids]


async def _simulate_stored(
    store: Store, session_id: str, options: Options, revisions: bool
) -> SimulationReport:
    """One stored session's report; a missing session stops the whole run, as nothing ran."""
    doc = await store.load(session_id)
    if doc is None:
        raise SessionNotFoundError(
            session_id,
            f"Session '{session_id}' is not in the store, so there is nothing to simulate. "
            "Check the id (TurnResult.session_id) and that this is the store the engine "
            "used; deleted and expired sessions are gone.",
        )
    histories = await load_history(store, doc, options.namespaces, revisions=revisions)
    return await _simulate(doc, histories, "store", options)


async def simulate_document(
    doc: Mapping[str, Any],
    settings: Sequence[SummaryConfig | None],
    *,
    namespaces: Sequence[str] | None = None,
    summary_tokens: int | None = None,
    summary_model: ModelLike | None = None,
    context_window: int | None = None,
    price_per_million_tokens: float | None = None,
    summary_price_per_million_tokens: float | None = None,
) -> SimulationReport:
    """Replay one session document (`engine.get_session(...)`) without its store.

    Only the live history is known: messages compacted before are represented by the stored
    summary, and the report's notes say which positions were not replayed. The arguments are
    those of `simulate_compaction`.
    """
    options = check_options(
        settings,
        namespaces,
        summary_tokens,
        summary_model,
        context_window,
        (price_per_million_tokens, summary_price_per_million_tokens),
    )
    histories = await load_history(None, doc, options.namespaces)
    return await _simulate(doc, histories, "document", options)


async def load_history(
    store: Store | None,
    doc: Mapping[str, Any],
    namespaces: Sequence[str] | None = None,
    *,
    revisions: bool = False,
) -> dict[str, NamespaceHistory]:
    """The whole history of a session's namespaces: archive (if a store is given) plus live.

    With `revisions`, the messages of the store's kept revisions on the current line too
    (see `simulate_compaction`).

    Raises:
        ValueError: `doc` is not a session document, or a namespace is not in it.
        StoreError: the document has a newer schema than this picoflow reads.
    """
    memory = _memory_of(doc)
    session_id = str(doc.get("id"))
    wanted = list(memory) if namespaces is None else list(namespaces)
    unknown = [name for name in wanted if name not in memory]
    if unknown:
        known = ", ".join(repr(name) for name in memory) or "none"
        raise ValueError(
            f"Session '{session_id}' has no namespace {unknown[0]!r}; its namespaces are "
            f"{known}. Pass some of them, or namespaces=None to replay them all."
        )
    kept = await revision_messages(store, session_id, wanted) if store and revisions else {}
    histories = {}
    for name in wanted:
        archive = None if store is None else await read_archive(store, session_id, name)
        histories[name] = build_history(name, memory[name], archive, kept.get(name))
    return histories


def parse_setting(
    text: str, *, max_tokens: int | None = None, whole_turns: bool = False
) -> SummaryConfig | None:
    """`"off"` -> None, `"16/8"` -> `SummaryConfig(16, 8, max_tokens=..., whole_turns=...)`.

    Raises:
        ValueError: the text is neither form, or the numbers break M3's rules.
    """
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}.")
    spelled = text.strip().lower()
    if spelled == "off":
        return None
    parts = spelled.split("/")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise ValueError(
            f"Invalid setting {text!r}: write MIN/RECENT, e.g. 16/8 (min_messages/"
            "recent_messages), or 'off' for no compaction."
        )
    try:
        return SummaryConfig(
            int(parts[0]), int(parts[1]), max_tokens=max_tokens, whole_turns=whole_turns
        )
    except ValueError as exc:
        raise ValueError(
            f"Invalid setting {text!r}: {exc} Write MIN/RECENT with MIN >= 8 and "
            "1 <= RECENT <= MIN - 2, e.g. 16/8."
        ) from exc


def _memory_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    memory = doc.get("memory") if isinstance(doc, Mapping) else None
    if not isinstance(memory, dict) or "id" not in doc:
        raise ValueError(
            "Not a session document: expected the dict engine.get_session() or store.load() "
            f"returns, with 'id' and 'memory' keys; got {type(doc).__name__}."
        )
    check_schema(dict(doc))
    return memory


async def _simulate(
    doc: Mapping[str, Any],
    histories: dict[str, NamespaceHistory],
    source: Literal["store", "document"],
    options: Options,
) -> SimulationReport:
    results = []
    for setting in options.settings:
        replays = [
            await Replay(history, setting, options.replay).run() for history in histories.values()
        ]
        results.append(_merge(setting, replays, options.replay.context_window))
    return SimulationReport(
        session_id=str(doc.get("id")),
        source=source,
        histories=histories,
        results=results,
        notes=_notes(histories, source),
        context_window=options.replay.context_window,
        price_per_million_tokens=options.price,
        summary_price_per_million_tokens=options.summary_price,
    )


def _merge(
    setting: SummaryConfig | None, replays: list[NamespaceReplay], window: int | None
) -> SettingResult:
    """One setting's namespace replays as one result; static findings come first."""
    return SettingResult(
        setting,
        calls=[call for replay in replays for call in replay.calls],
        evictions=[eviction for replay in replays for eviction in replay.evictions],
        findings=_static_findings(setting, window)
        + [finding for replay in replays for finding in replay.findings],
        summary_input_tokens=sum(replay.summary_input_tokens for replay in replays),
        summary_output_tokens=sum(replay.summary_output_tokens for replay in replays),
        live_at_end={replay.namespace: replay.live_at_end for replay in replays},
    )


def _static_findings(setting: SummaryConfig | None, window: int | None) -> list[Finding]:
    """A token threshold at or above the window can only trigger once the window is full."""
    if setting is None or window is None or setting.max_tokens is None:
        return []
    if setting.max_tokens < window:
        return []
    return [
        Finding(
            checks.THRESHOLD_ABOVE_WINDOW,
            "",
            f"max_tokens={setting.max_tokens} is not below the context window ({window} "
            "tokens): compaction triggers only after a history has outgrown the window, so the "
            "requests in between are refused or trimmed. Set max_tokens well below the window, "
            "leaving room for one turn's messages.",
        )
    ]


def _notes(histories: dict[str, NamespaceHistory], source: str) -> list[str]:
    notes = []
    if source == "document":
        notes.append(
            "Simulated from a session document without its store: only the live history is "
            "known, and what was compacted before it is represented by the stored summary."
        )
    for name, history in histories.items():
        for first, last in history.missing:
            span = f"position {first}" if first == last else f"positions {first}..{last}"
            if history.archive_read:
                notes.append(
                    f"Namespace '{name}': {span} are neither live nor archived (erased with "
                    "erase_memory()); the replay restarts after them, so the call right "
                    "after the erase is counted without the erased messages."
                )
            else:
                kept = ", which the stored summary stands in for" if history.summary else ""
                notes.append(
                    f"Namespace '{name}': {span} were compacted or erased before the live "
                    f"history{kept}; they are not replayed."
                )
    if sum(1 for h in histories.values() if len(h.messages) > 1) > 1:
        notes.append(
            "Turns are counted per namespace. A namespace the real engine compacted at the end "
            "of another namespace's turn is compacted at its own next turn end here, so its "
            "token counts are an upper bound."
        )
    return notes
