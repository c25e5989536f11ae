"""The path a session took, as hops between steps: from its document, or from its history (W1).

A session document records its path in `sequence`: the steps its cursor moved to, in order.
That is where the session is now, not how it got there: after an undo, a rewind or an edited
message the sequence is the restored one, and the turns that were taken back are gone from it.
The revision history keeps them. Each kept revision is a save with its `action` and the
document it saved, so the path is rebuilt revision by revision:

- a turn (or a compaction, or a save through the store API) adds the moves its document's
  sequence has beyond the previous revision's;
- an edited turn first jumps back to the state it ran on (`restored`), then adds its moves;
- a rewind (an undo too) jumps from where the session was to the step it restored;
- a fork's first revision starts the path with the origin's moves up to the fork.

A revision whose document is not at hand (None) falls back to its listing's `step_before ->
step_after`, which names where the turn started and ended but not the steps in between.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["END", "START", "Hop", "document_hops", "history_hops", "moves"]

START, END = "__start__", "__end__"
Revision = tuple[Mapping[str, Any], Mapping[str, Any] | None]  # (history entry, its document)


@dataclass(frozen=True, slots=True)
class Hop:
    """One step of the path: a move of the cursor, or a jump back in time.

    `kind` is "move" (a turn moved the cursor), "rewind" (an undo or rewind restored an
    earlier state), "edit" (an edited turn went back to the state it ran on) or "fork" (a
    forked session's path starts; only from `__start__`). `label` says which revision.
    """

    source: str
    target: str
    kind: str = "move"
    label: str | None = None


def moves(session: Mapping[str, Any]) -> list[str]:
    """The cursor's moves in `sequence`: nested runs (V2) and the parent's return left out.

    >>> moves({"sequence": ["A", "C", "A", "B"], "sequence_levels": [1, 2, 1, 1]})
    ['A', 'B']
    """
    names = [str(name) for name in session.get("sequence") or []]
    levels = list(session.get("sequence_levels") or []) + [1] * len(names)
    found: list[str] = []
    for name, level in zip(names, levels, strict=False):
        if level == 1 and (not found or found[-1] != name):
            found.append(name)
    return found


def document_hops(session: Mapping[str, Any]) -> list[Hop]:
    """The path of the document's `sequence`, ending at `__end__` if the run completed."""
    hops = _chain(START, moves(session))
    return hops + _ending(session, hops)


def history_hops(revisions: Sequence[Revision]) -> list[Hop]:
    """The path over every kept revision, oldest first (see the module docstring)."""
    hops: list[Hop] = []
    kept: dict[int, Mapping[str, Any]] = {}
    previous: Mapping[str, Any] | None = None
    where = START  # the step the session is on after the revisions so far
    for entry, doc in revisions:
        action, restored = entry.get("action"), entry.get("restored")
        if doc is None:
            before, after = entry.get("step_before"), entry.get("step_after")
            if after and (before or where) != after:
                kind = "rewind" if action == "rewind" else "move"
                hops.append(Hop(str(before or where), str(after), kind, _label(entry, None)))
            where, previous = str(after or where), None
            continue
        if previous is None or action == "fork":
            label = _label(entry, doc) if action == "fork" else None
            hops += _chain(START, moves(doc), label)
        elif action == "rewind":
            hops.append(Hop(where, _last(doc, where), "rewind", _label(entry, doc)))
        else:
            base = kept.get(restored, previous) if isinstance(restored, int) else previous
            if action == "edit":
                hops.append(Hop(where, _last(base, where), "edit", _label(entry, doc)))
            hops += _beyond(moves(base), moves(doc))
        kept[int(entry["revision"])] = doc
        previous, where = doc, _last(doc, where)
    return hops + (_ending(previous, hops) if previous is not None else [])


def _label(entry: Mapping[str, Any], doc: Mapping[str, Any] | None) -> str | None:
    """What a jump arrow says: which revision it went back to (a fork: of which session)."""
    action, restored = entry.get("action"), entry.get("restored")
    if not isinstance(restored, int):
        return None
    if action == "rewind":
        return f"rewind to revision {restored}"
    if action == "edit":
        return f"edit of revision {restored + 1}"
    if action == "fork":
        origin = (doc or {}).get("forked_from") or {}
        of = f" of {origin['session_id']}" if isinstance(origin, Mapping) and origin else ""
        return f"fork{of} at revision {restored}"
    return None


def _chain(start: str, steps: list[str], label: str | None = None) -> list[Hop]:
    """Hops from `start` through `steps`; the first one carries `label` (a fork's start)."""
    sources = [start, *steps]
    hops = [Hop(source, target) for source, target in zip(sources, steps, strict=False)]
    if hops and label is not None:
        hops[0] = Hop(hops[0].source, hops[0].target, "fork", label)
    return hops


def _beyond(base: list[str], now: list[str]) -> list[Hop]:
    """The moves `now` made after the path it shares with `base`."""
    common = 0
    while common < min(len(base), len(now)) and base[common] == now[common]:
        common += 1
    return _chain(now[common - 1] if common else START, now[common:])


def _last(doc: Mapping[str, Any], default: str) -> str:
    steps = moves(doc)
    return steps[-1] if steps else str(doc.get("current_step") or default)


def _ending(session: Mapping[str, Any], hops: list[Hop]) -> list[Hop]:
    """The hop to `__end__` of a completed run."""
    if session.get("run_status") != "completed" or not hops:
        return []
    return [Hop(_last(session, hops[-1].target), END)]
