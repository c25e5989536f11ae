"""The drift guard (M12): rebuild a rolling summary from the originals it was written from.

A summary of summaries drifts, the archived originals do not, so every `rebuild_after`-th
summary re-reads them. Only the originals of the previous summary's own range (M16) are read:
positions outside it were never in the summary (erased, T4, or distilled away), and a rebuild
must not bring them back.

The archive may no longer hold all of them: `archive_limit` (W5) keeps the newest entries only,
and a rebuild reads at most `REBUILD_LIMIT`. Then the previous summary is the only record of
the older part, so the rebuild starts from it and re-reads what the archive still holds, rather
than forget everything older; the range says so with `rebuilt_from_seq`. When every original is
there the previous summary is dropped and the summary is written from the originals alone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict

from picoflow.errors import StoreError
from picoflow.memory import Namespace
from picoflow.stores.base import ArchiveEntry, Store

__all__ = ["REBUILD_LIMIT", "Rebuild", "plan_rebuild", "rebuilt_range"]

logger = logging.getLogger(__name__)

# A rebuild reads at most this many archived originals (the newest of the summary's range), so
# its request stays within what a summary model takes; older ones are carried by the summary.
REBUILD_LIMIT = 400
_PAGE = 100


@dataclass(frozen=True, slots=True)
class Rebuild:
    """What one rebuild is written from.

    `covered` is the previous summary's range (M16); `originals` the archived messages re-read
    from it, oldest first, from position `first` on. `carried` means the archive lacked the
    start of the range, so the previous summary stays in the request as the record of it.
    """

    covered: dict[str, int]
    originals: list[BaseMessage]
    first: int | None
    carried: bool


async def plan_rebuild(
    store: Store, session_id: str, namespace: str, record: Namespace
) -> Rebuild | None:
    """The originals a rebuild re-reads, or None if the archive cannot be read (no rebuild).

    A summary saved before ranges were recorded is taken to cover everything archived.
    """
    covered = record.summary_range or {
        "from_seq": 1,
        "to_seq": record.archived,
        "count": record.archived,
    }
    try:
        entries = await _read(store, session_id, namespace, covered)
    except StoreError as exc:
        logger.warning("summary rebuild skipped: the archive could not be read (%s)", exc)
        return None
    entries = _whole_exchanges(entries)
    first = entries[0]["position"] if entries else None
    carried = first != covered["from_seq"]
    lost_to = (covered["to_seq"] + 1 if first is None else first) - 1
    if carried and lost_to >= covered["from_seq"]:
        logger.info(
            "summary rebuild of %s: the archive no longer holds positions %d-%d; the previous "
            "summary carries them",
            namespace,
            covered["from_seq"],
            lost_to,
            extra={"session_id": session_id, "namespace": namespace},
        )
    originals = messages_from_dict([entry["message"] for entry in entries])
    return Rebuild(dict(covered), originals, first, carried)


async def _read(
    store: Store, session_id: str, namespace: str, covered: dict[str, int]
) -> list[ArchiveEntry]:
    """The archive's entries of the range, the newest `REBUILD_LIMIT`, oldest first.

    The archive pages newest first: pages are read until they pass below the range.
    """
    low, high = covered["from_seq"], covered["to_seq"]
    kept: list[ArchiveEntry] = []
    page = 1
    while len(kept) < REBUILD_LIMIT:
        found = await store.search_archive(session_id, namespace, "", page=page, page_size=_PAGE)
        kept += [entry for entry in found if low <= entry["position"] <= high]
        if len(found) < _PAGE or min(entry["position"] for entry in found) <= low:
            break
        page += 1
    kept.sort(key=lambda entry: entry["position"], reverse=True)
    return sorted(kept[:REBUILD_LIMIT], key=lambda entry: entry["position"])


def _whole_exchanges(entries: list[ArchiveEntry]) -> list[ArchiveEntry]:
    """`entries` without the oldest ones up to the last tool result whose call is not among them.

    Trimming (W5, `REBUILD_LIMIT`) cuts the archive by position, so its oldest entries may be
    results whose call is gone. A rebuild never splits a tool call from its result (M5): such a
    result stays with the part the previous summary carries, and so does what precedes it.
    """
    calls: set[str] = set()
    start = 0
    for index, entry in enumerate(entries):
        data: dict[str, Any] = entry["message"].get("data", {})
        for call in data.get("tool_calls") or []:
            calls.add(str(call.get("id")))
        if entry["message"].get("type") == "tool" and str(data.get("tool_call_id")) not in calls:
            start = index + 1
    return entries[start:]


def rebuilt_range(rebuild: Rebuild, first: int, last: int) -> dict[str, int]:
    """M16: the range of a rebuilt summary that also took the new positions `first..last` in.

    From originals alone, it covers what it re-read and the new ones. Carried, it still covers
    the previous range (through the previous summary) and says from where it re-read originals
    (`rebuilt_from_seq`; the new messages, if the archive held none of the range).
    """
    new = last - first + 1
    covered = rebuild.covered
    if not rebuild.carried:  # so the range's first original was read
        return {
            "from_seq": covered["from_seq"],
            "to_seq": last,
            "count": len(rebuild.originals) + new,
        }
    return {
        "from_seq": covered["from_seq"],
        "to_seq": last,
        "count": covered["count"] + new,
        "rebuilt_from_seq": first if rebuild.first is None else rebuild.first,
    }
