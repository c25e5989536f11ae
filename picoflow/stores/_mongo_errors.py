"""Turn a PyMongo failure into a StoreError message a person can act on (P3, E2).

The driver's own messages carry the topology dump, the configured timeouts and the server's full
reply; the part worth reading is one short reason. Each message says what MongoStore tried, which
server, why it failed and what to check.
"""

from __future__ import annotations

import re

from bson.errors import InvalidDocument
from pymongo.errors import (
    BulkWriteError,
    ConfigurationError,
    ConnectionFailure,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
)

__all__ = ["describe_failure"]

_AUTHENTICATION_FAILED = 18
_UNAUTHORIZED = 13
# "(configured timeouts: ...)", ", Timeout: 2.0s, Topology Description: ..." and the like.
_DRIVER_TAIL = re.compile(r" \(configured timeouts:.*|, Timeout: .*|, full error: .*", re.S)


def describe_failure(
    exc: PyMongoError | InvalidDocument,
    action: str,
    hosts: str,
    selection_timeout: float,
    database: str,
) -> str:
    """The StoreError text for `exc`, raised while MongoStore tried to `action`.

    Example: a server that is not running gives "MongoStore could not load session 's-1':
    MongoDB at 127.0.0.1:27017 did not answer within 2 s: [Errno 111] Connect call failed
    ('127.0.0.1', 27017). Check that the server is running and the URI is right."
    """
    return f"MongoStore could not {action}: MongoDB at {hosts} " + _explain(
        exc, _reason(exc, hosts), selection_timeout, database
    )


def _explain(
    exc: PyMongoError | InvalidDocument, reason: str, selection_timeout: float, database: str
) -> str:
    in_flight = "A write in flight may or may not have been applied, never half of it"
    if isinstance(exc, ServerSelectionTimeoutError):
        return (
            f"did not answer within {selection_timeout:g} s: {reason}. Check that the server "
            "is running and the URI is right."
        )
    if isinstance(exc, ConfigurationError):
        return (
            f"could not be reached through this URI ({reason}). Check the host names and the "
            "options in the URI."
        )
    if isinstance(exc, OperationFailure) and exc.code == _AUTHENTICATION_FAILED:
        return (
            f"refused the credentials ({reason}). Check the user name, the password and "
            "authSource in the URI."
        )
    if isinstance(exc, OperationFailure) and exc.code == _UNAUTHORIZED:
        return (
            f"did not allow it ({reason}). Connect as a user with the readWrite role on "
            f"database '{database}'."
        )
    if isinstance(exc, PyMongoError) and exc.timeout:
        return (
            f"did not finish in time ({reason}). {in_flight}; check the server's load and "
            "the network, or raise MongoStore's timeout."
        )
    if isinstance(exc, ConnectionFailure):
        return (
            f"lost the connection ({reason}). {in_flight}; check the server and the network, "
            "then retry."
        )
    return f"failed: {reason}. Check the server's log for the cause."


def _reason(exc: PyMongoError | InvalidDocument, hosts: str) -> str:
    """The driver's message without its long tail and without a repeated `host:port: `."""
    details = exc.details if isinstance(exc, OperationFailure) else None
    if isinstance(exc, BulkWriteError) and isinstance(details, dict):
        errors = [*details.get("writeErrors", []), *details.get("writeConcernErrors", [])]
        message = str(errors[0].get("errmsg") if errors else exc)
    elif isinstance(details, dict):
        message = str(details.get("errmsg") or exc)
    else:
        message = str(exc)
    message = _DRIVER_TAIL.sub("", message)
    for host in hosts.split(","):
        message = message.removeprefix(f"{host}: ")
    return message.strip() or type(exc).__name__
