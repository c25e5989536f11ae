"""`POST /ag-ui/{flowName}`: AG-UI 1.0 (G1), built on the `ag-ui-protocol` package.

A `RunAgentInput` comes in; AG-UI events go out as Server-Sent Events, made with the package's
event classes and its `EventEncoder`, so the wire is what every AG-UI client reads (CopilotKit,
`@ag-ui/client`'s `HttpAgent`). The mapping, and what AG-UI cannot say, are in
`docs/front-ends.md`:

- `threadId` names the conversation (`_ids`); `runId` is the idempotency key (H5, O4).
- Only the newest message is read, and only if it is the user's: the client resends the whole
  history every run, but the server's session is the truth (an edit or rewind is the history
  routes' business, W1-W4).
- `resume` answers the interrupts a run ended with: each interrupt is a pending approval (K3),
  and its entry's payload says `approve`, `reject` or `edit` (a `cancelled` entry rejects).

Refusals found before the stream opens (credentials, body, limits, unknown flow, a bad
`threadId`) are the ordinary 4xx envelope of `/ai/run`; a turn that fails is `RUN_ERROR` with
the code `/ai/run` would have answered. This module is imported only when the `ag-ui` extra is
installed (`picoflow[ag-ui]`); the core never imports `ag_ui`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    AssistantMessage,
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from picoflow.engine import StreamEvent, TurnResult
from picoflow.server._errors import ApiError, validation_problem
from picoflow.server._headers import REQUEST_ID_HEADER, request_id_for
from picoflow.server._stream import STREAM_HEADERS
from picoflow.server.protocols._common import (
    RESPONSES,
    Call,
    bound_call,
    check_message,
    decide,
    open_call,
    pumped,
    read_body,
    run_turn_frames,
    snapshot_of,
    tool_results,
)
from picoflow.server.protocols._ids import check_client_id

__all__ = ["ag_ui_router", "AgUiRun"]

ag_ui_router = APIRouter()
_HINT = (
    'Send an AG-UI RunAgentInput: {"threadId": "...", "runId": "...", "messages": '
    '[{"id": "m1", "role": "user", "content": "Hi"}]}.'
)
_ENCODER = EventEncoder()


def _now_ms() -> int:
    """AG-UI timestamps are whole milliseconds since the epoch (G1)."""
    return time.time_ns() // 1_000_000


class AgUiRun:
    """One run's events: it tracks the open text message, steps and tool calls.

    AG-UI's client checks the order (a message or step left open at `RUN_FINISHED` is an
    error), so every open thing is closed before the run ends.
    """

    def __init__(self, thread_id: str, run_id: str, messages: list[Any]) -> None:
        self.thread_id, self.run_id, self.messages = thread_id, run_id, messages
        self._count = 0
        self._text_id: str | None = None
        self._segment = ""  # the text of the open (or last) text message
        self._steps: list[str] = []
        self._calls: list[tuple[str, Any]] = []
        self._call_ids: list[str] = []
        self._retracted = False
        self._template: tuple[str, tuple[str, str, str] | None] | None = None

    def _id(self, kind: str) -> str:
        self._count += 1
        return f"{self.run_id}-{kind}{self._count}"

    def _frames(self, *events: BaseEvent) -> list[str]:
        for event in events:
            event.timestamp = _now_ms()
        return [_ENCODER.encode(event) for event in events]

    def started(self) -> list[str]:
        started = RunStartedEvent(
            thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION
        )  # the spec: a producer MUST declare the version it speaks on the run's first event
        return self._frames(started)

    def event(self, event: StreamEvent) -> list[str]:
        """The AG-UI events of one engine event (tokens, tools, steps; others have none)."""
        data, kind = event.data, event.kind
        if kind == "token":
            return self._token(str(data.get("text", "")), data.get("step"))
        if kind == "retract":
            self._retracted = True  # AG-UI cannot take text back: a snapshot ends the run
            return []
        if kind == "tool_call":
            return self._tool_call(str(data.get("name")), data.get("args"), data.get("step"))
        if kind == "approval_requested":
            return self._approval_call(data)
        if kind == "step_changed":
            return self._step_into(str(data.get("to")), leave=str(data.get("from")))
        if kind in ("logic_step", "nested_start"):
            return self._step_into(str(data.get("step")), leave=None)
        if kind == "nested_end":
            return self._close_text() + self._leave(str(data.get("step")))
        return []

    def _enter(self, step: Any) -> list[str]:
        if not isinstance(step, str) or step in self._steps:
            return []
        self._steps.append(step)
        return self._frames(StepStartedEvent(step_name=step))

    def _leave(self, step: str) -> list[str]:
        if step not in self._steps:
            return []
        closing = self._steps[self._steps.index(step) :][::-1]
        del self._steps[self._steps.index(step) :]
        return self._frames(*(StepFinishedEvent(step_name=name) for name in closing))

    def _step_into(self, step: str, leave: str | None) -> list[str]:
        frames = self._close_text()
        if leave is not None:
            frames += self._leave(leave)
        return frames + self._enter(step)

    def _token(self, text: str, step: Any) -> list[str]:
        if not text:
            return []
        frames = self._enter(step)
        if self._text_id is None:
            self._text_id, self._segment = self._id("m"), ""
            frames += self._frames(TextMessageStartEvent(message_id=self._text_id))
        self._segment += text
        return [*frames, self._content(text)]

    def _content(self, text: str) -> str:
        """A `TEXT_MESSAGE_CONTENT` frame, the one event of every token.

        The package's encoder writes the message's first one; the rest fill the frame it
        wrote, so a token costs a JSON string escape instead of a model's validation and its
        serializer (which made AG-UI the dearer protocol, bench/protocol_overhead.py).
        """
        if self._template is None or self._template[0] != self._text_id:
            self._template = (str(self._text_id), _content_template(str(self._text_id)))
        parts = self._template[1]
        if parts is None:
            return self._frames(TextMessageContentEvent(message_id=self._template[0], delta=text))[
                0
            ]
        head, middle, tail = parts
        return f"{head}{_now_ms()}{middle}{json.dumps(text, ensure_ascii=False)[1:-1]}{tail}"

    def _close_text(self) -> list[str]:
        if self._text_id is None:
            return []
        ended, self._text_id = self._text_id, None
        return self._frames(TextMessageEndEvent(message_id=ended))

    def _tool_call(self, name: str, args: Any, step: Any, call_id: str | None = None) -> list[str]:
        frames = self._enter(step) + self._close_text()
        call_id = call_id or self._id("t")
        self._calls.append((name, args))
        self._call_ids.append(call_id)
        return frames + self._frames(
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name),
            ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(args, ensure_ascii=False)),
            ToolCallEndEvent(tool_call_id=call_id),
        )

    def _approval_call(self, data: dict[str, Any]) -> list[str]:
        """A call waiting for a person: its id is the approval's, so a resume can name it."""
        tool, args, step = str(data.get("tool")), data.get("args"), data.get("step")
        frames = self._tool_call(tool, args, step, call_id=str(data.get("id")))
        self._calls.pop()  # it has no result yet
        self._call_ids.pop()
        return frames

    def results(self, doc: dict[str, Any] | None) -> list[str]:
        """`TOOL_CALL_RESULT` of each call the turn ran, as the session stored its result."""
        frames: list[str] = []
        for call_id, content in zip(self._call_ids, tool_results(doc, self._calls), strict=True):
            if content is not None:
                frames += self._frames(
                    ToolCallResultEvent(
                        message_id=self._id("r"), tool_call_id=call_id, content=content
                    )
                )
        return frames

    def resumed(self, approval: dict[str, Any]) -> None:
        """A decided approval's call: its result (if it ran) is reported under its id."""
        self._calls.append((str(approval.get("tool")), approval.get("args")))
        self._call_ids.append(str(approval["id"]))

    def say(self, text: str, step: Any) -> list[str]:
        """One whole text message (the reply to an earlier decision of the same resume)."""
        return self._token(text, step) + self._close_text() if text else []

    def finished(self, result: TurnResult, doc: dict[str, Any] | None) -> list[str]:
        """The reply's text if none streamed, results, state, steps closed, `RUN_FINISHED`."""
        frames = self._reply(result)
        frames += self.results(doc)
        frames += self._frames(StateSnapshotEvent(snapshot=snapshot_of(result, doc)))
        frames += self._leave(self._steps[0]) if self._steps else []
        return frames + self._frames(self._run_finished(result))

    def _reply(self, result: TurnResult) -> list[str]:
        """The final text: streamed already, sent whole now, or corrected by a snapshot."""
        if self._text_id is None and not self._segment and result.message:
            frames = self._enter(result.step) + self._token(result.message, result.step)
            return frames + self._close_text()
        frames = self._close_text()
        if self._retracted or (self._segment and self._segment != result.message):
            reply = AssistantMessage(id=self._id("m"), content=result.message)
            frames += self._frames(MessagesSnapshotEvent(messages=[*self.messages, reply]))
        return frames

    def _run_finished(self, result: TurnResult) -> RunFinishedEvent:
        waiting = [
            Interrupt(
                id=a["id"],
                reason="tool_approval",
                message=a.get("waiting_reply"),
                tool_call_id=a["id"],
                response_schema=_DECISION_SCHEMA,
                metadata={"tool": a.get("tool"), "args": a.get("args"), "step": a.get("step")},
            )
            for a in result.pending_approvals
        ]
        outcome = RunFinishedInterruptOutcome(interrupts=waiting) if waiting else None
        return RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            outcome=outcome,
            result={"message": result.message, "completed": result.completed},
        )

    def failed(self, error: ApiError, request_id: str) -> list[str]:
        frames = self._close_text()
        frames += self._leave(self._steps[0]) if self._steps else []
        failure = RunErrorEvent(
            message=error.message, code=error.code, metadata={"requestId": request_id}
        )
        return frames + self._frames(failure)


