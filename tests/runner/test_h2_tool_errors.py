"""H2: a tool's exception reaches the model without the machine's paths, URLs or hosts (R6)."""

from __future__ import annotations

from typing import Any

import pytest
from support.flows import engine_for

from picoflow import Flow, Step, ToolCall, tool, tool_group
from picoflow.testing import ScriptedChatModel, tool_calls


class FilesStep(Step):
    @tool
    def load_prices(self) -> str:
        """Load the price list."""
        raise PermissionError(13, "Permission denied", "/srv/hotel/data/prices.csv")

    @tool
    def reach_catalog(self) -> str:
        """Ask the catalog service."""
        raise ConnectionError(
            "cannot reach catalog.internal:8443 (https://admin:s3cret@catalog.internal/v2) "
            "after 3 tries at 10:30"
        )


def files_flow(model: ScriptedChatModel) -> type[Flow]:
    class FilesFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [FilesStep(self)]

    return FilesFlow


async def test_h2_tool_errors_reach_the_model_without_paths_or_hosts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedChatModel(
        script=[tool_calls(("load_prices", {}), ("reach_catalog", {})), "Sorry, not now."]
    )
    result = await engine_for(files_flow(model)).run("FilesFlow", "prices?")
    assert result.success
    told = [m.content for m in model.requests[1].messages if m.type == "tool"]
    assert told == [
        "Error: tool 'load_prices' failed: PermissionError: [Errno 13] Permission denied: '<path>'",
        "Error: tool 'reach_catalog' failed: ConnectionError: cannot reach <host> (<url>) "
        "after 3 tries at 10:30",
    ]
    assert "/srv/hotel/data/prices.csv" in caplog.text  # the details stay in the log
    assert "catalog.internal:8443" in caplog.text


async def test_h2_a_tool_group_that_raises_is_redacted_like_a_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Groups and tools share one boundary (V6, R6): a group's exception is redacted too."""

    class GroupedStep(FilesStep):
        @tool_group("load_prices", "reach_catalog")
        def both(self, calls: list[ToolCall]) -> str:
            raise PermissionError(13, "Permission denied", "/srv/hotel/data/prices.csv")

    model = ScriptedChatModel(
        script=[tool_calls(("load_prices", {}), ("reach_catalog", {})), "Sorry, not now."]
    )

    class GroupedFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [GroupedStep(self)]

    result = await engine_for(GroupedFlow).run("GroupedFlow", "prices?")
    assert result.success
    told = [m.content for m in model.requests[1].messages if m.type == "tool"]
    assert (
        told
        == ["Error: tool 'both' failed: PermissionError: [Errno 13] Permission denied: '<path>'"]
        * 2
    )
    assert "/srv/hotel/data/prices.csv" in caplog.text
