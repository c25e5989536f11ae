"""`Flow.migrate_session` (V10): a flow upgrades its own stored documents as it loads them.

The hook gets a deep copy (the engine's cache keeps the stored original), and whatever it
returns must still be a session of this flow: the id, revision, flow name and owner are put
back, and a document missing a P1 key fails the turn with a message naming the key.
"""

from __future__ import annotations

import pickle
from typing import Any

from picoflow._internal.people_records import PEOPLE_KEYS
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.memory import Namespace
from picoflow.session import SessionDocument, check_schema

__all__ = ["migrate"]

_KEPT = frozenset({"id", "revision", "flow", "owner"})  # put back as stored, whatever it returns
# V2: present only once a nested run is recorded; O4: only once a keyed turn was saved; D3:
# only once a decision step decided
_OPTIONAL = frozenset({"sequence_levels", "idempotency", "decision_usage"})
_KEYS = frozenset(SessionDocument.__annotations__) - _KEPT - PEOPLE_KEYS - _OPTIONAL


async def migrate(
    flow: Flow, doc: dict[str, Any], spaces: dict[str, Namespace] | None
) -> tuple[dict[str, Any] | None, dict[str, Namespace] | None]:
    """The document as the flow wants it loaded, or (None, None) for a new session."""
    if type(flow).migrate_session is Flow.migrate_session:
        return doc, spaces
    copy = pickle.loads(pickle.dumps(doc, pickle.HIGHEST_PROTOCOL))  # JSON: a deep copy
    out = await flow._call_hook(flow.migrate_session, copy)
    if out is None:
        return None, None
    where = f"{flow.name}.migrate_session()"
    if not isinstance(out, dict):
        raise FlowDefinitionError(
            f"{where} returned {type(out).__name__}; return the session document (a dict), "
            "changed or not, or None to start a new session."
        )
    missing = sorted(_KEYS - out.keys())
    if missing:
        raise FlowDefinitionError(
            f"{where} returned a document without {', '.join(repr(k) for k in missing)}; "
            "change the document you were given instead of building a new one."
        )
    out.update(id=doc["id"], revision=doc["revision"], flow=doc["flow"])
    out.pop("owner", None)
    if "owner" in doc:  # H4: who may continue a session is not the flow's to change
        out["owner"] = doc["owner"]
    check_schema(out)
    return out, None  # the cached namespaces describe the old document: parse the new one
