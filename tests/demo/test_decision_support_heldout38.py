"""DecisionSupportFlow's phrasing sets of issue 38 (D5), and the guess invariant.

``decision_support_heldout38.txt`` (26 lines) was written on 2026-12-07 by another helper from
the research doc only, before the demo was built, and was run once as soon as the flow and
its offline models worked end to end, before any tuning: 20/26 (76.9 %), no line ending the
conversation on a guess. The six misses were two flaws of the offline models: the judge read
"CSV exports are available in Reports > Export" as an unknown menu path and a location as no
next step, so every exports answer was rejected twice and handed off (five lines), and a
message that names nothing (a poem asked for after an answer) was read as a follow-up of the
API-key question. Both were found and fixed against the tuning set
(``decision_support_tuning38.txt``, 84 lines in the porter's own phrasing, all passing), which
is the only set tuned on; the first run's report printed the six missed lines, so their words
were seen, but no line was written or changed to fit them. Run again at the end of tuning:
26/26 (100 %), none acting on a guess; a set this small cannot show more than that the
vocabulary and the common phrasings hold. Those are the floors (`FLOORS`). The only action a
line can take is ending the conversation, so "acting on a guess" is a completed session on a
line whose expectation is not ``end`` (or one that fails).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from decision_support_corpus import HELDOUT, TUNING, DecisionSupportReplayer
from support.corpus_kit import Outcome, report

# (corpus, lines, before tuning, floor)
FLOORS: list[tuple[Path, int, int, int]] = [
    (HELDOUT, 26, 20, 26),
    (TUNING, 84, 0, 84),  # written after the first held-out run; "before" does not apply
]


def ended_on_a_guess(outcomes: list[Outcome]) -> list[Outcome]:
    """The cases that completed the session where the expectation is no ``end`` (D5).

    The kit's `acted_on_a_guess` splits clauses at ";"; these sets join them with " & "."""
    wanted = [{c.split()[0] for c in o.case.expected.split(" & ") if c.split()} for o in outcomes]
    return [
        o
        for o, kinds in zip(outcomes, wanted, strict=True)
        if o.acted and not (o.ok and "end" in kinds)
    ]


@pytest.mark.parametrize(("corpus", "lines", "before", "floor"), FLOORS, ids=["heldout", "tuning"])
async def test_d5_phrasing_holds_its_floor_and_never_ends_on_a_guess(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    corpus: Path,
    lines: int,
    before: int,
    floor: int,
) -> None:
    outcomes = await DecisionSupportReplayer().replay(corpus)
    text = report(outcomes)
    if request.config.getoption("verbose") >= 0:  # -v over the project's default -q
        with capsys.disabled():
            print(f"\n{corpus.name} (before tuning: {before}/{lines})\n{text}")
    assert len(outcomes) == lines
    guessed = [o.case for o in ended_on_a_guess(outcomes)]
    assert not guessed, f"ended the conversation on a guess: {guessed}"
    assert sum(o.ok for o in outcomes) >= floor, text
