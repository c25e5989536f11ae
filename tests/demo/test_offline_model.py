"""The offline demo model's decisions on tricky phrasings, read from prompts and messages only."""

from __future__ import annotations

from datetime import date
from types import ModuleType
from typing import Any
from uuid import uuid4

import pytest
from hotel_chat import Guest, offline_engine
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from demo.hotel import catalog
from demo.hotel.booking import Booking, numbered
from demo.hotel.offline import draft as draft_module
from demo.hotel.offline.model import OfflineHotelModel, offline_provider
from demo.hotel.prompting import (
    booked_prompt,
    compare_prompt,
    explore_prompt,
    farewell_prompt,
    present_prompt,
)
from demo.hotel.types import StayCriteria
from picoflow import ModelSpec

TODAY = date(2026, 5, 15)
EXPLORE_TOOLS = ["capture_choices", "end_chat"]
PRESENT_TOOLS = [
    "chosen_hotel", "show_hotels", "answer_question", "search_again", "go_compare", "end_chat"
]  # fmt: skip
COMPARE_TOOLS = [
    "generate_comparison", "chosen_hotel", "answer_question", "resume_booking", "search_again",
    "end_chat",
]  # fmt: skip
CRITERIA = StayCriteria.model_validate(
    {"dates": [{"start": "2026-07-01", "end": "2026-07-06"}], "amenities": ["wifi"]}
)
OFFERS = numbered(catalog.search(CRITERIA, TODAY))[:6]
NAMES = [offer.name for offer in OFFERS]


def ask(prompt: str, messages: list[BaseMessage], tools: list[str]) -> AIMessage:
    """One request to the model, with tools bound as the engine binds them."""
    model = OfflineHotelModel()
    schemas = [{"type": "function", "function": {"name": name, "parameters": {}}} for name in tools]
    runnable = model.bind_tools(schemas) if tools else model
    reply = runnable.invoke([SystemMessage(prompt), *messages])
    assert isinstance(reply, AIMessage)
    return reply


def calls(reply: AIMessage) -> list[tuple[str, dict[str, Any]]]:
    return [(call["name"], call["args"]) for call in reply.tool_calls]


def explore(*said: str) -> AIMessage:
    """Explore with the area already confirmed, then the guest's lines."""
    history: list[BaseMessage] = [HumanMessage("I need a hotel in Portland")]
    history += [m for text in said for m in (AIMessage("(reply)"), HumanMessage(text))]
    return ask(explore_prompt(TODAY, None), history, EXPLORE_TOOLS)


def present(text: str) -> AIMessage:
    prompt = present_prompt(OFFERS, "price", 1, CRITERIA)
    history = [HumanMessage("Which hotels did you find?"), AIMessage("(the list)")]
    return ask(prompt, [*history, HumanMessage(text)], PRESENT_TOOLS)


def compare(text: str, selected=(), last=(), feature=None) -> AIMessage:
    prompt = compare_prompt(OFFERS, list(selected), list(last), feature)
    return ask(prompt, [HumanMessage(text)], COMPARE_TOOLS)


# --- selections -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "number"),
    [("the second one", 2), ("#3", 3), ("book number 4", 4), ("I'll take the first", 1)],
)
def test_present_books_the_hotel_picked_by_number(text: str, number: int) -> None:
    assert calls(present(text)) == [("chosen_hotel", {"hotel": NAMES[number - 1]})]


def test_present_books_by_name() -> None:
    reply = present(f"Let's go with {NAMES[4]}")
    assert calls(reply) == [("chosen_hotel", {"hotel": NAMES[4]})]


def test_present_asks_what_to_do_with_several_hotels() -> None:
    reply = present("2, 4 and 5")
    assert reply.tool_calls == []
    assert reply.content == (
        f"Would you like to compare 2. {NAMES[1]}, 4. {NAMES[3]} and 5. {NAMES[4]}, or book one "
        "of them?"
    )


def test_present_asks_which_hotel_to_book() -> None:
    reply = present("I want to book")
    assert str(reply.content).startswith("Which hotel would you like to book?")


