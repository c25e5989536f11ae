"""Helpers shared by the tests of SPEC section 10 (V rules): one flow class per test, any store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from picoflow import Flow, FlowEngine, Step
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel

STORES = ["memory", "sqlite"]


def make_store(kind: str, tmp_path: Any) -> Any:
    return MemoryStore() if kind == "memory" else SQLiteStore(str(tmp_path / "v.db"))


def flow_of(
    steps: Callable[[Flow], list[Step]],
    model: Any = None,
    *,
    name: str = "VFlow",
    initial: type[Step] | None = None,
    **attributes: Any,
) -> type[Flow]:
    """A flow class named `name` with these steps and (optionally) a default model."""

    def define_steps(self: Flow) -> list[Step]:
        return steps(self)

    def config_model(self: Flow) -> Any:
        return model

    def initial_step(self: Flow) -> type[Step] | None:
        return initial

    body = {
        "name": name,
        "define_steps": define_steps,
        "config_model": config_model,
        "initial_step": initial_step,
        **attributes,
    }
    return type(name, (Flow,), body)


def engine_of(*flows: type[Flow], store: Any = None, **kwargs: Any) -> FlowEngine:
    return FlowEngine(flows=list(flows), store=store or MemoryStore(), **kwargs)


def messages(doc: dict[str, Any], namespace: str) -> list[tuple[str, str]]:
    """(type, text or "call a,b") of every stored message after the system slot."""
    out = []
    for message in doc["memory"][namespace]["messages"][1:]:
        data = message["data"]
        calls = data.get("tool_calls") or []
        text = data["content"] if not calls else "call " + ",".join(c["name"] for c in calls)
        out.append((message["type"], text))
    return out


def request_texts(model: ScriptedChatModel, index: int) -> list[tuple[str, str]]:
    """(type, text) of the messages of request `index`, system slot included."""
    out = []
    for message in model.requests[index].messages:
        calls = getattr(message, "tool_calls", None) or []
        text = str(message.text) if not calls else "call " + ",".join(c["name"] for c in calls)
        out.append((message.type, text))
    return out
