"""Going back never erases an effect (K9): rewind, undo, edit and fork keep the record.

A rewind copies an older document over the current one, and the older one does not know what
tools did after it. So every way back starts from the current document's `effects`: a target
before one of them is refused with `EffectInHistoryError` naming them, unless the caller
forces it; a forced one keeps the whole record and leaves a notice for the step's next model
call (`picoflow._internal.effects`), so the model knows what already happened in the world.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from picoflow._internal.effects import EFFECTS, NOTICE, effects_after
from picoflow.errors import EffectInHistoryError
from picoflow.stores.base import JSONDict

__all__ = ["forcing", "forced", "keep_effects"]

# Set by `edit_message(force=True)` around its turn: the edit's base is chosen deep inside the
# turn's load (`Revisions.edit_base`), far from the call that was forced.
_FORCE: ContextVar[bool] = ContextVar("picoflow_force_past_effects", default=False)


@contextmanager
def forcing(force: bool) -> Iterator[None]:
    """Allow (or not) the history change run inside to go back past effects."""
    token = _FORCE.set(force)
    try:
        yield
    finally:
        _FORCE.reset(token)


def forced() -> bool:
    """Whether the change being run may go back past effects (`forcing`)."""
    return _FORCE.get()


def keep_effects(
    session_id: str, current: JSONDict, doc: JSONDict, after: int, force: bool
) -> None:
    """Give `doc`, going back to revision `after`, the current record of effects (K9).

    Raises:
        EffectInHistoryError: effects were saved after `after` and `force` is False.
    """
    later = effects_after(current, after)
    if later and not force:
        raise EffectInHistoryError(session_id, after, later)
    if current.get(EFFECTS):
        doc[EFFECTS] = copy.deepcopy(current[EFFECTS])
    else:
        doc.pop(EFFECTS, None)
    notice = after if later else current.get(NOTICE)
    if notice is None:
        doc.pop(NOTICE, None)
    else:
        doc[NOTICE] = notice
