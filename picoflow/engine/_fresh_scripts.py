"""Notice a `config_model()` that builds a new scripted test model on every turn (F4).

`config_model()` runs once per turn. A `ScriptedChatModel` built inside it is a new model each
turn, so its script starts over: the second turn of a test gets the first reply again, and
nothing fails where the mistake is. Per session, the engine remembers the scripted model the
last turn used; a turn that gets a *fresh* model with the very same script (nothing used yet,
while the last one had answered) is that mistake, and is said once per flow: as a warning on
the turn, in the log, and through `warnings` (an error where warnings are errors, as in tests).
"""

from __future__ import annotations

import logging
import warnings
from collections import OrderedDict
from typing import Any

from picoflow.flow import Flow

__all__ = ["FreshScripts"]

logger = logging.getLogger(__name__)

_REMEMBERED = 256  # sessions; only scripted test models are kept, never a provider's model


class FreshScripts:
    """The scripted model of each recent session's last turn, to compare the next one with."""

    def __init__(self) -> None:
        self._last: OrderedDict[str, Any] = OrderedDict()
        self._warned: set[type[Flow]] = set()

    def check(self, flow: Flow, session_id: str, model: Any) -> None:
        """Warn if `model` is a fresh copy of the script this session's last turn used."""
        script = _script_of(model)
        if script is None:
            return
        previous = self._last.pop(session_id, None)
        self._last[session_id] = model
        if len(self._last) > _REMEMBERED:
            self._last.popitem(last=False)
        if previous is None or previous is model or type(flow) in self._warned:
            return
        if model.requests or not previous.requests or _script_of(previous) != script:
            return
        self._warned.add(type(flow))
        message = (
            f"{flow.name}.config_model() returned a new {type(model).__name__} with the same "
            "script as the last turn of this session, so the script started over: this turn "
            "got the first reply again. config_model() runs on every turn; build the model "
            "once (at module level or in a test fixture) and return that same object."
        )
        logger.warning(message, extra={"session_id": session_id})
        flow.add_warning(message)
        warnings.warn(message, UserWarning, stacklevel=2)


def _script_of(model: Any) -> Any:
    """The script of a `picoflow.testing.ScriptedChatModel`, else None (no import of it)."""
    if type(model).__module__ != "picoflow.testing":
        return None
    record = getattr(model, "_record", None)
    return getattr(record, "scripts", None)
