"""Small flows the core tests share; each test builds its own scripted model."""

from __future__ import annotations

from typing import Any

from picoflow import EndStep, Flow, FlowEngine, Step, direct, go, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel


class ExploreStep(Step):
    def get_prompt(self) -> str:
        return f"Collect the stay criteria. Known so far: {self.get_state('criteria')}"

    @tool
    async def capture_choices(self, city: str, nights: int) -> Any:
        """Record the user's hotel search criteria."""
        self.save_state({"criteria": {"city": city, "nights": nights}})
        return go(PresentStep).with_prompt("Present the results.")


class PresentStep(Step):
    @tool
    def end_chat(self) -> Any:
        """End the conversation when the user clearly wants to stop."""
        return go(EndStep)

    @tool
    def search_again(self) -> Any:
        """Go back to collecting criteria."""
        return go(ExploreStep)


def two_step_flow(model: ScriptedChatModel) -> type[Flow]:
    """A fresh flow class bound to `model` (flows are classes; the model is test data)."""

    class HotelFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [ExploreStep(self), PresentStep(self), EndStep(self).use_memory("end")]

    return HotelFlow


def engine_for(*flows: type[Flow], store: Any = None) -> FlowEngine:
    return FlowEngine(flows=list(flows), store=store or MemoryStore())


def transcript(doc: dict[str, Any], namespace: str) -> list[tuple[str, str]]:
    """(type, text) of every stored message after the system slot."""
    out = []
    for message in doc["memory"][namespace]["messages"][1:]:
        data = message["data"]
        calls = data.get("tool_calls") or []
        text = data["content"] if not calls else "call " + ",".join(c["name"] for c in calls)
        out.append((message["type"], text))
    return out


class RecordingStore(MemoryStore):
    """A MemoryStore that records which of its methods were called, for "nothing written"."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def create(self, doc: dict[str, Any]) -> None:
        self.calls.append("create")
        await super().create(doc)

    async def load(self, session_id: str) -> dict[str, Any] | None:
        self.calls.append("load")
        return await super().load(session_id)

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        self.calls.append("save")
        return await super().save(doc, expected_revision)


class Agent(Step):
    """A one-step agent with a lookup, a direct answer and an erase: tool turns of every kind."""

    def get_prompt(self) -> str:
        return "Answer."

    @tool
    def lookup(self, query: str) -> str:
        """Look something up."""
        return f"found {query}"

    @tool
    def finish(self, text: str) -> Any:
        """Answer the user directly."""
        return direct(text)

    @tool
    def forget(self) -> str:
        """Forget the conversation so far."""
        self.erase_memory()
        return "forgotten"


def make_flow(steps: Any, **attrs: Any) -> type[Flow]:
    """A flow of `steps(flow)` with a scripted model; `attrs` set its name, initial step, ..."""
    model = attrs.pop("model", ScriptedChatModel(script=["hi"] * 5))

    class F(Flow):
        name = attrs.pop("name", "F")

        def config_model(self) -> Any:
            return attrs.get("config_model", model)

        def define_steps(self) -> list[Step]:
            return steps(self)

        def initial_step(self) -> Any:
            return attrs.get("initial")

    for key in ("max_tool_rounds",):
        if key in attrs:
            setattr(F, key, attrs[key])
    return F


class Plain(Step):
    """A step with no prompt and no tools."""


class CoreOnly:
    """A store of one's own with the core methods only (P2), forwarding to a MemoryStore."""

    def __init__(self) -> None:
        self._inner = MemoryStore()

    async def create(self, doc: dict[str, Any]) -> None:
        await self._inner.create(doc)

    async def load(self, session_id: str) -> dict[str, Any] | None:
        return await self._inner.load(session_id)

    async def revision(self, session_id: str) -> int | None:
        return await self._inner.revision(session_id)

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        return await self._inner.save(doc, expected_revision)

    async def delete(self, session_id: str) -> bool:
        return await self._inner.delete(session_id)

    async def archive(self, session_id: str, namespace: str, entries: list[Any]) -> None:
        await self._inner.archive(session_id, namespace, entries)

    async def search_archive(self, session_id: str, namespace: str, query: str, **kw: Any) -> Any:
        return await self._inner.search_archive(session_id, namespace, query, **kw)

    async def aclose(self) -> None:
        await self._inner.aclose()
