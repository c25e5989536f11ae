"""MongoStore failures become StoreErrors a person can act on (P3, P6): a server that is down,
wrong credentials, missing rights, a slow server, a dropped connection.

Fail points (mongod's `failCommand`) and a second server with `--auth` need the local
SecantusDB, so those tests are skipped when MONGO_URI points the suite at another server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from mongo_server import MongoServer, free_port, secantus_server
from pymongo.errors import (
    AutoReconnect,
    ConfigurationError,
    NetworkTimeout,
    OperationFailure,
    ServerSelectionTimeoutError,
)

from picoflow.errors import StoreError
from picoflow.stores.mongo import MongoStore

pytestmark = pytest.mark.drops_connections  # see conftest._collect_sockets_leaked_by_pymongo
local_only = pytest.mark.skipif(
    "os.environ.get('MONGO_URI')", reason="needs the local SecantusDB (auth, fail points)"
)


def doc(session_id: str = "s-1", **fields: Any) -> dict[str, Any]:
    return {"id": session_id, "revision": 0, "flow": "HotelFlow", **fields}


async def test_p6_a_server_that_is_not_running_raises_store_error(
    open_mongo_store: Callable[..., MongoStore],
) -> None:
    port = free_port()
    store = open_mongo_store(f"mongodb://127.0.0.1:{port}/", server_selection_timeout=0.2)

    with pytest.raises(StoreError) as caught:
        await store.load("s-1")

    assert str(caught.value) == (
        f"MongoStore could not load session 's-1': MongoDB at 127.0.0.1:{port} did not answer "
        f"within 0.2 s: [Errno 111] Connect call failed ('127.0.0.1', {port}). Check that the "
        "server is running and the URI is right."
    )
    assert isinstance(caught.value.__cause__, ServerSelectionTimeoutError)


async def test_p6_the_uri_server_selection_timeout_wins(
    open_mongo_store: Callable[..., MongoStore],
) -> None:
    port = free_port()
    store = open_mongo_store(f"mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=150")

    with pytest.raises(StoreError) as caught:
        await store.revision("s-1")

    assert f"MongoDB at 127.0.0.1:{port} did not answer within 0.15 s" in str(caught.value)


@local_only
async def test_p6_wrong_credentials_and_missing_rights_raise_store_error(
    open_mongo_store: Callable[..., MongoStore],
) -> None:
    with secantus_server("--auth") as uri:
        wrong = open_mongo_store(uri.replace("://", "://bob:wrong@"))
        anonymous = open_mongo_store(uri, "bookings")
        try:
            with pytest.raises(StoreError) as refused:
                await wrong.load("s-1")
            with pytest.raises(StoreError) as denied:
                await anonymous.load("s-1")
        finally:  # before the server goes away, or a client may leak a half-open socket
            await wrong.aclose()
            await anonymous.aclose()
        host = uri.split("/")[2]

    assert str(refused.value) == (
        f"MongoStore could not load session 's-1': MongoDB at {host} refused the credentials "
        "(authentication failed). Check the user name, the password and authSource in the URI."
    )
    assert isinstance(refused.value.__cause__, OperationFailure)
    assert str(denied.value) == (
        f"MongoStore could not load session 's-1': MongoDB at {host} did not allow it (command "
        "createIndexes requires authentication). Connect as a user with the readWrite role on "
        "database 'bookings'."
    )


@local_only
async def test_p6_a_slow_server_raises_store_error_after_the_timeout(
    open_mongo_store: Callable[..., MongoStore], mongo_server: MongoServer, mongo_database: str
) -> None:
    store = open_mongo_store(mongo_server.uri, mongo_database, timeout=0.3)
    await store.create(doc())
    # Twice: PyMongo retries a failed read once, on a fresh connection.
    mongo_server.fail_next("find", times=2, blockConnection=True, blockTimeMS=1000)

    with pytest.raises(StoreError) as caught:
        await store.load("s-1")

    host = mongo_server.uri.split("/")[2]
    assert str(caught.value) == (
        f"MongoStore could not load session 's-1': MongoDB at {host} did not finish in time "
        "(timed out). A write in flight may or may not have been applied, never half of it; "
        "check the server's load and the network, or raise MongoStore's timeout."
    )
    assert isinstance(caught.value.__cause__, NetworkTimeout)


@local_only
async def test_p6_a_dropped_connection_raises_store_error_and_the_store_recovers(
    mongo: MongoStore, mongo_server: MongoServer
) -> None:
    await mongo.create(doc())
    mongo_server.fail_next("update", closeConnection=True)

    with pytest.raises(StoreError) as caught:
        await mongo.save(doc(flow="Changed"), 0)

    host = re.escape(mongo_server.uri.split("/")[2])
    # The driver words the reason either way, depending on when it notices the closed socket.
    assert re.fullmatch(
        rf"MongoStore could not save session 's-1': MongoDB at {host} lost the connection "
        r"\(connection (is already )?closed\)\. A write in flight may or may not have been "
        r"applied, never half of it; check the server and the network, then retry\.",
        str(caught.value),
    )
    assert isinstance(caught.value.__cause__, AutoReconnect)
    assert await mongo.load("s-1") == doc()
    assert await mongo.save(doc(flow="Changed"), 0) == 1


async def test_p6_a_uri_pymongo_cannot_parse_raises_store_error(
    open_mongo_store: Callable[..., MongoStore],
) -> None:
    store = open_mongo_store("mongodb://app:secret@localhost:notaport/")

    with pytest.raises(StoreError) as caught:
        await store.load("s-1")

    assert str(caught.value) == (
        "MongoStore cannot use the URI 'mongodb://app:***@localhost:notaport/': Port contains "
        "non-digit characters. Hint: username and password must be escaped according to RFC "
        "3986, use urllib.parse.quote_plus. Fix the URI; its options are PyMongo's connection "
        "string options."
    )
    assert isinstance(caught.value.__cause__, ValueError)


async def test_p6_an_srv_name_that_does_not_resolve_raises_store_error(
    open_mongo_store: Callable[..., MongoStore],
) -> None:
    store = open_mongo_store("mongodb+srv://cluster0.example.invalid/", timeout=2)

    with pytest.raises(StoreError) as caught:
        await store.load("s-1")

    # The resolver's own words differ between machines (no such name, no network).
    assert re.fullmatch(
        r"MongoStore could not load session 's-1': MongoDB at cluster0\.example\.invalid could "
        r"not be reached through this URI \(.+\)\. Check the host names and the options in "
        r"the URI\.",
        str(caught.value),
    )
    assert isinstance(caught.value.__cause__, ConfigurationError)


@local_only
async def test_p6_any_other_server_error_raises_store_error_with_the_server_message(
    mongo: MongoStore, mongo_server: MongoServer
) -> None:
    await mongo.revision("s-1")  # connected, indexes in place
    mongo_server.fail_next("find", errorCode=2)
    with pytest.raises(StoreError) as failed_read:
        await mongo.load("s-1")
    mongo_server.fail_next("insert", writeConcernError={"code": 100, "errmsg": "No quorum"})
    with pytest.raises(StoreError) as failed_write:
        await mongo.archive("s-1", "explore", [{"position": 1, "message": {"data": {}}}])

    host = mongo_server.uri.split("/")[2]
    assert str(failed_read.value) == (
        f"MongoStore could not load session 's-1': MongoDB at {host} failed: Failing command "
        "via 'failCommand' failpoint. Check the server's log for the cause."
    )
    assert str(failed_write.value) == (
        f"MongoStore could not archive messages of session 's-1': MongoDB at {host} failed: "
        "No quorum. Check the server's log for the cause."
    )
