"""The utterance corpus: what guests type, each with the effect it must have (issue 14).

Every line of ``utterances.txt`` runs through the real engine on the offline model, from a copy
of a realistic session state. The test prints accuracy per category and requires at least 97 %
overall, and not one booking or ending from anything that is not a choice to book or leave.
"""

from __future__ import annotations

import pytest
from corpus import CHOICES, Runner, read_corpus, report

MIN_ACCURACY = 0.97
CATEGORIES = 10


async def test_corpus_accuracy_and_no_action_without_a_choice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = read_corpus()
    runner = Runner()
    outcomes = [await runner.run(case) for case in cases]
    text = report(outcomes)
    with capsys.disabled():
        print("\n" + text)
    acted = [o.case for o in outcomes if o.acted and o.case.expected.split()[0] not in CHOICES]
    accuracy = sum(o.ok for o in outcomes) / len(outcomes)
    assert not acted, f"booked or ended without a choice: {acted}"
    assert accuracy >= MIN_ACCURACY, text


def test_corpus_is_big_and_varied() -> None:
    cases = read_corpus()
    assert len(cases) >= 300
    assert len({case.category for case in cases}) >= CATEGORIES
    assert len({case.utterance for case in cases}) >= 290
