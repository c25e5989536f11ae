"""F1-F8: flow construction, the step registry, models, engine-start checks, context, cursor."""

from __future__ import annotations

from typing import Any

import pytest
from support.flows import ExploreStep, PresentStep, engine_for, make_flow

from picoflow import EndStep, Flow, FlowDefinitionError, FlowEngine, ModelSpec, Step, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call


def definition_error(flow: type[Flow], **engine: Any) -> str:
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[flow], store=MemoryStore(), **engine)
    return str(info.value)


def test_f2_names_default_to_class_names_and_can_be_overridden() -> None:
    class HotelFlow(Flow):
        pass

    class Renamed(Flow):
        name = "hotel-v1"

    assert HotelFlow.name == "HotelFlow" and Renamed.name == "hotel-v1"
    flow = make_flow(lambda f: [ExploreStep(f), PresentStep(f)])()
    assert list(flow.steps) == ["ExploreStep", "PresentStep"]


def test_f5_duplicate_step_names() -> None:
    message = definition_error(make_flow(lambda f: [ExploreStep(f), ExploreStep(f)]))
    assert message == (
        "F registers two steps named 'ExploreStep'; step names are stored in sessions and must "
        "be unique. Rename one class or remove the duplicate from define_steps()."
    )


def test_f5_invalid_namespace_names_the_flow() -> None:
    message = definition_error(make_flow(lambda f: [ExploreStep(f).use_memory("1bad")]))
    assert message == (
        "F: Invalid memory namespace '1bad': a namespace starts with a letter, then letters, "
        "digits, '_' or '-', at most 128 characters (e.g. 'hotel-explore')."
    )


def test_f5_summary_for_unused_namespace_and_without_model() -> None:
    class Unused(make_flow(lambda f: [ExploreStep(f)])):  # type: ignore[misc]
        name = "Unused"

        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_summary_model(ScriptedChatModel(script=[])).enable_summary("typo")

    assert definition_error(Unused) == (
        "Unused enables summaries for namespace 'typo', but no step uses it (namespaces in use: "
        "ExploreStep). Fix the name or call .use_memory('typo') on a step."
    )

    class NoModel(make_flow(lambda f: [ExploreStep(f)])):  # type: ignore[misc]
        name = "NoModel"

        def __init__(self) -> None:
            super().__init__()
            self.get_memory().enable_summary("ExploreStep")

    assert definition_error(NoModel) == (
        "NoModel enables summaries but sets no summary model. Call "
        "get_memory().set_summary_model('openai:gpt-4o-mini') in the flow's __init__."
    )


def test_f5_unknown_provider_fails_at_engine_start() -> None:
    flow = make_flow(lambda f: [ExploreStep(f)], config_model="acme:big-model")
    assert definition_error(flow) == (
        "F.config_model(): unknown model provider 'acme' in 'acme:big-model'. Known providers: "
        "anthropic, azure_openai, deepseek, google_genai, ollama, openai, openrouter. Register "
        "it with FlowEngine(providers={'acme': factory})."
    )
    # Registering the provider fixes it; the factory is only called on first use.
    FlowEngine(flows=[flow], store=MemoryStore(), providers={"acme": lambda spec: None})  # type: ignore[dict-item]


def test_f5_step_model_override_is_checked_too() -> None:
    flow = make_flow(lambda f: [ExploreStep(f).use_model(ModelSpec("nope", "m"))])
    assert definition_error(flow).startswith(
        "F.ExploreStep.use_model(): unknown model provider 'nope'"
    )


def test_f5_no_model_at_all() -> None:
    flow = make_flow(lambda f: [ExploreStep(f)], config_model=None)
    assert definition_error(flow) == (
        "F.ExploreStep has no model: define config_model() on the flow (e.g. return "
        "'openai:gpt-4o') or call .use_model(...) on the step."
    )


def test_f3_initial_step_must_be_registered() -> None:
    flow = make_flow(lambda f: [ExploreStep(f)], initial=PresentStep)
    assert definition_error(flow) == (
        "Step 'PresentStep' is not registered in flow 'F'. Add it to define_steps() "
        "(registered: ExploreStep)."
    )


def test_f5_other_definition_mistakes() -> None:
    assert definition_error(make_flow(lambda f: [ExploreStep])).startswith(
        "F.define_steps() returned <class 'support.flows.ExploreStep'>, which is not a Step "
        "instance."
    )
    assert definition_error(make_flow(lambda f: [ExploreStep(f)], max_tool_rounds=0)) == (
        "F.max_tool_rounds must be a positive integer, got 0."
    )
    with pytest.raises(FlowDefinitionError, match="Two flows are named 'F'"):
        FlowEngine(flows=[make_flow(lambda f: [ExploreStep(f)])] * 2, store=MemoryStore())
    with pytest.raises(FlowDefinitionError, match="takes Flow subclasses"):
        FlowEngine(flows=[object], store=MemoryStore())  # type: ignore[list-item]

    class Empty(Flow):
        def config_model(self) -> Any:
            return "openai:gpt-4o"

    assert definition_error(Empty).startswith("Empty defines no steps. Override define_steps()")