_WHEN, _WHAT = 9007199254740991, "\ue000"  # a timestamp and a text no real event carries


def _content_template(message_id: str) -> tuple[str, str, str] | None:
    """The encoder's `TEXT_MESSAGE_CONTENT` frame cut around its timestamp and delta.

    None if the frame does not have them once each in that order (a future encoder): every
    token then goes through the encoder.
    """
    event = TextMessageContentEvent(message_id=message_id, delta=_WHAT, timestamp=_WHEN)
    frame = _ENCODER.encode(event)
    head, _, rest = frame.partition(str(_WHEN))
    middle, _, tail = rest.partition(_WHAT)
    if not tail or str(_WHEN) in rest or _WHAT in tail or message_id not in head + middle:
        return None
    return head, middle, tail


_DECISION_SCHEMA = {
    "type": "object",
    "properties": {
        "decision": {"enum": ["approve", "reject", "edit"]},
        "args": {"type": "object", "description": "The call's new arguments, for edit."},
        "note": {"type": "string", "description": "Why; the model reads it on a reject."},
    },
    "required": ["decision"],
}


@ag_ui_router.post(
    "/ag-ui/{flow_name}",
    response_class=StreamingResponse,
    summary="Run one turn as an AG-UI 1.0 agent (RunAgentInput in, AG-UI events out)",
    responses={**RESPONSES, 200: {"content": {"text/event-stream": {}}}},
)
async def run_agent(flow_name: str, request: Request) -> StreamingResponse:
    """A run: the newest user message is the turn, or `resume` decides the waiting approvals."""
    settings, principal = await open_call(request)
    run = _run_input(await read_body(request, settings, _HINT))
    call = await bound_call(request, settings, principal, flow_name, ("threadId", run.thread_id))
    out = AgUiRun(run.thread_id, run.run_id, list(run.messages))
    frames: AsyncGenerator[str, None]
    if run.resume:
        decisions = [_decision(entry, call) for entry in run.resume]
        frames = _resume_frames(call, decisions, out)
    else:
        message, config = _newest_user_text(run, call), _config_of(run)
        check_message(call, message, config)
        key = f"{call.client_id}/{run.run_id}"  # H5, O4: the run's id, within its thread
        frames = run_turn_frames(call, message, config, key, out)
    headers = {**STREAM_HEADERS, REQUEST_ID_HEADER: request_id_for(request)}
    return StreamingResponse(
        pumped(frames, call, out), media_type=_ENCODER.get_content_type(), headers=headers
    )


