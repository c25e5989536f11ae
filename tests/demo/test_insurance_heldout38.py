"""HomeInsuranceQuoteFlow's phrasing, measured (issue 38 item 3, SPEC D5): the held-out set
``insurance_heldout38.txt`` and the tuning set ``insurance_tuning38.txt``, and the guess invariant.

The held-out set (30 lines) was written on 2026-12-07 by another helper from the research doc
only, before the demo existed; its header defines the states and the expectation vocabulary
that ``insurance_corpus.py`` implements. It was run once as soon as the flow and its offline
model worked end to end, before any tuning against phrasing: 22/30 (73.3 %), with 1 line acting
on a guess ("the roof is actually 30 years old, not 8 // ok now its correct": the correction
was not read, and the "ok" confirmed and rated the uncorrected application). The offline model
was then tuned against ``insurance_tuning38.txt`` only (131 lines in the porter's own phrasing:
60/70 on its first 70 lines before any fix, 131/131 at the end), and the held-out set was run a
second time: 28/30 (93.3 %), none acting on a guess. That is the floor (`FLOORS`). The two lines
still missed (systems "never updated" named after the word "never" in one long message, and
"burglar alarm yes and its monitored") are kept as they are: the held-out set is never tuned on.

Every session of both sets fixes ``config.today`` to 2026-12-07, the day the lines were
written (the held-out header states it as HOME_INSURANCE_FLOW_CURRENT_DATE; the session's
``config.today`` takes precedence and is what the harness sets).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from insurance_corpus import CHOICES, HELDOUT, InsuranceReplayer
from support.corpus_kit import acted_on_a_guess, report

# (corpus, lines, first run, floor); the tuning set (131/131, ~8 s) is replayed by hand with
# `InsuranceReplayer().replay(TUNING)`, to keep this package's tests within their time budget.
FLOORS: list[tuple[Path, int, str, int]] = [(HELDOUT, 30, "22/30", 28)]


@pytest.mark.parametrize(("corpus", "lines", "first", "floor"), FLOORS, ids=["heldout"])
async def test_d5_insurance_phrasing_holds_its_floor_and_never_acts_on_a_guess(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    corpus: Path,
    lines: int,
    first: str,
    floor: int,
) -> None:
    outcomes = await InsuranceReplayer().replay(corpus)
    text = report(outcomes)
    if request.config.getoption("verbose") >= 0:  # -v over the project's default -q
        with capsys.disabled():
            print(f"\n{corpus.name} (first run: {first})\n{text}")
    assert len(outcomes) == lines
    guessed = [o.case for o in acted_on_a_guess(outcomes, CHOICES)]
    assert not guessed, f"acted on a guess (issue 35 item 1): {guessed}"
    assert sum(o.ok for o in outcomes) >= floor, text
