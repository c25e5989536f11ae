"""Effects are facts (K8, K9): what a tool with effects did, as the session document keeps it.

One top-level key, present only in sessions whose tools acted on the world, so every store
keeps it as it keeps the rest of the document and it is easy to query in MongoDB:

    doc["effects"] = [
        {"tool": "book", "args": {"hotel": "h2"}, "key": "<session>:3:call_1",
         "result": {"content": "Booked h2.", "status": "success"}, "at": "...",
         "revision": 3, "step": "BookStep"},
    ]

`revision` is the revision whose save first holds the record, so "is there an effect after
revision N" is one comparison: a rewind to before it refuses (`EffectInHistoryError`) unless
forced, and a forced rewind keeps the list as it was and sets `effects_notice` to the revision
it went back to: the step's next model call reads the effects after it in its system prompt,
so the model does not do them again, and the save after that call drops the notice.

The list is never trimmed by a turn: an effect is a fact about the world, not conversation.
"""

from __future__ import annotations

import copy
from typing import Any

from picoflow._internal.live_session import LiveSession
from picoflow._internal.state import now_iso

__all__ = [
    "EFFECTS",
    "NOTICE",
    "load_effects",
    "dump_effects",
    "record_effect",
    "effects_after",
    "turn_effects",
    "notice_text",
    "describe",
]

EFFECTS = "effects"
NOTICE = "effects_notice"  # the revision a forced rewind went back to, until a model is told
_SHOWN = 300  # characters of a result a reply or a notice repeats


def load_effects(session: LiveSession, doc: dict[str, Any]) -> None:
    """Copy the document's records into the turn's session (the loaded document never changes)."""
    session.effects = copy.deepcopy(doc.get(EFFECTS) or [])
    notice = doc.get(NOTICE)
    session.effects_notice = notice if isinstance(notice, int) else None
    session.effects_before = len(session.effects)


def dump_effects(session: LiveSession, out: dict[str, Any]) -> None:
    """Write the records into the document being saved; an absent key stays absent.

    The notice is dropped by the first save after a model call has read it.
    """
    if session.effects or EFFECTS in out:
        out[EFFECTS] = copy.deepcopy(session.effects)
    if session.effects_notice is not None and not session.effects_told:
        out[NOTICE] = session.effects_notice
    else:
        out.pop(NOTICE, None)


def record_effect(
    session: LiveSession, step: str, tool: str, args: dict[str, Any], key: str, result: Any
) -> None:
    """Record one run of a tool with effects, whatever its outcome (K8).

    A tool that raised may still have acted before it raised, so a failed run is a record too.
    """
    doc = session.doc or {}
    content, status = result
    session.effects.append(
        {
            "tool": tool,
            "args": copy.deepcopy(args),
            "key": key,
            "result": {"content": content, "status": status},
            "at": now_iso(),
            "revision": int(doc.get("revision", 0)) + 1,
            "step": step,
        }
    )


def turn_effects(session: LiveSession) -> list[dict[str, Any]]:
    """The effects this turn recorded, oldest first."""
    return session.effects[session.effects_before :]


def effects_after(doc: dict[str, Any], revision: int) -> list[dict[str, Any]]:
    """The effects a document records as saved after `revision` (K9)."""
    return [e for e in doc.get(EFFECTS) or [] if int(e.get("revision", 0)) > revision]


def describe(effect: dict[str, Any]) -> str:
    """One effect in a sentence a person and a model can both read."""
    args = ", ".join(f"{k}={v!r}" for k, v in (effect.get("args") or {}).items())
    result = str((effect.get("result") or {}).get("content", ""))
    if len(result) > _SHOWN:
        result = result[:_SHOWN] + "..."
    return f"{effect['tool']}({args}) -> {result}"


def notice_text(session: LiveSession) -> str | None:
    """What a forced rewind tells the model calls of the next turn (K9); None: nothing.

    Reading it marks it told, so the save of this turn drops the notice.
    """
    after = session.effects_notice
    if after is None:
        return None
    effects = [e for e in session.effects if int(e.get("revision", 0)) > after]
    session.effects_told = True
    if not effects:
        return None
    done = "\n".join(f"- {describe(e)} (key {e['key']})" for e in effects)
    return (
        "Already done in this conversation, and not undone by going back to an earlier point: "
        f"these actions took effect in the world.\n{done}\nDo not do them again unless the user "
        "asks for it explicitly; if the user asks, say what was already done."
    )
