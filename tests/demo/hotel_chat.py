"""Drive HotelFlow conversations in tests: an engine on the offline model, and a guest."""

from __future__ import annotations

from typing import Any

from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine, ModelLike, TurnResult
from picoflow.stores import MemoryStore

TODAY = "2026-05-15"  # a Friday
CONFIRMATION = r"HF-\d{6}"


def offline_engine(store: Any = None, model: ModelLike = "offline:hotel") -> FlowEngine:
    """The demo's engine, as the CLI builds it, on a fresh MemoryStore unless given a store."""
    return FlowEngine([HotelFlow.using(model)], store=store or MemoryStore(), providers=PROVIDERS)


class Guest:
    """One guest talking to HotelFlow: keeps the session id and every turn's result."""

    def __init__(self, engine: FlowEngine, session_id: str | None = None) -> None:
        self.engine = engine
        self.session_id = session_id
        self.results: list[TurnResult] = []

    async def start(self) -> TurnResult:
        """Open a new session with an empty message: the assistant speaks first."""
        return await self.say("")

    async def say(self, text: str) -> TurnResult:
        config = {"today": TODAY} if self.session_id is None else None
        result = await self.engine.run("HotelFlow", text, self.session_id, config)
        assert result.success, result.message
        self.session_id = result.session_id
        self.results.append(result)
        return result

    async def doc(self) -> dict[str, Any]:
        assert self.session_id is not None
        doc: dict[str, Any] | None = await self.engine.get_session(self.session_id)
        assert doc is not None
        return doc

    async def state(self, step: str) -> dict[str, Any]:
        return (await self.doc())["steps"].get(step, {}).get("state", {})

    async def booking(self) -> dict[str, Any] | None:
        return (await self.state("PresentStep")).get("booking")

    async def criteria(self) -> dict[str, Any] | None:
        return (await self.state("ExploreStep")).get("criteria")


async def search_july(guest: Guest, preferences: str) -> TurnResult:
    """The common opening: greeting, Portland, July 1 to 6, ``preferences``, then "search now"
    (ExploreStep asks the criteria one at a time and searches when told to)."""
    if guest.session_id is None:
        await guest.start()
    await guest.say("Hi! I need a hotel in Portland.")
    await guest.say("July 1 to July 6")
    result = await guest.say(preferences)
    assert result.step == "ExploreStep", result.message
    result = await guest.say("search now")
    assert result.step == "PresentStep", result.message
    return result


def offer_names(result_or_state: Any) -> list[str]:
    """The hotel names of PresentStep's state."""
    return [offer["name"] for offer in result_or_state["offers"]]
