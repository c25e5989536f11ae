"""Client-chosen conversation ids (G1-G3): a thread or chat id, bound to its owner's session.

AG-UI clients make their own `threadId` (a UUID) and the AI SDK's `useChat` its own chat `id`
(16 characters); neither ever reads a session header. picoflow's session ids are issued by
the engine, so the protocol routes keep a *binding* from the client's id to the session the
engine issued for it. The binding's key is a digest of (owner, flow, client id): another owner
who sends the same id computes another key, so it finds nothing and starts a conversation of
its own (H4: never theirs). The flow is part of the key because the URL names it: the same
thread id under another flow is another conversation, not a session of the wrong flow.

Bindings live where the app keeps resumable streams (O5): the store's kept streams, so every
worker finds them, or this process's memory for a store without that ability. A binding is a
kept stream whose events are the sessions the thread had, the newest last, each with the
idempotency key of the run that started it: a thread whose session completed or expired gets
a new session, appended. The key is kept because a retry of that first run must reach the
engine exactly as the first did, without a session id, to get the first result (O4). Opening
is atomic in every store (an id in use is refused): two first runs of one thread both bind,
and the newest binding wins.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import re
import time

from picoflow.errors import PicoflowError
from picoflow.server._errors import ApiError
from picoflow.server._kept import KeptStreams

__all__ = ["BINDING_DAYS", "ThreadBindings", "check_client_id"]

logger = logging.getLogger(__name__)

# A UUID, a nanoid, a 16-character chat id, a ULID: letters, digits and `-_.:`, 1 to 128.
_CLIENT_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
BINDING_DAYS = 400  # a binding outlives any session TTL one would set; each turn moves it on


def check_client_id(value: object, field: str, code: str = "invalid_thread_id") -> str:
    """A client-made id (a thread's, a run's, a message's), or a 400 naming the field."""
    if isinstance(value, str) and _CLIENT_ID.fullmatch(value):
        return value
    shown = f"{len(value)} characters" if isinstance(value, str) else type(value).__name__
    raise ApiError(
        400,
        f"`{field}` must be 1 to 128 letters, digits, '-', '_', '.' or ':' (a UUID works); "
        f"got {shown}. Keep the id your client made and send it on every request.",
        code=code,
    )


def _stamp(seconds: float) -> str:
    whole, millis = divmod(int(seconds * 1000), 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


class ThreadBindings:
    """(owner, flow, client id) -> the session the engine issued, kept in `streams`."""

    def __init__(self, streams: KeptStreams) -> None:
        self._streams = streams

    @staticmethod
    def key(owner: str | None, flow: str, client_id: str, kind: str = "th") -> str:
        """The binding's id: unguessable from the client id alone when there is an owner.

        `kind` "th" is the thread's session; "as" the chat's newest kept stream (O5).
        """
        text = "\x00".join((f"picoflow-{kind}", owner or "", flow, client_id))
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        return kind + base64.urlsafe_b64encode(digest).decode()[:40]

    async def session_of(
        self, owner: str | None, flow: str, client_id: str
    ) -> tuple[str | None, str | None]:
        """The session this client id names for `owner` and the key that started it, or Nones."""
        kept = await self._streams.stream_read(
            self.key(owner, flow, client_id), 0, _stamp(time.time())
        )
        if kept is None or kept.owner != owner or not kept.events:
            return None, None
        newest = json.loads(kept.events[-1][1])
        return newest["session"], newest.get("key")

    async def bind(
        self, owner: str | None, flow: str, client_id: str, session_id: str, key: str
    ) -> None:
        """Record that the client id now names `session_id`, which the run of `key` started.

        A store failure is logged, not raised: the turn is saved and its reply already sent;
        the client's next run then starts a new conversation, which the log explains.
        """
        binding, now = self.key(owner, flow, client_id), time.time()
        expires = _stamp(now + BINDING_DAYS * 86400)
        event = json.dumps({"session": session_id, "key": key})
        try:
            kept = await self._streams.stream_read(binding, 0, _stamp(now))
            if kept is None:
                try:
                    await self._streams.stream_open(binding, owner, expires, _stamp(now))
                except ValueError:  # another run of this thread bound it first
                    kept = await self._streams.stream_read(binding, 0, _stamp(now))
            count = 0 if kept is None else len(kept.events)
            await self._streams.stream_append(binding, [(count + 1, event)], expires)
        except (PicoflowError, ValueError) as exc:
            logger.warning("thread %s not bound to session %s: %s", binding, session_id, exc)

    async def newest_stream(self, owner: str | None, flow: str, client_id: str) -> str | None:
        """The id of the chat's newest kept stream (O5), or None."""
        key, now = self.key(owner, flow, client_id, "as"), _stamp(time.time())
        kept = await self._streams.stream_read(key, 0, now)
        if kept is None or kept.owner != owner or not kept.events:
            return None
        return kept.events[-1][1]

    async def point_to_stream(
        self, owner: str | None, flow: str, client_id: str, turn_id: str
    ) -> None:
        """Record `turn_id` as the chat's newest stream; a failure only logs (no resume)."""
        key, now = self.key(owner, flow, client_id, "as"), time.time()
        expires = _stamp(now + BINDING_DAYS * 86400)
        try:
            kept = await self._streams.stream_read(key, 0, _stamp(now))
            if kept is None:
                with contextlib.suppress(ValueError):  # another request opened it first
                    await self._streams.stream_open(key, owner, expires, _stamp(now))
                kept = await self._streams.stream_read(key, 0, _stamp(now))
            count = 0 if kept is None else len(kept.events)
            await self._streams.stream_append(key, [(count + 1, turn_id)], expires)
        except (PicoflowError, ValueError) as exc:
            logger.warning("chat stream %s not recorded (no resume): %s", turn_id, exc)
