"""HotelFlow's steps driven by a ScriptedChatModel: prompts, tool exposure, transitions, state.

These tests fix what the model says, so they check the flow itself — what each step shows the
model and what each tool does with its arguments — independently of the offline demo model.
"""

from __future__ import annotations

from typing import Any

from hotel_chat import TODAY, offline_engine

from demo.hotel.flow import PROVIDERS, HotelFlow, default_model
from picoflow import FlowEngine
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

JULY = [{"start": "2026-07-01", "end": "2026-07-06"}]
SUMMARIES = ["Guest: (summary)"] * 5  # compaction may ask; the replies are not under test here


def engine_with(script: dict[str, list[Any]]) -> tuple[FlowEngine, ScriptedChatModel]:
    model = ScriptedChatModel(script={"summary": SUMMARIES, **script})
    return FlowEngine([HotelFlow.using(model)], store=MemoryStore(), providers=PROVIDERS), model


async def run(engine: FlowEngine, *lines: str) -> list[Any]:
    results, session = [], None
    for line in lines:
        config = {"today": TODAY} if session is None else None
        result = await engine.run("HotelFlow", line, session, config)
        assert result.success, result.message
        session = result.session_id
        results.append(result)
    return results


async def test_full_booking_explore_present_compare_book() -> None:
    engine, model = engine_with(
        {
            "ExploreStep": [
                tool_call("capture_choices", dates=JULY, room_type="two beds", budget_max=300),
            ],
            "PresentStep": [
                "Here are the hotels.",
                tool_call("go_compare", hotels=["1", "Mount Hood Gateway Inn"]),
                tool_call("chosen_hotel", hotel="Mount Hood Gateway Inn"),
            ],
            "CompareStep": [
                tool_call("generate_comparison", hotels=["1", "#3"], feature="Room types"),
                tool_call("resume_booking"),
            ],
            "EndStep": ["Booked, thank you!"],
        }
    )
    listed, table, booked = await run(
        engine, "Portland, July 1-6, two beds, max 300", "compare 1 and 3", "book number 3"
    )
    assert (listed.step, listed.message) == ("PresentStep", "Here are the hotels.")
    assert table.message.startswith("| Room type | Columbia Slough Lodge | Murray Creek Inn |")
    assert table.content_type == "text/markdown"
    assert (booked.completed, booked.message) == (True, "Booked, thank you!")

    by_step = {r.metadata["picoflow_step"]: r for r in model.requests}  # the last of each
    assert by_step["ExploreStep"].tool_names == ["end_chat", "forget_guest", "capture_choices"]
    assert by_step["PresentStep"].tool_names == [
        "end_chat", "forget_guest", "chosen_hotel", "show_hotels", "answer_question",
        "search_again", "go_compare",
    ]  # fmt: skip
    assert by_step["CompareStep"].tool_names == [
        "end_chat", "forget_guest", "generate_comparison", "chosen_hotel", "answer_question",
        "resume_booking", "search_again",
    ]  # fmt: skip
    assert by_step["EndStep"].tool_names == []
    present_prompt = model.requests[1].messages[0].content
    assert "1. Columbia Slough Lodge [H04] — Portland, OR — two beds, 5 nights, total $815.68" in (
        present_prompt
    )
    end_prompt = by_step["EndStep"].messages[0].content
    assert "Hotel: Mount Hood Gateway Inn (Gresham, OR)" in end_prompt
    assert "Confirmation number: HF-" in end_prompt
    # Compare was entered with the guest's sentence, and resume_booking forwarded the next one.
    assert [m.content for m in by_step["PresentStep"].messages[1:2]] == ["book number 3"]


async def test_capture_choices_refuses_past_dates_with_the_reason() -> None:
    engine, model = engine_with(
        {
            "ExploreStep": [
                tool_call("capture_choices", dates=[{"start": "2026-05-01", "end": "2026-05-05"}]),
                "Those dates have passed.",
            ]
        }
    )
    (result,) = await run(engine, "May 1 to 5")
    assert (result.step, result.message) == ("ExploreStep", "Those dates have passed.")
    assert model.requests[-1].messages[-1].content == (
        "- The stay starting 2026-05-01 is in the past (today is 2026-05-15); ask the guest for "
        "future dates. A date without a year is the next one to come."
    )


async def test_capture_choices_advises_when_nothing_matches() -> None:
    engine, model = engine_with(
        {
            "ExploreStep": [
                tool_call("capture_choices", dates=JULY, budget_max=60),
                "Nothing under $60.",
            ]
        }
    )
    (result,) = await run(engine, "July 1-6 under $60")
    feedback = model.requests[-1].messages[-1].content
    assert feedback.startswith("No hotel matches all of your criteria. Raising the budget to $")
    doc = await engine.get_session(result.session_id)
    assert doc["steps"]["ExploreStep"]["state"]["criteria"]["budget_max"] == 60.0


async def test_chosen_hotel_must_be_in_the_list() -> None:
    engine, model = engine_with(
        {
            "ExploreStep": [tool_call("capture_choices", dates=JULY)],
            "PresentStep": ["The list.", tool_call("chosen_hotel", hotel="The Ritz"), "Which one?"],
        }
    )
    results = await run(engine, "July 1-6", "the Ritz")
    assert (results[-1].step, results[-1].completed) == ("PresentStep", False)
    feedback = model.requests[-1].messages[-1].content
    assert feedback.startswith(
        "'The Ritz' is not one of the hotels shown to the guest. The list is: "
        "1. Columbia Slough Lodge; 2. Gresham Butte Lodge;"
    )


async def test_generate_comparison_reports_a_bad_feature() -> None:
    engine, model = engine_with(
        {
            "ExploreStep": [tool_call("capture_choices", dates=JULY)],
            "PresentStep": ["The list.", tool_call("go_compare")],
            "CompareStep": [
                tool_call("generate_comparison", hotels=["1", "2"], feature="views"),
                "Which feature?",
            ],
        }
    )
    await run(engine, "July 1-6", "compare")
    assert model.requests[-1].messages[-1].content == (
        "Unknown feature 'views'; choose one of: price, amenities, room_types, distance."
    )


async def test_search_again_forwards_the_guests_sentence() -> None:
    engine, model = engine_with(
        {
            "ExploreStep": [
                tool_call("capture_choices", dates=JULY),
                "What should change?",
            ],
            "PresentStep": ["The list.", tool_call("search_again")],
        }
    )
    results = await run(engine, "July 1-6", "make it a suite")
    assert results[-1].step == "ExploreStep"
    last = model.requests[-1]
    assert last.messages[-1].content == "make it a suite"
    assert "## Criteria of the last search" in last.messages[0].content
    assert 'Criteria JSON: {"dates": [{"start": "2026-07-01"' in last.messages[0].content


async def test_a_bad_configured_today_fails_the_turn_clearly() -> None:
    result = await offline_engine().run("HotelFlow", "hi", config={"today": "15/05/2026"})
    assert result.success is False
    assert "config.today must be a date written YYYY-MM-DD, got '15/05/2026'." in result.message


def test_model_choice(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    assert default_model() == "offline:hotel"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert default_model() == "openai:gpt-4o-mini"
    bound = HotelFlow.using("offline:hotel")
    assert (bound.name, bound().config_model()) == ("HotelFlow", "offline:hotel")
    assert HotelFlow().config_model() == "openai:gpt-4o-mini"
    FlowEngine([HotelFlow], store=MemoryStore(), providers=PROVIDERS)  # F5 checks pass
