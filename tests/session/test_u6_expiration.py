"""U6: `SESSION_EXPIRATION` when the engine has no `session_ttl`; `is_session_current`,
`session_idle_ms`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from picoflow import (
    Flow,
    FlowDefinitionError,
    FlowEngine,
    Step,
    is_session_current,
    session_idle_ms,
)
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel


class EchoStep(Step):
    def get_prompt(self) -> str:
        return "Echo."


class EchoFlow(Flow):
    def config_model(self) -> Any:
        return ScriptedChatModel(policy=lambda messages, tools: "ok")

    def define_steps(self) -> list[Step]:
        return [EchoStep(self)]


def _at(doc: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(doc["updated_at"].replace("Z", "+00:00"))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_u6_session_expiration_env_applies_without_session_ttl(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, kind: str
) -> None:
    monkeypatch.setenv("SESSION_EXPIRATION", "50000")
    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "s.db")
    engine = FlowEngine([EchoFlow], store=store)
    result = await engine.run("EchoFlow", "hi")
    doc = await engine.get_session(result.session_id)
    assert doc is not None
    expires = datetime.fromisoformat(doc["expires_at"].replace("Z", "+00:00"))
    # updated_at and expires_at are two readings of the clock, a millisecond or so apart
    assert abs(expires - _at(doc) - timedelta(seconds=50000)) < timedelta(seconds=1)
    await engine.aclose()


async def test_u6_session_ttl_wins_over_session_expiration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SESSION_EXPIRATION", "50000")
    engine = FlowEngine([EchoFlow], store=MemoryStore(), session_ttl=60)
    result = await engine.run("EchoFlow", "hi")
    doc = await engine.get_session(result.session_id)
    assert doc is not None
    expires = datetime.fromisoformat(doc["expires_at"].replace("Z", "+00:00"))
    assert expires - _at(doc) == timedelta(seconds=60)


async def test_u6_no_session_expiration_means_no_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSION_EXPIRATION", raising=False)
    engine = FlowEngine([EchoFlow], store=MemoryStore())
    result = await engine.run("EchoFlow", "hi")
    doc = await engine.get_session(result.session_id)
    assert doc is not None and doc["expires_at"] is None


@pytest.mark.parametrize("value", ["soon", "0", "-5", "inf"])
def test_u6_a_bad_session_expiration_fails_at_engine_start(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("SESSION_EXPIRATION", value)
    with pytest.raises(FlowDefinitionError) as caught:
        FlowEngine([EchoFlow], store=MemoryStore())
    assert str(caught.value) == (
        f"SESSION_EXPIRATION={value!r} is not a number of seconds > 0. Set it to how long an "
        "idle session lives (e.g. 50000), or unset it; FlowEngine(session_ttl=...) overrides it."
    )


async def test_u6_is_session_current_and_session_idle_ms_read_a_stored_document() -> None:
    engine = FlowEngine([EchoFlow], store=MemoryStore(), session_ttl=600)
    result = await engine.run("EchoFlow", "hi")
    doc = await engine.get_session(result.session_id)
    assert doc is not None
    saved = _at(doc)
    assert is_session_current(doc, now=saved)
    assert session_idle_ms(doc, now=saved + timedelta(seconds=90)) == 90000
    assert not is_session_current(doc, now=saved + timedelta(seconds=601))  # expired
    assert not is_session_current({**doc, "run_status": "completed"}, now=saved)
    assert not is_session_current({**doc, "schema_version": 0}, now=saved)
    assert session_idle_ms(doc) >= 0  # now: the clock


def test_u6_session_idle_ms_names_a_document_without_updated_at() -> None:
    with pytest.raises(ValueError) as caught:
        session_idle_ms({"id": "x"})
    assert str(caught.value) == (
        "session_idle_ms() needs a session document with an 'updated_at' ISO time, got None. "
        "Pass the document the store returned (or migrate_session received)."
    )


async def test_u6_migrate_session_can_start_over_after_idle_time() -> None:
    class IdleFlow(EchoFlow):
        name = "IdleFlow"

        def migrate_session(self, doc: dict[str, Any]) -> dict[str, Any] | None:
            later = datetime.now(UTC) + timedelta(hours=1)  # as if an hour had passed
            return None if session_idle_ms(doc, now=later) > 30 * 60 * 1000 else doc

    engine = FlowEngine([IdleFlow], store=MemoryStore())
    first = await engine.run("IdleFlow", "hi")
    second = await engine.run("IdleFlow", "again", session_id=first.session_id)
    assert second.success and second.session_id != first.session_id
