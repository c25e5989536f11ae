"""F4 and the test kit: a flow whose config_model() builds its ScriptedChatModel is told so.

config_model() runs on every turn. A script built inside it starts over each turn, so a
two-turn test replays the first reply with no error (issue #25, item 6); the engine notices a
fresh copy of the very script the session's last turn used, and says how to fix it.
"""

from __future__ import annotations

import pytest

from picoflow import Flow, FlowEngine, Step
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel


class ChatStep(Step):
    pass


class RebuildingFlow(Flow):
    def config_model(self):
        return ScriptedChatModel(script=["first reply", "second reply"])

    def define_steps(self):
        return [ChatStep(self)]


MODEL = ScriptedChatModel(script=["first reply", "second reply"])


class BuiltOnceFlow(Flow):
    def config_model(self):
        return MODEL

    def define_steps(self):
        return [ChatStep(self)]


WARNING = (
    "RebuildingFlow.config_model() returned a new ScriptedChatModel with the same script as "
    "the last turn of this session, so the script started over: this turn got the first "
    "reply again. config_model() runs on every turn; build the model once (at module level or "
    "in a test fixture) and return that same object."
)


async def test_f4_a_script_rebuilt_every_turn_is_warned_about() -> None:
    engine = FlowEngine(flows=[RebuildingFlow], store=MemoryStore())
    first = await engine.run("RebuildingFlow", "hi")
    assert first.warnings == []
    with pytest.warns(UserWarning) as caught:
        second = await engine.run("RebuildingFlow", "and then?", first.session_id)
    assert [str(w.message) for w in caught] == [WARNING]
    assert second.message == "first reply"  # the trap itself
    assert second.warnings == [WARNING]


async def test_f4_the_warning_is_given_once_per_flow() -> None:
    engine = FlowEngine(flows=[RebuildingFlow], store=MemoryStore())
    first = await engine.run("RebuildingFlow", "hi")
    with pytest.warns(UserWarning):
        await engine.run("RebuildingFlow", "again", first.session_id)
    third = await engine.run("RebuildingFlow", "and again", first.session_id)
    assert third.warnings == []


async def test_f4_a_model_built_once_and_new_sessions_are_not_warned_about() -> None:
    """Two turns of the one model, and one turn each of two sessions with fresh scripts."""
    engine = FlowEngine(flows=[BuiltOnceFlow, RebuildingFlow], store=MemoryStore())
    first = await engine.run("BuiltOnceFlow", "hi")
    second = await engine.run("BuiltOnceFlow", "and then?", first.session_id)
    assert (second.message, second.warnings) == ("second reply", [])
    one = await engine.run("RebuildingFlow", "hi")
    other = await engine.run("RebuildingFlow", "hi")
    assert one.warnings == other.warnings == []