def test_present_hands_comparisons_and_changes_on() -> None:
    assert calls(present("compare 1 and 3 on price")) == [
        ("go_compare", {"hotels": [NAMES[0], NAMES[2]]})
    ]
    assert calls(present("make it two beds and search again")) == [("search_again", {})]
    assert calls(present("what were my criteria?")) == [("search_again", {})]
    assert calls(present("no thanks, bye")) == [("end_chat", {})]


def test_present_relays_a_refused_booking_with_the_list() -> None:
    history = [
        HumanMessage("the Ritz"),
        AIMessage("", tool_calls=[{"name": "chosen_hotel", "args": {"hotel": "Ritz"}, "id": "c1"}]),
        ToolMessage(
            "'Ritz' is not one of the hotels shown to the guest. The list is: ...",
            tool_call_id="c1",
        ),
    ]
    reply = ask(present_prompt(OFFERS, "price", 1, CRITERIA), history, PRESENT_TOOLS)
    assert str(reply.content).startswith("Sorry, I can't find 'Ritz' in the list.")
    assert str(reply.content).endswith("Which hotel do you mean? Give me its number or name.")


# --- comparisons ------------------------------------------------------------------------------


def test_compare_hotels_and_feature_in_one_sentence() -> None:
    reply = compare("compare 1 and 3 on price")
    assert calls(reply) == [
        ("generate_comparison", {"hotels": [NAMES[0], NAMES[2]], "feature": "price"})
    ]


def test_compare_all_of_them_and_a_subset() -> None:
    assert calls(compare("all of them, by distance")) == [
        ("generate_comparison", {"hotels": NAMES, "feature": "distance"})
    ]
    assert calls(compare("2, 4 and 5 on room types")) == [
        ("generate_comparison", {"hotels": [NAMES[1], NAMES[3], NAMES[4]], "feature": "room_types"})
    ]


def test_compare_same_hotels_uses_the_last_comparison() -> None:
    reply = compare("same hotels on amenities", last=[NAMES[0], NAMES[2]], feature="price")
    assert calls(reply) == [
        ("generate_comparison", {"hotels": [NAMES[0], NAMES[2]], "feature": "amenities"})
    ]


def test_compare_uses_the_selection_and_asks_for_the_feature() -> None:
    reply = compare("compare them", selected=[NAMES[1], NAMES[2]])
    assert (
        reply.content
        == f"Compare 2. {NAMES[1]} and 3. {NAMES[2]} on what: price, amenities, room types or "
        "distance?"
    )
    assert calls(compare("cheapest?", selected=[NAMES[1], NAMES[2]])) == [
        ("answer_question", {"hotels": [NAMES[1]], "topic": "price"})
    ]  # the cheapest of the selected hotels, answered (issue 14)


def test_compare_books_a_choice_and_hands_the_list_back() -> None:
    """Issue 14: a choice in the comparison books there; "back to the list" goes back."""
    assert calls(compare("book number 2")) == [("chosen_hotel", {"hotel": NAMES[1]})]
    opened = [HumanMessage("compare 1 and 2"), AIMessage("Compare them on what?")]
    prompt = compare_prompt(OFFERS, NAMES[:2], [], None)
    back = ask(prompt, [*opened, HumanMessage("back to the list")], COMPARE_TOOLS)
    assert calls(back) == [("resume_booking", {})]
    # A message the list handed over is never handed straight back (no ping-pong).
    assert calls(compare("back to the list")) == []


# --- criteria ---------------------------------------------------------------------------------


def test_explore_next_friday_for_two_nights() -> None:
    reply = explore("next Friday for two nights")
    assert str(reply.content).startswith("Got it: May 22, 2026 → May 24, 2026 (2 nights).")


def test_explore_says_at_once_that_dates_are_in_the_past() -> None:
    reply = explore("2026-05-01 for 2 nights")
    assert reply.tool_calls == []
    assert reply.content == (
        "Got it: May 1, 2026 → May 3, 2026 (2 nights). But the stay starting 2026-05-01 is in "
        "the past (today is 2026-05-15). Which dates would you like instead?"
    )


