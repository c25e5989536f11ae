"""H7 through the engine: what no store keeps fails where it is made, the same on every store.

A tool's `save_state` refuses such a value at once, so the model reads a tool error instead of
"saved"; a turn whose document breaks a limit anyway (the user's own text, say) fails with
`success=False` and writes nothing. Each engine test runs once per store of the conformance
suite (`conftest.STORE_FACTORIES`).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from support.failed_turns import apart_from_error

import picoflow.engine as engine_module
from picoflow import Flow, FlowEngine, Step, tool
from picoflow.errors import StoreError
from picoflow.stores import Store
from picoflow.stores._limits import DocumentLimitError
from picoflow.testing import ScriptedChatModel, tool_call

# How a turn names a refusal: the class name, or the one name the server maps every refusal
# to (H3) where the engine has it.
REFUSED = getattr(engine_module, "STORE_REFUSED", "DocumentLimitError")
TOO_BIG = "beyond the 64 bits any store keeps. Store such numbers as strings."
SURROGATE = (
    "which is not valid Unicode. Store only valid Unicode text (decode bytes with "
    "errors='replace')."
)


class Keeper(Step):
    @tool
    def save_it(self, kind: str) -> str:
        """Save a value of the given kind."""
        self.save_state({"total": VALUES[kind]})
        return "saved"


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"n": value}
    return value


VALUES: dict[str, Any] = {"huge": 2**70, "fine": 2**63 - 1}


def keeper_flow(model: ScriptedChatModel) -> type[Flow]:
    class KeeperFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Keeper(self)]

    return KeeperFlow


def keeper() -> Keeper:
    return keeper_flow(ScriptedChatModel(script=[]))().get_step(Keeper)


@pytest.mark.parametrize(
    ("update", "error", "message"),
    [
        (
            {"total": 2**70},
            DocumentLimitError,
            f"Cannot save Keeper state.total: it holds the integer 1180591620717411303424, "
            f"{TOO_BIG}",
        ),
        (
            {"range": [0, -(2**63) - 1]},
            DocumentLimitError,
            f"Cannot save Keeper state.range[1]: it holds the integer -9223372036854775809, "
            f"{TOO_BIG}",
        ),
        (
            {"city": "Z\udc9crich"},
            DocumentLimitError,
            "Cannot save Keeper state.city: it has a lone surrogate ('\\udc9c' at index 1), "
            f"{SURROGATE}",
        ),
        (
            {"by": {"\ud800": 1}},
            DocumentLimitError,
            "Cannot save Keeper state.by: it has the key '\\ud800' with a lone surrogate "
            f"('\\ud800' at index 0), {SURROGATE}",
        ),
        (
            {"tree": deep(97)},
            DocumentLimitError,
            "Cannot save Keeper state.tree.n.n[...91 levels...].n.n.n: it nests deeper than the "
            "100 levels any store keeps (MongoDB's limit). Flatten the data.",
        ),
        (
            {"blob": "x" * (16 * 1024 * 1024)},
            DocumentLimitError,
            "Cannot save Keeper state: it is 16.0 MB, over the 15 MB limit of a whole session "
            "in every store. Keep large data out of state (store a reference to it instead).",
        ),
    ],
    ids=["2**70", "-2**63-1", "surrogate", "surrogate key", "too deep", "too large"],
)
def test_h7_save_state_refuses_what_no_store_keeps_at_once_and_changes_nothing(
    update: dict[str, Any], error: type[Exception], message: str
) -> None:
    step = keeper()
    step.save_state({"keep": 1})
    with pytest.raises(error) as caught:
        step.save_state({"keep": 2, **update})
    assert str(caught.value) == message
    assert step.get_state("keep") == 1 and set(step.get_state()) == {"keep", "_saveOn"}


def test_h7_save_state_keeps_what_every_store_keeps() -> None:
    step = keeper()
    step.save_state({"max": 2**63 - 1, "min": -(2**63), "tree": deep(96), "text": "東京 🏨"})
    assert step.get_state("max") == 2**63 - 1 and step.get_state("min") == -(2**63)


def test_h7_document_limit_error_is_a_store_error_that_retrying_cannot_fix() -> None:
    """Callers that catch StoreError or ValueError both see it; `retryable` is False, so a
    server refuses such a turn instead of answering "retry later" (H3)."""
    assert issubclass(DocumentLimitError, StoreError)
    assert issubclass(DocumentLimitError, ValueError)
    assert DocumentLimitError("too big").retryable is False


async def test_h7_a_tool_saving_an_int_over_64_bits_gets_a_tool_error_on_every_store(
    store: Store,
) -> None:
    model = ScriptedChatModel(
        script=[
            tool_call("save_it", kind="huge"),
            "Could not save.",
            tool_call("save_it", kind="fine"),
            "Saved.",
        ]
    )
    engine = FlowEngine(flows=[keeper_flow(model)], store=store)

    first = await engine.run("KeeperFlow", "save a huge number")
    assert first.success, first.message
    told = model.requests[1].messages[-1].content
    assert told.startswith("Error: tool 'save_it' failed")
    assert "saved" not in told.split(":", 1)[0]
    doc = await engine.get_session(first.session_id)
    assert doc is not None and "total" not in doc["steps"]["Keeper"]["state"]

    second = await engine.run("KeeperFlow", "save a fine one", session_id=first.session_id)
    assert second.success, second.message
    doc = await engine.get_session(first.session_id)
    assert doc is not None and doc["steps"]["Keeper"]["state"]["total"] == 2**63 - 1


async def test_h7_a_turn_whose_document_no_store_keeps_fails_and_writes_nothing(
    store: Store,
) -> None:
    model = ScriptedChatModel(script=["Hello.", "Hi again.", "Welcome."])
    engine = FlowEngine(flows=[keeper_flow(model)], store=store)
    first = await engine.run("KeeperFlow", "hello")
    before = await engine.get_session(first.session_id)

    broken = await engine.run("KeeperFlow", "caf\udce9 please", session_id=first.session_id)

    assert not broken.success and broken.error == REFUSED
    assert broken.message == (
        f"Session '{first.session_id}' cannot be stored: memory.Keeper.messages[3].data.content "
        f"has a lone surrogate ('\\udce9' at index 3), {SURROGATE[:-1]}; nothing was written."
    )
    after = await engine.get_session(first.session_id)
    assert apart_from_error(after) == apart_from_error(before)  # U5: the error alone is written

    fresh = await engine.run("KeeperFlow", "\ud800")
    assert not fresh.success and fresh.error == REFUSED
    assert re.fullmatch(
        r"Session '[\w-]+' cannot be stored: memory\.Keeper\.messages\[1\]\.data\.content has a "
        r"lone surrogate \('\\ud800' at index 0\), which is not valid Unicode\. .*",
        fresh.message,
    )


def test_h7_a_document_the_engine_checked_is_not_walked_again_by_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """H7: the engine checks once; the store's check of that very object takes the engine's
    result, once, and walks anything else (another object, or the same one saved again)."""
    import picoflow.stores._limits as limits

    doc = {"id": "s-1", "revision": 0, "context": {"n": 1}}
    engine_size = limits.DocumentChecker(hands_off=True).check(doc, "s-1")
    store = limits.DocumentChecker()
    walks: list[object] = []
    real = limits._size

    def counted(value: Any, level: int) -> int:
        if level == 1:
            walks.append(value)
        return real(value, level)

    monkeypatch.setattr(limits, "_size", counted)
    assert store.check(doc, "s-1") == engine_size and walks == []
    assert store.check(doc, "s-1") == engine_size and walks == [doc]
    doc["context"]["n"] = 2**64  # a caller's own edit is walked, and refused
    with pytest.raises(DocumentLimitError):
        store.check(doc, "s-1")
