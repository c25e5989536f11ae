"""The messages a session's kept revisions hold, for a replay of its real history (W1).

The archive keeps every evicted message by position, first write wins (M9). After an undo, a
rewind or an edited message that is not always the conversation the session now continues: a
turn taken back may have been compacted already, and its messages then hold positions that
the turns after the rewind reuse. The kept revisions do not have that problem. Each is the
document one save wrote, so following the *current line* back from the newest revision (a
turn to the revision before it, a rewind or an edited turn to the revision it `restored`, a
fork's first revision ends the line) gives the revisions the current state descends from, and
their live messages are that line's messages at their positions (`archived + index`, as in
`_history`). They also hold what the archive no longer has: messages `archive_limit` trimmed,
and messages erased without archiving, while a revision that had them live is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from picoflow.stores.base import Store, abilities_of

__all__ = ["current_line", "revision_messages"]


def current_line(entries: Sequence[Mapping[str, Any]]) -> list[int]:
    """The revisions the newest one descends from, newest first (`entries` newest first).

    >>> line = [{"revision": 3, "action": "rewind", "restored": 0},
    ...         {"revision": 2, "action": "turn"}, {"revision": 1, "action": "turn"},
    ...         {"revision": 0, "action": "turn"}]
    >>> current_line(line)
    [3, 0]
    """
    by_revision = {int(entry["revision"]): entry for entry in entries}
    line: list[int] = []
    at = int(entries[0]["revision"]) if entries else None
    while at is not None and at in by_revision and at not in line:
        line.append(at)
        entry = by_revision[at]
        restored = entry.get("restored")
        if entry.get("action") == "fork":
            break
        if entry.get("action") in ("rewind", "edit") and isinstance(restored, int):
            at = restored  # a rewind is that revision's state; an edit ran on it
        else:
            at -= 1
    return line


async def revision_messages(
    store: Store, session_id: str, namespaces: Sequence[str]
) -> dict[str, dict[int, dict[str, Any]]]:
    """Per namespace, the current line's messages by position (the newest revision wins).

    Raises:
        TypeError: the store keeps no history (it has no `history`/`load_revision`).
    """
    kept = abilities_of(store).history
    if kept is None:
        raise TypeError(
            f"{type(store).__name__} keeps no revision history (it has no history() and "
            "load_revision()), so there are no revisions to replay; run the simulation "
            "without revisions (the document and the archive)."
        )
    found: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in namespaces}
    for revision in current_line(await kept.history(session_id)):
        doc = await kept.load_revision(session_id, revision)
        memory = doc.get("memory") if isinstance(doc, Mapping) else None
        for name in namespaces:
            entry = memory.get(name) if isinstance(memory, Mapping) else None
            if not isinstance(entry, Mapping):
                continue
            archived = int(entry.get("archived", 0) or 0)
            for index, message in enumerate(list(entry.get("messages") or [])[1:], start=1):
                found[name].setdefault(archived + index, message)
    return found
