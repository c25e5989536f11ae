"""MedicalFlow's corpora (issue 19): what patients type, each case with the effect it must have.

``medical_heldout.txt`` was written before the port was changed and run once on each version
(the figures are in its header and in docs/demo.md); ``medical_tuning.txt`` is what the offline
model was fitted to. Both run here through the real engine; the test fails below the floor,
and prints the table per category with ``pytest -v``.
"""

from __future__ import annotations

import pytest
from medical_corpus import CHOICES, HELDOUT, TUNING, TUNING_35, MedicalReplayer
from support.corpus_kit import accuracy, acted_on_a_guess, report

MIN_ACCURACY = 0.95


async def test_medical_corpus_accuracy_holds_its_floor(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = await MedicalReplayer().replay(HELDOUT, TUNING, TUNING_35)
    text = report(outcomes)
    if request.config.getoption("verbose") >= 0:  # -v over the default -q
        with capsys.disabled():
            print("\n" + text)
    guessed = [o.case for o in acted_on_a_guess(outcomes, CHOICES)]
    assert not guessed, f"booked or ended without a choice (issue 35 item 1): {guessed}"
    assert accuracy(outcomes) >= MIN_ACCURACY, text


def test_medical_corpus_is_varied_and_its_held_out_share_stays() -> None:
    heldout, tuning = MedicalReplayer().read(HELDOUT), MedicalReplayer().read(TUNING)
    assert len(heldout) >= 20 and len(tuning) >= 50
    categories = {case.category for case in heldout + tuning}
    assert {"typo", "chatty", "spread", "reference", "correction", "question"} <= categories
    assert any(len(case.turns) > 2 for case in heldout)
