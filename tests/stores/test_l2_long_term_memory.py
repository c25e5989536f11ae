"""L1-L5 through the engine, on every store: remembered in one session, recalled in the next."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import SystemMessage

from picoflow import Flow, FlowDefinitionError, FlowEngine, Step
from picoflow._runner.bank_tools import BLOCK_PREFIX
from picoflow.stores.base import Store
from picoflow.testing import ScriptedChatModel, text, tool_call


class Concierge(Step):
    def get_prompt(self) -> str:
        return "Help the guest."


def _flow(model: ScriptedChatModel, *, inject: bool = False) -> type[Flow]:
    class MemoryFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Concierge(self).use_long_term_memory(inject=inject)]

    return MemoryFlow


async def test_l2_remembered_in_one_session_recalled_in_the_next_of_the_same_owner(
    store: Store,
) -> None:
    model = ScriptedChatModel(
        script=[
            tool_call("remember", text="Prefers a double room with parking", kind="preference"),
            "Noted for next time.",
            tool_call("recall", query="room parking"),
            "You like a double room with parking.",
            tool_call("recall", query="room parking"),
            "I know nothing about you yet.",
        ]
    )
    engine = FlowEngine([_flow(model)], store=store)
    first = await engine.run("MemoryFlow", "I always want a double room with parking", owner="ada")
    assert first.success, first.message
    again = await engine.run("MemoryFlow", "what do I usually book?", owner="ada")
    assert again.session_id != first.session_id
    recalled = [m for m in model.requests[3].messages if m.type == "tool"][-1].text
    assert "Prefers a double room with parking (preference" in recalled
    other = await engine.run("MemoryFlow", "what do I usually book?", owner="bob")
    assert other.success
    nothing = [m for m in model.requests[5].messages if m.type == "tool"][-1].text
    assert nothing == "Nothing remembered about the user matches 'room parking'."
    (entry,) = await engine.memory_bank("ada").list()
    assert entry["source"]["session_id"] == first.session_id
    assert entry["source"]["message_ids"]  # the user message it came from
    assert await engine.memory_bank("bob").list() == []


async def test_l2_inject_puts_the_relevant_entries_after_the_system_prompt(store: Store) -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: "Welcome back!")
    engine = FlowEngine([_flow(model, inject=True)], store=store)
    bank = engine.memory_bank("ada")
    await bank.add("Prefers a double room", "preference")
    await bank.add("Allergic to feathers")
    result = await engine.run("MemoryFlow", "hi, a room for friday", owner="ada")
    assert result.success
    request = model.requests[0].messages
    assert request[0].text == "Help the guest."
    block = request[1]
    assert isinstance(block, SystemMessage) and block.text.startswith(BLOCK_PREFIX)
    assert "- Prefers a double room" in block.text and "- Allergic to feathers" in block.text
    stored = await engine.get_session(result.session_id or "")
    assert stored is not None
    assert all(
        BLOCK_PREFIX not in str(m["data"]["content"])
        for ns in stored["memory"].values()
        for m in ns["messages"]
    )  # the request only (M7); never the stored history
    await engine.run("MemoryFlow", "hello", owner="bob")
    assert not any(BLOCK_PREFIX in m.text for m in model.requests[1].messages)


async def test_l2_without_an_owner_the_tools_say_nothing_was_kept(store: Store) -> None:
    model = ScriptedChatModel(script=[tool_call("remember", text="Likes tea"), text("ok")])
    engine = FlowEngine([_flow(model)], store=store)
    await engine.run("MemoryFlow", "I like tea")
    said = [m for m in model.requests[1].messages if m.type == "tool"][-1].text
    assert said.startswith("Nothing was remembered: this conversation has no known user")
    # config.user_id names the owner when there is no principal
    model2 = ScriptedChatModel(script=[tool_call("remember", text="Likes tea"), text("ok")])
    engine2 = FlowEngine([_flow(model2)], store=store)
    await engine2.run("MemoryFlow", "I like tea", config={"user_id": "carol"})
    assert [e["text"] for e in await engine2.memory_bank("carol").list()] == ["Likes tea"]


def test_l2_bad_options_and_stores_without_a_bank_fail_at_definition() -> None:
    with pytest.raises(ValueError, match="would do nothing"):
        Step.use_long_term_memory(Concierge.__new__(Concierge), tools=False, inject=False)
    with pytest.raises(ValueError, match="is a whole number of at least 20"):
        Step.use_long_term_memory(Concierge.__new__(Concierge), inject=True, budget_tokens=5)
    model = ScriptedChatModel(script=["hi"])

    class NoBank:
        """A store of one's own, without the bank methods."""

    with pytest.raises(FlowDefinitionError, match="keeps no long-term memory"):
        FlowEngine([_flow(model)], store=NoBank())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="belongs to an owner"):
        FlowEngine([_flow(model)]).memory_bank("")


async def test_l5_flow_code_reaches_the_owners_bank_without_the_model(store: Store) -> None:
    from picoflow import go, tool

    class Book(Step):
        @tool
        async def book(self, room: str) -> Any:
            """Book the room."""
            bank = self.flow.memory_bank()
            if bank is not None:
                await bank.add(f"Booked a {room} room", "preference")
            return go(Book).with_tool_feedback("booked")

    model = ScriptedChatModel(script=[tool_call("book", room="king"), "Booked.", "Booked."] * 2)

    class BookingFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Book(self)]

    engine = FlowEngine([BookingFlow], store=store)
    await engine.run("BookingFlow", "a king room", owner="ada")
    assert [e["text"] for e in await engine.memory_bank("ada").list()] == ["Booked a king room"]
    await engine.run("BookingFlow", "a king room")  # no owner: nothing to remember for
    assert len(await engine.memory_bank("ada").list()) == 1