async def test_f3_initial_step_can_read_context() -> None:
    model = ScriptedChatModel(script=["from explore", "from present"])

    class Chooser(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [ExploreStep(self), PresentStep(self)]

        def initial_step(self) -> Any:
            return PresentStep if self.get_context("config.vip") else None

    engine = engine_for(Chooser)
    assert (await engine.run("Chooser", "hi")).step == "ExploreStep"
    assert (await engine.run("Chooser", "hi", config={"vip": True})).step == "PresentStep"


async def test_f4_step_model_overrides_flow_model() -> None:
    flow_model = ScriptedChatModel(script=[tool_call("capture_choices", city="X", nights=1)])
    step_model = ScriptedChatModel(script=["from the step model"])

    class Mixed(Flow):
        def config_model(self) -> Any:
            return flow_model

        def define_steps(self) -> list[Step]:
            return [ExploreStep(self), PresentStep(self).use_model(step_model)]

    result = await engine_for(Mixed).run("Mixed", "hi")
    assert result.message == "from the step model"
    assert len(flow_model.requests) == 1 and len(step_model.requests) == 1


class Source(Step):
    @tool
    def share(self) -> str:
        """Share state with another step."""
        self.flow.save_step_state(Target, {"note": "from source"})
        self.flow.save_transient_step_state(Target, {"tmp": 1})
        return str(self.flow.get_step_state(Target, "note"))


class Target(Step):
    pass


async def test_f6_cross_step_state_and_unregistered_class() -> None:
    model = ScriptedChatModel(script=[tool_call("share"), "done"])
    flow_class = make_flow(lambda f: [Source(f), Target(f)], model=model)
    result = await engine_for(flow_class).run("F", "go")
    assert model.requests[1].messages[-1].content == "from source"
    flow = flow_class()
    with pytest.raises(FlowDefinitionError) as info:
        flow.get_step_state(ExploreStep)
    assert str(info.value) == (
        "Step 'ExploreStep' is not registered in flow 'F'. Add it to define_steps() "
        "(registered: Source, Target)."
    )
    assert result.success
    flow.save_step_state("Target", {"seen": 1})  # a step by name, as get_step takes it
    assert flow.get_step_state("Target", "seen") == flow.get_step_state(Target, "seen") == 1


async def test_f7_config_frozen_at_creation_and_later_config_warns() -> None:
    model = ScriptedChatModel(script=["one", "two", "three"])
    flow_class = make_flow(lambda f: [Target(f)], model=model)
    engine = engine_for(flow_class)
    first = await engine.run("F", "hi", config={"tenant": {"region": "eu"}})
    flow = flow_class()
    doc = await engine.get_session(first.session_id)
    assert doc["context"] == {"config": {"tenant": {"region": "eu"}}}
    same = await engine.run(
        "F", "again", session_id=first.session_id, config={"tenant": {"region": "eu"}}
    )
    assert same.warnings == []
    changed = await engine.run("F", "more", session_id=first.session_id, config={"tenant": "us"})
    assert changed.warnings == [
        "The config sent with this turn was ignored: a session's context is fixed when it is "
        "created. Start a new session to use a different config."
    ]
    doc = await engine.get_session(first.session_id)
    assert doc["context"] == {"config": {"tenant": {"region": "eu"}}}
    assert doc["warnings"][-1]["message"] == changed.warnings[0]
    flow.set_context(doc["context"])
    assert flow.get_context("config.tenant.region") == "eu"


def test_f7_add_context_merges_and_set_context_replaces() -> None:
    flow = make_flow(lambda f: [Target(f)])()
    flow.set_context({"config": {"a": {"b": 1}}})
    flow.add_context({"config": {"a": {"c": 2}}})
    assert flow.get_context() == {"config": {"a": {"b": 1, "c": 2}}}
    flow.set_context({"other": True})
    assert flow.get_context() == {"other": True}
    with pytest.raises(TypeError):
        flow.add_context({"bad": object()})


class Hooked(Step):
    log: list[str] = []

    def on_enter(self) -> None:
        Hooked.log.append(f"enter {self.name}")

    async def on_exit(self) -> None:
        Hooked.log.append(f"exit {self.name}")

    def on_crossing(self, message: Any, prior_step: str | None) -> Any:
        Hooked.log.append(f"crossing {self.name} from {prior_step}")
        return super().on_crossing(message, prior_step)


class HookA(Hooked):
    @tool
    def to_b(self) -> Any:
        """Go to B."""
        from picoflow import go

        return go(HookB)

    @tool
    def to_self(self) -> Any:
        """Go to A."""
        from picoflow import go

        return go(HookA)


class HookB(Hooked):
    pass


async def test_f8_goto_self_is_a_no_op_real_move_runs_hooks_in_order() -> None:
    Hooked.log = []
    model = ScriptedChatModel(script=[tool_call("to_self"), "still A", tool_call("to_b"), "in B"])
    engine = engine_for(make_flow(lambda f: [HookA(f), HookB(f)], model=model))
    first = await engine.run("F", "hi")
    assert first.message == "still A"
    assert Hooked.log == ["enter HookA"]  # on_start -> on_enter; the self-move adds nothing
    second = await engine.run("F", "to b", session_id=first.session_id)
    assert second.message == "in B"
    assert Hooked.log == ["enter HookA", "exit HookA", "enter HookB", "crossing HookB from HookA"]
    doc = await engine.get_session(first.session_id)
    assert doc["sequence"] == ["HookA", "HookB"]


async def test_f1_flow_is_built_fresh_every_turn() -> None:
    built: list[int] = []
    model = ScriptedChatModel(script=["a", "b"])

    class Counting(Flow):
        def __init__(self) -> None:
            super().__init__()
            built.append(1)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Target(self), EndStep(self)]

    engine = engine_for(Counting)
    checked = len(built)
    first = await engine.run("Counting", "x")
    await engine.run("Counting", "y", session_id=first.session_id)
    assert len(built) == checked + 2