def test_explore_says_at_once_that_a_stay_is_too_long() -> None:
    reply = explore("June 1 for 70 nights")
    assert reply.tool_calls == []
    assert str(reply.content).endswith(
        "But the stay has 70 nights; we book at most 60. Which dates would you like instead?"
    )


def test_explore_past_dates_are_not_offered_for_search_when_the_guest_just_agrees() -> None:
    reply = explore("2026-05-01 for 2 nights", "ok")
    assert reply.content == (
        "Those dates still don't work: the stay starting 2026-05-01 is in the past (today is "
        "2026-05-15). Which dates would you like instead?"
    )


def test_explore_past_dates_corrected_get_the_usual_offer() -> None:
    reply = explore("2026-05-01 for 2 nights", "sorry, 2026-06-01 for 2 nights")
    assert reply.content == (
        'Got it: Jun 1, 2026 → Jun 3, 2026 (2 nights). What is your budget per night? (or "no '
        'preference")'
    )


def test_explore_searches_with_everything_collected() -> None:
    reply = explore("July 1st to the 6th", "between 150 and 250, a suite, wifi and pets", "search")
    assert calls(reply) == [
        (
            "capture_choices",
            {
                "dates": [{"start": "2026-07-01", "end": "2026-07-06"}],
                "budget_min": 150.0,
                "budget_max": 250.0,
                "room_type": "suite",
                "amenities": ["wifi", "pet friendly"],
                "max_miles_to_airport": None,
                "max_miles_to_downtown": None,
            },
        )
    ]


def test_explore_no_limit_clears_the_budget() -> None:
    reply = explore("2026-07-01 for 5 nights", "max 700", "actually no limit, search")
    ((name, args),) = calls(reply)
    assert (name, args["budget_max"], args["budget_min"]) == ("capture_choices", None, None)
    assert args["dates"] == [{"start": "2026-07-01", "end": "2026-07-06"}]


def test_explore_i_dont_know_gets_a_clarifying_question() -> None:
    reply = explore("I don't know")
    assert reply.tool_calls == []
    assert str(reply.content).startswith("No problem. I need at least rough dates")


def test_explore_relays_the_reason_a_search_was_refused() -> None:
    history = [
        HumanMessage("Portland, May 1 to 5, search"),
        AIMessage("", tool_calls=[{"name": "capture_choices", "args": {}, "id": "c1"}]),
        ToolMessage(
            "- The stay starting 2026-05-01 is in the past (today is 2026-05-15); ask the guest "
            "for future dates.",
            tool_call_id="c1",  # no tool name: over HTTP only the call id comes back
        ),
    ]
    reply = ask(explore_prompt(TODAY, None), history, EXPLORE_TOOLS)
    assert reply.content == (
        "I can't search with that yet: the stay starting 2026-05-01 is in the past (today is "
        "2026-05-15). Which dates would you like instead?"
    )


# --- memory, closing, the model itself --------------------------------------------------------


def summary_request(*messages: BaseMessage) -> AIMessage:
    instructions = SystemMessage(
        "Write an updated conversation summary that merges the previous summary with the new "
        "messages. Keep every decision, fact, number, date and open question; invent nothing."
    )
    return ask(str(instructions.content), list(messages), [])


def test_summary_keeps_the_lines_that_matter_and_is_cumulative() -> None:
    first = summary_request(
        HumanMessage("Hi, I need a hotel in Portland"),
        AIMessage("Great! When would you like to check in and check out?"),
        HumanMessage("July 1 to July 6"),
        AIMessage("Lovely choice."),
    )
    assert first.content == (
        "Guest: Hi, I need a hotel in Portland\n"
        "Assistant: Great! When would you like to check in and check out?\n"
        "Guest: July 1 to July 6"
    )
    second = summary_request(
        HumanMessage(f"Previous summary:\n{first.content}"),
        HumanMessage("two beds please"),
    )
    assert str(second.content).splitlines()[-1] == "Guest: two beds please"
    assert str(second.content).startswith(str(first.content))


