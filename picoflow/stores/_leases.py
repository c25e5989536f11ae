"""Session leases (O4): which worker runs a turn of a session right now, for a while.

With `FlowEngine(concurrent_turns="queue")` a turn first takes its session's lease in the store;
a turn of the same session on another worker finds it taken and waits. A lease names its holder
(one token per turn) and ends at an expiry, so a holder that died (`kill -9`, a lost machine)
blocks nobody for longer than the lease lasts. The holder renews it while its turn runs and
removes it when the turn ends.

Every store offers the same two calls, with the same checks:

- `acquire_lease(session_id, holder, seconds)`: take the lease if nobody holds it, if its
  holder's time ran out, or if `holder` holds it already (that renews it), so that it lasts
  `seconds` from now; True if `holder` holds it now. One atomic step in every store.
- `release_lease(session_id, holder)`: remove the lease if `holder` still holds it (a lease
  that expired and was taken by another is left alone).

A lease only orders turns; it is not what keeps them correct. Saves still check the session's
revision (P4), so a holder that lost its lease (paused longer than it lasts) cannot overwrite a
turn saved meanwhile: its save is a conflict.

Expiry is measured with the store's clock where it has one: this process's monotonic clock in
`MemoryStore`, the machine's wall clock in `SQLiteStore` (all its processes share the machine),
each worker's wall clock in `MongoStore`: keep the workers' clocks in sync (NTP), as a clock
that is off shortens or lengthens a dead holder's lease by as much.
"""

from __future__ import annotations

import math
import time

from picoflow.stores._checks import check_open

__all__ = ["MemoryLeases", "check_lease", "check_release"]


def check_release(session_id: object, holder: object) -> None:
    """Refuse a session id or holder that is not a non-empty string (ValueError)."""
    for name, value in (("session_id", session_id), ("holder", holder)):
        if not isinstance(value, str) or not value:
            raise ValueError(
                f"A session lease needs {name} as a non-empty string, got {value!r}. Pass the "
                "session's id and the token that names this turn."
            )


def check_lease(session_id: object, holder: object, seconds: object) -> float:
    """`seconds` as a float, after refusing bad arguments (ValueError)."""
    check_release(session_id, holder)
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or seconds <= 0
    ):
        raise ValueError(
            f"A session lease lasts a number of seconds > 0, got {seconds!r}. Pass how long "
            "the lease holds if its holder dies without releasing it."
        )
    return float(seconds)


class MemoryLeases:
    """`MemoryStore`'s leases: a dict of this process, expiring on the monotonic clock.

    No await between reading and writing, so each call is atomic under asyncio.
    """

    _closed: bool
    _leases: dict[str, tuple[str, float]]  # session id -> (holder, monotonic expiry)

    async def acquire_lease(self, session_id: str, holder: str, seconds: float) -> bool:
        """Take or renew the session's lease for `seconds`; True if `holder` holds it now."""
        self._check_leases_open()
        seconds = check_lease(session_id, holder, seconds)
        now = time.monotonic()
        held = self._leases.get(session_id)
        if held is not None and held[0] != holder and held[1] > now:
            return False
        self._leases[session_id] = (holder, now + seconds)
        return True

    async def release_lease(self, session_id: str, holder: str) -> None:
        """Remove the session's lease if `holder` still holds it."""
        self._check_leases_open()
        check_release(session_id, holder)
        held = self._leases.get(session_id)
        if held is not None and held[0] == holder:
            del self._leases[session_id]

    def _check_leases_open(self) -> None:
        check_open(self, self._closed)
