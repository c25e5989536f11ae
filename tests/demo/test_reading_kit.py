"""The reading kit the four offline models share (``demo.reading``, issue 35)."""

from __future__ import annotations

from datetime import date

import pytest

from demo.reading import parts, range_words, settle, today_of, withdrawn
from demo.reading.corrections import WITHDRAWAL, amend, bare, expand, restate


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("smith at 10, no wait, make it the later one", ["smith at 10", "make it the later one"]),
        ("number 3, no wait, the first one", ["number 3", "the first one"]),
        ("next friday instead", ["next friday instead"]),  # the value is before the word
        ("book 3, scratch that", ["book 3", WITHDRAWAL]),
        ("actually I need a hotel in Portland", ["I need a hotel in Portland"]),
        ("actually make that Rome", ["make that Rome"]),  # the reader's own word stays
        ("never mind, bye", ["never mind, bye"]),
        ("I'd rather not spend more than 200", ["I'd rather not spend more than 200"]),
    ],
)
def test_a_message_is_read_in_the_parts_said(text: str, said: list[str]) -> None:
    assert parts(text) == said


@pytest.mark.parametrize(
    "text",
    [
        "book number 4. hmm no actually hold on",
        "jones at 11. hmm actually hold on, let me check my calendar",
        "the last one. hmm actually let me ask my wife first",
        "smith at 10 pls. actually hang on a sec",
        "jones at 3, scratch that",
    ],
)
def test_a_choice_taken_back_is_withdrawn(text: str) -> None:
    assert withdrawn(text)


@pytest.mark.parametrize(
    "text",
    [
        "hold on, does 3 have a pool?",
        "let me see the rest",
        "wait, the first one",
        "never mind, bye",
    ],
)
def test_a_pause_that_says_something_new_is_no_withdrawal(text: str) -> None:
    assert not withdrawn(text)


def test_a_corrected_piece_is_amended_into_the_value_it_corrects() -> None:
    assert expand(["10 Main St, Boston, MA 02108, no wait, 02109"])[-1] == (
        "10 Main St, Boston, MA 02109"
    )
    assert amend("4th of july 1992", "the 5th") == "5th of july 1992"
    assert amend("dec 20 to 23", "21 to 23") == "dec 21 to 23"
    assert amend("smith at 10", "make it the later one") == "make it the later one"
    assert settle("titanic, no actually, inception instead") == "inception instead"
    assert bare("inception instead") == "inception" and bare("make that heat") == "heat"


def test_i_said_x_not_y_restates_the_earlier_message() -> None:
    earlier = ["hi", "within 3 miles of the airport"]
    assert restate("i said 5 miles not 3", earlier) == "within 5 miles of the airport"
    assert restate("i said 5 not 4", earlier) is None
    assert expand(["i said 5 miles not 3"], earlier) == ["within 5 miles of the airport"]


def test_range_words_are_written_one_way() -> None:
    assert range_words("from the 3rd til the 7th") == "from the 3rd to the 7th"
    assert range_words("june 3 thru 7, through the city") == "june 3 to 7, through the city"


def test_today_is_the_configured_day_else_the_real_one() -> None:
    assert today_of("2025-05-01") == date(2025, 5, 1)
    assert today_of("2025-05-01T10:00:00") == date(2025, 5, 1)
    assert today_of(None) == date.today() == today_of("not a date")
