"""A pytest plugin that records every real move (F8) the tests' flows make.

`tests/demo/test_graph_demo.py` runs the demo's conversation tests with it
(`-p record_moves`, the file named by PICOFLOW_RECORD_MOVES), then checks that the flow's
graph has an arrow for each recorded move. `Flow.goto` is where every real move happens, so
it is wrapped: the original runs unchanged, and a move it makes is appended to the file as
`[module, flow class, from step, to step]`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from picoflow import Flow, FlowDefinitionError

RECORD = "PICOFLOW_RECORD_MOVES"


def pytest_configure(config: pytest.Config) -> None:
    record = Path(os.environ[RECORD])
    goto = Flow.goto

    async def recording_goto(self: Flow, step: Any) -> bool:
        try:
            before: str | None = self.current_step.name
        except FlowDefinitionError:  # no current step yet
            before = None
        moved = await goto(self, step)
        if moved and before is not None:
            flow = type(self)
            line = [flow.__module__, flow.__qualname__, before, self.current_step.name]
            with record.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
        return moved

    Flow.goto = recording_goto  # type: ignore[method-assign]
