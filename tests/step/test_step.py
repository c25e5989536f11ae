"""T1-T5: step registration, prompts, hooks, erase_memory, message ids."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import warnings
from datetime import UTC, datetime
from typing import Any

import pytest
from support.flows import Plain, engine_for, make_flow

from picoflow import Step, go, tool
from picoflow._internal.state import now_iso
from picoflow.testing import ScriptedChatModel, tool_call


class Prompted(Step):
    calls = 0

    def get_prompt(self) -> str:
        Prompted.calls += 1
        return f"prompt #{Prompted.calls}"

    @tool
    def think(self) -> str:
        """Think once more."""
        return "thought"


def test_t1_builders_chain_and_return_the_step() -> None:
    flow = make_flow(lambda f: [Prompted(f)])()
    step = Prompted(flow)
    assert step.use_memory("shared").use_model("openai:gpt-4o") is step
    assert step.namespace == "shared" and step.name == "Prompted"


async def test_t2_prompt_is_rebuilt_before_every_model_call() -> None:
    Prompted.calls = 0
    model = ScriptedChatModel(script=[tool_call("think"), "done"])
    await engine_for(make_flow(lambda f: [Prompted(f)], model=model)).run("F", "hi")
    assert [r.messages[0].content for r in model.requests] == ["prompt #1", "prompt #2"]


class Prompter(Step):
    @tool
    def hand_over(self) -> Any:
        """Move on with a prompt."""
        return go(Plain).with_prompt("You are Plain now.")


async def test_t2_base_prompt_is_the_prompt_state_or_empty() -> None:
    model = ScriptedChatModel(script=["first", tool_call("hand_over"), "second"])
    flow = make_flow(lambda f: [Prompter(f), Plain(f)], model=model)
    engine = engine_for(flow)
    first = await engine.run("F", "hi")
    await engine.run("F", "next", session_id=first.session_id)
    assert model.requests[0].messages[0].content == ""
    assert model.requests[2].messages[0].content == "You are Plain now."


class Starter(Step):
    log: list[str] = []

    async def on_start(self) -> None:
        Starter.log.append("start")
        await super().on_start()

    def on_enter(self) -> None:
        Starter.log.append("enter")

    async def on_restore(self) -> None:
        Starter.log.append("restore")


async def test_t3_on_start_for_new_sessions_on_restore_for_stored_ones() -> None:
    Starter.log = []
    model = ScriptedChatModel(script=["a", "b"])
    engine = engine_for(make_flow(lambda f: [Starter(f)], model=model))
    first = await engine.run("F", "hi")
    await engine.run("F", "again", session_id=first.session_id)
    assert Starter.log == ["start", "enter", "restore"]


async def test_t3_empty_first_message_gets_an_opener() -> None:
    model = ScriptedChatModel(script=["Welcome! Where to?"])
    engine = engine_for(make_flow(lambda f: [Plain(f)], model=model))
    result = await engine.run("F", "")
    assert result.success and result.message == "Welcome! Where to?"
    assert [(m.type, m.content) for m in model.requests[0].messages[1:]] == [("human", "Continue.")]


class Eraser(Step):
    def on_enter(self) -> None:
        self.erase_memory()

    @tool
    def back(self) -> Any:
        """Go back."""
        return go(Sharer)


class Sharer(Step):
    @tool
    def erase(self) -> Any:
        """Move to the eraser."""
        return go(Eraser)


async def test_t4_erase_memory_empties_the_shared_namespace_and_summary_keeps_state() -> None:
    model = ScriptedChatModel(script=["hello", tool_call("erase"), "fresh start"])
    flow = make_flow(
        lambda f: [Sharer(f).use_memory("shared"), Eraser(f).use_memory("shared")], model=model
    )
    engine = engine_for(flow)
    first = await engine.run("F", "hi")
    await engine.run("F", "erase please", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    shared = doc["memory"]["shared"]
    # The erase ran on entry, before the exchange was stored: the tool result is what the
    # new step answers, so no opener is needed (T3).
    kinds = [m["type"] for m in shared["messages"]]
    assert kinds == ["system", "ai", "tool", "ai"]
    assert shared["summary"] is None


def test_t4_erase_clears_the_summary() -> None:
    flow = make_flow(lambda f: [Plain(f)])()
    step = flow.get_step(Plain)
    space = flow.get_memory().space(step.namespace)
    space.summary = "old facts"
    step.get_messages().append(__import__("langchain_core.messages").messages.HumanMessage("x"))
    step.erase_memory()
    assert space.summary is None and len(step.get_messages()) == 1


async def test_t5_message_ids_attribute_messages_to_steps_and_last_message() -> None:
    model = ScriptedChatModel(script=["hello there"])
    engine = engine_for(make_flow(lambda f: [Plain(f)], model=model))
    result = await engine.run("F", "hi")
    doc = await engine.get_session(result.session_id)
    ids = [m["data"]["id"] for m in doc["memory"]["Plain"]["messages"]]
    pattern = re.compile(r"^Plain\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|\d{10}$")
    assert all(pattern.match(i) for i in ids), ids
    flow = make_flow(lambda f: [Plain(f)])()
    step = flow.get_step(Plain)
    assert step.get_last_message() is None
    assert step.gen_message_id() != step.gen_message_id()


def test_t5_timestamps_are_utc_milliseconds_of_the_real_clock() -> None:
    """T5: the cached stamp reads exactly as datetime's ISO form of the same millisecond."""
    before = datetime.now(UTC)
    stamp = now_iso()
    after = datetime.now(UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after


def test_t5_message_ids_ignore_random_seed_of_the_user() -> None:
    """T5: a flow that seeds `random` for its own reasons does not make message ids repeat."""
    step = make_flow(lambda f: [Plain(f)])().get_step(Plain)
    random.seed(7)
    first = {step.gen_message_id().rsplit("|", 1)[1] for _ in range(3)}
    random.seed(7)
    second = {step.gen_message_id().rsplit("|", 1)[1] for _ in range(3)}
    assert not first & second


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX-only: os.fork")
def test_t5_a_forked_worker_draws_other_message_ids_than_its_parent() -> None:
    """T5: preforked server workers never share the id generator's sequence."""
    step = make_flow(lambda f: [Plain(f)])().get_step(Plain)
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns that forking a process with threads (the test run has some) may
        # deadlock the child; this child only writes to a pipe and leaves.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child: report its next random segment and leave at once, whatever happens
        code = 1
        try:
            os.write(write, step.gen_message_id().rsplit("|", 1)[1].encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    child = os.read(read, 64).decode()
    _, status = os.waitpid(pid, 0)
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert re.fullmatch(r"\d{10}", child)
    assert child != step.gen_message_id().rsplit("|", 1)[1]


_OLD_NAME = """
import json, warnings
from picoflow import Flow, Step

class Plain(Step):
    pass

class F(Flow):
    def define_steps(self):
        return [Plain(self)]

step = F().get_step(Plain)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    first, second = step.get_memory(), step.get_memory()
print(json.dumps({
    "same": first is step.get_messages() and second is step.get_messages(),
    "warnings": [(w.category.__name__, str(w.message), w.filename) for w in caught],
}))
"""


def test_t5_get_memory_on_a_step_is_a_deprecated_alias_of_get_messages() -> None:
    """The step's `get_memory()` returned messages while the flow's returns a Memory: renamed.

    The old name still works for one release and warns once per process, at the caller's line.
    """
    run = subprocess.run([sys.executable, "-c", _OLD_NAME], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result == {
        "same": True,
        "warnings": [
            [
                "DeprecationWarning",
                "Step.get_memory() is deprecated and will be removed in picoflow 0.2: call "
                "Step.get_messages(), which returns the same message list. "
                "(Flow.get_memory() stays: it returns the flow's Memory.)",
                "<string>",
            ]
        ],
    }
