"""D2 in traces: each decision attempt is a `gen_ai` span naming its provider (O1).

The SDK's in-memory exporter records them, added to whichever SDK tracer provider is current
(a provider can be set only once per process), as in `test_o1_traces.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.decision_flows import support_engine

from picoflow.testing import ScriptedDecisionProvider

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


async def test_d2_a_decision_is_a_gen_ai_span_with_its_provider_inside_the_turn(
    spans: InMemorySpanExporter,
) -> None:
    provider = ScriptedDecisionProvider([{"route": "other", "urgent": 0.0}])
    engine = support_engine(provider)
    assert (await engine.run("SupportFlow", "hello")).success
    finished = spans.get_finished_spans()
    (decision,) = [span for span in finished if span.name == "decision scripted"]
    (turn,) = [span for span in finished if span.name == "picoflow.turn"]
    assert decision.parent is not None and decision.parent.span_id == turn.context.span_id
    attributes = dict(decision.attributes or {})
    assert attributes == {
        "gen_ai.operation.name": "decision",
        "gen_ai.provider.name": "scripted",
        "picoflow.step": "RouterStep",
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 5,
    }
