"""`Preview`: the next request's messages, with the counts and flags a caller asks about (M15).

The hosted memory API's `prepare()` answers "what will the model get, and is it the whole
conversation?" A list subclass keeps `engine.preview` what it was (the messages) and adds that.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from picoflow.flow import Flow
from picoflow.policies import Summarise
from picoflow.step import Step

__all__ = ["Preview", "preview_of"]

# A namespace without a policy this long is flagged: it grows for as long as the stage lasts.
LONG_UNBOUNDED = 100


class Preview(list[BaseMessage]):
    """The messages, plus `message_count`, `truncated`, `compacted` and `warnings`.

    `truncated` is True when messages of the conversation are no longer in the request (a
    policy evicted them; they are in the archive), `compacted` when a summary stands in for
    them. `warnings` says what the next save will do, or that nothing bounds the namespace.
    """

    message_count: int
    truncated: bool
    compacted: bool
    warnings: list[str]


def preview_of(flow: Flow, step: Step, messages: list[BaseMessage]) -> Preview:
    """Wrap `messages` (the request of `step`) with what the namespace's record says."""
    out = Preview(messages)
    memory = flow.get_memory()
    record = memory.namespaces().get(step.namespace)
    out.message_count = len(messages)
    out.truncated = bool(record and record.archived)
    out.compacted = bool(record and record.summary)
    out.warnings = []
    length = len(record.messages) if record else 1
    policy = memory.policy(step.namespace)
    if policy is None and length > LONG_UNBOUNDED:
        out.warnings.append(
            f"Namespace '{step.namespace}' holds {length} messages and has no memory policy: "
            "every one is sent on every call. Give it one with get_memory().set_policy(...)."
        )
    elif isinstance(policy, Summarise):
        config = memory.summary_config_for(step.namespace)
        if length >= config.min_messages:
            out.warnings.append(
                f"Namespace '{step.namespace}' is at {length} messages (its threshold is "
                f"{config.min_messages}): it is compacted at the end of the next turn."
            )
    return out
