"""Shared fixtures. No test can reach a real model provider: their variables point nowhere."""

from __future__ import annotations

import pytest

try:
    # `mcp.client.stdio.stdio_client` binds `sys.stderr` as its `errlog` default when the module
    # is first imported; imported first inside a test that captures output (capsys), every later
    # stdio MCP server in the process fails to start ("fileno"). Import it now, on the real one.
    import mcp.client.stdio  # noqa: F401
except ImportError:  # the mcp extra is optional
    pass

# `pytester` runs inner pytest sessions: the scenario plugin's tests (tests/scenarios) use it.
pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _no_real_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-real")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("ANTHROPIC_API_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    for name in ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "DEEPSEEK_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PICOFLOW_STORE", raising=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--corpus-report",
        action="store_true",
        default=False,
        help="print the demo utterance corpus's accuracy table (tests/demo/test_corpus.py); "
        "-v prints it too",
    )
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="run the reliability scenarios at full size (tests/reliability): more kills, "
        "more sessions, more concurrent turns; and replay the demo corpora too in the graph "
        "check (tests/demo/test_graph_demo.py)",
    )
