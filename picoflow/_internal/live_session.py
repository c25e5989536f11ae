"""The session a flow object runs: everything a turn changes besides memory, in one record.

A `Flow` is built fresh for every turn (F1). `session.load_flow` fills its `LiveSession`
from the stored document, the turn changes it through the public API (cursor, state, context,
warnings), and `session.dump_flow` writes it back. Nothing else keeps session data on the flow,
so this record and the flow's `Memory` are the whole of what a save writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

__all__ = ["LiveSession"]


def _blank_context() -> dict[str, Any]:
    return {"config": {}}


@dataclass(slots=True)
class LiveSession:
    """One session's data for one turn, as the flow object holds it.

    Attributes:
        session_id: the stored session's id (None until a document is loaded).
        current: the step the cursor is on (`current_step` in the document).
        sequence: step names, one per real move (F8), and for each nested run the child and
            then the parent again (V2), as PicoFlow records them.
        levels: the nesting level of each `sequence` entry above 1, by position (the initial
            run is level 1, its children 2, theirs 3); saved as `sequence_levels`.
        completed: the session reached `EndStep` (R8).
        context: the session context (F7).
        states: each step's durable state, transient part included until the save (S1-S4).
        content_type: the content type of this turn's reply (R2).
        warnings: this turn's warnings; the save appends them to the document's.
        exits: steps with `distil_on_exit` or `use_long_term_memory(extract="step")` left this
            turn, with their namespace as it was when they were left; the housekeeping before
            the save distils and extracts them.
        people: people in the loop (K1-K6): `approvals` (the document's list) and `operator`
            (the handoff in progress, or None); see `picoflow._people`.
        effects: what tools with effects did (K8), and a forced rewind's notice (K9); see
            `picoflow._internal.effects`.
        decision_usage: the decision calls of this turn (D3); the save adds them to the
            document's `decision_usage`.
    """

    session_id: str | None = None
    current: str | None = None
    sequence: list[str] = field(default_factory=list)
    levels: dict[int, int] = field(default_factory=dict)
    completed: bool = False
    context: dict[str, Any] = field(default_factory=_blank_context)
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    content_type: str = "text/plain"
    warnings: list[str] = field(default_factory=list)
    exits: list[tuple[str, list[BaseMessage]]] = field(default_factory=list)
    people: dict[str, Any] = field(default_factory=dict)
    doc: dict[str, Any] | None = None  # the document as loaded for this turn (get_session_doc)
    logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # U5: new entries
    # K8, K9: what tools with effects did (`picoflow._internal.effects`); how many of them
    # were there before this turn; a forced rewind's notice, and whether a model has read it.
    effects: list[dict[str, Any]] = field(default_factory=list)
    effects_before: int = 0
    effects_notice: int | None = None
    effects_told: bool = False
    decision_usage: dict[str, int] = field(default_factory=dict)  # D3: this turn's decisions

    def record_step(self, step_name: str, level: int) -> None:
        """Add a `sequence` entry for a step that runs at `level` (1: the cursor's own)."""
        if level != 1:
            self.levels[len(self.sequence)] = level
        self.sequence.append(step_name)

    def state_of(self, step_name: str) -> dict[str, Any]:
        """The step's live state dict, created empty on first use."""
        return self.states.setdefault(step_name, {})
