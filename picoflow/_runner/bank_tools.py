"""`remember` and `recall`, the tools of `use_long_term_memory()`, and the injected block (L2).

ByteChef's Auto Memory pair: the model writes down what is worth keeping and reads it back in
a later chat. Both reach only the memory of the session's owner; a session with no owner (no
principal, no `config.user_id`) gets a tool result saying nothing was kept, never an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import Field

from picoflow._bank import vectors
from picoflow._bank.bank import owner_of
from picoflow.stores._bank import MAX_TEXT, new_entry
from picoflow.tools import ToolSpec, collect_tools, tool

if TYPE_CHECKING:
    from picoflow.step import Step
    from picoflow.stores.base import Store

__all__ = ["bank_tools", "bank_block", "BLOCK_PREFIX"]

BLOCK_PREFIX = "What you remember about this user from earlier conversations:\n"
_NO_OWNER = (
    "Nothing was {what}: this conversation has no known user (no signed-in principal and no "
    "config.user_id), so there is no long-term memory to use."
)
_PAGE = 10


class _Bank:
    """The two tools over one store, for one step."""

    def __init__(self, store: Store, step: Step) -> None:
        self._store: Any = store
        self._step = step

    @tool
    async def remember(
        self,
        text: Annotated[
            str,
            Field(
                max_length=MAX_TEXT,
                description="One fact about the user, in a full sentence, e.g. 'Prefers a "
                "double room on a high floor.'",
            ),
        ],
        kind: Annotated[
            str, Field(description="fact, preference or episode", pattern="^[a-z][a-z0-9_-]*$")
        ] = "fact",
    ) -> str:
        """Write down something about the user worth knowing in a later conversation.

        Use it for lasting preferences and facts the user stated, not for this conversation's
        passing details.
        """
        owner = owner_of(self._step.flow)
        if owner is None:
            return _NO_OWNER.format(what="remembered")
        session = self._step.flow.get_session_id()
        ids = [m.id for m in self._step.get_messages()[-4:] if isinstance(m, HumanMessage) and m.id]
        source = {"session_id": session, "message_ids": ids}
        entry = await vectors.add_entry(
            self._store, self._step.flow._services.embeddings, new_entry(owner, text, kind, source)
        )
        return f"Remembered ({entry['kind']}): {entry['text']}"

    @tool
    async def recall(
        self,
        query: Annotated[str, Field(description="What to look for, e.g. 'room preference'.")],
    ) -> str:
        """Look up what you remember about the user from earlier conversations."""
        owner = owner_of(self._step.flow)
        if owner is None:
            return _NO_OWNER.format(what="recalled")
        embeddings = self._step.flow._services.embeddings
        found = await vectors.search(self._store, embeddings, owner, query, page_size=_PAGE)
        if not found:
            return f"Nothing remembered about the user matches {query!r}."
        lines = [f"Remembered about the user, most relevant first ({len(found)}):"]
        lines += [f"- {e['text']} ({e['kind']}, {e['created_at'][:10]})" for e in found]
        return "\n".join(lines)


_SPECS: list[ToolSpec] = collect_tools(_Bank)


def bank_tools(
    store: Store, base: Callable[[Step], list[tuple[ToolSpec, Callable[..., Any]]]]
) -> Callable[[Step], list[tuple[ToolSpec, Callable[..., Any]]]]:
    """`base`'s extra tools for a step, plus remember/recall where the step asked for them."""

    def for_step(step: Step) -> list[tuple[ToolSpec, Callable[..., Any]]]:
        found = base(step)
        spec = step._long_term
        if spec is None or not spec.tools:
            return found
        bank = _Bank(store, step)
        return [*found, *((s, getattr(bank, s.name)) for s in _SPECS)]

    return for_step


async def bank_block(step: Step, messages: list[BaseMessage], store: Store) -> list[BaseMessage]:
    """The request with the owner's most relevant entries after the summary, within budget.

    Relevance is the latest user message's; the newest entries fill what is left of the
    budget, so a preference stated once is offered even when today's words differ.
    """
    spec = step._long_term
    owner = owner_of(step.flow)
    if spec is None or not spec.inject or owner is None:
        return messages
    bank: Any = store
    query = next((str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    embeddings = step.flow._services.embeddings
    relevant = (
        await vectors.search(bank, embeddings, owner, query, page_size=_PAGE) if query else []
    )
    newest = await bank.bank_list(owner, page_size=_PAGE)
    lines, used, seen = [], count_tokens_approximately([SystemMessage(BLOCK_PREFIX)]), set()
    for entry in [*relevant, *newest]:
        if entry["id"] in seen:
            continue
        seen.add(entry["id"])
        line = f"- {entry['text']}"
        cost = count_tokens_approximately([HumanMessage(line)])
        if used + cost > spec.budget_tokens:
            break
        lines.append(line)
        used += cost
    if not lines:
        return messages
    at = 1 + sum(1 for m in messages[1:3] if isinstance(m, SystemMessage))  # after the summary
    return [*messages[:at], SystemMessage(BLOCK_PREFIX + "\n".join(lines)), *messages[at:]]
