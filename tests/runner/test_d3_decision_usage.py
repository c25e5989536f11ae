"""D3: decision calls are counted in `decision_usage`, in the session and the turn result.

They are kept apart from the chat usage (`usage`), count every answered call (a rejected
answer too, not a failed attempt), and add up across turns in the stored session.
"""

from __future__ import annotations

from support.decision_flows import support_engine, support_flow

from picoflow.testing import ScriptedChatModel, ScriptedDecisionProvider

BILLING = {"route": "billing", "urgent": 0.0}
OTHER = {"route": "other", "urgent": 0.0}


async def test_d3_decision_usage_is_in_the_result_and_the_session_apart_from_chat_usage() -> None:
    provider = ScriptedDecisionProvider([BILLING], usage={"input_tokens": 7, "output_tokens": 3})
    model = ScriptedChatModel(script=["Corrected.", "Anything else?"])
    engine = support_engine(provider, support_flow(model))
    first = await engine.run("SupportFlow", "invoice")
    assert first.decision_usage == {"calls": 1, "input_tokens": 7, "output_tokens": 3,
                                    "total_tokens": 10}  # fmt: skip
    assert first.usage["model"]["calls"] == 1  # the billing step's chat call, counted apart
    doc = await engine.get_session(first.session_id or "")
    assert doc is not None
    assert doc["decision_usage"] == first.decision_usage
    assert set(doc["usage"]) == {"model", "summary"}
    second = await engine.run("SupportFlow", "something else", first.session_id)
    assert second.step == "BillingStep"  # the cursor stayed: the billing step answered
    assert second.decision_usage["calls"] == 0


async def test_d3_the_session_adds_up_decisions_across_turns() -> None:
    provider = ScriptedDecisionProvider([OTHER, OTHER])
    engine = support_engine(provider)
    first = await engine.run("SupportFlow", "hi")
    second = await engine.run("SupportFlow", "hi again", first.session_id)
    assert second.decision_usage["calls"] == 1
    doc = await engine.get_session(first.session_id or "")
    assert doc is not None
    assert doc["decision_usage"] == {"calls": 2, "input_tokens": 40, "output_tokens": 10,
                                     "total_tokens": 50}  # fmt: skip


async def test_d3_a_session_without_decisions_has_no_decision_usage() -> None:
    from support.flows import engine_for, two_step_flow

    engine = engine_for(two_step_flow(ScriptedChatModel(script=["Where to?"])))
    result = await engine.run("HotelFlow", "hello")
    doc = await engine.get_session(result.session_id or "")
    assert doc is not None and "decision_usage" not in doc
    assert result.decision_usage == {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                     "total_tokens": 0}  # fmt: skip


async def test_d3_a_rejected_answer_is_counted_a_failed_attempt_is_not() -> None:
    from typing import Any

    from support.decision_flows import RouterStep

    from picoflow import Flow, FlowEngine, Step
    from picoflow.stores import MemoryStore

    class Forgiving(RouterStep):
        def on_decision_error(self, context: Any) -> Any:
            return f"Could not decide: {type(context.error).__name__}."

    class ForgivingFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [Forgiving(self)]

    for answer, calls in (({"route": "nowhere", "urgent": 0.0}, 1), (ConnectionError("x"), 0)):
        provider = ScriptedDecisionProvider([answer])
        engine = FlowEngine([ForgivingFlow], store=MemoryStore(), decision_providers=[provider])
        result = await engine.run("ForgivingFlow", "hi")
        assert result.success, result.message
        assert result.decision_usage["calls"] == calls, result.message
