"""U3: `Step.run()` may be overridden to wrap the step's part of a turn.

Also V2's bookkeeping of nested runs in `sequence`, the terminal step's content type, and the
M10 token counters a provider reports besides input and output.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from support.vkit import engine_of, flow_of, messages

from picoflow import EndStep, Step, direct, go, stay, tool
from picoflow.graph import draw
from picoflow.testing import ScriptedChatModel, text, tool_call

calls: list[str] = []


class WrappedStep(Step):
    async def run(self, message: str | None = None) -> Any:
        calls.append(f"before {message}")
        self.save_state({"seen": self.flow.get_context("config.tag")})
        reply = await super().run(message.upper() if message else message)
        calls.append("after")
        return f"{reply} (wrapped)"

    @tool
    def go_on(self) -> Any:
        """Move on."""
        return go(NextStep)


class NextStep(Step):
    async def run(self, message: str | None = None) -> Any:
        calls.append(f"next {message}")
        return await super().run(message)


def wrapped_steps(flow: Any) -> list[Step]:
    return [WrappedStep(flow), NextStep(flow)]


async def test_u3_run_override_wraps_the_turn_of_the_step_that_takes_the_message() -> None:
    calls.clear()
    model = ScriptedChatModel(script=["Hello!"])
    engine = engine_of(flow_of(wrapped_steps, model))
    result = await engine.run("VFlow", "hi", config={"tag": "T1"})
    assert (result.success, result.message) == (True, "Hello! (wrapped)")
    assert calls == ["before hi", "after"]
    doc = await engine.get_session(result.session_id)
    assert doc["steps"]["WrappedStep"]["state"]["seen"] == "T1"
    assert messages(doc, "WrappedStep") == [("human", "HI"), ("ai", "Hello!")]


async def test_u3_run_is_not_called_again_for_a_step_entered_within_the_turn() -> None:
    """As in PicoFlow: a `go` within a turn carries on the loop; the next turn calls run()."""
    calls.clear()
    model = ScriptedChatModel(script=[tool_call("go_on"), text("At next."), text("Again.")])
    engine = engine_of(flow_of(wrapped_steps, model))
    first = await engine.run("VFlow", "hi")
    assert (first.step, first.message) == ("NextStep", "At next. (wrapped)")
    assert calls == ["before hi", "after"]
    second = await engine.run("VFlow", "more", session_id=first.session_id)
    assert second.message == "Again." and calls[-1] == "next more"


class ParentStep(Step):
    @tool
    async def ask_child(self) -> Any:
        """Ask the child."""
        found = await self.run_step(ChildStep, "question")
        return stay(f"child said {found}")


class ChildStep(Step):
    async def run(self, message: str | None = None) -> Any:
        self.save_state({"asked": message})
        return {"wrapped": await super().run(message)}

    @tool
    def answer(self) -> Any:
        """Answer."""
        return direct("42")


async def test_u3_run_override_wraps_a_nested_run_and_gives_its_result() -> None:
    model = ScriptedChatModel(
        script={
            "ParentStep": [tool_call("ask_child"), text("Done.")],
            "ChildStep": [tool_call("answer")],
        }
    )
    engine = engine_of(flow_of(lambda f: [ParentStep(f), ChildStep(f)], model))
    result = await engine.run("VFlow", "go")
    assert result.message == "Done."
    doc = await engine.get_session(result.session_id)
    assert doc["steps"]["ChildStep"]["state"]["asked"] == "question"
    tool_results = [text for kind, text in messages(doc, "ParentStep") if kind == "tool"]
    assert tool_results == ["child said {'wrapped': '42'}"]


class ShortStep(Step):
    async def run(self, message: str | None = None) -> Any:
        if message == "ping":
            return "pong"  # answers without the model: the default run is not called
        return await super().run(message)


class ForgetfulStep(Step):
    async def run(self, message: str | None = None) -> Any:
        await super().run(message)  # no return: the default run's reply stands


class SilentStep(Step):
    async def run(self, message: str | None = None) -> Any:
        return None


class TwiceStep(Step):
    async def run(self, message: str | None = None) -> Any:
        await super().run(message)
        return await super().run(message)


async def test_u3_run_override_may_answer_alone_or_forget_to_return() -> None:
    model = ScriptedChatModel(script=["Model reply."])
    short = await engine_of(flow_of(lambda f: [ShortStep(f)], model)).run("VFlow", "ping")
    assert (short.success, short.message, model.requests) == (True, "pong", [])
    forgetful = await engine_of(flow_of(lambda f: [ForgetfulStep(f)], model)).run("VFlow", "x")
    assert (forgetful.success, forgetful.message) == (True, "Model reply.")


async def test_u3_run_override_mistakes_fail_the_turn_with_what_to_do() -> None:
    model = ScriptedChatModel(script=["One.", "Two."])
    silent = await engine_of(flow_of(lambda f: [SilentStep(f)], model)).run("VFlow", "x")
    assert (silent.success, silent.message) == (
        False,
        "The turn failed and the session was not changed: TypeError: "
        "SilentStep.run() returned None without calling `await super().run(message)`. Return "
        "what super().run(message) returns, or a reply text of your own.",
    )
    twice = await engine_of(flow_of(lambda f: [TwiceStep(f)], model)).run("VFlow", "x")
    assert (twice.success, twice.message) == (
        False,
        "The turn failed and the session was not changed: RuntimeError: "
        "TwiceStep.run() called super().run() twice in one turn; the step's part of a turn "
        "runs once. Call it once and keep its result.",
    )


class CallerStep(Step):
    @tool
    async def poke(self) -> Any:
        """Run the other step by hand."""
        return await self.flow.get_step(ChildStep).run("hi")


async def test_u3_run_called_outside_its_part_of_the_turn_fails_the_turn() -> None:
    model = ScriptedChatModel(script=[tool_call("poke")])
    engine = engine_of(flow_of(lambda f: [CallerStep(f), ChildStep(f)], model))
    result = await engine.run("VFlow", "x")
    assert (result.success, result.message) == (
        False,
        "The turn failed and the session was not changed: RuntimeError: ChildStep.run() was "
        "called outside its own part of a turn. The engine calls run() when the step takes the "
        "user's message or runs nested; to run another step, use "
        "`await self.run_step(OtherStep, message)`.",
    )


# -- V2: nested runs in `sequence` -----------------------------------------------------------


class OuterStep(Step):
    @tool
    async def dig(self) -> Any:
        """Run the middle step."""
        await self.run_step(MiddleStep, "down")
        return go(LastStep)


class MiddleStep(Step):
    @tool
    async def deeper(self) -> Any:
        """Run the inner step."""
        return direct(await self.run_step(InnerStep, "further"))


class InnerStep(Step):
    pass


class LastStep(Step):
    pass


async def test_v2_nested_runs_are_in_the_sequence_with_their_levels_across_turns() -> None:
    model = ScriptedChatModel(
        script={
            "OuterStep": [tool_call("dig")],
            "MiddleStep": [tool_call("deeper")],
            "InnerStep": [text("bottom")],
            "LastStep": [text("Here."), text("Still here.")],
        }
    )
    steps = lambda f: [OuterStep(f), MiddleStep(f), InnerStep(f), LastStep(f)]  # noqa: E731
    flow = flow_of(steps, model)
    engine = engine_of(flow)
    first = await engine.run("VFlow", "start")
    second = await engine.run("VFlow", "again", session_id=first.session_id)
    assert second.success, second.message
    doc = await engine.get_session(first.session_id)
    assert doc["sequence"] == [
        "OuterStep", "MiddleStep", "InnerStep", "MiddleStep", "OuterStep", "LastStep",
    ]  # fmt: skip
    assert doc["sequence_levels"] == [1, 2, 3, 2, 1, 1]
    moves_only = {**doc, "sequence": ["OuterStep", "LastStep"]}
    del moves_only["sequence_levels"]
    # the graph overlay draws only the cursor's moves, not the nested runs
    assert draw(flow(), session=doc) == draw(flow(), session=moves_only)


async def test_v2_a_session_without_nested_runs_has_no_sequence_levels() -> None:
    model = ScriptedChatModel(script=["Hi."])
    engine = engine_of(flow_of(lambda f: [LastStep(f)], model))
    result = await engine.run("VFlow", "x")
    doc = await engine.get_session(result.session_id)
    assert doc["sequence"] == ["LastStep"] and "sequence_levels" not in doc


# -- the terminal step's content type --------------------------------------------------------


class MarkdownStep(Step):
    @tool
    def show(self) -> Any:
        """Show a table."""
        return go(TableStep).with_content_type("text/markdown")


class TableStep(Step):
    @tool
    def done(self) -> Any:
        """Finish."""
        return go(EndStep)


async def test_r2_the_terminal_step_keeps_the_previous_steps_content_type() -> None:
    """As PicoFlow's EndStep copies the prior step's contentType (within the turn)."""
    model = ScriptedChatModel(
        script={
            "MarkdownStep": [tool_call("show")],
            "TableStep": [tool_call("done")],
            "EndStep": [text("| bye |")],
        }
    )
    steps = lambda f: [MarkdownStep(f), TableStep(f), EndStep(f)]  # noqa: E731
    result = await engine_of(flow_of(steps, model)).run("VFlow", "x")
    assert (result.completed, result.step, result.content_type) == (
        True,
        "EndStep",
        "text/markdown",
    )


# -- M10: reasoning and cached tokens --------------------------------------------------------


class DetailedUsageModel(BaseChatModel):
    """A provider that reports token details, as LangChain's integrations put them."""

    details: bool = True

    @property
    def _llm_type(self) -> str:
        return "detailed-usage"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        usage: dict[str, Any] = {"input_tokens": 100, "output_tokens": 40, "total_tokens": 140}
        if self.details:
            usage["input_token_details"] = {"cache_read": 64, "cache_creation": 8}
            usage["output_token_details"] = {"reasoning": 25}
        reply = AIMessage("Thought about it.", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=reply)])


async def test_m10_reasoning_and_cached_tokens_are_counted_where_the_provider_reports_them() -> (
    None
):
    engine = engine_of(flow_of(lambda f: [LastStep(f)], DetailedUsageModel()))
    first = await engine.run("VFlow", "x")
    assert first.usage["model"] == {
        "input_tokens": 100, "output_tokens": 40, "total_tokens": 140, "calls": 1,
        "reasoning_tokens": 25, "cached_input_tokens": 64, "cache_creation_input_tokens": 8,
    }  # fmt: skip
    await engine.run("VFlow", "y", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert doc["usage"]["model"]["reasoning_tokens"] == 50
    assert doc["usage"]["model"]["cached_input_tokens"] == 128


async def test_m10_no_detail_counters_when_the_provider_reports_none() -> None:
    engine = engine_of(flow_of(lambda f: [LastStep(f)], DetailedUsageModel(details=False)))
    result = await engine.run("VFlow", "x")
    assert result.usage["model"] == {
        "input_tokens": 100, "output_tokens": 40, "total_tokens": 140, "calls": 1,
    }  # fmt: skip