def _run_input(data: dict[str, Any]) -> RunAgentInput:
    """The body as a RunAgentInput, or 400 naming the first problems; runId is the key."""
    try:
        run = RunAgentInput.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(validation_problem(error) for error in exc.errors()[:3])
        raise ApiError(
            400, f"The RunAgentInput is not valid ({problems}). {_HINT}", code="invalid_body"
        ) from None
    check_client_id(run.run_id, "runId", "invalid_body")
    return run


def _newest_user_text(run: RunAgentInput, call: Call) -> str:
    """The newest message's text when it is the user's: the only new thing in a run."""
    if not run.messages:
        if call.session_id is None:
            return ""  # a new thread with no message: the flow opens the conversation
        raise ApiError(
            400,
            "The run has no messages; send the user's new message last in `messages` (or "
            "`resume` to answer the interrupt the last run ended with).",
            code="invalid_body",
        )
    newest = run.messages[-1]
    role = getattr(newest, "role", "?")
    if role != "user":
        raise ApiError(
            400,
            f"The newest message is a {role!r} message; a run continues the thread with the "
            "user's new message last (picoflow runs its own tools: it sends no tool calls "
            "for the client to answer).",
            code="invalid_body",
        )
    content = getattr(newest, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)


def _config_of(run: RunAgentInput) -> dict[str, Any] | None:
    """`forwardedProps.config`: the new session's config (F7); ignored once it exists."""
    props = run.forwarded_props
    config = props.get("config") if isinstance(props, dict) else None
    return config if isinstance(config, dict) else None


