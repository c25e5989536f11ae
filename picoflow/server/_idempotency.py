"""`Idempotency-Key` (H5): a retried request gets the first one's result; its turn runs once.

A client that times out cannot know whether its turn ran. Sent again with the same key, the
request is not run again: it gets the first result, and if the first is still running, it
waits for it. Keys are scoped to the principal (two callers may pick the same key) and kept in
this process for `ttl` seconds (the newest `capacity` of them). Only successful turns are kept:
a failed turn saved nothing (P3), so running its retry is exactly what the client wants.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..engine import TurnResult
from ._errors import ApiError

__all__ = ["IDEMPOTENCY_HEADER", "IdempotencyCache", "check_key"]

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


def fingerprint(*parts: Any) -> str:
    """What identifies a request, so a key reused for another request can be refused."""
    return json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(slots=True)
class _Entry:
    fingerprint: str
    result: asyncio.Future[TurnResult]
    expires: float


class IdempotencyCache:
    """The first result of each key, per principal; bounded in count and in age."""

    def __init__(self, *, capacity: int = 10_000, ttl: float = 3600.0) -> None:
        self._capacity = capacity
        self._ttl = ttl
        self._entries: OrderedDict[tuple[str | None, str], _Entry] = OrderedDict()

    async def run(
        self,
        slot: tuple[str | None, str],
        request_fingerprint: str,
        start: Callable[[], Awaitable[TurnResult]],
    ) -> tuple[TurnResult, bool]:
        """The key's first result (and True), or run `start` now (and False)."""
        entry = self._current(slot, request_fingerprint)
        if entry is not None:
            return await asyncio.shield(entry.result), True
        future = self.begin(slot, request_fingerprint)
        try:
            result = await start()
        except BaseException:
            self.abandon(slot, future)
            raise
        self.finish(slot, future, result)
        return result, False

    def waiting(
        self, slot: tuple[str | None, str], request_fingerprint: str
    ) -> asyncio.Future[TurnResult] | None:
        """The first request's result to wait for, or None if this key is new."""
        entry = self._current(slot, request_fingerprint)
        return None if entry is None else entry.result

    def begin(
        self, slot: tuple[str | None, str], request_fingerprint: str
    ) -> asyncio.Future[TurnResult]:
        """Claim the key for a request that is about to run; retries wait on the future."""
        future: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        self._entries[slot] = _Entry(request_fingerprint, future, time.monotonic() + self._ttl)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return future

    def finish(
        self, slot: tuple[str | None, str], future: asyncio.Future[TurnResult], result: TurnResult
    ) -> None:
        """Hand the result to waiting retries; keep it only if the turn succeeded."""
        if not future.done():
            future.set_result(result)
        if not result.success:
            self._drop(slot, future)

    def abandon(self, slot: tuple[str | None, str], future: asyncio.Future[TurnResult]) -> None:
        """The first request ended without a result (client gone): its retries start over."""
        if not future.done():
            future.set_exception(
                ApiError(
                    409,
                    f"The first request with this {IDEMPOTENCY_HEADER} ended before its turn "
                    "finished. Send the request again.",
                    code="idempotent_request_interrupted",
                )
            )
            future.exception()  # marks it retrieved: no warning when no retry is waiting
        self._drop(slot, future)

    def _drop(self, slot: tuple[str | None, str], future: asyncio.Future[TurnResult]) -> None:
        entry = self._entries.get(slot)
        if entry is not None and entry.result is future:
            del self._entries[slot]

    def _current(self, slot: tuple[str | None, str], request_fingerprint: str) -> _Entry | None:
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
                "(another flow, message, session or config). Send each new message with a new "
                "key, and reuse a key only to retry the same request.",
                code="idempotency_key_reused",
            )
        logger.info(
            "a request repeats %s %r: it gets the first request's result%s",
            IDEMPOTENCY_HEADER,
            slot[1],
            "" if entry.result.done() else " once that request finishes",
        )
        return entry
