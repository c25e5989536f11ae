"""`Idempotency-Key` (H5): a retried request gets the first one's result; its turn runs once.

A client that times out cannot know whether its turn ran. Sent again with the same key, the
request is not run again: it gets the first result, and if the first is still running, it
waits for it. Keys are scoped to the principal (two callers may pick the same key) and kept in
this process for `ttl` seconds (the newest `capacity` of them). Only successful turns are kept:
a failed turn saved nothing (P3), so running its retry is exactly what the client wants.

This cache is the fast path of one process: a retry that reaches it waits for the first
request instead of running the turn again. What makes a retry safe on *any* worker, even after
the first one died, is the record the engine saves with the turn itself
(`picoflow.engine._idempotent`, O4): the routes pass the key to the engine as well.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request

from picoflow.engine import TurnResult
from picoflow.engine._idempotent import fingerprint
from picoflow.server._errors import ApiError

__all__ = ["IDEMPOTENCY_HEADER", "Claim", "IdempotencyCache", "Slot", "check_key", "fingerprint"]

logger = logging.getLogger(__name__)

IDEMPOTENCY_HEADER = "Idempotency-Key"
_KEY = re.compile(r"[\x21-\x7e]{1,255}")


def check_key(key: str | None) -> str | None:
    """The key as sent, or None without one; a malformed key is a 400."""
    if key is None or _KEY.fullmatch(key):
        return key
    raise ApiError(
        400,
        f"The {IDEMPOTENCY_HEADER} header must be 1 to 255 visible ASCII characters (a UUID "
        "works well); send a new one for each new message and the same one when you retry.",
        code="invalid_idempotency_key",
    )


def key_of(request: Request) -> str | None:
    """The request's key, or None; well-formed (sent twice, the input rules refused it, H9)."""
    return check_key(request.headers.get(IDEMPOTENCY_HEADER))


Slot = tuple[str | None, str]  # (principal, key): two callers may pick the same key


@dataclass(slots=True)
class _Entry:
    fingerprint: bytes
    result: asyncio.Future[TurnResult]
    expires: float


@dataclass(frozen=True, slots=True)
class Claim:
    """A request that holds a key while its turn runs; it must end in `finish` or `abandon`."""

    cache: IdempotencyCache
    slot: Slot
    result: asyncio.Future[TurnResult]

    def finish(self, result: TurnResult) -> None:
        """Hand the result to waiting retries; keep it only if the turn succeeded."""
        if not self.result.done():
            self.result.set_result(result)
        if not result.success:
            self.cache.drop(self)

    def abandon(self) -> None:
        """The request ended without a result: its retries are told, and start over."""
        if self.result.done():
            return
        self.result.set_exception(
            ApiError(
                409,
                f"The first request with this {IDEMPOTENCY_HEADER} ended before its turn "
                "finished. Send the request again.",
                code="idempotent_request_interrupted",
            )
        )
        self.result.exception()  # marks it retrieved: no warning when no retry is waiting
        self.cache.drop(self)


class IdempotencyCache:
    """The first result of each key, per principal; bounded in count and in age."""

    def __init__(self, *, capacity: int = 10_000, ttl: float = 3600.0) -> None:
        self._capacity = capacity
        self._ttl = ttl
        self._entries: OrderedDict[Slot, _Entry] = OrderedDict()

    async def run(
        self, slot: Slot, request_fingerprint: bytes, start: Callable[[], Awaitable[TurnResult]]
    ) -> tuple[TurnResult, bool]:
        """The key's first result (and True), or run `start` now (and False)."""
        first = self.waiting(slot, request_fingerprint)
        if first is not None:
            return await asyncio.shield(first), True
        claim = self.begin(slot, request_fingerprint)
        try:
            result = await start()
        except BaseException:  # start() raised or was cancelled: retries must not wait forever
            claim.abandon()
            raise
        claim.finish(result)
        return result, False

    def waiting(self, slot: Slot, request_fingerprint: bytes) -> asyncio.Future[TurnResult] | None:
        """The first request's result to wait for, or None if this key is new."""
        entry = self._current(slot, request_fingerprint)
        return None if entry is None else entry.result

    def begin(self, slot: Slot, request_fingerprint: bytes) -> Claim:
        """Claim the key for a request that is about to run; retries wait on its result."""
        future: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        self._entries[slot] = _Entry(request_fingerprint, future, time.monotonic() + self._ttl)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return Claim(self, slot, future)

    def drop(self, claim: Claim) -> None:
        """Forget the claim's key, unless a newer request holds it by now."""
        entry = self._entries.get(claim.slot)
        if entry is not None and entry.result is claim.result:
            del self._entries[claim.slot]

    def _current(self, slot: Slot, request_fingerprint: bytes) -> _Entry | None:
        entry = self._entries.get(slot)
        if entry is None:
            return None
        if entry.expires < time.monotonic():
            del self._entries[slot]
            return None
        if entry.fingerprint != request_fingerprint:
            raise ApiError(
                422,
                f"The {IDEMPOTENCY_HEADER} '{slot[1]}' was already used for a different request "
                "(another route, flow, message, session, revision or config). Send each new "
                "message with a new key, and reuse a key only to retry the same request.",
                code="idempotency_key_reused",
            )
        logger.info(
            "a request repeats %s %r: it gets the first request's result%s",
            IDEMPOTENCY_HEADER,
            slot[1],
            "" if entry.result.done() else " once that request finishes",
        )
        return entry
