"""The returning guest's corpora (issue 23, SPEC L1/L5): accepting or declining the usual stay,
and asking to be forgotten, each with the effect it must have.

The first held-out set was written before any change and run once on the code as it stood (0/16:
nothing was remembered); the tuning lines were written next and the rules fitted to them; the
first set then scored 16/16 and a second held-out set, written after the fit, 11/14 on its one
run (docs/demo.md). Each floor is the figure reached now, so a change that loses a line fails.
Run with ``-v`` to see the tables and the failures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from guest_corpus import HELD_OUT, HELD_OUT_2, TUNING, GuestReplayer
from support.corpus_kit import Outcome, report

from demo.hotel.offline.usual import accepts, wants_to_be_forgotten

# (corpus, lines, floor): the floor is the figure reached now
CORPORA = [("held-out", HELD_OUT, 16, 16), ("held-out 2", HELD_OUT_2, 14, 14),
           ("tuning", TUNING, 41, 41)]  # fmt: skip


@pytest.mark.parametrize(("name", "path", "lines", "floor"), CORPORA, ids=[c[0] for c in CORPORA])
async def test_guest_corpus_stays_at_or_above_its_floor(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    name: str,
    path: Path,
    lines: int,
    floor: int,
) -> None:
    outcomes: list[Outcome] = await GuestReplayer().replay(path)
    text = report(outcomes)
    if request.config.getoption("verbose") >= 0:  # -v over the default -q
        with capsys.disabled():
            print(f"\n{name}\n{text}")
    assert len(outcomes) == lines
    assert sum(o.ok for o in outcomes) >= floor, text
    assert not [o.case for o in outcomes if o.acted], "booked or ended without a choice"


def test_guest_corpora_are_distinct_and_cover_every_state() -> None:
    sets = [GuestReplayer().read(path) for _, path, _, _ in CORPORA]
    for cases in sets:
        assert {c.state for c in cases} == {"offered", "dates", "list"}
    utterances = [{c.utterance for c in cases} for cases in sets]
    assert not (utterances[0] & utterances[1] or utterances[0] & utterances[2]
                or utterances[1] & utterances[2])  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ["forget the pool", "I forgot my dates", "don't forget my preferences", "forget it",
     "remove the pool from my preferences", "delete the budget", "wipe the slate, new dates"],
)  # fmt: skip
def test_criteria_changes_and_keeping_are_no_request_to_be_forgotten(text: str) -> None:
    assert not wants_to_be_forgotten(text)


@pytest.mark.parametrize(
    ("text", "offered", "taken"),
    [("same budget as last time", False, False), ("same dates as before", False, False),
     ("same room as last time", False, True), ("same again", False, True),
     ("sure", False, False), ("sure", True, True), ("yes, something else", True, False)],
)  # fmt: skip
def test_only_the_room_and_amenities_of_last_time_are_the_usual_stay(
    text: str, offered: bool, taken: bool
) -> None:
    """Nothing but the room type and amenities is remembered, so "same budget as last time" is
    no yes to them; a plain "sure" takes them only as the answer to the offer."""
    assert accepts(text, offered) is taken
