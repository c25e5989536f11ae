"""Rebuild a namespace's whole history from the session document and the archive (M9).

Compaction splits a namespace in two places: the live document keeps the system slot and the
newest messages, the store's archive keeps every evicted message with its original position
(1 is the first message after the system slot). A live message at index i >= 1 has position
`archived + i`. Together they give the namespace's history in order; positions in neither place
were erased (T4: erased messages use up their positions without being archived) or are missing
from the archive, and the simulator treats them as an erase.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage, messages_from_dict
from langchain_core.messages.utils import count_tokens_approximately

from picoflow.stores.base import ArchiveEntry, Store

__all__ = ["ARCHIVE_PAGE", "NamespaceHistory", "build_history", "read_archive"]

# search_archive returns one page at a time; a large page keeps the number of reads small.
ARCHIVE_PAGE = 500

Entry = tuple[int, BaseMessage]  # (original position, message)


@dataclass(frozen=True)
class NamespaceHistory:
    """Everything known about one namespace of a stored session, in original positions.

    Attributes:
        namespace: The namespace's name.
        system: The stored system slot: the prompt of the namespace's last model call. The
            simulator uses it for every call, since earlier prompts are not stored.
        messages: `(position, message)` pairs, oldest first: archived ones, then live ones.
        missing: `(first, last)` position ranges that are in neither the document nor the
            archive: erased with `erase_memory()` (T4), or not archived.
        from_archive: How many of `messages` came from the archive.
        archive_read: Whether an archive was read at all (False when simulating a document
            without its store: then everything before the live part is unknown).
        summary: The stored summary, or None.
        summary_generation: How many summaries the real run wrote into the namespace.
        live_from: Position of the first live message (the document's `archived` + 1).
        from_revisions: How many of `messages` came from kept revisions (a replay with
            `revisions=True`, see `picoflow.simulate._revisions`).
        compacted_at: When each archived position of `messages` was compacted (M16), for the
            entries whose archive records it (older ones do not).
    """

    namespace: str
    system: SystemMessage
    messages: list[Entry] = field(default_factory=list)
    missing: list[tuple[int, int]] = field(default_factory=list)
    from_archive: int = 0
    archive_read: bool = True
    summary: str | None = None
    summary_generation: int = 0
    live_from: int = 1
    from_revisions: int = 0
    compacted_at: dict[int, str] = field(default_factory=dict)
    _tokens: dict[int, int] = field(default_factory=dict, repr=False, compare=False)

    def tokens_at(self, position: int, message: BaseMessage) -> int:
        """The message's approximate tokens, counted once for all the settings replayed."""
        counted = self._tokens.get(position)
        if counted is None:
            counted = self._tokens[position] = count_tokens_approximately([message])
        return counted

    def segments(self) -> list[list[Entry]]:
        """Runs of consecutive positions; a missing range between two runs was an erase."""
        runs: list[list[Entry]] = []
        for position, message in self.messages:
            if not runs or position != runs[-1][-1][0] + 1:
                runs.append([])
            runs[-1].append((position, message))
        return runs

    def opens_with_stored_summary(self) -> bool:
        """True when the history starts after unknown positions that the stored summary covers.

        Without an archive, positions before the live part were compacted (or erased); the
        stored summary is then the only trace of them, so the replay starts with it.
        """
        return not self.archive_read and self.summary is not None and self.live_from > 1


async def read_archive(store: Store, session_id: str, namespace: str) -> dict[int, ArchiveEntry]:
    """Every archived entry of a namespace (message, `compacted_at` if recorded), by position.

    The Store protocol has no listing call: `search_archive` with an empty query matches every
    entry (every word of an empty query occurs in any text), newest first, one page at a time.
    """
    found: dict[int, ArchiveEntry] = {}
    page = 1
    while True:
        entries = await store.search_archive(
            session_id, namespace, "", page=page, page_size=ARCHIVE_PAGE
        )
        for entry in entries:
            found.setdefault(int(entry["position"]), entry)
        if len(entries) < ARCHIVE_PAGE:
            return found
        page += 1


def build_history(
    namespace: str,
    entry: Mapping[str, Any],
    archive: Mapping[int, ArchiveEntry] | None,
    kept: Mapping[int, dict[str, Any]] | None = None,
) -> NamespaceHistory:
    """Merge a namespace's live messages (`memory.<namespace>` of the document) and archive.

    A position found in both places comes from the document: an archive write whose session
    save then failed leaves such duplicates, and both copies are the same message (M9).
    `kept` are the messages of the kept revisions on the current line by position; they win
    over the archive, which may hold a turn taken back at a position reused since.
    """
    stored = list(entry.get("messages") or [])
    parsed = messages_from_dict(stored) if stored else []
    system = parsed[0] if parsed and isinstance(parsed[0], SystemMessage) else SystemMessage("")
    archived = int(entry.get("archived", 0) or 0)
    live = {archived + index: message for index, message in enumerate(parsed[1:], start=1)}
    evicted = {p: e for p, e in (archive or {}).items() if p not in live and p <= archived}
    old = {p: e["message"] for p, e in evicted.items()}
    recovered = {p: d for p, d in (kept or {}).items() if p not in live and p <= archived}
    old.update(recovered)
    merged = dict(zip(sorted(old), messages_from_dict([old[p] for p in sorted(old)]), strict=True))
    stamps = {p: e["compacted_at"] for p, e in evicted.items() if e.get("compacted_at")}
    merged.update(live)
    positions = sorted(merged)
    last = positions[-1] if positions else archived
    return NamespaceHistory(
        namespace=namespace,
        system=system,
        messages=[(p, merged[p]) for p in positions],
        missing=missing_ranges(positions, last),
        from_archive=len(old) - len(recovered),
        from_revisions=len(recovered),
        archive_read=archive is not None,
        summary=entry.get("summary"),
        summary_generation=int(entry.get("summary_generation", 0) or 0),
        live_from=archived + 1,
        compacted_at=stamps,
    )


def missing_ranges(positions: list[int], last: int) -> list[tuple[int, int]]:
    """The `(first, last)` runs of 1..last absent from the sorted `positions`.

    >>> missing_ranges([3, 4, 7], 8)
    [(1, 2), (5, 6), (8, 8)]
    """
    gaps: list[tuple[int, int]] = []
    expected = 1
    for position in [*positions, last + 1]:
        if position > expected:
            gaps.append((expected, min(position, last + 1) - 1))
        expected = max(expected, position + 1)
    return gaps
