"""The offline summariser of the intake namespace: a faithful, cumulative transcript.

picoflow sends the previous summary and the evicted messages as transcript lines (``User:``,
``Assistant: ... [called tool({...})]``, ``Tool result (tool): ...``). A real model would
write prose; this one keeps the lines, invents nothing and drops nothing a later stage needs
(every customer line, every call and result), which is also how the offline model reads them
back (`transcript.summary_events`). The oldest lines go first past `MAX_LINES`.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

MAX_LINES = 120
_PREVIOUS = "Previous summary:"
_MERGE = "Messages to merge into it, oldest first:"
_CONTEXT = "For context only"


def is_summary_request(messages: Sequence[BaseMessage], tools: Sequence[str]) -> bool:
    """No tools, and the last message is picoflow's summary request."""
    return not tools and len(messages) >= 2 and str(messages[-1].text).startswith(_PREVIOUS)


def summarize(messages: Sequence[BaseMessage]) -> str:
    """The updated summary: the previous one's lines, then the evicted messages' lines."""
    body = str(messages[-1].text)
    previous, _, rest = body[len(_PREVIOUS) :].partition(_MERGE)
    merged = rest.split(f"\n\n{_CONTEXT}")[0]
    lines = [line for line in previous.strip().splitlines() if line.strip() != "(none yet)"]
    lines += [line for line in merged.strip().splitlines() if line.strip()]
    kept = [line.rstrip() for line in lines if line.strip()]
    return "\n".join(kept[-MAX_LINES:]) or "Nothing to remember yet."
