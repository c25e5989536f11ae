"""V10: Flow.init() runs every turn before any hook; Flow.migrate_session upgrades documents."""

from __future__ import annotations

from typing import Any

import pytest
from support.failed_turns import apart_from_error
from support.vkit import STORES, engine_of, flow_of, make_store

from picoflow import Flow, Step
from picoflow.testing import ScriptedChatModel

calls: list[str] = []


class GreetStep(Step):
    async def on_start(self) -> None:
        calls.append(f"on_start sees {self.flow.tenant}")  # type: ignore[attr-defined]
        await super().on_start()

    def on_restore(self) -> None:
        calls.append(f"on_restore sees {self.flow.tenant}")  # type: ignore[attr-defined]

    def get_prompt(self) -> str:
        return f"Greet a guest of {self.flow.tenant}."  # type: ignore[attr-defined]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


async def test_v10_init_runs_each_turn_after_loading_and_before_any_hook(store: Any) -> None:
    calls.clear()

    async def init(self: Flow) -> None:
        self.tenant = self.get_context("config.tenant")  # type: ignore[attr-defined]
        calls.append("init")

    model = ScriptedChatModel(script=["Hi!", "Again."])
    engine = engine_of(flow_of(lambda f: [GreetStep(f)], model, init=init), store=store)
    first = await engine.run("VFlow", "hello", config={"tenant": "acme"})
    await engine.run("VFlow", "hello again", session_id=first.session_id)
    assert calls == ["init", "on_start sees acme", "init", "on_restore sees acme"]
    assert model.requests[1].messages[0].text == "Greet a guest of acme."
    await engine.aclose()


class RenamedStep(Step):
    pass


async def test_v10_migrate_session_renames_a_step_before_loading(store: Any) -> None:
    old = flow_of(lambda f: [GreetStep(f)], ScriptedChatModel(script=["Hi!"]), init=_tenant)
    engine = engine_of(old, store=store)
    first = await engine.run("VFlow", "hello", config={"tenant": "acme"})
    stored = await engine.get_session(first.session_id)

    def migrate(self: Flow, doc: dict[str, Any]) -> dict[str, Any]:
        doc["current_step"] = "RenamedStep"
        doc["sequence"] = ["RenamedStep" if s == "GreetStep" else s for s in doc["sequence"]]
        doc["steps"]["RenamedStep"] = doc["steps"].pop("GreetStep")
        doc["memory"]["RenamedStep"] = doc["memory"].pop("GreetStep")
        doc["revision"] = 99  # ignored: the stored revision is what the save checks
        return doc

    model = ScriptedChatModel(script=["Welcome back."])
    new = flow_of(lambda f: [RenamedStep(f)], model, migrate_session=migrate)
    engine2 = engine_of(new, store=store)
    result = await engine2.run("VFlow", "hi again", session_id=first.session_id)
    assert (result.success, result.session_id, result.step) == (
        True,
        first.session_id,
        "RenamedStep",
    )
    doc = await engine2.get_session(first.session_id)
    assert doc["revision"] == stored["revision"] + 1
    assert doc["sequence"] == ["RenamedStep"] and "GreetStep" not in doc["steps"]
    texts = [m.text for m in model.requests[0].messages[1:]]
    assert texts == ["hello", "Hi!", "hi again"]  # the history came along
    await engine.aclose()


async def _tenant(self: Flow) -> None:
    self.tenant = "acme"  # type: ignore[attr-defined]


async def test_v10_migrate_session_returning_none_starts_a_new_session(store: Any) -> None:
    flow = flow_of(
        lambda f: [GreetStep(f)],
        ScriptedChatModel(script=["Hi!", "Fresh start."]),
        init=_tenant,
        migrate_session=lambda self, doc: None if doc["revision"] >= 0 else doc,
    )
    engine = engine_of(flow, store=store)
    first = await engine.run("VFlow", "hello")
    before = await engine.get_session(first.session_id)
    second = await engine.run("VFlow", "hello", session_id=first.session_id)
    assert second.success and second.session_id != first.session_id
    assert await engine.get_session(first.session_id) == before
    await engine.aclose()


@pytest.mark.parametrize(
    ("migrate", "message"),
    [
        (
            lambda self, doc: "v2",
            "VFlow.migrate_session() returned str; return the session document (a dict), "
            "changed or not, or None to start a new session.",
        ),
        (
            lambda self, doc: {"id": doc["id"], "steps": {}},
            "VFlow.migrate_session() returned a document without 'context', 'created_at', "
            "'current_step', 'expires_at', 'memory', 'run_status', 'schema_version', "
            "'sequence', 'updated_at', 'usage', 'warnings'; change the document you were "
            "given instead of building a new one.",
        ),
    ],
)
async def test_v10_a_bad_migration_fails_the_turn_and_changes_nothing(
    store: Any, migrate: Any, message: str
) -> None:
    flow = flow_of(
        lambda f: [GreetStep(f)],
        ScriptedChatModel(script=["Hi!"]),
        init=_tenant,
        migrate_session=migrate,
    )
    engine = engine_of(flow, store=store)
    first = await engine.run("VFlow", "hello")
    before = await engine.get_session(first.session_id)
    failed = await engine.run("VFlow", "again", session_id=first.session_id)
    assert (failed.success, failed.error, failed.message) == (
        False,
        "FlowDefinitionError",
        message,
    )
    after = await engine.get_session(first.session_id)
    assert apart_from_error(after) == apart_from_error(before)  # U5: only the error is written
    await engine.aclose()


async def test_v10_preview_migrates_and_runs_init_as_a_turn_would() -> None:
    old = flow_of(lambda f: [GreetStep(f)], ScriptedChatModel(script=["Hi!"]), init=_tenant)
    engine = engine_of(old)
    first = await engine.run("VFlow", "hello")

    def migrate(self: Flow, doc: dict[str, Any]) -> dict[str, Any]:
        doc["current_step"] = "RenamedGreetStep"
        doc["steps"]["RenamedGreetStep"] = doc["steps"].pop("GreetStep")
        doc["memory"]["RenamedGreetStep"] = doc["memory"].pop("GreetStep")
        return doc

    class RenamedGreetStep(GreetStep):
        pass

    new = flow_of(
        lambda f: [RenamedGreetStep(f)],
        ScriptedChatModel(script=[]),
        init=_tenant,
        migrate_session=migrate,
    )
    engine2 = engine_of(new, store=engine.store)
    preview = await engine2.preview(first.session_id, message="again")
    assert preview is not None
    assert [m.text for m in preview] == ["Greet a guest of acme.", "hello", "Hi!", "again"]


async def test_v10_a_migration_cannot_change_who_owns_the_session() -> None:
    def migrate(self: Flow, doc: dict[str, Any]) -> dict[str, Any]:
        doc["owner"] = "mallory"
        return doc

    model = ScriptedChatModel(script=["Hi!", "Again."])
    flow = flow_of(lambda f: [GreetStep(f)], model, init=_tenant, migrate_session=migrate)
    engine = engine_of(flow)
    first = await engine.run("VFlow", "hello", owner="alice")
    second = await engine.run("VFlow", "again", session_id=first.session_id, owner="alice")
    assert second.success and second.session_id == first.session_id
    assert (await engine.get_session(first.session_id))["owner"] == "alice"
