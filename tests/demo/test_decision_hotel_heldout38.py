"""The held-out set of issue 38 for DecisionHotelFlow (``decision_hotel_heldout38.txt``).

The 30 lines were written on 2026-12-07 by a helper who had read only the research doc, before
the demo existed. They were run once as soon as the flow and its offline models worked end to
end, before any tuning on phrasing: 24/30, with no booking or ending on a guess (the kit's
check; the failing lines were not read then). After tuning on the port's own set
(``decision_hotel_tuning38.txt``) they were run again: 24/30, none booking or ending on a
guess — but reading the misses showed four that *saved a criterion the guest did not give*:
"checking in the 22nd and out the 19th" (a four-week stay into January), "dec 18 // out on the
21st" (December 18-19), "whatever's reasonable i guess" (no budget limit) and "within 5 miles
of downtown, airport doesnt matter" (no distance limit at all). The same code ran in the first
run, so those lines very likely did the same there. The four were fixed as rules (a slip
between two days of one month is not a month-long stay, a follow-up's day is the checkout
only when it is one, vague words are no "no preference", a place's limit is not dropped by a
"doesn't matter" about another place) and the router taught that a day alone may be either
end; because the held-out misses prompted them, the third run, 28/30 with nothing saved on a
miss, is no clean held-out measure. It is the floor. The two lines still missed ask again and
save nothing ("new years eve, 2 nights", "money's no object honestly").

The test fails below the floor, when a line books or ends on a guess (issue 35 item 1), and
when a missed line saves a criterion. ``config.today`` is 2026-12-07, the day they were written.
"""

from __future__ import annotations

import pytest
from decision_hotel_corpus import CHOICES, HELDOUT, DecisionHotelReplayer
from support.corpus_kit import acted_on_a_guess, report

LINES, BEFORE, SECOND, FLOOR = 30, 24, 24, 28


async def test_d5_decision_hotel_heldout38_holds_its_floor_and_never_acts_on_a_guess(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    replayer = DecisionHotelReplayer()
    outcomes = await replayer.replay(HELDOUT)
    text = report(outcomes)
    if request.config.getoption("verbose") >= 0:  # -v over the project's default -q
        with capsys.disabled():
            print(f"\ndecision_hotel (before tuning {BEFORE}/{LINES}, then {SECOND})\n{text}")
    assert len(outcomes) == LINES
    guessed = [o.case for o in acted_on_a_guess(outcomes, CHOICES)]
    assert not guessed, f"booked or ended on a guess (issue 35 item 1): {guessed}"
    assert not replayer.saved_on_a_miss, f"saved a criterion on a miss: {replayer.saved_on_a_miss}"
    assert sum(o.ok for o in outcomes) >= FLOOR, text