_APPROVE = {True, "approve", "approved", "yes"}
_REJECT = {False, "reject", "rejected", "no"}
Decision = tuple[str, str, dict[str, Any] | None, str | None]  # approval, decision, args, note


def _decision(entry: Any, call: Call) -> Decision:
    """A resume entry as an approval decision: `{"decision", "args"?, "note"?}` or a yes/no."""
    payload = entry.payload
    if entry.status == "cancelled":
        return entry.interrupt_id, "reject", None, "The user cancelled."
    if isinstance(payload, dict):
        decision = payload.get("decision", payload.get("approved"))
        args, note = payload.get("args"), payload.get("note")
    else:
        decision, args, note = payload, None, None
    if decision in _APPROVE or decision in _REJECT or decision == "edit":
        word = "approve" if decision in _APPROVE else "reject" if decision in _REJECT else "edit"
        if (args is not None and not isinstance(args, dict)) or not isinstance(note, str | None):
            raise ApiError(400, "`args` must be an object, `note` a text.", code="invalid_body")
        check_message(call, note or "", args)  # H11: a decision's texts have limits too
        return entry.interrupt_id, word, args, note
    raise ApiError(
        400,
        f"The resume entry for {entry.interrupt_id!r} must say what to do: a payload of "
        '{"decision": "approve" | "reject" | "edit", "args"?, "note"?} (or true / false).',
        code="invalid_body",
    )


async def _resume_frames(
    call: Call, decisions: list[Decision], out: AgUiRun
) -> AsyncGenerator[str, None]:
    """Decide each approval in turn (K3); the last decision's reply ends the run."""
    for frame in out.started():
        yield frame
    result: TurnResult | None = None
    try:
        for approval_id, decision, args, note in decisions:
            if result is not None:
                for frame in out.say(result.message, result.step):
                    yield frame
            result, asked = await decide(call, approval_id, decision, args, note)
            out.resumed(asked)
    except ApiError as error:
        for frame in out.failed(error, request_id_for(call.request)):
            yield frame
        return
    assert result is not None and result.session_id is not None  # resume is never empty
    doc = await call.settings.engine.get_session(result.session_id, owner=call.principal)
    for frame in out.finished(result, doc):
        yield frame
