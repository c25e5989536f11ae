"""An app process for the kill -9 scenario: runs turns until it is killed.

    python turn_worker.py URL DATABASE SESSION_ID[,SESSION_ID...] NAME

URL is a MongoDB URI (DATABASE names the database) or a `sqlite:///` URL (DATABASE is `-`).
It round-robins over the sessions with the messages NAME-0, NAME-1, ... and prints
`ack SESSION_ID TEXT` after each turn the engine reports saved, so the test knows which turns
were acknowledged to a client before the kill; it prints `fail SESSION_ID TEXT ERROR` otherwise.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

from store_worker import ChatFlow, open_store

from picoflow import FlowEngine


async def work(url: str, database: str, session_ids: list[str], name: str) -> None:
    engine = FlowEngine(flows=[ChatFlow], store=open_store(url, database))
    print("ready", flush=True)
    for number in itertools.count():
        session_id = session_ids[number % len(session_ids)]
        text = f"{name}-{number}"
        result = await engine.run("ChatFlow", text, session_id)
        if result.success:
            print(f"ack {session_id} {text}", flush=True)
        else:
            print(f"fail {session_id} {text} {result.error}", flush=True)


if __name__ == "__main__":
    url, database, sessions, name = sys.argv[1:]
    asyncio.run(work(url, database, sessions.split(","), name))
