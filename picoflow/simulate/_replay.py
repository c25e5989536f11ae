"""Replay one namespace's history under one compaction setting, offline (M4-M7).

The replay walks the history in original positions and rebuilds, for every model call, the
request picoflow would have sent under the setting: the system prompt, the memory block if the
namespace has a summary (M7), and the live history before the reply. Compaction runs where the
engine runs it, at the end of a turn (M4), with the engine's cut point (M5) and its stored-prefix
rule: inline, only messages stored before the turn may be evicted; in background mode the
whole history as that turn saved it.

Turns are seen per namespace: a turn of a namespace starts with a human message that does not
follow a tool result (a message forwarded by `go(...)` inside a turn follows the tool results of
the call that moved, R4). Where the real engine compacted a namespace at the end of a turn that
did not touch it, the replay compacts it one turn later, so its token counts are an upper bound
for flows whose turns cross several namespaces; for a namespace used by every turn they are exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from picoflow._housekeeping.compaction import is_over_threshold, summary_request
from picoflow._housekeeping.history import find_cut_point
from picoflow.memory import SummaryConfig, memory_block
from picoflow.simulate import _checks as checks
from picoflow.simulate._checks import Finding
from picoflow.simulate._history import Entry, NamespaceHistory

__all__ = [
    "DEFAULT_SUMMARY_TOKENS",
    "Eviction",
    "ModelCall",
    "NamespaceReplay",
    "Replay",
    "ReplayOptions",
    "is_model_reply",
    "starts_turn",
]

# The stand-in summary's size when the namespace has no stored summary to measure.
DEFAULT_SUMMARY_TOKENS = 300
_CHARS_PER_TOKEN = 4  # count_tokens_approximately's default
_STAND_IN = "simulated summary "
# At least this many summaries, written on average less than this many turns apart, is churn.
_CHURN_MIN_SUMMARIES = 3
_CHURN_TURNS_APART = 1.5


@dataclass(frozen=True)
class ModelCall:
    """One replayed model call: the reply at `position` answered a request of `tokens`.

    Attributes:
        namespace: The namespace whose step made the call.
        turn: The namespace's turn number, from 1.
        position: Original position of the reply the call produced.
        tokens: Approximate prompt tokens of the request (`count_tokens_approximately`; tool
            schemas are not counted, they are the same under every setting).
        messages: How many messages the request held (system prompt and memory block included).
    """

    namespace: str
    turn: int
    position: int
    tokens: int
    messages: int


@dataclass(frozen=True)
class Eviction:
    """One simulated compaction: positions `first..last` went to the summary and the archive."""

    namespace: str
    first: int
    last: int
    turn: int  # compaction ran at the end of this turn of the namespace

    @property
    def count(self) -> int:
        """How many messages were evicted."""
        return self.last - self.first + 1


@dataclass(frozen=True)
class ReplayOptions:
    """How summaries are simulated and what the requests are checked against.

    `summary_tokens=None` measures the namespace's stored summary (or uses
    `DEFAULT_SUMMARY_TOKENS` if it has none); a `summary_model` writes real summaries instead.
    """

    summary_tokens: int | None = None
    summary_model: BaseChatModel | None = None
    context_window: int | None = None


@dataclass(slots=True)
class NamespaceReplay:
    """What one setting did to one namespace."""

    namespace: str
    calls: list[ModelCall] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    findings: list[Finding] = field(default_factory=list)
    live_at_end: int = 0  # live messages after the last turn, system slot excluded
    peak_messages: int = 1  # the longest history seen at a turn end, system slot included
    peak_tokens: int = 0
    blocked: int = 0  # turn ends over the threshold whose cut point evicted nothing


def tokens_of(message: BaseMessage) -> int:
    """One message's approximate tokens; the counter adds them up per message."""
    return count_tokens_approximately([message])