def test_summary_reads_a_transcript_with_tool_calls() -> None:
    transcript = (
        "Previous summary:\nGuest: I need a hotel in Portland\n\n"
        "Messages to merge into it, oldest first:\n"
        "User: 7/1 to 7/6, two beds\n"
        "Assistant: Nice.\n"
        'Assistant: [called capture_choices({"dates": [{"start": "2026-07-01", "end": '
        '"2026-07-06"}], "room_type": "two beds"})]\n'
        "Tool result (capture_choices): No hotel matches all of your criteria.\n"
        "Tool result (capture_choices): ok"
    )
    reply = summary_request(HumanMessage(transcript))
    assert reply.content == (
        "Guest: I need a hotel in Portland\n"
        "Guest: 7/1 to 7/6, two beds\n"
        'Search: capture_choices {"dates": [{"end": "2026-07-06", "start": "2026-07-01"}], '
        '"room_type": "two beds"}\n'
        "Result: No hotel matches all of your criteria."
    )


def test_criteria_survive_compaction() -> None:
    memory = summary_request(
        HumanMessage("I need a hotel in Portland"),
        AIMessage("Great! When would you like to check in and check out?"),
        HumanMessage("7/1 to 7/6, under $300 a night"),
    ).content
    request = [
        SystemMessage(f"Conversation memory for this step:\n{memory}"),
        AIMessage("Got it. Anything else, or shall I search now?"),
        HumanMessage("wifi please, and search"),
    ]
    ((name, args),) = calls(ask(explore_prompt(TODAY, None), request, EXPLORE_TOOLS))
    assert name == "capture_choices"
    assert (args["budget_max"], args["amenities"]) == (300.0, ["wifi"])
    assert args["dates"] == [{"start": "2026-07-01", "end": "2026-07-06"}]


def test_closing_line_names_the_booking() -> None:
    booking = Booking.confirm(OFFERS[0], CRITERIA, TODAY, "a-session#1")
    reply = ask(booked_prompt(booking), [HumanMessage("I'm done with the chat.")], [])
    assert reply.content == (
        f"You're all set! Your stay at {NAMES[0]} ({OFFERS[0].city}) is booked: Jul 1, 2026 → "
        f"Jul 6, 2026 (5 nights), {OFFERS[0].room_type}, ${OFFERS[0].total:,} in total. Your "
        f"confirmation number is {booking.confirmation}. Thank you for choosing HotelFlow!"
    )
    farewell = ask(farewell_prompt(), [HumanMessage("bye")], [])
    assert "welcome back" in str(farewell.content)


def test_tool_call_ids_and_usage() -> None:
    reply = present("#3")
    assert reply.tool_calls[0]["id"] == "call_4_1"
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_provider_knows_one_model() -> None:
    assert isinstance(offline_provider(ModelSpec("offline", "hotel")), OfflineHotelModel)
    with pytest.raises(ValueError) as error:
        offline_provider(ModelSpec("offline", "gpt"))
    assert str(error.value) == (
        "The offline provider has one model, 'offline:hotel'; got 'offline:gpt'."
    )


@pytest.mark.parametrize(
    ("module", "work"),
    [(catalog, "_match_length"), (draft_module, "parse_dates")],
    ids=["hotel-names", "criteria"],
)
async def test_replay_work_per_turn_does_not_grow_with_the_session(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, work: str
) -> None:
    """The offline model re-reads the whole visible conversation every turn (each guest line is
    matched against every hotel name and read for criteria): a turn must pay only for what is
    new, or a long session slows down (issue 25, bench/long_session.py). Every question is new
    text (a fresh token), so no turn is cheap by repeating an earlier one."""
    calls = [0]
    original = getattr(module, work)

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return original(*args)

    monkeypatch.setattr(module, work, counted)
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("Hi! I need a hotel in Portland.")
    done = []
    for _ in range(16):
        calls[0] = 0
        await guest.say(f"is there a pool at the {uuid4().hex[:8]} one?")
        done.append(calls[0])
    assert done[0] > 0  # the new line is read...
    assert max(done[8:]) <= max(done[:4]), done  # ...earlier lines are not read again
