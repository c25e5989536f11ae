"""From PicoFlow: stored PicoFlow (TypeScript) sessions become picoflow documents (P1).

The documents are written by hand from the reference's description of PicoFlow's two stored
shapes (G3, `version: 1.5`, one `flow` object; G2, `version: 1`, a `flows` array), including the
quirks it lists: Mongo extended JSON, `config: null`, the legacy `_stopTool` state, several or
no `isActive` steps, structured AI content, a tool call left without a result, a tool result
answering nothing, nested-run sequence entries, `TerminateSessionStep`, credentials in params.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)

from demo.hotel.flow import HotelFlow
from picoflow.import_picoflow import ImportReport, convert, read_json
from picoflow.import_picoflow._messages import NO_RESULT

DOCS = Path(__file__).parent.parent / "picoflow_docs"


def g3() -> dict[str, Any]:
    return read_json(DOCS / "g3_hotel.json")[0]


def g2() -> dict[str, Any]:
    return read_json(DOCS / "g2_hotel.jsonl")[0]


def messages(*items: Any) -> list[dict[str, Any]]:
    return [message_to_dict(item) for item in items]


def space(*items: Any, summary: str | None = None) -> dict[str, Any]:
    return {
        "messages": messages(*items),
        "summary": summary,
        "summary_generation": 1 if summary else 0,
        "archived": 0,
        "dropped_facts": 0,
        "summary_usage": {},
    }


def test_g3_document_converts_field_by_field() -> None:
    doc, report = convert(g3())
    ids = "ExploreStep|2026-05-15T16:0"
    assert doc == {
        "id": "3b241101-e2bb-4255-8caf-4136c566a962",
        "schema_version": 1,
        "revision": 0,
        "flow": "HotelFlow",
        "run_status": "running",
        "created_at": "2026-05-15T16:00:00.000Z",
        "updated_at": "2026-05-15T16:01:10.250Z",
        "expires_at": None,
        "context": {"config": {"today": "2026-05-15"}},
        "current_step": "ExploreStep",
        "sequence": ["ExploreStep"],
        "steps": {
            "ExploreStep": {
                "state": {"_saveOn": "2026-05-15T16:01:10.200Z"},
                "model": {
                    "provider": "openai",
                    "name": "gpt-5.1",
                    "params": {"reasoning": {"effort": "low"}},
                    "retry_attempts": 3,
                },
            },
            "PresentStep": {"state": {}, "model": None},
            "CompareStep": {"state": {}, "model": None},
            "EndStep": {"state": {}, "model": None},
        },
        "memory": {
            "hotel-explore": space(
                SystemMessage(
                    "You are a Hilton travel assistant for the Portland, Oregon area.",
                    id=f"{ids}1:09.900Z|1000000001",
                ),
                HumanMessage("Start", id=f"{ids}0:00.010Z|1000000002"),
                AIMessage(
                    "Hello! Are you looking for a hotel in the Portland, Oregon area?",
                    id=f"{ids}0:01.500Z|1000000003",
                ),
                HumanMessage("Hi! I need a hotel in Portland.", id=f"{ids}1:05.000Z|1000000004"),
                AIMessage(
                    "Great! When would you like to check in and check out?",
                    id=f"{ids}1:10.100Z|1000000005",
                ),
                summary="The guest wants a hotel in Portland, Oregon.",
            ),
            "end": space(SystemMessage("")),
        },
        "usage": {
            "model": {
                "input_tokens": 1200,
                "output_tokens": 80,
                "total_tokens": 1280,
                "calls": 0,
                "reasoning_tokens": 20,  # M10: PicoFlow's reasoningTokens
            },
            "summary": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "calls": 0},
        },
        "warnings": [
            {"at": "2026-05-15T16:00:30.000Z", "message": "hallucinated tool: find_hotels"}
        ],
    }
    assert report.as_dict() == {
        "session_id": "3b241101-e2bb-4255-8caf-4136c566a962",
        "source": "G3",
        "lost": ["1 entries of PicoFlow's 'log' log were not imported"],
        "changed": [
            "the flow's model (openai:gpt-4o) is not stored in picoflow documents; the flow's "
            "config_model() decides",
            "step 'TerminateSessionStep' was renamed 'EndStep'",
            "namespace 'hotel-explore': 5 per-message timestamp(s) were dropped (ids keep the "
            "time)",
            "namespace 'hotel-explore': summarizedThroughId was dropped (not needed here)",
            "token counters visibleOutputTokens are not kept separately (they "
            "are part of the totals); model call counts start at 0",
        ],
    }


def test_g2_mongo_export_converts_with_its_quirks_reported() -> None:
    doc, report = convert(g2(), flow=HotelFlow, namespaces={"ExploreStep": "hotel-explore"})
    ids = "ExploreStep|2026-03-22T19:0"
    assert doc["id"] == "69c03d430daed53aceb358de"  # kept, so clients holding it continue
    assert (doc["created_at"], doc["updated_at"], doc["expires_at"]) == (
        "2026-03-22T19:03:50.000Z",
        "2026-03-22T19:04:40.120Z",
        "2026-03-23T08:58:00.120Z",
    )
    assert doc["steps"]["ExploreStep"] == {
        "state": {"_saveOn": "2026-03-22T19:04:40.100Z"},
        "model": {
            "provider": "openai",
            "name": "gpt-5",
            "params": {"reasoning": {"effort": "medium"}},
            "retry_attempts": 3,
        },
    }
    assert (doc["current_step"], doc["sequence"]) == ("ExploreStep", ["ExploreStep"])
    assert doc["memory"]["hotel-explore"] == space(
        SystemMessage("Hilton travel assistant. HotelJSON: {}", id=f"{ids}4:36.096Z|9539187908"),
        HumanMessage("Hi! I need a hotel in Portland.", id=f"{ids}3:55.000Z|1234567890"),
        AIMessage(
            "",
            id=f"{ids}3:57.000Z|2234567890",
            tool_calls=[{"name": "capture_dates", "args": {"start": "?"}, "id": "call_dangling"}],
        ),
        ToolMessage(NO_RESULT, tool_call_id="call_dangling", status="error"),
        AIMessage('{"intent": "portland", "confirmed": true}', id=f"{ids}4:00.000Z|3234567890"),
        AIMessage(
            "Great! When would you like to check in and check out?",
            id=f"{ids}4:40.000Z|5234567890",
        ),
    )
    assert doc["warnings"] == [
        {"at": "2026-03-22T19:03:58.000Z", "message": "hallucinated tool: capture_dates"},
        {
            "at": "2026-03-22T19:04:00.500Z",
            "message": "PicoFlow error: LLM call failed. Reason:length. Error:truncated",
        },
    ]
    assert "sk-live" not in json.dumps(doc)
    assert report.source == "G2"
    assert report.lost == [
        "step 'ExploreStep': legacy state _stopTool was dropped (no meaning here)",
        "namespace 'hotel-explore': 1 tool result(s) answering no tool call were dropped",
        "1 entries of PicoFlow's 'debug' log were not imported",
    ]
    assert report.changed == [
        "expireAfter (50000 s) became expires_at 2026-03-23T08:58:00.120Z (already past: its "
        "id will start a new session)",
        "namespace 'ExploreStep' was renamed 'hotel-explore'",
        "namespace 'hotel-explore': 1 tool call(s) had no result; each got an error result "
        "saying so",
        "namespace 'hotel-explore': 1 structured (object) message content(s) became JSON text",
    ]


def test_a_step_named_namespace_follows_the_step_into_the_flow() -> None:
    """Older HotelFlow kept ExploreStep's history under "ExploreStep"; the demo's is elsewhere."""
    doc, report = convert(g2(), flow=HotelFlow)
    assert list(doc["memory"]) == ["end", "hotel-explore"]
    assert (
        "namespace 'ExploreStep' (PicoFlow's default for step ExploreStep) was renamed "
        "'hotel-explore', the namespace HotelFlow.ExploreStep uses"
    ) in report.changed
    without_flow, _ = convert(g2())
    assert list(without_flow["memory"]) == ["ExploreStep", "end"]


def test_report_renders_for_a_terminal() -> None:
    _, report = convert(g2(), keep_expiry=False)
    assert report.render().splitlines()[:3] == [
        "69c03d430daed53aceb358de (G2): 3 lost, 3 changed",
        "  lost: step 'ExploreStep': legacy state _stopTool was dropped (no meaning here)",
        "  lost: namespace 'ExploreStep': 1 tool result(s) answering no tool call were dropped",
    ]
    assert "  changed: expireAfter (50000 s) was dropped: the session never expires" in (
        report.render().splitlines()
    )


@pytest.mark.parametrize(
    "bad",
    [{"id": "x", "steps": []}, [], "text"],
    ids=["no-flow", "list", "string"],
)
def test_a_document_that_is_not_picoflows_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError) as info:
        convert(bad)
    suffix = " (id 'x')" if isinstance(bad, dict) else ""
    assert str(info.value) == (
        "not a PicoFlow session document: it has neither a 'flow' object (PicoFlow 1.5) nor a "
        "'flows' list (older PicoFlow)" + suffix
    )


def g2_with(**flow_changes: Any) -> dict[str, Any]:
    doc = g2()
    doc["flows"][0].update(flow_changes)
    return doc


def test_g2_several_active_steps_put_the_cursor_on_the_first() -> None:
    doc = g2()
    doc["flows"][0]["steps"][1]["isActive"] = True
    converted, report = convert(doc)
    assert converted["current_step"] == "ExploreStep"
    assert report.lost[0] == (
        "2 steps were active (ExploreStep, PresentStep); the cursor was put on the first, "
        "ExploreStep"
    )


def test_g2_without_an_active_step_is_imported_as_aborted() -> None:
    doc = g2()
    doc["flows"][0]["steps"][0]["isActive"] = False
    converted, report = convert(doc)
    assert (converted["current_step"], converted["run_status"]) == (None, "aborted")
    assert (
        "no current step was recorded; the session was marked aborted (its id will start a new "
        "session)"
    ) in report.lost


def test_g2_config_null_becomes_an_empty_config() -> None:
    converted, report = convert(g2_with(context={"config": None}))
    assert converted["context"] == {"config": {}}
    assert "context.config was null; it is an empty object now" in report.changed


def test_g2_second_flow_is_reported() -> None:
    doc = g2()
    doc["flows"].append({"name": "BasicFlow"})
    _, report = convert(doc)
    assert report.lost[0] == "only the first of 2 flows was imported; not: BasicFlow"


def test_g2_model_names_guess_their_provider() -> None:
    doc = g2()
    names = ["claude-sonnet-4-5", "gemini-2.5-pro", "deepseek-chat", "my-local"]
    for step, name in zip(doc["flows"][0]["steps"], names, strict=True):
        step["modelName"] = name
    converted, _ = convert(doc)
    assert [s["model"]["provider"] for s in converted["steps"].values()] == [
        "anthropic",
        "google_genai",
        "deepseek",
        "unknown",
    ]


def test_g3_terminal_step_is_renamed_everywhere() -> None:
    doc = g3()
    flow = doc["flow"]
    flow["currentStep"] = "TerminateSessionStep"
    flow["sequence"] += [
        {"level": 2, "stepName": "PresentStep"},
        {"level": 1, "stepName": "TerminateSessionStep"},
    ]
    flow["memory"]["TerminateSessionStep"] = {
        "messages": [{"type": "ai", "content": "Bye.", "id": "TerminateSessionStep|t|1"}]
    }
    converted, report = convert(doc)
    assert converted["current_step"] == "EndStep"
    assert converted["sequence"] == ["ExploreStep", "PresentStep", "EndStep"]
    assert converted["sequence_levels"] == [1, 2, 1]  # V2: the nested entry is kept
    end = converted["memory"]["EndStep"]["messages"]
    assert [(m["type"], m["data"]["id"]) for m in end] == [("system", None), ("ai", "EndStep|t|1")]
    assert "step 'TerminateSessionStep' was renamed 'EndStep'" in report.changed
    assert not [line for line in report.changed if "sequence" in line]
    assert (
        "namespace 'EndStep': the history did not start with a system message; an empty "
        "system slot was put first"
    ) in report.changed


def test_g3_user_renames_and_a_clash_of_namespaces() -> None:
    doc = g3()
    doc["flow"]["memory"]["explore"] = {"messages": []}
    converted, report = convert(
        doc, renames={"PresentStep": "OffersStep"}, namespaces={"explore": "hotel-explore"}
    )
    assert list(converted["steps"]) == ["ExploreStep", "OffersStep", "CompareStep", "EndStep"]
    assert (
        "namespace 'explore' became 'hotel-explore', which another namespace already became; "
        "it was dropped"
    ) in report.lost


def test_messages_in_langchain_constructor_form_and_string_arguments() -> None:
    doc = g3()
    doc["flow"]["memory"]["hotel-explore"]["messages"] += [
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain_core", "messages", "AIMessage"],
            "kwargs": {
                "content": [{"type": "text", "text": "Checking"}, {"type": "image_url"}],
                "tool_calls": [{"name": "capture_choices", "args": '{"json": "{}"}'}],
            },
        },
        {"type": "tool", "content": "input validated", "tool_call_id": ""},
        {"type": "assistant", "content": "Done.", "additional_kwargs": {"direct": True}},
        {"type": "function", "content": "?"},
    ]
    converted, report = convert(doc)
    tail = converted["memory"]["hotel-explore"]["messages"][-3:]
    assert tail == messages(
        AIMessage(
            "Checking",
            tool_calls=[{"name": "capture_choices", "args": {"json": "{}"}, "id": "imported_5_0"}],
        ),
        ToolMessage("input validated", tool_call_id="imported_5_0"),
        AIMessage("Done.", additional_kwargs={"direct": True}),
    )
    where = "namespace 'hotel-explore'"
    assert f"{where}: 1 message(s) of an unknown type were dropped" in report.lost
    assert report.changed[2:6] == [
        f"{where}: 1 multi-part message content(s) became their text",
        f"{where}: 1 tool call argument string(s) were parsed as JSON",
        f"{where}: 1 tool call(s) without an id got one",
        f"{where}: 5 per-message timestamp(s) were dropped (ids keep the time)",
    ]


def test_a_rejected_tool_call_keeps_its_error_status() -> None:
    """Older PicoFlow marked a same-step rejection `status: error`; the model still sees it."""
    doc = g3()
    doc["flow"]["memory"]["hotel-explore"]["messages"] += [
        {"type": "ai", "content": "", "tool_calls": [{"name": "capture_choices", "args": {},
                                                       "id": "c1"}]},
        {"type": "tool", "content": "No hotel found.", "tool_call_id": "c1", "status": "error",
         "name": "capture_choices", "additional_kwargs": {"stopTool": True}},
    ]  # fmt: skip
    converted, _ = convert(doc)
    assert converted["memory"]["hotel-explore"]["messages"][-1] == message_to_dict(
        ToolMessage("No hotel found.", tool_call_id="c1", status="error", name="capture_choices")
    )


def test_a_bad_session_id_gets_a_new_one_and_unknown_fields_are_named() -> None:
    doc = g3()
    doc["id"] = "not a valid id!"
    doc["runStatus"] = "paused"
    doc["tenant"] = "acme"
    doc["flow"]["batch"] = {"size": 3}
    converted, report = convert(doc)
    assert converted["id"] != "not a valid id!" and converted["run_status"] == "aborted"
    assert report.session_id == converted["id"]
    assert report.changed[0] == (
        f"the id 'not a valid id!' is not a valid picoflow session id; the session got the new "
        f"id {converted['id']}"
    )
    assert report.lost[:3] == [
        "top-level field 'tenant' has no place in a picoflow document",
        "flow field 'batch' has no place in a picoflow document",
        "run status 'paused' is unknown; the session was marked aborted",
    ]


def test_a_document_without_an_id_gets_one() -> None:
    doc = g3()
    del doc["id"]
    converted, report = convert(doc)
    assert report.changed[0] == (
        f"the document has no id; the session got the id {converted['id']}"
    )


def test_transient_state_and_extended_json_values_inside_state() -> None:
    doc = g3()
    doc["flow"]["steps"][1]["state"] = {
        "_transient": {"results": [1]},
        "hotelFound": [{"total": {"$numberDouble": "2501.2512"}, "nights": {"$numberLong": "5"}}],
        "seen": {"$date": {"$numberLong": "1774206276096"}},
    }
    converted, report = convert(doc)
    assert converted["steps"]["PresentStep"]["state"] == {
        "hotelFound": [{"total": 2501.2512, "nights": 5}],
        "seen": "2026-03-22T19:04:36.096Z",
    }
    assert "step 'PresentStep': transient state was dropped (it never persists)" in report.lost


def test_checking_against_the_flow_names_steps_it_does_not_have() -> None:
    doc = g3()
    doc["flow"]["steps"].append({"name": "LegacyStep", "state": {"x": 1}})
    doc["flow"]["currentStep"] = "LegacyStep"
    converted, report = convert(doc, flow=HotelFlow)
    assert converted["run_status"] == "aborted"
    assert report.lost[-2:] == [
        "step 'LegacyStep' is not a step of HotelFlow; its state is dropped at the first save "
        "(rename it with renames={'LegacyStep': 'StepName'})",
        "the current step 'LegacyStep' is not a step of HotelFlow; the session was marked "
        "aborted (its id will start a new session)",
    ]


def test_pre_117_memory_list_and_flow_name_override() -> None:
    doc = g3()
    doc["flow"]["memory"] = [{"nameSpace": "hotel-explore", "messages": []}]
    converted, report = convert(doc, flow_name="HotelFlowV2")
    assert converted["flow"] == "HotelFlowV2"
    assert converted["memory"] == {"hotel-explore": space(SystemMessage(""))}
    assert "flow 'HotelFlow' was renamed 'HotelFlowV2'" in report.changed


def test_conversion_leaves_its_input_alone() -> None:
    original = g2()
    before = copy.deepcopy(original)
    convert(original)
    assert original == before


def test_read_json_reads_a_list_and_refuses_a_bad_line(tmp_path: Path) -> None:
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([g3(), g2()]), encoding="utf-8")
    assert [d["id"] for d in read_json(listed)] == [g3()["id"], g2()["id"]]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(g3()) + "\n\n{oops\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        read_json(broken)
    assert str(info.value) == (
        f"{broken}: line 3 is not JSON (Expecting property name enclosed in double quotes); "
        "give one document, a list of documents, or one document per line"
    )


def test_report_is_json() -> None:
    _, report = convert(g2())
    assert isinstance(report, ImportReport)
    assert json.loads(json.dumps(report.as_dict()))["source"] == "G2"