def stand_in(chars: int) -> str:
    """A deterministic summary text of exactly `chars` characters."""
    return (_STAND_IN * (chars // len(_STAND_IN) + 1))[:chars]


@dataclass(slots=True)
class _Problem:
    """One invariant violation, counted over the requests that show it."""

    kind: str
    position: int  # the message at fault (the first one, for opens_with_assistant)
    detail: str  # the tool-call id, if any
    first_call: int  # the reply position of the first request that shows it
    requests: int = 0


@dataclass(slots=True)
class _State:
    """The simulated live namespace while a run of consecutive positions is replayed."""

    live: list[Entry] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)  # of each live message
    live_tokens: int = 0  # their sum
    summary: str | None = None
    memory_tokens: int = 0
    turn_start: int = 1  # history length (system slot included) when the turn began

    def set_summary(self, summary: str | None) -> None:
        self.summary = summary
        block = memory_block(summary)
        self.memory_tokens = tokens_of(block) if block else 0


class Replay:
    """Replays one namespace under one setting (`None`: compaction off); see the module doc."""

    def __init__(
        self, history: NamespaceHistory, setting: SummaryConfig | None, options: ReplayOptions
    ) -> None:
        """Prepare the replay; `run()` does the work."""
        self.history = history
        self.setting = setting
        self.options = options
        self.out = NamespaceReplay(history.namespace)
        self.system_tokens = tokens_of(history.system)
        self.turn = 0
        self.problems: dict[tuple[str, int | None], _Problem] = {}
        self.over_window: list[ModelCall] = []

    async def run(self) -> NamespaceReplay:
        """Replay every run of consecutive positions; a missing range between runs resets."""
        segments = self.history.segments()
        for index, segment in enumerate(segments):
            state = _State()
            if index == 0 and self.history.opens_with_stored_summary():
                state.set_summary(self.history.summary)
            await self._segment(state, segment, last=index == len(segments) - 1)
        self._finish()
        return self.out

    async def _segment(self, state: _State, segment: list[Entry], *, last: bool) -> None:
        previous: BaseMessage | None = None
        for position, message in segment:
            if self.turn == 0 or starts_turn(message, previous):
                if previous is not None:
                    await self._turn_end(state)
                self.turn += 1
                state.turn_start = 1 + len(state.live)
            if is_model_reply(message):
                self._call(state, position)
            state.live.append((position, message))
            counted = self.history.tokens_at(position, message)
            state.tokens.append(counted)
            state.live_tokens += counted
            previous = message
        if last:  # an earlier run ended in an erase, which emptied it before any turn end
            await self._turn_end(state)
            self.out.live_at_end = len(state.live)

    def _call(self, state: _State, position: int) -> None:
        """Record the request that produced the reply at `position`, and check it."""
        tokens = self.system_tokens + state.memory_tokens + state.live_tokens
        size = 1 + (1 if state.summary else 0) + len(state.live)
        call = ModelCall(self.history.namespace, self.turn, position, tokens, size)
        self.out.calls.append(call)
        window = self.options.context_window
        if window is not None and tokens > window:
            self.over_window.append(call)
        for kind, at, detail in checks.request_problems(state.live):
            key = (kind, None if kind == checks.OPENS_WITH_ASSISTANT else at)
            self.problems.setdefault(key, _Problem(kind, at, detail, position)).requests += 1

    async def _turn_end(self, state: _State) -> None:
        """M4: compact if over the threshold; M5: cut where no tool exchange is split."""
        history = [self.history.system, *(message for _, message in state.live)]
        length, tokens = len(history), self.system_tokens + state.live_tokens
        self.out.peak_messages = max(self.out.peak_messages, length)
        self.out.peak_tokens = max(self.out.peak_tokens, tokens)
        setting = self.setting
        if setting is None or not is_over_threshold(setting, length, lambda: tokens):
            return
        limit = None if setting.background else state.turn_start
        cut = find_cut_point(
            history, setting.recent_messages, limit=limit, turns=setting.whole_turns
        )
        if cut <= 1:
            self.out.blocked += 1
            return
        evicted = history[1:cut]
        summary = await self._summarise(state.summary, evicted, setting)
        first, last = state.live[0][0], state.live[cut - 2][0]
        self.out.evictions.append(Eviction(self.history.namespace, first, last, self.turn))
        state.live_tokens -= sum(state.tokens[: cut - 1])
        del state.live[: cut - 1], state.tokens[: cut - 1]
        state.set_summary(summary)

    async def _summarise(
        self, previous: str | None, evicted: list[BaseMessage], setting: SummaryConfig
    ) -> str:
        request = summary_request(setting.prompt, previous, evicted)
        self.out.summary_input_tokens += count_tokens_approximately(request)
        model = self.options.summary_model
        if model is None:
            text = stand_in(self._summary_chars())
        else:  # a real summariser: its failures are the caller's to see, not an M8 skip
            text = str((await model.ainvoke(request)).text).strip()
        self.out.summary_output_tokens += tokens_of(AIMessage(text))
        return text

    def _summary_chars(self) -> int:
        if self.options.summary_tokens is not None:
            return self.options.summary_tokens * _CHARS_PER_TOKEN
        if self.history.summary:
            return len(self.history.summary)
        return DEFAULT_SUMMARY_TOKENS * _CHARS_PER_TOKEN

    def _finish(self) -> None:
        namespace = self.history.namespace
        for problem in self.problems.values():
            self.out.findings.append(
                Finding(
                    problem.kind,
                    namespace,
                    _problem_text(problem),
                    problem.position,
                    problem.requests,
                )
            )
        if self.over_window:
            self.out.findings.append(_window_finding(namespace, self.over_window, self.options))
        if self.setting is not None and not self.out.evictions and self.out.calls:
            self.out.findings.append(_idle_finding(self.out, self.setting))
        churn = _churn_finding(self.out.evictions, self.setting)
        if churn is not None:
            self.out.findings.append(churn)


def is_model_reply(message: BaseMessage) -> bool:
    """An AI message answers a model call, except a `direct(...)` reply (R5), which has none."""
    return isinstance(message, AIMessage) and not message.additional_kwargs.get("direct")


def starts_turn(message: BaseMessage, previous: BaseMessage | None) -> bool:
    """A human message starts a turn, unless it is a message forwarded after tool results."""
    return isinstance(message, HumanMessage) and not isinstance(previous, ToolMessage)


def _problem_text(problem: _Problem) -> str:
    count, at, detail = problem.requests, problem.position, problem.detail
    requests = f"{count} simulated request{'s' if count != 1 else ''}"
    since = f"from the call at position {problem.first_call} on"
    if problem.kind == checks.ORPHAN_RESULT:
        return (
            f"The tool result at position {at} (call id '{detail}') has no call right before "
            f"it in {requests}, {since}. Providers refuse such a request."
        )
    if problem.kind == checks.UNANSWERED_CALL:
        return (
            f"The tool call '{detail}' at position {at} has no result right after it in "
            f"{requests}, {since}. Providers refuse such a request."
        )
    return (
        f"{requests} open with an assistant message after the system prompt and memory "
        f"(first at position {at}, {since}). Anthropic and some other providers refuse a "
        "conversation that does not start with a user message."
    )


def _window_finding(namespace: str, calls: Sequence[ModelCall], options: ReplayOptions) -> Finding:
    worst = max(calls, key=lambda call: call.tokens)
    count = len(calls)
    return Finding(
        checks.OVER_WINDOW,
        namespace,
        f"{count} request{'s' if count != 1 else ''} exceed the context window of "
        f"{options.context_window} tokens (the largest, {worst.tokens} tokens, at the call at "
        f"position {worst.position}, turn {worst.turn}). The provider refuses them, or a "
        "trimming layer drops messages that no summary covers yet. Lower min_messages or set "
        "max_tokens well below the window.",
        worst.position,
        count,
    )


def _idle_finding(out: NamespaceReplay, setting: SummaryConfig) -> Finding:
    namespace = out.namespace
    if out.blocked:
        return Finding(
            checks.NOTHING_TO_EVICT,
            namespace,
            f"The threshold was reached {out.blocked} time(s) in namespace '{namespace}', but "
            "the cut point found nothing to evict: everything older than the newest "
            f"{setting.recent_messages} messages (recent_messages) was written in the turn "
            "that just ended, or belongs to a user turn that reaches past the cut (with "
            "whole_turns a cut falls only where a user turn starts, and one turn of tool rounds "
            "is longer than the window). Lower "
            "recent_messages.",
        )
    budget = f"max_tokens={setting.max_tokens}" if setting.max_tokens else "no max_tokens"
    return Finding(
        checks.NEVER_TRIGGERED,
        namespace,
        f"Compaction never ran in namespace '{namespace}': at the end of its turns the history "
        f"held at most {out.peak_messages} messages (min_messages={setting.min_messages}) and "
        f"{out.peak_tokens} tokens ({budget}). Lower min_messages or set max_tokens if this "
        "namespace should be compacted.",
    )


def _churn_finding(evictions: Sequence[Eviction], setting: SummaryConfig | None) -> Finding | None:
    """Compaction at nearly every turn end, or None.

    It costs a summariser call each time, and a summary rewritten so often drifts
    (docs/memory.md, the threshold margin).
    """
    if setting is None or len(evictions) < _CHURN_MIN_SUMMARIES:
        return None
    span = evictions[-1].turn - evictions[0].turn
    if span / (len(evictions) - 1) >= _CHURN_TURNS_APART:
        return None
    namespace = evictions[0].namespace
    return Finding(
        checks.CHURN,
        namespace,
        f"Namespace '{namespace}' is compacted at the end of nearly every turn ({len(evictions)} "
        f"summaries over turns {evictions[0].turn}..{evictions[-1].turn}): each is a summariser "
        "call, and a summary rewritten that often drifts. Widen the margin: a recent_messages of "
        f"a quarter to a half of min_messages ({setting.min_messages}), or a higher max_tokens.",
    )
