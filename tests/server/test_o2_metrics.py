"""O2: `create_app(..., metrics=True)` serves Prometheus metrics of the engine's turns."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families
from server_flows import api, chat_flow, client_for

from picoflow.testing import ScriptedChatModel, tool_call


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


async def test_o2_metrics_count_turns_tokens_tools_and_latency() -> None:
    model = ScriptedChatModel(script=[tool_call("open_tables"), "| a |\n|---|\n| 1 |", "Hi."])
    _, app = api(chat_flow(model), metrics=True)
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "a table"})
        assert first.status_code == 200
        bad = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": ""},
            headers={"CHAT_SESSION_ID": first.json()["session"]},
        )
        assert bad.status_code == 400
        scraped = await client.get("/metrics")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    samples = _samples(scraped.text)
    assert samples[("picoflow_turns_total", (("flow", "ChatFlow"), ("outcome", "ok")))] == 1
    invalid = (("flow", "ChatFlow"), ("outcome", "InvalidRequest"))
    assert samples[("picoflow_turns_total", invalid)] == 1
    assert samples[("picoflow_turn_duration_seconds_count", (("flow", "ChatFlow"),))] == 2
    tool = (("outcome", "ok"), ("tool", "open_tables"))
    assert samples[("picoflow_tool_calls_total", tool)] == 1
    tokens = {key: value for key, value in samples.items() if key[0] == "picoflow_tokens_total"}
    assert tokens and all(value > 0 for value in tokens.values())
    calls = [
        value
        for (name, _), value in samples.items()
        if name == "picoflow_model_call_duration_seconds_count"
    ]
    assert sum(calls) == 2


async def test_o2_without_metrics_there_is_no_metrics_route() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        assert (await client.get("/metrics")).status_code == 404


def test_o2_metrics_without_prometheus_client_is_a_clear_error() -> None:
    code = (
        "import sys\n"
        "sys.modules['prometheus_client'] = None\n"
        "from picoflow import FlowEngine\n"
        "from picoflow.server import create_app\n"
        "from picoflow.stores import MemoryStore\n"
        "try:\n"
        "    create_app(FlowEngine([], store=MemoryStore()), metrics=True)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert "pip install 'picoflow[metrics]'" in out.stdout


@pytest.mark.parametrize("workers", [2])
def test_o2_multiprocess_mode_serves_every_workers_counts(tmp_path: object, workers: int) -> None:
    """With PROMETHEUS_MULTIPROC_DIR, a scrape of one worker shows the turns of all of them."""
    folder = str(tmp_path)
    code = (
        "import asyncio, sys\n"
        "sys.path.insert(0, 'tests/server')\n"
        "from server_flows import api, chat_flow, client_for\n"
        "async def main():\n"
        "    _, app = api(chat_flow(), metrics=True)\n"
        "    async with client_for(app) as client:\n"
        "        r = await client.post('/ai/run', json={'flowName': 'ChatFlow', 'message': 'hi'})\n"
        "        assert r.status_code == 200\n"
        "        if sys.argv[1] == 'scrape':\n"
        "            print((await client.get('/metrics')).text)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": folder}
    for _ in range(workers - 1):
        subprocess.run([sys.executable, "-c", code, "run"], env=env, check=True)
    out = subprocess.run(
        [sys.executable, "-c", code, "scrape"], env=env, check=True, capture_output=True, text=True
    )
    samples = _samples(out.stdout)
    turns = (("flow", "ChatFlow"), ("outcome", "ok"))
    assert samples[("picoflow_turns_total", turns)] == workers


async def test_o3_a_budget_refusal_is_429_budget_exceeded_with_the_limit_in_the_message() -> None:
    from picoflow import FlowEngine
    from picoflow.server import create_app
    from picoflow.stores import MemoryStore

    model = ScriptedChatModel(policy=lambda messages, tools: tool_call("open_tables"))
    budgets = {"model_calls_per_turn": 2}
    engine = FlowEngine([chat_flow(model)], store=MemoryStore(), budgets=budgets)
    async with client_for(create_app(engine)) as client:
        reply = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "tables"})
    assert reply.status_code == 429
    body = reply.json()
    assert body["code"] == "budget_exceeded"
    assert "model_calls_per_turn" in body["message"] and "limit of 2" in body["message"]


def test_o2_the_grafana_dashboard_queries_only_metrics_the_app_serves() -> None:
    import json
    import re
    from pathlib import Path

    from picoflow._ops._metrics import PrometheusMetrics

    dashboard = json.loads(
        (Path(__file__).parents[2] / "docs" / "grafana-dashboard.json").read_text()
    )
    served = {
        family.name for family in PrometheusMetrics().registry.collect()  # type: ignore[union-attr]
    }
    queried = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            queried |= set(re.findall(r"picoflow_[a-z_]+", target["expr"]))
    suffixes = ("_total", "_bucket", "_count", "_sum")
    names = {next((q[: -len(s)] for s in suffixes if q.endswith(s)), q) for q in queried}
    assert names and names <= served, names - served
