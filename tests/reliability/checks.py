"""What every reliability scenario asserts about a stored session: 0 lost, 0 duplicated, 0 torn.

Sessions run `store_worker.ChatFlow`, whose model answers each message with "ok: <message>";
so a stored history is a system slot, then human / ai pairs. A turn is *acknowledged* when the
engine returned `success=True` for it (a client was told it was saved).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, messages_from_dict

NAMESPACE = "ChatStep"


def stored_turns(doc: dict[str, Any]) -> list[str]:
    """The user messages of the stored turns, in order; raises AssertionError on a torn one."""
    messages = messages_from_dict(doc["memory"][NAMESPACE]["messages"])
    assert isinstance(messages[0], SystemMessage), "torn: the system slot is missing"
    body = messages[1:]
    assert len(body) % 2 == 0, f"torn: {len(body)} messages after the system slot"
    texts = []
    for human, reply in zip(body[::2], body[1::2], strict=True):
        assert isinstance(human, HumanMessage) and isinstance(reply, AIMessage), "torn turn"
        assert reply.content == f"ok: {human.content}", f"torn: {human.content!r} -> {reply!r}"
        texts.append(str(human.content))
    return texts


def check_session(
    doc: dict[str, Any] | None,
    acknowledged: Collection[str],
    attempted: Collection[str],
    *,
    first: str = "first",
) -> list[str]:
    """Assert the three properties; return the stored user messages (after `first`).

    Every acknowledged turn is stored (0 lost); no message is stored twice (0 duplicated);
    every stored turn is whole and was attempted by someone (0 torn, nothing invented); the
    revision counts exactly the saves after creation.
    """
    assert doc is not None, "lost: the whole session is gone"
    texts = stored_turns(doc)
    assert texts[0] == first, texts[:3]
    later = texts[1:]
    duplicated = [text for text, count in Counter(later).items() if count > 1]
    assert duplicated == [], f"duplicated: {duplicated}"
    lost = sorted(set(acknowledged) - set(later))
    assert lost == [], f"lost: {lost}"
    invented = sorted(set(later) - set(attempted))
    assert invented == [], f"stored but never sent: {invented}"
    assert doc["revision"] == len(later), (doc["revision"], len(later))
    return later
