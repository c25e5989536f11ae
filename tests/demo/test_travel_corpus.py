"""TravelFlow's corpora (issue 19): what travellers type, each with the effect it must have.

The held-out corpus was written before the flow was changed and run once on the port as it
stood (8/27, docs/demo.md); its floor is the figure the flow reaches now, so a change that
loses a line fails here. Run with ``-v`` to see the table per category and the failures.
"""

from __future__ import annotations

import pytest
from travel_corpus import HELD_OUT, read_corpus, report, run_corpus

HELD_OUT_FLOOR = 8  # of 27: the first port, before any fix


async def test_travel_held_out_corpus_stays_at_or_above_its_floor(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = await run_corpus(HELD_OUT)
    text = report(outcomes)
    if request.config.getoption("verbose") > 0:
        with capsys.disabled():
            print("\nheld-out\n" + text)
    assert len(outcomes) == 27
    assert sum(o.ok for o in outcomes) >= HELD_OUT_FLOOR, text


def test_travel_corpus_rejects_an_unknown_effect() -> None:
    from travel_corpus import judge

    with pytest.raises(ValueError, match="Unknown expected effect 'jump 3'; use plan, ask"):
        judge("jump 3", None, {"steps": {}})


def test_travel_held_out_corpus_is_varied() -> None:
    cases = read_corpus(HELD_OUT)
    assert len({c.category for c in cases}) >= 8 and len({c.state for c in cases}) == 4
