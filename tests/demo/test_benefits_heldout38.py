"""SPEC D5, issue 38 item 3: EmployeeBenefitsFlow's held-out set and the guess invariant.

``benefits_heldout38.txt`` (30 lines) was written on 2026-12-07 by a helper who had only the
research doc, before the demo existed; its header defines the states and the expectation
vocabulary `benefits_corpus.judge` implements. It was run once as soon as the flow and the
offline model worked end to end, before any tuning against phrasing: **26/30**, with 2 lines
committing on a guess ("max it out, 4500 a year" saved the $3,750 maximum instead of passing
the $4,500 said to code, which refuses it; "never mind, i'll do it later. bye" at the review
*submitted* the enrollment, "do it" being read as a confirmation). The offline model was then
tuned only against ``benefits_tuning38.txt``; run again at the end: **30/30**, none committing
on a guess. That second figure is not wholly blind: the first run's report named its four
failing lines, and the fixes for their behaviours (a number said wins over "the max"; "later",
"another time" and a goodbye never submit; a year before a full stop; relocation as a
qualifying life event) were written against tuning lines of their own. The 26 lines that
passed the first time passed again. The test fails below the floor (the final figure) and
whenever a line commits on a guess. "Today" is 2026-12-07, as the header says.
"""

from __future__ import annotations

import pytest
from benefits_corpus import CHOICES, HELDOUT, BenefitsReplayer
from support.corpus_kit import acted_on_a_guess, report, wants_report

LINES, BEFORE, FLOOR = 30, 26, 30


async def test_d5_heldout38_holds_its_floor_and_never_commits_on_a_guess(
    capsys: pytest.CaptureFixture[str], pytestconfig: pytest.Config
) -> None:
    outcomes = await BenefitsReplayer().replay(HELDOUT)
    text = report(outcomes)
    if wants_report(pytestconfig):
        with capsys.disabled():
            print(f"\nbenefits (before tuning: {BEFORE}/{LINES})\n{text}")
    assert len(outcomes) == LINES
    guessed = [o.case for o in acted_on_a_guess(outcomes, CHOICES)]
    assert not guessed, f"committed on a guess (issue 35 item 1): {guessed}"
    assert sum(o.ok for o in outcomes) >= FLOOR, text
