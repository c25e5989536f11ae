"""O1: every turn is a `picoflow.turn` span with model, tool, compaction and store children.

The SDK's in-memory exporter records them. A tracer provider can be set only once per process
(a docs example may have set one already), so the exporter is added to whichever SDK provider
is current.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from picoflow import EndStep, Flow, FlowEngine, Step, go, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

_EXPORTER = InMemorySpanExporter()
_WATCHED: list[TracerProvider] = []


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    if provider not in _WATCHED:
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        _WATCHED.append(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


class Ask(Step):
    @tool
    def book(self, room: str) -> Any:
        """Book a room."""
        self.save_state({"room": room})
        return go(Done)


class Done(Step):
    pass


def _flow(model: ScriptedChatModel) -> type[Flow]:
    class TracedFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Ask(self), Done(self), EndStep(self)]

    return TracedFlow


def _by_name(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in finished if span.name == name]


async def test_o1_a_turn_is_a_span_with_its_model_tool_and_store_calls_as_children(
    spans: InMemorySpanExporter,
) -> None:
    model = ScriptedChatModel(script=[tool_call("book", room="double"), "Booked."])
    engine = FlowEngine([_flow(model)], store=MemoryStore())
    result = await engine.run("TracedFlow", "a double please")
    assert result.success
    finished = spans.get_finished_spans()
    (turn,) = _by_name(finished, "picoflow.turn")
    attributes = dict(turn.attributes or {})
    assert attributes["picoflow.flow"] == "TracedFlow"
    assert attributes["picoflow.session_id"] == result.session_id
    assert attributes["picoflow.step_before"] == "Ask"
    assert attributes["picoflow.step_after"] == "Done"
    assert attributes["picoflow.revision"] == 0
    chats = [span for span in finished if span.name.startswith("chat ")]
    assert len(chats) == 2
    for chat in chats:
        assert chat.parent is not None and chat.parent.span_id == turn.context.span_id
        chat_attributes = dict(chat.attributes or {})
        assert chat_attributes["gen_ai.operation.name"] == "chat"
        assert chat_attributes["gen_ai.request.model"]
        assert int(chat_attributes["gen_ai.usage.input_tokens"]) > 0  # type: ignore[arg-type]
        assert int(chat_attributes["gen_ai.usage.output_tokens"]) > 0  # type: ignore[arg-type]
    (tool_span,) = _by_name(finished, "picoflow.tool")
    assert dict(tool_span.attributes or {})["picoflow.tool"] == "book"
    assert tool_span.parent is not None and tool_span.parent.span_id == turn.context.span_id
    assert len(_by_name(finished, "picoflow.store.save")) == 1
    # the second turn loads the session: a store.load span under its own turn span
    await engine.run("TracedFlow", "thanks", session_id=result.session_id)
    loads = _by_name(spans.get_finished_spans(), "picoflow.store.load")
    assert len(loads) == 1


async def test_o1_compaction_is_a_child_span_of_the_turn(spans: InMemorySpanExporter) -> None:
    class Chat(Step):
        pass

    model = ScriptedChatModel(
        script={"summary": ["They said hello a few times."], "*": ["Hi."] * 8}
    )

    class CompactingFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory()
            memory.set_summary_model(model).set_summary_config(min_messages=8, recent_messages=2)
            memory.enable_summary("chat")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    engine = FlowEngine([CompactingFlow], store=MemoryStore())
    session = None
    for line in ["hello", "hello again", "and hello", "hi", "hey", "yo"]:
        session = (await engine.run("CompactingFlow", line, session_id=session)).session_id
    finished = spans.get_finished_spans()
    compactions = _by_name(finished, "picoflow.compaction")
    assert compactions, [span.name for span in finished]
    turns = {span.context.span_id for span in _by_name(finished, "picoflow.turn")}
    for span in compactions:
        assert span.parent is not None and span.parent.span_id in turns
        assert dict(span.attributes or {})["picoflow.namespace"] == "chat"


async def test_o1_a_failed_turn_is_an_error_span_with_its_outcome(
    spans: InMemorySpanExporter,
) -> None:
    model = ScriptedChatModel(script=[RuntimeError("provider exploded")])
    engine = FlowEngine([_flow(model)], store=MemoryStore())
    result = await engine.run("TracedFlow", "hello")
    assert not result.success
    (turn,) = _by_name(spans.get_finished_spans(), "picoflow.turn")
    assert turn.status.status_code == trace.StatusCode.ERROR
    assert dict(turn.attributes or {})["picoflow.outcome"] == result.error


async def test_o1_a_caller_traceparent_puts_the_turn_in_the_callers_trace(
    spans: InMemorySpanExporter,
) -> None:
    from picoflow._ops._otel import continued_trace

    model = ScriptedChatModel(script=["Hello."])
    engine = FlowEngine([_flow(model)], store=MemoryStore())
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    header = f"00-{trace_id}-00f067aa0ba902b7-01"
    with continued_trace({"traceparent": header}):
        await engine.run("TracedFlow", "hi")
    (turn,) = _by_name(spans.get_finished_spans(), "picoflow.turn")
    assert f"{turn.context.trace_id:032x}" == trace_id
    assert turn.parent is not None and f"{turn.parent.span_id:016x}" == "00f067aa0ba902b7"


def test_o1_without_opentelemetry_turns_run_and_no_tracer_is_made() -> None:
    """A process where the package is not installed (every import of it fails) runs turns."""
    code = (
        "import sys, importlib.abc, importlib.util, asyncio\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'opentelemetry':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name.startswith('opentelemetry') "
        "else real(name, *a)\n"
        "from picoflow import Flow, FlowEngine, Step\n"
        "from picoflow.stores import MemoryStore\n"
        "from picoflow.testing import ScriptedChatModel\n"
        "M = ScriptedChatModel(script=['hi'])\n"
        "class S(Step): pass\n"
        "class F(Flow):\n"
        "    def config_model(self): return M\n"
        "    def define_steps(self): return [S(self)]\n"
        "engine = FlowEngine([F], store=MemoryStore())\n"
        "r = asyncio.run(engine.run('F', 'hello'))\n"
        "assert r.success, r.message\n"
        "print(engine.telemetry.active, engine.telemetry._tracer)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False None"


async def test_o1_the_server_continues_a_traceparent_and_starts_a_trace_without_one(
    spans: InMemorySpanExporter,
) -> None:
    """O1 over HTTP: the app's middleware makes the caller's trace current, only when sent."""
    import httpx

    from picoflow.server import create_app

    model = ScriptedChatModel(script=["Hello.", "Hello again."])
    app = create_app(FlowEngine([_flow(model)], store=MemoryStore()))
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    body = {"flowName": "TracedFlow", "message": "hi"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        joined = await client.post(
            "/ai/run", json=body, headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
        )
        alone = await client.post("/ai/run", json=body)
    assert joined.status_code == alone.status_code == 200
    first, second = _by_name(spans.get_finished_spans(), "picoflow.turn")
    assert f"{first.context.trace_id:032x}" == trace_id
    assert first.parent is not None and f"{first.parent.span_id:016x}" == "00f067aa0ba902b7"
    assert f"{second.context.trace_id:032x}" != trace_id  # a trace of its own (or the ASGI span's)


def _run_traced(code: str, **env: str) -> str:
    """Run `code` after a fresh process's prelude (one flow, one engine); return its output."""
    import os

    prelude = (
        "import asyncio\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import "
        "InMemorySpanExporter\n"
        "from picoflow import Flow, FlowEngine, Step\n"
        "from picoflow.stores import MemoryStore\n"
        "from picoflow.testing import ScriptedChatModel\n"
        "M = ScriptedChatModel(script=['hi'] * 4)\n"
        "class S(Step): pass\n"
        "class F(Flow):\n"
        "    def config_model(self): return M\n"
        "    def define_steps(self): return [S(self)]\n"
        "engine = FlowEngine([F], store=MemoryStore())\n"
        "turn = lambda: asyncio.run(engine.run('F', 'hello'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return out.stdout.strip()


def test_o1_a_tracer_provider_set_after_the_engine_started_is_honoured() -> None:
    """O1: `active` is cheap while no provider is set, and notices one set later."""
    code = (
        "before = engine.telemetry.active\n"
        "turn()\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "turn()\n"
        "names = sorted({s.name for s in exporter.get_finished_spans()})\n"
        "print(before, engine.telemetry.active, names)\n"
    )
    assert _run_traced(code) == (
        "False True ['chat ScriptedChatModel', 'picoflow.store.save', 'picoflow.turn']"
    )


def test_o1_a_tracer_provider_named_in_the_environment_is_honoured() -> None:
    """O1: `OTEL_PYTHON_TRACER_PROVIDER`, read when the engine starts, makes turns spans."""
    code = (
        "provider = trace.get_tracer_provider()\n"
        "exporter = InMemorySpanExporter()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "turn()\n"
        "print(type(provider).__name__, engine.telemetry.active, "
        "[s.name for s in exporter.get_finished_spans()][-1])\n"
    )
    out = _run_traced(code, OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider")
    assert out == "TracerProvider True picoflow.turn"
