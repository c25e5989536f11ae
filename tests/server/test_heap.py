"""A served app settles the collector when it starts: start-up heap frozen, young threshold up.

Why: with CPython's defaults a full collection walked every object FastAPI, pydantic and
LangChain created at import (100-300 ms pauses, docs/benchmarks.md "HTTP throughput").
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from server_flows import api, chat_flow

from picoflow.server import _heap


@pytest.fixture
def fresh_collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The collector as a new process has it; whatever this process had is put back after."""
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    monkeypatch.setattr(_heap, "_settled", False)
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    if enabled:
        gc.enable()
    else:
        gc.disable()


async def start_and_stop_an_app() -> None:
    _, app = api(chat_flow())
    async with app.router.lifespan_context(app):
        pass


async def test_app_start_freezes_the_start_up_heap_and_raises_the_young_threshold(
    fresh_collector: None,
) -> None:
    await start_and_stop_an_app()
    assert gc.get_freeze_count() > 10_000  # everything imported so far
    assert gc.get_threshold() == (10_000, 10, 10)


async def test_thresholds_a_process_chose_itself_are_kept(fresh_collector: None) -> None:
    gc.set_threshold(2_000, 20, 30)
    await start_and_stop_an_app()
    assert gc.get_freeze_count() > 10_000
    assert gc.get_threshold() == (2_000, 20, 30)


async def test_only_the_first_app_of_a_process_settles_the_heap(fresh_collector: None) -> None:
    await start_and_stop_an_app()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    await start_and_stop_an_app()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)


async def test_a_disabled_collector_is_left_alone(fresh_collector: None) -> None:
    gc.disable()
    await start_and_stop_an_app()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)
    assert not gc.isenabled()
