"""U8: batch mode. `config._concurrent` runs `spawn_steps()`; `concurrent_steps` fans out."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from picoflow import Flow, FlowEngine, Step, TurnResult
from picoflow.server import create_app
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel

EVENTS: list[tuple[str, str]] = []


async def _answer(messages: list[BaseMessage], tools: list[str]) -> str:
    """A worker's model: records when its call starts and ends, yielding once in between."""
    said = str(messages[-1].text)
    if said == "explode":
        raise RuntimeError("the model is down")
    EVENTS.append(("start", said))
    await asyncio.sleep(0)  # a yield to the event loop, so concurrent calls interleave
    EVENTS.append(("end", said))
    return f"answer to {said}"


MODEL = ScriptedChatModel(policy=_answer)


class AskStep(Step):
    def on_crossing(self, message: Any, prior_step: str | None) -> Any:
        return HumanMessage(self.get_context("config.item") or "nothing")


class FanFlow(Flow):
    items: list[Any] = ["a", "b", "c", "d", "e"]
    batch_size = 2
    url: str | None = None
    transport: Any = None

    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [AskStep(self)]

    async def spawn_steps(self) -> str:
        step = self.get_step(AskStep)
        results = await self.concurrent_steps(
            self.items,
            self.batch_size,
            on_config=self.config_of,
            on_bot_response=lambda item, r: step.save_state({str(item): r.message}),
            url=self.url,
            transport=self.transport,
        )
        self.complete()
        return f"{sum(r.success for r in results)} of {len(results)} done"

    def config_of(self, item: Any) -> Any:
        if item == "bad":
            raise ValueError("no config for this one")
        return {"item": item, "_concurrent": True}  # _concurrent must not reach the workers


@pytest.fixture(autouse=True)
def _clear() -> None:
    EVENTS.clear()


async def _batch(flow: type[Flow], engine: FlowEngine | None = None) -> tuple[Any, Any, Any]:
    engine = engine or FlowEngine([flow], store=MemoryStore())
    result = await engine.run(flow.name, "start the batch", None, {"_concurrent": True})
    doc = await engine.get_session(result.session_id) if result.session_id else None
    return engine, result, doc


async def test_u8_a_concurrent_turn_runs_spawn_steps_instead_of_the_step_loop() -> None:
    engine, result, doc = await _batch(FanFlow)
    assert (result.success, result.message, result.completed) == (True, "5 of 5 done", True)
    assert result.usage["model"]["calls"] == 0  # the coordinator's step never called a model
    messages = doc["memory"].get("AskStep", {}).get("messages", [])
    assert "start the batch" not in str(messages)  # the user's message went to no step
    state = doc["steps"]["AskStep"]["state"]
    assert {k: state[k] for k in "abcde"} == {k: f"answer to {k}" for k in "abcde"}


async def test_u8_batches_run_in_order_and_the_items_of_a_batch_concurrently() -> None:
    await _batch(FanFlow)
    assert EVENTS == [
        ("start", "a"), ("start", "b"), ("end", "a"), ("end", "b"),
        ("start", "c"), ("start", "d"), ("end", "c"), ("end", "d"),
        ("start", "e"), ("end", "e"),
    ]  # fmt: skip


async def test_u8_each_item_is_a_new_session_without_concurrent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[TurnResult] = []

    class Recording(FanFlow):
        name = "Recording"

        async def spawn_steps(self) -> str:
            seen.extend(await self.concurrent_steps(["a", "b"], 5, self.config_of))
            return "done"

    engine, _, coordinator = await _batch(Recording)
    ids = {r.session_id for r in seen}
    assert len(ids) == 2 and coordinator["id"] not in ids
    for result in seen:
        worker = await engine.get_session(result.session_id)  # type: ignore[arg-type]
        assert worker is not None and worker["flow"] == "Recording"
        assert "_concurrent" not in worker["context"]["config"]


async def test_u8_one_items_failure_is_reported_and_the_others_run() -> None:
    reported: dict[str, TurnResult] = {}

    class Failing(FanFlow):
        name = "Failing"
        items = ["a", "bad", "explode", "d"]

        async def spawn_steps(self) -> str:
            async def keep(item: str, result: TurnResult) -> None:  # an async callback
                reported[item] = result

            await self.concurrent_steps(self.items, 2, self.config_of, keep)
            return "done"

    _, result, _ = await _batch(Failing)
    assert result.success and result.message == "done"
    assert [k for k, r in reported.items() if r.success] == ["a", "d"]
    assert reported["bad"].message == (
        "Batch item 'bad' failed: ValueError: no config for this one"
    )
    assert reported["bad"].error == "ValueError"
    assert not reported["explode"].success and "the model is down" in reported["explode"].message


