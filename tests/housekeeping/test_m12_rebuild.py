"""M12 and M16 without a store: `rebuild_after` is checked where it is built, the rebuild's
request shape, and a range that restarts when the namespace is erased.

The same rebuilds on every store (a trimmed archive, an empty one, tool exchanges, paging) are
in tests/stores/test_m12_rebuild_stores.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from picoflow import Flow, FlowEngine, Step, StoreError, summarise, tool
from picoflow._housekeeping.compaction import summary_request
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call


@pytest.mark.parametrize("value", [1, 0, -2, True, 2.5, "3"])
def test_m12_bad_rebuild_after_is_refused_where_the_policy_is_built(value: Any) -> None:
    with pytest.raises(ValueError) as caught:
        summarise(16, 4, rebuild_after=value)
    assert str(caught.value) == (
        f"rebuild_after must be a whole number of at least 2, got {value!r}. It counts "
        "summaries: every rebuild_after-th one is rebuilt from the archived originals (2 "
        "rebuilds every other one); None turns rebuilding off."
    )


def test_m12_good_rebuild_after_values_are_kept() -> None:
    assert summarise(16, 4, rebuild_after=2).rebuild_after == 2
    assert summarise(rebuild_after=None).rebuild_after is None


def test_m12_a_carried_rebuild_shows_the_summary_then_the_originals_then_the_new() -> None:
    call = AIMessage("", tool_calls=[{"name": "look", "args": {}, "id": "c1"}])
    reread: list[BaseMessage] = [call, ToolMessage("3 rooms", tool_call_id="c1", name="look")]
    request = summary_request("P", "S", [HumanMessage("new")], reread=reread)
    assert request[1].text == (
        "Previous summary:\nS\n\n"
        "Original messages the previous summary was written from, oldest first (where they "
        "and the summary disagree, they are right):\n"
        "Assistant: [called look({})]\nTool result (look): 3 rooms\n\n"
        "Messages to merge into it, oldest first:\nUser: new"
    )
    plain = summary_request("P", "S", [HumanMessage("new")])
    assert (
        plain[1].text
        == "Previous summary:\nS\n\nMessages to merge into it, oldest first:\nUser: new"
    )


class Forgetful(Step):
    @tool
    def forget(self) -> str:
        """Forget the conversation so far."""
        self.erase_memory()
        return "forgotten"


def _reply(messages: Any, tools: Any) -> str | AIMessage:
    body = str(messages[-1].text)
    if "Previous summary" in body:
        return "facts: " + ", ".join(sorted(set(re.findall(r"message \d+", body))))
    if body == "forget" and messages[-1].type == "human":
        return tool_call("forget")
    return "ok"


async def _say(
    engine: FlowEngine, texts: list[str], session: str | None = None, flow: str = "ForgetFlow"
) -> str:
    for text in texts:
        result = await engine.run(flow, text, session_id=session)
        assert result.success, result.message
        session = result.session_id
    assert session is not None
    return session


async def test_m16_an_erased_namespace_starts_a_new_range_and_rebuilds_only_from_it() -> None:
    model = ScriptedChatModel(policy=_reply)

    class ForgetFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            policy = summarise(8, 2, rebuild_after=2)
            self.get_memory().set_summary_model(model).set_policy("chat", policy)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Forgetful(self).use_memory("chat")]

    engine = FlowEngine([ForgetFlow], store=MemoryStore())
    session = await _say(engine, [*(f"message {i}" for i in range(4)), "forget"])
    doc = await engine.get_session(session)
    assert doc is not None
    erased = doc["memory"]["chat"]
    assert erased["summary"] is None and "summary_range" not in erased  # M16: no summary, no range
    session = await _say(engine, [f"message {i}" for i in range(10, 18)], session)
    doc = await engine.get_session(session)
    assert doc is not None
    chat = doc["memory"]["chat"]
    # summary 2 starts afresh at position 10 (1-9 were archived or erased before it), summary 4
    # is a rebuild: from the originals of 10-20 alone, never from 1-6, still in the archive
    assert chat["summary_generation"] == 4
    rebuild = [r for r in model.requests if r.metadata.get("picoflow_purpose") == "summary"][-1]
    body = str(rebuild.messages[-1].text)
    assert body.startswith("Previous summary:\n(none yet)\n\nMessages to merge")
    assert "Tool result (forget)" in body and "message 10" in body
    assert "message 0" not in body and "message 3" not in body
    assert chat["summary_range"] == {"from_seq": 10, "to_seq": 26, "count": 17}
    assert chat["archived"] == 26


async def test_m12_an_archive_that_cannot_be_read_makes_an_ordinary_summary(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel(policy=_reply)

    class PlainFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            policy = summarise(8, 2, rebuild_after=2)
            self.get_memory().set_summary_model(model).set_policy("chat", policy)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Forgetful(self).use_memory("chat")]

    store = MemoryStore()

    async def broken(*args: Any, **kwargs: Any) -> list[Any]:
        raise StoreError("the archive is offline")

    engine = FlowEngine([PlainFlow], store=store)
    session = await _say(engine, [f"message {i}" for i in range(4)], flow="PlainFlow")
    monkeypatch.setattr(store, "search_archive", broken)
    session = await _say(engine, [f"message {i}" for i in range(4, 7)], session, "PlainFlow")
    second = [r for r in model.requests if r.metadata.get("picoflow_purpose") == "summary"][-1]
    body = str(second.messages[-1].text)
    assert body.startswith("Previous summary:\nfacts: message 0, message 1, message 2\n\nMessages")
    assert "summary rebuild skipped: the archive could not be read (the archive is offline)" in (
        caplog.text
    )
    doc = await engine.get_session(session)
    assert doc is not None
    assert doc["memory"]["chat"]["summary_range"] == {"from_seq": 1, "to_seq": 12, "count": 12}
