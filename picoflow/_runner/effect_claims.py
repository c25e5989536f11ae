"""A tool with effects is claimed in the store before it runs, so a kill -9 never repeats it (K8).

A turn is saved once, at its end (P3). A worker killed after a tool acted on the world and
before that save leaves no trace of the call in the session, so the client's retry, on any
worker, would run the tool a second time. So before a tool with effects runs, its call's key
(`tool_call_key`: the same for the same call of a retried request) is claimed in the store,
with the store's lease ability and a holder token of this attempt. The retry's call has the
same key, finds the claim held by the attempt that died, and does not run: the model reads a
result that says the call may have taken effect, with the key to check, as an approval whose
resolver died does (K3). The claim is released once the turn that ran the tool is saved.

A store without leases has no claims: the tool then runs as before, once per attempt.
"""

from __future__ import annotations

import logging
from typing import Any

from picoflow.errors import StoreError
from picoflow.stores.base import KeepsLeases, abilities_of

__all__ = ["CLAIM_SECONDS", "claim_effect", "interrupted_result", "release_claims"]

logger = logging.getLogger(__name__)

# As long as an idempotency record lives (`_idempotent.RECORD_TTL`): a retry later than that
# is a new request.
CLAIM_SECONDS = 24 * 3600.0


def _leases(store: Any) -> KeepsLeases | None:
    return abilities_of(store).leases if store is not None else None


def _name(key: str) -> str:
    return f"effect:{key}"


async def claim_effect(store: Any, attempt: str, key: str) -> bool:
    """Claim the call `key` for this attempt; False: an earlier attempt claimed it (K8).

    A store that cannot be reached fails the turn here, before anything happened.
    """
    leases = _leases(store)
    if leases is None:
        return True
    return await leases.acquire_lease(_name(key), attempt, CLAIM_SECONDS)


async def release_claims(store: Any, attempt: str, keys: list[str]) -> None:
    """Let the claims of a saved turn go; the session's record holds the effects now."""
    leases = _leases(store)
    if leases is None:
        return
    for key in keys:
        try:
            await leases.release_lease(_name(key), attempt)
        except StoreError as exc:  # the claim stays until it expires: harmless, the turn is saved
            logger.warning("could not release the claim of call %s: %s", key, exc)


def interrupted_result(tool: str, key: str) -> str:
    """What the model reads for a call an earlier attempt claimed and never reported."""
    return (
        f"Interrupted: an earlier attempt of this request called {tool} with this key and "
        "stopped before its result was recorded, so whether it took effect is unknown. It was "
        f"not run again. Its key is {key}: check it before calling the tool again."
    )
