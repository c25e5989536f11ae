"""`Step.use_tools`: ready LangChain tools and MCP servers beside a step's `@tool` methods.

Their results are tool results (the step stays), their errors are error results (R6), their
names are checked against the step's other tools at engine start (F5). MCP servers run here for
real: a small FastMCP server (tests/mcp/weather_server.py) over stdio and over streamable HTTP
on loopback; killing it mid-conversation costs tool errors, never a failed turn.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from picoflow import Flow, FlowDefinitionError, FlowEngine, Step, ToolCall, go, tool, tool_group
from picoflow.mcp import MCPServer
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call, tool_calls

SERVER = Path(__file__).with_name("weather_server.py")
STDIO = MCPServer.stdio("weather", sys.executable, [str(SERVER)], timeout=60)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"broken: {reason}")


class Search(BaseModel):
    query: str


ADD = StructuredTool.from_function(add)
FAIL = StructuredTool.from_function(fail)
SEARCH = StructuredTool.from_function(
    lambda query: f"found {query}",
    name="search_web",
    description="Search the web.",
    args_schema=Search,
)


class Desk(Step):
    @tool
    def done(self) -> Any:
        """Finish."""
        return go(Other)


class Other(Step):
    pass


def desk_flow(model: ScriptedChatModel, *tools: Any) -> type[Flow]:
    class DeskFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Desk(self).use_tools(*tools), Other(self)]

    return DeskFlow


def answers(model: ScriptedChatModel, index: int) -> list[ToolMessage]:
    return [m for m in model.requests[index].messages if isinstance(m, ToolMessage)]


# -- LangChain tools ------------------------------------------------------------------------------


async def test_r6_langchain_tools_run_beside_the_steps_own_and_stay() -> None:
    model = ScriptedChatModel(
        script=[tool_call("add", a=2, b=3), tool_call("search_web", query="hotels"), "5; found."]
    )
    engine = FlowEngine(flows=[desk_flow(model, ADD, SEARCH)], store=MemoryStore())
    result = await engine.run("DeskFlow", "add and search")
    assert result.success and result.step == "Desk" and result.message == "5; found."
    assert model.requests[0].tool_names == ["done", "add", "search_web"]
    assert [m.content for m in answers(model, 2)] == ["5", "found hotels"]


async def test_r6_a_langchain_tool_error_or_bad_arguments_is_an_error_result() -> None:
    model = ScriptedChatModel(
        script=[tool_call("fail", reason="disk"), tool_call("add", a="x", b=1), "Sorry."]
    )
    engine = FlowEngine(flows=[desk_flow(model, ADD, FAIL)], store=MemoryStore())
    result = await engine.run("DeskFlow", "go")
    assert result.success and result.message == "Sorry."
    failed, invalid = answers(model, 2)
    assert (failed.status, failed.content) == (
        "error",
        "Error: tool 'fail' failed: RuntimeError: broken: disk",
    )
    assert invalid.status == "error" and invalid.content.startswith(
        "Error: tool 'add' failed: ValidationError: 1 validation error for add"
    )


def test_f5_a_langchain_tool_named_like_a_step_tool_fails_at_engine_start() -> None:
    clash = StructuredTool.from_function(lambda: "x", name="done", description="Also done.")
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[desk_flow(ScriptedChatModel(script=[]), clash)], store=MemoryStore())
    assert str(info.value) == (
        "DeskFlow.Desk offers more than one tool named 'done'; the model calls tools by name. "
        "Rename the @tool method (@tool('other_name')) or leave one of the tools out."
    )


def test_f5_use_tools_refuses_what_is_not_a_tool() -> None:
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[desk_flow(ScriptedChatModel(script=[]), add)], store=MemoryStore())
    assert str(info.value).startswith(
        "DeskFlow: Desk.use_tools() takes LangChain tools (BaseTool, e.g. StructuredTool) or "
        "picoflow.mcp.MCPServer objects, got <function add"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": " ", "connection": {"transport": "stdio"}}, "MCPServer needs a non-empty name"),
        ({"name": "w", "connection": {"command": "x"}}, "MCPServer 'w': connection must be"),
        (
            {"name": "w", "connection": {"transport": "stdio"}, "timeout": 0},
            "MCPServer 'w': timeout must be seconds > 0, got 0.",
        ),
    ],
)
def test_f5_mcp_server_definitions_are_checked_when_made(kwargs: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        MCPServer(**kwargs)


def test_f5_mcp_without_its_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_mcp_adapters", None)
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[desk_flow(ScriptedChatModel(script=[]), STDIO)], store=MemoryStore())
    assert str(info.value) == (
        "A step uses an MCP server, but langchain-mcp-adapters is not installed. Install the "
        "MCP extra: pip install 'picoflow[mcp]'"
    )


# -- MCP over stdio and HTTP ----------------------------------------------------------------------


def weather_turns() -> list[Any]:
    return [
        tool_call("get_weather", city="Paris"),
        "Paris is sunny.",
        tool_call("server_pid"),
        "noted",
    ]


DOWN = (
    "Error: tool 'get_weather' failed: ConnectionError: The MCP server 'weather' is not "
    "reachable; this tool is unavailable right now. Tell the user, or try again later."
)
HUNG = (
    "Error: tool 'get_weather' failed: TimeoutError: The MCP server 'weather' did not answer "
    "within 3 s; this tool is unavailable right now. Tell the user, or try again later."
)


async def converse_then_crash(server: MCPServer, expected: str) -> FlowEngine:
    """MCP tools beside two LangChain tools; the server crashes in the middle of a call: that
    call is an error result, the turn succeeds, and the other tools go on working."""
    model = ScriptedChatModel(
        script=[
            *weather_turns()[:2],
            tool_call("crash"),
            "The weather service is down.",
            tool_call("add", a=1, b=1),
            "2",
        ]
    )
    engine = FlowEngine(flows=[desk_flow(model, ADD, SEARCH, server)], store=MemoryStore())
    first = await engine.run("DeskFlow", "weather in Paris?")
    assert first.success and first.message == "Paris is sunny.", first
    assert model.requests[0].tool_names == [
        "done",
        "add",
        "search_web",
        "get_weather",
        "server_pid",
        "crash",
    ]
    assert answers(model, 1)[0].content == "Paris: sunny, 24 C"
    second = await engine.run("DeskFlow", "crash it", first.session_id)
    assert second.success and second.message == "The weather service is down."
    error = answers(model, 3)[-1]
    assert (error.status, error.content) == ("error", expected)
    third = await engine.run("DeskFlow", "1+1", first.session_id)
    assert third.success and third.message == "2"
    return engine


async def test_r6_mcp_stdio_server_crashing_mid_call_is_a_tool_error() -> None:
    engine = await converse_then_crash(STDIO, DOWN.replace("get_weather", "crash"))
    await engine.aclose()


def wait_until_dead(pid: int) -> None:
    """Until the killed process is gone or a zombie: reading /proc, not sleeping."""
    deadline = time.monotonic() + 10
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
        except (FileNotFoundError, ProcessLookupError):
            return  # reaped (reading a vanishing /proc entry can fail either way)
        if state == "Z":
            return
        assert time.monotonic() < deadline, f"process {pid} outlived SIGKILL"


async def test_r6_mcp_stdio_server_killed_between_turns_is_started_again() -> None:
    model = ScriptedChatModel(script=[*weather_turns(), *weather_turns()])
    engine = FlowEngine(flows=[desk_flow(model, STDIO)], store=MemoryStore())
    try:
        first = await engine.run("DeskFlow", "weather?")
        await engine.run("DeskFlow", "pid?", first.session_id)
        old_pid = answers(model, 3)[-1].content
        with contextlib.suppress(ProcessLookupError):  # gone already is as good
            os.kill(int(old_pid), signal.SIGKILL)
        wait_until_dead(int(old_pid))
        again = await engine.run("DeskFlow", "weather?", first.session_id)
        assert again.success and answers(model, 5)[-1].content == DOWN  # found by the call
        later = await engine.run("DeskFlow", "pid?", first.session_id)
        assert later.success and later.warnings == []
        new_pid = answers(model, 7)[-1].content  # a new server process answers
        assert new_pid.isdigit() and new_pid != old_pid
    finally:
        await engine.aclose()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[MCPServer]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    try:
        while True:  # wait until the port accepts connections (each try is a real attempt)
            assert process.poll() is None and time.monotonic() < deadline, "no MCP server"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                continue
        yield MCPServer.http("weather", f"http://127.0.0.1:{port}/mcp", timeout=3)
    finally:
        process.kill()
        process.wait()


async def test_r6_mcp_http_server_crashing_mid_call_is_a_tool_error(
    http_server: MCPServer,
) -> None:
    """Over HTTP a server that dies mid-call is one that does not answer: the call waits for the
    server's `timeout` (3 s here), then is an error result; the next turn tries to connect
    again, and with the server gone its tools are not offered (a warning says so)."""
    engine = await converse_then_crash(http_server, HUNG.replace("get_weather", "crash"))
    await engine.aclose()


async def test_r6_an_unreachable_mcp_server_is_a_warning_and_the_turn_goes_on() -> None:
    down = MCPServer.http("weather", f"http://127.0.0.1:{free_port()}/mcp", timeout=3)
    model = ScriptedChatModel(script=[tool_call("add", a=1, b=2), "3"])
    engine = FlowEngine(flows=[desk_flow(model, ADD, down)], store=MemoryStore())
    try:
        result = await engine.run("DeskFlow", "1+2")
    finally:
        await engine.aclose()
    assert result.success and result.message == "3"
    assert model.requests[0].tool_names == ["done", "add"]
    assert len(result.warnings) == 1 and result.warnings[0].startswith(
        "The MCP server 'weather' could not be reached ("
    )
    assert result.warnings[0].endswith(
        "); its tools are not offered this turn. The engine tries again at the next turn."
    )


# -- a group handler on top of LangChain and MCP tools (V6) ---------------------------------------


class WeatherDesk(Step):
    """Answers a response's weather calls together, as PicoFlow's BasicFlow does."""

    seen: list[list[str]] = []

    @tool_group("get_weather", "add")
    async def all_at_once(self, calls: list[ToolCall]) -> Any:
        WeatherDesk.seen.append([call.id for call in calls])
        results = [await self.call_tool(call.name, call.args) for call in calls]
        self.save_state({"report": results})
        return "; ".join(results)


def weather_flow(model: ScriptedChatModel, *tools: Any) -> type[Flow]:
    class WeatherFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [WeatherDesk(self).use_tools(*tools)]

    return WeatherFlow


async def test_v6_a_tool_group_takes_over_mcp_and_langchain_calls() -> None:
    WeatherDesk.seen = []
    model = ScriptedChatModel(
        script=[
            tool_calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})),
            "Paris is sunny, Oslo rainy.",
            tool_calls(("add", {"a": 1, "b": 2}), ("get_weather", {"city": "Lima"})),
            "Done.",
        ]
    )
    engine = FlowEngine(flows=[weather_flow(model, ADD, STDIO)], store=MemoryStore())
    try:
        first = await engine.run("WeatherFlow", "Paris and Oslo?")
        second = await engine.run("WeatherFlow", "1+2, and Lima", first.session_id)
        doc = await engine.get_session(first.session_id)
    finally:
        await engine.aclose()
    assert first.success and first.message == "Paris is sunny, Oslo rainy."
    assert WeatherDesk.seen == [["call_1", "call_2"], ["call_3", "call_4"]]  # once per reply
    both = "Paris: sunny, 24 C; Oslo: rain, 9 C"
    assert [(m.tool_call_id, m.content) for m in answers(model, 1)] == [
        ("call_1", both),
        ("call_2", both),
    ]
    assert second.success and doc is not None
    assert doc["steps"]["WeatherDesk"]["state"]["report"] == ["3", "Lima: cloudy, 18 C"]


async def test_v6_call_tool_names_the_tools_it_has_when_asked_for_another() -> None:
    class Asker(Step):
        @tool_group("add")
        async def group(self, calls: list[ToolCall]) -> Any:
            return await self.call_tool("multiply", {"a": 2, "b": 3})

    model = ScriptedChatModel(script=[tool_call("add", a=1, b=1), "Sorry."])

    class AskFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Asker(self).use_tools(ADD)]

    result = await FlowEngine(flows=[AskFlow], store=MemoryStore()).run("AskFlow", "2*3")
    assert result.success
    assert answers(model, 1)[0].content == (
        "Error: tool 'group' failed: ValueError: Asker has no tool named 'multiply' from "
        "use_tools(); it has: add. Call the step's own @tool methods directly."
    )


async def test_v6_call_tool_outside_a_turn_says_so() -> None:
    class Lonely(Step):
        pass

    class LonelyFlow(Flow):
        def config_model(self) -> Any:
            return ScriptedChatModel(script=[])

        def define_steps(self) -> list[Step]:
            return [Lonely(self).use_tools(ADD)]

    step = LonelyFlow().get_step(Lonely)
    with pytest.raises(RuntimeError) as caught:
        await step.call_tool("add", {"a": 1, "b": 2})
    assert str(caught.value) == (
        "Lonely.call_tool('add') was called outside a turn. Call it from a tool, a @tool_group "
        "or a hook while the engine runs the flow."
    )


def test_a_langchain_tool_is_converted_once_and_each_tool_object_has_its_own_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step offers its LangChain and MCP tools on every model call; their schemas are
    converted once per tool object (tens of microseconds each), and the memory of it is
    bounded."""
    from picoflow.step import _sources as _tool_sources

    def make(name: str) -> StructuredTool:
        return StructuredTool.from_function(add, name=name, description="Add two numbers.")

    first = make("add")
    spec, handler = _tool_sources.langchain_entry(first)
    assert _tool_sources.langchain_entry(first) == (spec, handler)
    assert spec.schema["function"]["name"] == "add"
    twin = make("add")  # the same name, another object (an MCP server that reconnected)
    assert _tool_sources.langchain_entry(twin)[0] is not spec
    monkeypatch.setattr(_tool_sources, "_MAX_ENTRIES", 2)
    monkeypatch.setattr(_tool_sources, "_ENTRIES", {})
    tools = [make(f"t{n}") for n in range(3)]
    entries = [_tool_sources.langchain_entry(t) for t in tools]
    assert [known for known, _ in _tool_sources._ENTRIES.values()] == tools[1:]
    assert _tool_sources.langchain_entry(tools[0]) is not entries[0]  # made again when asked
