"""The demo's flows are drawn correctly: every move their conversation tests make is an arrow.

The moves are not a hand-written list: the conversation tests run in a subprocess with the
`record_moves` plugin, which records each real move (F8) as `Flow.goto` makes it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from record_moves import RECORD

from demo.hotel.flow import HotelFlow
from picoflow.graph import flow_graph, load_flow

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CONVERSATIONS = (  # the tests that talk to a flow through the real engine
    "test_conversation*.py",
    "test_hotel_over_*.py",
    "test_hotel_steps*.py",
    "test_*_flow.py",
)
# The utterance corpora replay hundreds of single lines from saved states: half this test's time
# for few moves the conversations do not make; `--long` replays them too.
CORPORA = ("test_corpus*.py", "test_*_corpus.py")
MERMAID = re.compile(r"^```mermaid\n(?P<text>.*?)^```$", re.S | re.M)


def recorded_moves(
    tmp_path: Path, corpora: bool = False
) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(module, flow class) -> the (from, to) moves the demo's conversation tests made."""
    record = tmp_path / "moves.jsonl"
    patterns = CONVERSATIONS + (CORPORA if corpora else ())
    tests = sorted({str(path) for pattern in patterns for path in HERE.glob(pattern)})
    path = os.pathsep.join(filter(None, [str(HERE), str(REPO), os.environ.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "record_moves", "-p", "no:cacheprovider",
         *tests],
        cwd=REPO, env=os.environ | {RECORD: str(record), "PYTHONPATH": path},
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:]
    moves: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for line in record.read_text(encoding="utf-8").splitlines():
        module, flow, source, target = json.loads(line)
        moves[module, flow].add((source, target))
    return moves


def test_f8_every_move_of_the_demo_conversations_is_an_edge_of_the_graph(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    moves = recorded_moves(tmp_path, corpora=request.config.getoption("--long"))
    demo_flows = {key: made for key, made in moves.items() if key[0].startswith("demo.")}
    assert demo_flows[("demo.hotel.flow", "HotelFlow")] >= {
        ("ExploreStep", "PresentStep"),
        ("PresentStep", "CompareStep"),
        ("CompareStep", "PresentStep"),
        ("PresentStep", "EndStep"),
    }  # the conversations do move: the check below is not vacuous
    for (module, name), made in sorted(demo_flows.items()):
        graph = flow_graph(load_flow(f"{module}:{name}")())
        missing = sorted(made - graph.edges())
        assert not missing, f"{module}:{name} moved along {missing}; its graph lacks them"
        unread = [note for note in graph.notes if ": go(" in note and "names no step" in note]
        assert not unread, f"{module}:{name} has moves its graph cannot read: {unread}"


@pytest.mark.parametrize("page", ["docs/demo.md", "README.md"])
def test_docs_demo_shows_the_hotelflow_diagram_as_drawn_today(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    drawn = [match["text"] for match in MERMAID.finditer(text)]
    assert HotelFlow().graph() in drawn, (
        f"{page}'s HotelFlow diagram is stale: paste the output of "
        "`python -m picoflow.graph demo.hotel.flow:HotelFlow` into its ```mermaid block."
    )