async def test_u8_items_can_be_posted_to_a_run_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """SELF_URL: each item is a request to a picoflow server (here its ASGI app)."""
    engine = FlowEngine([FanFlow], store=MemoryStore())
    monkeypatch.setattr(FanFlow, "transport", httpx.ASGITransport(app=create_app(engine)))
    monkeypatch.setenv("SELF_URL", "http://workers/ai/run")
    _, result, doc = await _batch(FanFlow, engine)
    assert result.message == "5 of 5 done"
    state = doc["steps"]["AskStep"]["state"]
    assert {k: state[k] for k in "abcde"} == {k: f"answer to {k}" for k in "abcde"}


async def test_u8_a_failed_request_is_a_failed_item() -> None:
    class Remote(FanFlow):
        name = "Remote"
        url = "http://workers/nowhere"

    engine = FlowEngine([Remote], store=MemoryStore())
    Remote.transport = httpx.ASGITransport(app=create_app(engine))
    _, result, _ = await _batch(Remote, engine)
    assert result.message == "0 of 5 done"


async def test_u8_a_flow_without_spawn_steps_fails_the_batch_turn() -> None:
    class Plain(Flow):
        def config_model(self) -> Any:
            return MODEL

        def define_steps(self) -> list[Step]:
            return [AskStep(self)]

    engine = FlowEngine([Plain], store=MemoryStore())
    result = await engine.run("Plain", "hi", None, {"_concurrent": True})
    assert (result.success, result.session_id) == (False, None)
    assert result.message == (
        "The run's config has _concurrent set, so this turn is a batch turn, but Plain does "
        "not override spawn_steps(). Define `async def spawn_steps(self) -> str` (it may call "
        "concurrent_steps), or leave _concurrent out of the config."
    )


async def test_u8_spawn_steps_must_return_the_reply_text() -> None:
    class Silent(FanFlow):
        name = "Silent"

        async def spawn_steps(self) -> Any:
            return None

    _, result, _ = await _batch(Silent)
    assert not result.success
    assert result.message == (
        "Silent.spawn_steps() returned NoneType; it must return the turn's reply text (a str), "
        "e.g. 'Finished concurrent flow'."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("abc", 2, str),
            "Bad.concurrent_steps(items=...) takes a list of items, got str.",
        ),
        (
            (["a"], 0, str),
            "Bad.concurrent_steps(batch_size=0): the batch size is how many items run at "
            "once, an int of 1 or more.",
        ),
        (
            (["a"], 2, "nope"),
            "Bad.concurrent_steps(on_config=...) must be a function of an item returning its "
            "config dict, got str.",
        ),
        (
            (["a"], 2, str, 3),
            "Bad.concurrent_steps(on_bot_response=...) must be a function (item, TurnResult) or "
            "None, got int.",
        ),
    ],
)
async def test_u8_concurrent_steps_refuses_bad_arguments(args: Any, message: str) -> None:
    caught: list[Exception] = []

    class Bad(FanFlow):
        name = "Bad"

        async def spawn_steps(self) -> str:
            try:
                await self.concurrent_steps(*args)
            except (TypeError, ValueError) as exc:
                caught.append(exc)
            return "checked"

    await _batch(Bad)
    assert [str(e) for e in caught] == [message]


async def test_u8_on_config_must_return_a_dict() -> None:
    reported: list[TurnResult] = []

    class NoDict(FanFlow):
        name = "NoDict"

        async def spawn_steps(self) -> str:
            await self.concurrent_steps(
                ["a"], 1, lambda item: [item], lambda i, r: reported.append(r)
            )
            return "done"

    await _batch(NoDict)
    assert reported[0].message == (
        "Batch item 'a' failed: TypeError: on_config('a') returned list; it must return the "
        "item's config as a dict, e.g. {'nth': item}."
    )


async def test_u8_concurrent_steps_outside_a_turn_says_where_to_call_it() -> None:
    with pytest.raises(RuntimeError) as caught:
        await FanFlow().concurrent_steps(["a"], 1, dict)
    assert str(caught.value) == (
        "FanFlow.concurrent_steps() was called outside a turn. Call it from spawn_steps(), a "
        "tool or a hook while the engine runs the flow."
    )


def test_u8_the_graph_draws_the_move_spawn_steps_makes() -> None:
    class Moving(FanFlow):
        name = "Moving"

        def define_steps(self) -> list[Step]:
            return [AskStep(self), OtherStep(self)]

        async def spawn_steps(self) -> str:
            await self.goto(OtherStep)
            return "moved"

    assert "AskStep -->|spawn_steps| OtherStep" in Moving().graph()


class OtherStep(Step):
    """Where a batch turn moves the coordinator in the graph test."""
