"""The JSON shapes of the HTTP API, named as PicoFlow clients send and read them.

Python attributes are snake_case; the wire names (`flowName`, `contentType`, `requestId`) are
pydantic aliases, so the OpenAPI page at `/docs` shows exactly what a client must send.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

if TYPE_CHECKING:
    from picoflow.engine import TurnResult

__all__ = [
    "RunRequest",
    "RunEnvelope",
    "ErrorEnvelope",
    "StreamDone",
    "EndEnvelope",
    "Health",
    "envelope_of",
    "wire_envelope",
]


class _WireModel(BaseModel):
    """Accept both the wire names and the attribute names; serialise with the wire names."""

    model_config = ConfigDict(populate_by_name=True)

    def to_wire(self) -> dict[str, Any]:
        """The JSON object as it goes out: aliases, and no keys whose value is None."""
        return self.model_dump(by_alias=True, exclude_none=True)


# Fields a client may put in the body by mistake, which would be ignored without a word: a
# session id there starts a new session every turn, and `userMessage` (the name PicoFlow's own
# Swagger DTO gives the text) sends an empty message. Other unknown fields are ignored, as
# PicoFlow's server ignores them.
_SESSION_KEYS = frozenset(
    {"session", "sessionId", "session_id", "CHAT_SESSION_ID", "chatSessionId"}
)
_MESSAGE_KEYS = frozenset({"userMessage", "user_message"})


class RunRequest(_WireModel):
    """Body of `POST /ai/run` and `POST /ai/stream`."""

    model_config = ConfigDict(
        populate_by_name=True,
        json_schema_extra={
            "examples": [{"flowName": "HotelFlow", "message": "Two nights in Lisbon"}]
        },
    )

    flow_name: str = Field(alias="flowName", description="A name listed by GET /ai/flows.")
    message: str = Field(
        "",
        description="The user's text. Empty or omitted on a new session: the flow opens.",
    )
    config: dict[str, Any] | None = Field(
        None,
        description="Context stored once, when the session is created; ignored afterwards.",
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_misplaced(cls, data: Any) -> Any:
        """Refuse a field that would be ignored silently (`_SESSION_KEYS`, `_MESSAGE_KEYS`)."""
        if type(data) is not dict or (
            _SESSION_KEYS.isdisjoint(data) and _MESSAGE_KEYS.isdisjoint(data)
        ):
            return data
        found = next(key for key in data if key in _SESSION_KEYS or key in _MESSAGE_KEYS)
        if found in _SESSION_KEYS:
            raise PydanticCustomError(
                "misplaced_session",
                "the session id goes in the CHAT_SESSION_ID header, not in the body's "
                "'{found}' (without the header every message starts a new session)",
                {"found": found},
            )
        raise PydanticCustomError(
            "misplaced_message",
            "the user's text goes in 'message', not '{found}'",
            {"found": found},
        )


class RunEnvelope(_WireModel):
    """The reply of a turn: branch on `success`, stop when `completed`, keep `session`."""

    success: bool
    completed: bool = Field(description="The session reached its end; a new id starts over.")
    message: str = Field(description="The reply text, or what went wrong.")
    session: str = Field(description="The session id to send with the next turn ('' if none).")
    content_type: str = Field("text/plain", alias="contentType")
    step: str | None = Field(None, description="The step the session is in after the turn.")
    pending_approvals: list[dict[str, Any]] | None = Field(
        None,
        alias="pendingApprovals",
        description="Tool calls that wait for a person's approval; absent when none.",
    )


class ErrorEnvelope(RunEnvelope):
    """A failed request: the same envelope with `success: false`, a code and a request id."""

    code: str | None = Field(
        None,
        description="What went wrong, for programs: a stable name such as `body_too_large` "
        "or `store_unavailable` (docs/deployment.md lists them).",
    )
    request_id: str | None = Field(
        None,
        alias="requestId",
        description="The id the server logged the failure's details under (also the "
        "X-Request-ID header); quote it when reporting a problem.",
    )


class StreamDone(ErrorEnvelope):
    """Data of the final `done` event of `POST /ai/stream`."""

    status: int = Field(description="The HTTP status POST /ai/run would have answered with.")


class EndEnvelope(_WireModel):
    """The reply of `POST /ai/end`."""

    success: bool
    session: str
    message: str


class Health(_WireModel):
    """The reply of `GET /healthcheck`."""

    status: str = "ok"
    timestamp: str = Field(description="The server's UTC time, ISO 8601.")


def wire_envelope(result: TurnResult) -> dict[str, Any]:
    """`envelope_of(result).to_wire()`, built straight as the JSON object where it is plain.

    A turn's reply is the one object every request sends; its fields come typed from the
    engine, so validating them into a model only to dump them again is work for nobody (issue
    39). A reply with approvals goes through the model, whose dump cleans their records.
    """
    if result.pending_approvals:
        return envelope_of(result).to_wire()
    wire: dict[str, Any] = {
        "success": True,
        "completed": result.completed,
        "message": result.message,
        "session": result.session_id or "",
        "contentType": result.content_type,
    }
    if result.step is not None:
        wire["step"] = result.step
    return wire


def envelope_of(result: TurnResult) -> RunEnvelope:
    """The envelope of a successful turn."""
    return RunEnvelope(
        success=True,
        completed=result.completed,
        message=result.message,
        session=result.session_id or "",
        content_type=result.content_type,
        step=result.step,
        pending_approvals=result.pending_approvals or None,
    )
