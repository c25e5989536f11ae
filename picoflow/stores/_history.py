"""What every store keeps of a session's past: one revision per save (W1), and its retention (W5).

The engine passes a `note` with each `create`/`save`: what the turn was (the user message, the
step before and after, an excerpt of the reply) and how much history to keep. A store records
the note with the revision it saved, and enough to rebuild that revision's document exactly.
A save without a note (a caller of the store API, a background compaction) still records a
revision, with no message, and the default retention.

The note, as a plain dict (JSON):

    {"message": str | None, "step_before": str | None, "step_after": str | None,
     "reply": str | None, "action": str | None, "restored": int | None,
     "keep": int, "max_age": float | None}

`action` says what made the revision ("turn", "edit", "rewind", "fork", "compaction"; None for
a caller of the store API), `restored` which revision a rewind copied.

`keep` is how many revisions of the session to keep (the newest; the current one always
stays), `max_age` how many seconds a revision other than the current one is kept.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from picoflow.stores.base import JSONDict

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "NOTE_FIELDS",
    "REPLY_EXCERPT",
    "check_note",
    "check_revision",
    "entry",
    "excerpt",
    "kept",
    "now_stamp",
]

DEFAULT_HISTORY_LIMIT = 50
REPLY_EXCERPT = 200  # characters of a reply kept in its revision's listing
_DEFAULT_NOTE: JSONDict = {
    "message": None,
    "step_before": None,
    "step_after": None,
    "reply": None,
    "action": None,
    "restored": None,
    "keep": DEFAULT_HISTORY_LIMIT,
    "max_age": None,
}
_TEXT_FIELDS = ("message", "step_before", "step_after", "reply", "action")
NOTE_FIELDS = (*_TEXT_FIELDS, "restored")  # what a store keeps of a note


def check_note(note: JSONDict | None, session_id: str) -> JSONDict:
    """The note filled with defaults, or ValueError saying which field is wrong."""
    if note is None:
        return dict(_DEFAULT_NOTE)
    if not isinstance(note, dict):
        raise ValueError(
            f"The history note of session '{session_id}' must be a dict, got "
            f"{type(note).__name__}. Pass note=None to record a revision without one."
        )
    unknown = sorted(set(note) - set(_DEFAULT_NOTE))
    if unknown:
        raise ValueError(
            f"The history note of session '{session_id}' has unknown keys {unknown}; it takes "
            f"{sorted(_DEFAULT_NOTE)}."
        )
    full = {**_DEFAULT_NOTE, **note}
    for name in _TEXT_FIELDS:
        if full[name] is not None and not isinstance(full[name], str):
            raise ValueError(
                f"The history note of session '{session_id}': {name} must be a string or "
                f"None, got {type(full[name]).__name__}."
            )
    restored = full["restored"]
    if restored is not None and (not isinstance(restored, int) or isinstance(restored, bool)):
        raise ValueError(
            f"The history note of session '{session_id}': restored must be a revision (int) "
            f"or None, got {restored!r}."
        )
    keep = full["keep"]
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
        raise ValueError(
            f"The history note of session '{session_id}': keep must be an int >= 1 (the "
            f"current revision always stays), got {keep!r}."
        )
    age = full["max_age"]
    if age is not None and (isinstance(age, bool) or not isinstance(age, (int, float)) or age <= 0):
        raise ValueError(
            f"The history note of session '{session_id}': max_age must be a number of seconds "
            f"> 0 or None, got {age!r}."
        )
    if full["reply"] is not None:
        full["reply"] = excerpt(full["reply"])
    return full


def check_revision(revision: object) -> int:
    """A revision number fit for a lookup, or ValueError saying what to pass."""
    if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
        raise ValueError(
            f"A revision is an int >= 0 (as engine.history() lists them), got {revision!r}."
        )
    return revision


def excerpt(reply: str) -> str:
    """The start of a reply, enough for a person to recognise the turn in a list."""
    return reply if len(reply) <= REPLY_EXCERPT else reply[: REPLY_EXCERPT - 1] + "…"


def now_stamp() -> str:
    """When a revision was saved: ISO 8601 UTC with milliseconds, like the document's stamps."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def entry(revision: int, saved_at: str, note: JSONDict) -> JSONDict:
    """One line of `history()`: the revision and what its turn was."""
    return {
        "revision": revision,
        "saved_at": saved_at,
        **{name: note.get(name) for name in NOTE_FIELDS},
    }


def kept(revisions: list[tuple[int, str]], note: JSONDict) -> int:
    """The oldest revision still kept, given (revision, saved_at) oldest first, current last.

    The newest `keep` stay, and of those only the ones younger than `max_age` (the current
    revision always stays).
    """
    current = revisions[-1][0]
    oldest = max(revisions[0][0], current - int(note["keep"]) + 1)
    age = note["max_age"]
    if age is not None:
        limit = datetime.now(UTC) - timedelta(seconds=float(age))
        for revision, saved_at in revisions:
            if revision >= oldest and (revision == current or _parse(saved_at) >= limit):
                return revision
    return oldest


def _parse(stamp: Any) -> datetime:
    moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
