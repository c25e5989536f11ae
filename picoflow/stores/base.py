"""The contract every session store implements (P2).

A store keeps one JSON document per session and an archive of messages that compaction evicted.
It knows nothing about flows or steps: it sees plain JSON dicts. The engine owns every rule
(expiry, completed sessions, schema versions); a store only stores.

Revision rules, shared by every implementation and pinned by the conformance suite in
`tests/stores/`:

- `create(doc)` stores a new document whose `revision` is 0. An id that already exists raises
  `SessionConflictError` and changes nothing.
- `save(doc, expected_revision)` replaces the stored document only if its stored revision equals
  `expected_revision`; the stored copy gets `revision = expected_revision + 1`, which is
  returned. A stale revision raises `SessionConflictError`, a missing id `SessionNotFoundError`;
  in both cases nothing is written.
- `revision(id)` returns the stored revision (or None) without reading the document; the
  engine uses it to decide whether its in-process copy of a session is still current.
- `load(id)` returns a deep copy of the stored document (callers may mutate it freely), or
  `None`.
- `delete(id)` removes the document and its archive; it returns whether a document existed.
- `archive(id, namespace, entries)` appends evicted messages, each `{"position": int,
  "message": dict}`; writing the same (id, namespace, position) twice keeps one entry, so a
  retried compaction never duplicates.
- `search_archive(id, namespace, query, page=1, page_size=10)` returns entries whose message
  text contains every word of `query` (case-insensitive), newest (highest position) first.

A store may keep what it encoded for a namespace's `SavedMessages` list and reuse it for the
very same dict objects in the next save of that session; any other list is encoded in full. A
store never changes a document it is given (`SavedMessages` lists are read-only: editing one
raises `TypeError`); it copies what it wants to change.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable
from weakref import WeakKeyDictionary

from picoflow.errors import MissingAbilityError
from picoflow.stores._saved import (
    REMEMBERED_SESSIONS,
    JSONDict,
    MessageEncodings,
    SavedMessages,
    encode_new,
    unchanged,
)

__all__ = [
    "Store",
    "StoreAbilities",
    "abilities_of",
    "KeepsHistory",
    "KeepsLeases",
    "KeepsMemoryBank",
    "KeepsVectors",
    "KeepsStreams",
    "ListsWaiting",
    "ListsIdle",
    "Purges",
    "DeletesOwners",
    "CountsOwnerTokens",
    "FindsOldestArchived",
    "TrimsArchive",
    "ArchiveEntry",
    "JSONDict",
    "MessageEncodings",
    "REMEMBERED_SESSIONS",
    "SavedMessages",
    "encode_new",
    "searchable_text",
    "unchanged",
]

ArchiveEntry = dict[str, Any]  # {"position": int, "message": <message_to_dict form>}


@runtime_checkable
class Store(Protocol):
    """Where sessions live between turns. See the module docstring for the rules."""

    async def create(self, doc: JSONDict) -> None:
        """Store a brand-new session document (revision 0)."""
        ...

    async def load(self, session_id: str) -> JSONDict | None:
        """Return a private copy of the stored document, or None."""
        ...

    async def revision(self, session_id: str) -> int | None:
        """The stored revision, or None: one small read that lets a caller skip a full load."""
        ...

    async def save(self, doc: JSONDict, expected_revision: int) -> int:
        """Replace the document if nobody saved since `expected_revision`; return the new one."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Remove the session and its archive; True if it existed."""
        ...

    async def archive(self, session_id: str, namespace: str, entries: list[ArchiveEntry]) -> None:
        """Keep evicted messages with their original positions (M9)."""
        ...

    async def search_archive(
        self,
        session_id: str,
        namespace: str,
        query: str,
        *,
        page: int = 1,
        page_size: int = 10,
    ) -> list[ArchiveEntry]:
        """Keyword search over a namespace's archive, newest first."""
        ...

    async def aclose(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


def searchable_text(message: JSONDict) -> str:
    """The searchable text of a stored message (`message_to_dict` form).

    Content may be a string or a list of content parts; tool-call arguments are searchable too,
    because a user often asks "what did I say the budget was" and the answer sits in a call.
    """
    data = message.get("data", message)
    content = data.get("content", "")
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        content = " ".join(parts)
    calls = data.get("tool_calls") or []
    args = " ".join(f"{c.get('name', '')} {c.get('args', '')}" for c in calls)
    return f"{content} {args}".strip()


def matches_query(message: JSONDict, query: str) -> bool:
    """Every word of the query occurs in the message text, ignoring case."""
    text = searchable_text(message).lower()
    return all(word in text for word in query.lower().split())


# -- optional abilities ------------------------------------------------------------------------
#
# The core above is all a store must do. Everything below is optional: picoflow's three stores
# do all of it; a store of your own may do only the core and add abilities one at a time. The
# engine asks `abilities_of(store)` once and every feature that needs an ability takes it from
# there, so a missing one is a `MissingAbilityError` naming the ability and its methods at the
# moment a feature needs it, never an AttributeError deep inside a turn.


@runtime_checkable
class KeepsHistory(Protocol):
    """Revisions kept per session (W1). A store with this ability takes `note=` on save/create."""

    async def history(self, session_id: str, *, limit: int | None = None) -> list[JSONDict]:
        """The kept revisions, newest first."""
        ...

    async def load_revision(self, session_id: str, revision: int) -> JSONDict | None:
        """The document as `revision` saved it, or None if it is not kept."""
        ...


@runtime_checkable
class KeepsLeases(Protocol):
    """Session leases (O4): which worker runs a turn of a session right now."""

    async def acquire_lease(self, session_id: str, holder: str, seconds: float) -> bool:
        """Take or renew the session's lease for `seconds`; True if `holder` holds it now."""
        ...

    async def release_lease(self, session_id: str, holder: str) -> None:
        """Remove the session's lease if `holder` still holds it."""
        ...


@runtime_checkable
class KeepsMemoryBank(Protocol):
    """Long-term memory per owner (L1, L5)."""

    async def bank_add(self, entry: Any) -> Any:
        """Keep a new entry."""
        ...

    async def bank_list(self, owner: str, *, page: int = 1, page_size: int = 50) -> list[Any]:
        """An owner's entries, newest first."""
        ...

    async def bank_search(
        self, owner: str, query: str, *, page: int = 1, page_size: int = 10
    ) -> list[Any]:
        """An owner's entries matching `query`, most relevant first."""
        ...

    async def bank_update(
        self, owner: str, entry_id: str, *, text: str | None = None, kind: str | None = None
    ) -> Any:
        """Change an entry; None if there is none with that id."""
        ...

    async def bank_delete(self, owner: str, entry_id: str) -> bool:
        """Delete one entry."""
        ...

    async def bank_forget(self, owner: str) -> int:
        """Delete every entry of the owner."""
        ...


@runtime_checkable
class KeepsVectors(Protocol):
    """Embeddings beside memory-bank entries (L4).

    `model` names the embedding model (None: unnamed). A store keeps one model and dimension
    for its bank and refuses a vector or a query of another (`EmbeddingsMismatchError`).
    """

    async def bank_set_vector(
        self, owner: str, entry_id: str, vector: list[float], *, model: str | None = None
    ) -> bool:
        """Keep an entry's embedding."""
        ...

    async def bank_nearest(
        self, owner: str, vector: list[float], *, limit: int = 100, model: str | None = None
    ) -> list[tuple[Any, float]]:
        """The entries most similar to `vector`, best first."""
        ...


@runtime_checkable
class KeepsStreams(Protocol):
    """A turn's stream kept for clients that reconnect (O5)."""

    async def stream_open(self, turn_id: str, owner: str | None, expires_at: str, now: str) -> None:
        """Start keeping a turn's stream."""
        ...

    async def stream_append(
        self, turn_id: str, events: list[Any], expires_at: str, ended: bool = False
    ) -> None:
        """Add events after the last one kept; `ended` when the turn's last event is among them."""
        ...

    async def stream_read(self, turn_id: str, after: int, now: str) -> Any:
        """A kept stream's events after `after`, or None."""
        ...


@runtime_checkable
class ListsWaiting(Protocol):
    """Sessions waiting for a person (K7)."""

    async def waiting(self, limit: int = 100) -> list[JSONDict]:
        """Sessions with a pending approval or an operator, newest first."""
        ...


@runtime_checkable
class ListsIdle(Protocol):
    """Running sessions nobody saved for a while (M14)."""

    async def idle_sessions(
        self, before: str, *, after: tuple[str, str] | None = None, limit: int = 100
    ) -> list[JSONDict]:
        """Running sessions last saved before `before`, oldest first, one page."""
        ...


@runtime_checkable
class Purges(Protocol):
    """Expired sessions deleted in bulk (W5)."""

    async def purge(self, now: str) -> int:
        """Delete every session that expired before `now`; how many."""
        ...


@runtime_checkable
class DeletesOwners(Protocol):
    """Every session of one owner deleted at once (W5)."""

    async def delete_owner(self, owner: str) -> int:
        """Delete every session `owner` owns; how many."""
        ...


@runtime_checkable
class CountsOwnerTokens(Protocol):
    """A per-owner, per-day token ledger shared by every worker (O3)."""

    async def add_owner_tokens(self, owner: str, day: str, tokens: int) -> int:
        """Add to an owner's tokens of one day; the new total."""
        ...

    async def owner_tokens(self, owner: str, day: str) -> int:
        """An owner's tokens of one day."""
        ...


@runtime_checkable
class FindsOldestArchived(Protocol):
    """The position of a namespace's oldest archived message, in one small read (M9)."""

    async def oldest_archived(self, session_id: str, namespace: str) -> int | None:
        """The oldest archived position, or None."""
        ...


@runtime_checkable
class TrimsArchive(Protocol):
    """An archive that keeps at most `archive_limit` evicted messages per namespace (W5)."""

    archive_limit: int | None


# Each ability: its protocol, its members, and what an error says of a store without it.
_ABILITIES: dict[str, tuple[type, tuple[str, ...], str]] = {
    "history": (KeepsHistory, ("history", "load_revision"), "keeps no history"),
    "leases": (KeepsLeases, ("acquire_lease", "release_lease"), "keeps no session leases"),
    "memory_bank": (
        KeepsMemoryBank,
        ("bank_add", "bank_list", "bank_search", "bank_update", "bank_delete", "bank_forget"),
        "keeps no long-term memory",
    ),
    "vectors": (KeepsVectors, ("bank_set_vector", "bank_nearest"), "keeps no embeddings"),
    "streams": (
        KeepsStreams,
        ("stream_open", "stream_append", "stream_read"),
        "keeps no turn streams",
    ),
    "waiting": (ListsWaiting, ("waiting",), "cannot list the sessions waiting for a person"),
    "idle_sessions": (ListsIdle, ("idle_sessions",), "cannot list idle sessions"),
    "purge": (Purges, ("purge",), "cannot purge expired sessions"),
    "delete_owner": (DeletesOwners, ("delete_owner",), "cannot delete an owner's sessions"),
    "owner_tokens": (
        CountsOwnerTokens,
        ("add_owner_tokens", "owner_tokens"),
        "keeps no token ledger",
    ),
    "oldest_archived": (
        FindsOldestArchived,
        ("oldest_archived",),
        "cannot find its oldest archived messages",
    ),
    "trims_archive": (TrimsArchive, ("archive_limit",), "cannot limit its archive"),
}


def _able(store: object, methods: tuple[str, ...]) -> bool:
    """Every member is there, and every method is callable (a None attribute is no method)."""
    for name in methods:
        member = getattr(store, name, None)
        if name == "archive_limit":
            if not hasattr(store, name):
                return False
        elif not callable(member):
            return False
    return True


def _takes_notes(store: object) -> bool:
    """Whether `create` and `save` take `note=` (what a revision records, W1).

    picoflow's stores all do. It is the one ability read from a signature, because a subclass
    of MemoryStore or SQLiteStore that overrides `save(doc, expected_revision)` in a test or an
    adapter keeps working: its revisions simply carry no note. Found once, here.
    """
    try:
        return all(
            "note" in inspect.signature(getattr(store, name)).parameters
            for name in ("save", "create")
        )
    except (TypeError, ValueError, AttributeError):
        return False


@dataclass(frozen=True)
class StoreAbilities:
    """What one store can do beyond the core: each field is the store itself, or None.

    Typed, so a feature that has checked `abilities.history is not None` calls its methods
    with the protocol's signature; `need` is the same check with the error a user reads.
    `notes` says whether `create`/`save` take a history note (`note=`).
    """

    store_name: str
    history: KeepsHistory | None = None
    leases: KeepsLeases | None = None
    memory_bank: KeepsMemoryBank | None = None
    vectors: KeepsVectors | None = None
    streams: KeepsStreams | None = None
    waiting: ListsWaiting | None = None
    idle_sessions: ListsIdle | None = None
    purge: Purges | None = None
    delete_owner: DeletesOwners | None = None
    owner_tokens: CountsOwnerTokens | None = None
    oldest_archived: FindsOldestArchived | None = None
    trims_archive: TrimsArchive | None = None
    notes: bool = False

    def names(self) -> list[str]:
        """The abilities the store has, by name."""
        skip = ("store_name", "notes")
        return [f.name for f in fields(self) if f.name not in skip and getattr(self, f.name)]

    def need(self, ability: str, feature: str) -> Any:
        """The store, typed for `ability`; else `MissingAbilityError` naming what is missing."""
        if ability not in _ABILITIES:
            raise KeyError(f"no store ability {ability!r}; known: {', '.join(_ABILITIES)}")
        found = getattr(self, ability)
        if found is None:
            _, methods, what = _ABILITIES[ability]
            raise MissingAbilityError(self.store_name, ability, methods, feature, what)
        return found


_KNOWN: WeakKeyDictionary[Any, StoreAbilities] = WeakKeyDictionary()


def abilities_of(store: object) -> StoreAbilities:
    """What `store` can do, found once per store object and remembered."""
    try:
        known = _KNOWN.get(store)
    except TypeError:  # not weakly referenceable (or unhashable): found anew each time
        known = None
    if known is not None:
        return known
    found: dict[str, Any] = {
        name: store if _able(store, methods) else None
        for name, (_, methods, _what) in _ABILITIES.items()
    }
    abilities = StoreAbilities(store_name=type(store).__name__, notes=_takes_notes(store), **found)
    try:
        _KNOWN[store] = abilities
    except TypeError:
        pass
    return abilities
