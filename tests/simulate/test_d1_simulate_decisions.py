"""D1 in the simulator: a decision step's replies are kept in its namespace but cost no call.

A decision step answers through a provider, never a chat model, and its reply is stored like
`direct(...)`'s; the compaction simulator therefore replays the chat steps' calls only, while
the decision step's messages still count in the history those calls send.
"""

from __future__ import annotations

from support.decision_flows import support_engine, support_flow

from picoflow.simulate import simulate_document
from picoflow.testing import ScriptedChatModel, ScriptedDecisionProvider


async def test_d1_the_simulator_replays_chat_calls_only_not_decisions() -> None:
    provider = ScriptedDecisionProvider([{"route": "other", "urgent": 0.0}] * 2 + [
        {"route": "billing", "urgent": 0.0}])  # fmt: skip
    engine = support_engine(provider, support_flow(ScriptedChatModel(script=["Corrected."])))
    session = None
    for text in ("hello", "still there?", "my invoice"):
        session = (await engine.run("SupportFlow", text, session)).session_id
    doc = await engine.get_session(session or "")
    assert doc is not None
    [off] = (await simulate_document(doc, [None])).results
    assert [(call.namespace, call.position) for call in off.calls] == [("desk", 6)]
