"""O6 on MongoDB: `/ready` answers 200 while the server answers.

(A store that does not answer is 503: tests/server/test_o6_ready_shutdown.py. An unreachable
MongoDB is left out here: PyMongo leaks the socket of a monitor closed mid-connect, and the
ResourceWarning lands in whichever test collects it.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from mongo_server import MongoServer

from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores.mongo import MongoStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
from server_flows import chat_flow  # noqa: E402


async def ready(store: MongoStore) -> httpx.Response:
    app = create_app(FlowEngine(flows=[chat_flow()], store=store))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        reply = await client.get("/ready")
    await store.aclose()
    return reply


@pytest.mark.drops_connections  # the app closes its store while the driver's monitor connects
async def test_o6_ready_on_a_reachable_mongodb_is_200(
    mongo_server: MongoServer, mongo_database: str
) -> None:
    reply = await ready(MongoStore(mongo_server.uri, mongo_database))
    assert reply.status_code == 200 and reply.json()["status"] == "ready"
