"""U5: the session document keeps bounded `log`, `error` and `debug` arrays.

`Flow.log(text, level=...)` writes to them; model-call retries are noted in `log`; a failed
turn saves nothing else (P3), and its error is written to `error` with the failure.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from picoflow import Flow, FlowEngine, Step, tool
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel, tool_call, transient_error


async def _no_wait(seconds: float) -> None:
    return None


class NoteStep(Step):
    def get_prompt(self) -> str:
        return "Take notes."

    @tool
    def note(self, text: str, level: str = "info") -> str:
        """Write a note to the session log."""
        for _ in range(int(self.get_context("config.repeat") or 1)):
            self.flow.log(text, level=level)
        return "noted"


def flow_on(script: list[Any]) -> type[Flow]:
    model = ScriptedChatModel(script=list(script) * 3)  # built once: every turn continues it

    class LogFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [NoteStep(self)]

    return LogFlow


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Any]:
    yield MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "log.db")


def messages(doc: dict[str, Any], array: str) -> list[str]:
    return [entry["message"] for entry in doc[array]]


async def test_u5_flow_log_writes_each_level_to_its_array(store: Any) -> None:
    script = [
        tool_calls_for(("a debug note", "debug"), ("an info note", "info")),
        tool_calls_for(("a warning", "warning"), ("an error note", "error")),
        "Done.",
    ]
    engine = FlowEngine([flow_on(script)], store=store)
    result = await engine.run("LogFlow", "log things")
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "debug") == ["a debug note"]
    assert messages(doc, "log") == ["an info note", "a warning"]
    assert messages(doc, "error") == ["an error note"]
    assert [e["level"] for e in doc["log"]] == ["info", "warning"]
    assert all(set(e) == {"at", "level", "message"} for e in doc["log"])


def tool_calls_for(*notes: tuple[str, str]) -> Any:
    from picoflow.testing import tool_calls

    return tool_calls(*[("note", {"text": text, "level": level}) for text, level in notes])


async def test_u5_arrays_keep_their_newest_hundred_entries(store: Any) -> None:
    script = [tool_call("note", text="n"), "ok"]
    engine = FlowEngine([flow_on(script)], store=store)
    first = await engine.run("LogFlow", "go", config={"repeat": 70})
    await engine.run("LogFlow", "again", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert len(doc["log"]) == 100 and doc["error"] == [] and doc["debug"] == []


def test_u5_flow_log_refuses_an_unknown_level() -> None:
    flow = flow_on(["x"])()
    with pytest.raises(ValueError) as caught:
        flow.log("x", level="loud")
    assert str(caught.value) == (
        "log level 'loud' is not one of debug, info, warning, error; 'debug' goes to the "
        "session's debug array, 'error' to error, the others to log."
    )


async def test_u5_model_call_retries_are_noted_in_the_log(store: Any) -> None:
    script = [transient_error("rate_limit"), "Hello."]
    engine = FlowEngine([flow_on(script)], store=store, sleep=_no_wait)
    result = await engine.run("LogFlow", "hi")
    assert result.message == "Hello."
    doc = await engine.get_session(result.session_id)
    [entry] = doc["log"]
    assert entry["level"] == "warning"
    assert entry["message"].startswith(
        "The model 'ScriptedChatModel' failed in LogFlow.NoteStep (attempt 1 of 4): "
        "RateLimitError (HTTP 429): "
    )
    assert entry["message"].endswith(" s.") and "; trying again in " in entry["message"]


async def test_u5_a_failed_turn_saves_nothing_else_and_its_error_is_written_with_it(
    store: Any,
) -> None:
    script = ["Hi!", RuntimeError("the model blew up"), "Back again."]

    class CountingFlow(flow_on([])):  # one script across turns: the model outlives each turn
        name = "LogFlow"
        model = ScriptedChatModel(script=script)

        def config_model(self) -> Any:
            return self.model

    engine = FlowEngine([CountingFlow], store=store)
    first = await engine.run("LogFlow", "hello")
    before = await engine.get_session(first.session_id)
    failed = await engine.run("LogFlow", "again", session_id=first.session_id)
    assert not failed.success
    after = await engine.get_session(first.session_id)
    [entry] = after["error"]
    assert (entry["level"], entry["error"], entry["message"]) == (
        "error",
        "RuntimeError",
        failed.message,
    )
    # P3: the error array (and the revision that wrote it) is all that changed
    assert after["revision"] == before["revision"] + 1
    unchanged = {"error", "revision"}
    assert {k: v for k, v in after.items() if k not in unchanged} == {
        k: v for k, v in before.items() if k not in unchanged
    }
    later = await engine.run("LogFlow", "still there?", session_id=first.session_id)
    assert later.success
    doc = await engine.get_session(first.session_id)
    assert doc["error"] == [entry]  # written once, not again with the next save
