"""A session's history over HTTP (W1-W4) under the server's ownership rules (H4).

Every route runs on MemoryStore and SQLite (the `store` fixture), and on MongoDB through
tests/stores/test_w_history_http_mongo.py, which runs these tests with a Mongo `store`; the
engine-level behaviour on every store is tests/stores/test_history.py. Two engines on one
store stand for two workers of one deployment: each has its own locks, so a rewind and a
turn of different workers race only through the store's revision check.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_flows import GREETING, chat_flow, client_for
from support.failed_turns import apart_from_error
from support.history_flows import GATE, ChatFlow, humans
from test_api_errors import error_body, failure

from picoflow import FlowEngine
from picoflow.server import api_key_auth, create_app
from picoflow.stores import MemoryStore, MongoStore, SQLiteStore, Store

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
ALICE = {"Authorization": f"Bearer {ALICE_KEY}"}
BOB = {"Authorization": f"Bearer {BOB_KEY}"}
UNKNOWN = "U" * 24  # a well-formed id nobody issued


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    fresh: Store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.db")
    try:
        yield fresh
    finally:
        await fresh.aclose()


def served(store: Store, *, secured: bool = False) -> tuple[FlowEngine, Any]:
    engine = FlowEngine(flows=[ChatFlow], store=store)
    keys = {ALICE_KEY: "alice", BOB_KEY: "bob"}
    return engine, create_app(engine, authorize=api_key_auth(keys) if secured else None)


async def talk(client: Any, *texts: str, headers: dict[str, str] | None = None) -> str:
    """Run turns over /ai/run; the session's id."""
    session = ""
    for text in texts:
        sent = {**(headers or {}), "CHAT_SESSION_ID": session}
        reply = await client.post(
            "/ai/run", json={"flowName": "ChatFlow", "message": text}, headers=sent
        )
        assert reply.status_code == 200, reply.text
        session = reply.json()["session"]
    return session


def at(session: str, tail: str = "") -> str:
    return f"/ai/sessions/{session}{tail}"


def not_kept(session: str, revision: int) -> str:
    return (
        f"Session '{session}' keeps no revision {revision}: it was never saved or retention "
        f"removed it. GET /ai/sessions/{session}/history lists the revisions kept."
    )


def no_session(session: str) -> str:
    return (
        f"There is no session '{session}' of yours: it was never started, has ended or "
        "expired, or belongs to someone else. Start a new one with POST /ai/run."
    )


async def test_w1_history_lists_the_turns_newest_first(store: Store) -> None:
    _, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two", "three")
        everything = await client.get(at(session, "/history"))
        newest = await client.get(at(session, "/history"), params={"limit": 2})

    assert everything.status_code == 200
    assert everything.headers["chat_session_id"] == session
    body = everything.json()
    assert (body["success"], body["session"], body["revision"]) == (True, session, 2)
    listed = [(e["revision"], e["action"], e["message"], e["reply"]) for e in body["history"]]
    assert listed == [
        (2, "turn", "three", "echo: three"),
        (1, "turn", "two", "echo: two"),
        (0, "turn", "one", "echo: one"),
    ]
    assert set(body["history"][0]) == {
        "revision",
        "saved_at",
        "message",
        "step_before",
        "step_after",
        "reply",
        "action",
        "restored",
    }
    assert [e["revision"] for e in newest.json()["history"]] == [2, 1]


async def test_w1_a_revision_is_the_document_that_turn_saved(store: Store) -> None:
    engine, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        first = await client.get(at(session), params={"revision": 0})
        now = await client.get(at(session))

    assert first.status_code == 200 and now.status_code == 200
    kept = await engine.get_session(session, revision=0)
    assert json.dumps(first.json()) == json.dumps(kept)  # the same keys, order and values
    assert humans(first.json()) == ["one"]
    assert json.dumps(now.json()) == json.dumps(await engine.get_session(session))


async def test_w2_rewind_then_a_new_turn(store: Store) -> None:
    engine, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two", "three")
        rewound = await client.post(at(session, "/rewind"), json={"to_revision": 0})
        sent = {"CHAT_SESSION_ID": session}
        turn = await client.post(
            "/ai/run", json={"flowName": "ChatFlow", "message": "again"}, headers=sent
        )
        listed = (await client.get(at(session, "/history"))).json()["history"]

    assert rewound.status_code == 200
    assert rewound.headers["chat-session-id"] == session
    assert rewound.json() == {
        "success": True,
        "session": session,
        "revision": 3,
        "restored": 0,
        "step": "ChatStep",
    }
    assert turn.json()["session"] == session
    assert humans(await engine.get_session(session)) == ["one", "again"]
    assert [(e["revision"], e["action"], e["restored"]) for e in listed[:2]] == [
        (4, "turn", None),
        (3, "rewind", 0),
    ]


async def test_w2_undo_takes_back_one_answer_each_time(store: Store) -> None:
    engine, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two", "three")
        first = await client.post(at(session, "/undo"), json={})
        second = await client.post(  # an empty body is {} (the type must still be JSON)
            at(session, "/undo"), headers={"Content-Type": "application/json"}
        )
        after_two = humans(await engine.get_session(session))
        third = await client.post(at(session, "/undo"), json={})

    assert (first.status_code, first.json()["restored"], first.json()["revision"]) == (200, 1, 3)
    assert (second.status_code, second.json()["restored"]) == (200, 0)
    assert after_two == ["one"]
    assert third.status_code == 404
    assert error_body(third) == failure(
        f"Session '{session}' has no earlier turn to undo: its history keeps no revision "
        "before the current state's turn (a first turn cannot be undone; start a new session "
        "instead).",
        session,
        code="revision_not_found",
    )
    assert humans(await engine.get_session(session)) == ["one"]


async def test_w3_fork_makes_an_independent_session_of_the_same_owner(store: Store) -> None:
    engine, app = served(store, secured=True)
    async with client_for(app) as client:
        session = await talk(client, "one", "two", headers=ALICE)
        forked = await client.post(at(session, "/fork"), json={"at_revision": 0}, headers=ALICE)
        copy = forked.json()["session"]
        await talk_on(client, copy, "Porto", ALICE)
        current = await client.post(at(session, "/fork"), json={}, headers=ALICE)
        bobs = await client.get(at(copy, "/history"), headers=BOB)

    assert forked.status_code == 200
    assert forked.headers["chat_session_id"] == copy != session
    assert forked.json() == {
        "success": True,
        "session": copy,
        "revision": 0,
        "restored": 0,
        "step": "ChatStep",
        "forked_from": {"session_id": session, "revision": 0},
    }
    doc = await engine.get_session(copy)
    assert doc is not None
    assert (doc["owner"], doc["forked_from"]) == ("alice", {"session_id": session, "revision": 0})
    assert humans(doc) == ["one", "Porto"]
    assert humans(await engine.get_session(session)) == ["one", "two"]
    assert current.json()["forked_from"] == {"session_id": session, "revision": 1}
    assert bobs.status_code == 404


async def talk_on(client: Any, session: str, text: str, headers: dict[str, str]) -> None:
    sent = {**headers, "CHAT_SESSION_ID": session}
    reply = await client.post(
        "/ai/run", json={"flowName": "ChatFlow", "message": text}, headers=sent
    )
    assert reply.status_code == 200 and reply.json()["session"] == session


async def test_w4_edit_replies_like_a_turn_and_stores_the_new_text(store: Store) -> None:
    engine, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two", "three")
        edited = await client.post(at(session, "/edit"), json={"revision": 1, "message": "TWO"})
        listed = (await client.get(at(session, "/history"), params={"limit": 1})).json()

    assert edited.status_code == 200
    assert edited.headers["chat_session_id"] == session
    assert edited.json() == {
        "success": True,
        "completed": False,
        "message": "echo: TWO",
        "session": session,
        "contentType": "text/plain",
        "step": "ChatStep",
    }
    assert humans(await engine.get_session(session)) == ["one", "TWO"]
    entry = listed["history"][0]
    assert (entry["revision"], entry["action"], entry["message"], entry["restored"]) == (
        3,
        "edit",
        "TWO",
        0,
    )


async def test_w4_a_failed_edit_leaves_the_session_as_it_was(store: Store) -> None:
    engine, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        before = json.dumps(apart_from_error(await engine.get_session(session)))
        failed = await client.post(at(session, "/edit"), json={"revision": 1, "message": "fail"})
        first = await client.post(at(session, "/edit"), json={"revision": 0, "message": "x"})
        empty = await client.post(at(session, "/edit"), json={"revision": 1, "message": " "})

    assert (failed.status_code, failed.json()["code"]) == (500, "internal_error")
    assert "the model is down" not in failed.text  # H2: the exception text stays in the log
    assert first.status_code == 404
    assert error_body(first) == failure(
        f"Revision 0 of session '{session}' is its first turn, which started the session: "
        "there is nothing before it to run the new text on. Start a new session with the new "
        "text instead.",
        session,
        code="revision_not_found",
    )
    assert error_body(empty) == failure(
        "The message is empty. Send the user's text; an empty message only starts a new session.",
        session,
        code="invalid_request",
    )
    after = await engine.get_session(session)
    assert json.dumps(apart_from_error(after)) == before  # U5: only the failed edit's error
    assert [e["error"] for e in after["error"]] == ["RuntimeError"]


ROUTES = [
    ("GET", "", None),
    ("GET", "/history", None),
    ("POST", "/rewind", {"to_revision": 0}),
    ("POST", "/undo", {}),
    ("POST", "/fork", {}),
    ("POST", "/edit", {"revision": 1, "message": "mine now"}),
]


@pytest.mark.parametrize(("method", "tail", "body"), ROUTES)
async def test_h4_another_principals_session_is_404_like_an_unknown_one(
    store: Store, method: str, tail: str, body: Any
) -> None:
    engine, app = served(store, secured=True)
    async with client_for(app) as client:
        session = await talk(client, "one", "two", headers=ALICE)
        before = json.dumps(await engine.get_session(session))
        foreign = await client.request(method, at(session, tail), json=body, headers=BOB)
        unknown = await client.request(method, at(UNKNOWN, tail), json=body, headers=BOB)
        hers = await client.request(method, at(session, tail), json=body, headers=ALICE)

    assert foreign.status_code == unknown.status_code == 404
    assert error_body(foreign) == failure(no_session(session), session, code="session_not_found")
    assert error_body(unknown) == failure(no_session(UNKNOWN), UNKNOWN, code="session_not_found")
    assert hers.status_code == 200  # the route works for its owner
    if method == "GET":
        assert json.dumps(await engine.get_session(session)) == before
    assert len(await engine.history(session)) == (2 if method == "GET" or tail == "/fork" else 3)


@pytest.mark.parametrize(("method", "tail", "body"), ROUTES)
async def test_h4_history_routes_need_credentials(method: str, tail: str, body: Any) -> None:
    _, app = served(MemoryStore(), secured=True)
    async with client_for(app) as client:
        session = await talk(client, "one", headers=ALICE)
        reply = await client.request(method, at(session, tail), json=body)
    assert reply.status_code == 401
    assert reply.json()["code"] == "unauthorized"


@pytest.mark.parametrize(("method", "tail", "body"), ROUTES)
async def test_w1_a_malformed_session_id_is_404(method: str, tail: str, body: Any) -> None:
    _, app = served(MemoryStore())
    async with client_for(app) as client:
        reply = await client.request(method, at("not-an-id", tail), json=body)
    assert reply.status_code == 404
    assert error_body(reply) == failure(
        "There is no such session: the path does not hold a session id this server issued. "
        "Use the `session` of a reply of POST /ai/run.",
        code="session_not_found",
    )


@pytest.mark.parametrize(
    ("method", "tail", "body"),
    [
        ("GET", "?revision=9", None),
        ("POST", "/rewind", {"to_revision": 9}),
        ("POST", "/fork", {"at_revision": 9}),
        ("POST", "/edit", {"revision": 9, "message": "x"}),
    ],
)
async def test_w1_an_unknown_revision_is_404_naming_the_history_route(
    store: Store, method: str, tail: str, body: Any
) -> None:
    engine, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        reply = await client.request(method, at(session, tail), json=body)
    assert reply.status_code == 404
    assert error_body(reply) == failure(not_kept(session, 9), session, code="revision_not_found")
    assert len(await engine.history(session)) == 2  # nothing was written


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("revision=x", "'x'"),
        ("revision=-1", "'-1'"),
        ("revision=1.5", "'1.5'"),
        ("revision=", "''"),
        ("revision=%D9%A3", "'٣'"),  # a digit, but not an ASCII one
        ("revision=1234567890123456789", "'1234567890123456789'"),  # past 64 bits' reach
        ("revision=1&revision=2", "2 values"),
    ],
)
async def test_w1_a_bad_revision_query_is_400(query: str, shown: str) -> None:
    _, app = served(MemoryStore())
    async with client_for(app) as client:
        session = await talk(client, "one")
        reply = await client.get(f"{at(session)}?{query}")
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        f"?revision= must be one whole number >= 0, got {shown}. "
        "GET /ai/sessions/<session>/history lists the revisions.",
        code="invalid_query",
    )


async def test_w1_a_bad_history_limit_is_400() -> None:
    _, app = served(MemoryStore())
    async with client_for(app) as client:
        session = await talk(client, "one")
        reply = await client.get(at(session, "/history"), params={"limit": 0})
    assert error_body(reply) == failure(
        "?limit= must be one whole number >= 1, got '0'. "
        "GET /ai/sessions/<session>/history lists the revisions.",
        code="invalid_query",
    )


EXAMPLES = {
    "/rewind": '{"to_revision": 2}',
    "/fork": '{"at_revision": 2} (or {} for the current revision)',
    "/edit": '{"revision": 3, "message": "Three nights"}',
    "/undo": "{}",
}


@pytest.mark.parametrize(
    ("tail", "body", "problem"),
    [
        ("/rewind", {}, "to_revision: Field required"),
        ("/rewind", {"to_revision": "1"}, "to_revision: Input should be a valid integer"),
        ("/rewind", {"to_revision": True}, "to_revision: Input should be a valid integer"),
        ("/rewind", {"to_revision": 1.0}, "to_revision: Input should be a valid integer"),
        (
            "/rewind",
            {"to_revision": -1},
            "to_revision: Input should be greater than or equal to 0",
        ),
        (
            "/rewind",
            {"toRevision": 1},
            "to_revision: Field required; toRevision: Extra inputs are not permitted",
        ),
        ("/rewind", [1], "the body must be a JSON object"),
        ("/fork", {"at_revision": "x"}, "at_revision: Input should be a valid integer"),
        ("/undo", {"steps": 2}, "steps: Extra inputs are not permitted"),
        ("/edit", {"revision": 1}, "message: Field required"),
        ("/edit", {"revision": 1, "message": 3}, "message: Input should be a valid string"),
        ("/edit", {"message": "x"}, "revision: Field required"),
    ],
)
async def test_w2_a_bad_body_is_400_showing_the_body_to_send(
    tail: str, body: Any, problem: str
) -> None:
    engine, app = served(MemoryStore())
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        reply = await client.post(at(session, tail), json=body)
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        f"The request is not valid ({problem}). Send a JSON object such as {EXAMPLES[tail]} "
        "with Content-Type: application/json.",
        code="invalid_body",
    )
    assert len(await engine.history(session)) == 2


async def test_w2_a_body_that_is_not_json_is_400_and_other_types_415() -> None:
    engine, app = served(MemoryStore())
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        broken = await client.post(
            at(session, "/rewind"),
            content=b"{to_revision: 1}",
            headers={"Content-Type": "application/json"},
        )
        text = await client.post(
            at(session, "/undo"), content=b"{}", headers={"Content-Type": "text/plain"}
        )
        bare = await client.post(at(session, "/undo"))
    assert broken.status_code == 400 and broken.json()["code"] == "invalid_body"
    assert broken.json()["message"].startswith(
        "The request is not valid (the body is not valid JSON"
    )
    assert error_body(text) == failure(
        "The request's Content-Type is 'text/plain', but this server reads only JSON bodies. "
        "Send a JSON object such as {} with Content-Type: application/json.",
        code="unsupported_media_type",
    )
    assert (bare.status_code, bare.json()["code"]) == (415, "unsupported_media_type")
    assert len(await engine.history(session)) == 2


async def test_w4_an_edit_over_the_limits_is_413() -> None:
    engine = FlowEngine(flows=[ChatFlow], store=MemoryStore())
    app = create_app(engine, max_message_chars=10)
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        reply = await client.post(at(session, "/edit"), json={"revision": 1, "message": "x" * 11})
    assert reply.status_code == 413
    assert error_body(reply) == failure(
        "The message has 11 characters; this server accepts at most 10. Shorten it or send "
        "it over several turns.",
        code="message_too_long",
    )


class NoHistoryStore(MemoryStore):
    """A store of one's own that keeps no revisions."""

    history = None  # type: ignore[assignment]
    load_revision = None  # type: ignore[assignment]


async def test_w1_a_store_without_history_is_501() -> None:
    _, app = served(NoHistoryStore())
    async with client_for(app) as client:
        session = await talk(client, "one")
        reply = await client.get(at(session, "/history"))
    assert reply.status_code == 501
    assert error_body(reply) == failure(
        "This server's session store keeps no history, so sessions cannot be listed, rewound, "
        "forked or edited here. Its operator can switch to MemoryStore, SQLiteStore or "
        "MongoStore.",
        code="history_unavailable",
    )


async def test_w2_a_rewind_racing_a_turn_of_another_worker_is_409(store: Store) -> None:
    """Whichever saves second gets the turn routes' 409; the other's save stands."""
    first_engine, first = served(store)
    second_engine, second = served(store)
    async with client_for(first) as one, client_for(second) as two:
        session = await talk(one, "one", "two")
        GATE.closed, GATE.entered, GATE.opened = True, asyncio.Event(), asyncio.Event()
        try:
            sent = {"CHAT_SESSION_ID": session}
            body = {"flowName": "ChatFlow", "message": "three"}
            turn = asyncio.ensure_future(one.post("/ai/run", json=body, headers=sent))
            await GATE.entered.wait()  # the turn loaded revision 1 and waits for its model
            rewound = await two.post(at(session, "/rewind"), json={"to_revision": 0})
            GATE.opened.set()
            lost = await turn
        finally:
            GATE.closed = False

        assert rewound.status_code == 200 and rewound.json()["revision"] == 2
        assert (lost.status_code, lost.json()["code"]) == (409, "session_conflict")
        assert humans(await second_engine.get_session(session)) == ["one"]

        # The other way round: the rewind read the session, a turn saves first, the rewind loses.
        entered, opened = asyncio.Event(), asyncio.Event()
        original = second_engine._revisions._old

        async def slow_old(session_id: str, revision: int) -> dict[str, Any]:
            doc = await original(session_id, revision)
            entered.set()
            await opened.wait()
            return doc

        second_engine._revisions._old = slow_old  # type: ignore[method-assign]
        rewind = asyncio.ensure_future(two.post(at(session, "/rewind"), json={"to_revision": 1}))
        await entered.wait()
        await talk_on(one, session, "again", {})
        opened.set()
        refused = await rewind

    assert refused.status_code == 409
    assert error_body(refused) == failure(
        "Another request saved this session first; nothing was changed. Send the same request "
        "again: it runs on the saved session.",
        code="session_conflict",
    )
    assert humans(await first_engine.get_session(session)) == ["one", "again"]


async def test_w1_the_routes_are_in_the_openapi_page() -> None:
    _, app = served(MemoryStore())
    async with client_for(app) as client:
        schema = (await client.get("/openapi.json")).json()
    paths = schema["paths"]
    assert set(paths["/ai/sessions/{session_id}"]) == {"get"}
    assert set(paths["/ai/sessions/{session_id}/history"]) == {"get"}
    for tail, fields in (
        ("rewind", ["to_revision", "force"]),  # force: K9, past a tool's effect
        ("undo", ["force"]),
        ("fork", ["at_revision", "force"]),
        ("edit", ["revision", "message", "config", "force"]),
    ):
        post = paths[f"/ai/sessions/{{session_id}}/{tail}"]["post"]
        body = post["requestBody"]["content"]["application/json"]["schema"]
        assert list(body.get("properties", {})) == fields, tail
        assert {"401", "404", "409", "415", "422"} <= set(post["responses"]), tail
        parameters = [(p["name"], p["in"]) for p in post["parameters"]]
        assert parameters == [("session_id", "path"), ("Idempotency-Key", "header")], tail


@pytest.mark.parametrize(("method", "tail", "body"), ROUTES)
async def test_w2_an_expired_session_is_404_and_stays_expired(
    store: Store, method: str, tail: str, body: Any
) -> None:
    """Rewinding an expired session would bring it back; it is gone, as for a turn (P5)."""
    _, app = served(store)
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        doc = await store.load(session)
        assert doc is not None
        doc["expires_at"] = "2020-01-01T00:00:00.000Z"
        await store.save(doc, doc["revision"])
        reply = await client.request(method, at(session, tail), json=body)
    assert reply.status_code == 404
    assert error_body(reply) == failure(no_session(session), session, code="session_not_found")
    kept = await store.load(session)
    if kept is None:
        # MongoDB's TTL monitor may sweep a past expiry at any moment (it did on CI): gone is
        # expired too. No other store deletes a session on its own.
        assert isinstance(store, MongoStore)
    else:
        assert kept["expires_at"] == "2020-01-01T00:00:00.000Z"


async def test_w2_undo_after_the_flow_ended_lets_the_conversation_go_on() -> None:
    engine = FlowEngine(flows=[chat_flow()], store=MemoryStore())
    async with client_for(create_app(engine)) as client:
        started = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
        session = started.json()["session"]
        sent = {"CHAT_SESSION_ID": session}
        ended = await client.post(
            "/ai/run", json={"flowName": "ChatFlow", "message": "bye"}, headers=sent
        )
        undone = await client.post(at(session, "/undo"), json={})
        again = await client.post(
            "/ai/run", json={"flowName": "ChatFlow", "message": "hi"}, headers=sent
        )

    assert ended.json()["completed"] is True
    assert undone.status_code == 200 and undone.json()["step"] == "GreetStep"
    assert (again.json()["session"], again.json()["message"]) == (session, GREETING)


async def test_h5_a_retried_undo_with_its_key_undoes_one_turn_on_any_worker(store: Store) -> None:
    """O4: without the key the retry would undo the answer before as well."""
    engine, first = served(store)
    _, second = served(store)
    key = {"Idempotency-Key": "undo-7f3a"}
    async with client_for(first) as one, client_for(second) as two:
        session = await talk(one, "one", "two", "three")
        sent = await one.post(at(session, "/undo"), json={}, headers=key)
        retried = await two.post(at(session, "/undo"), json={}, headers=key)
        edited = await one.post(
            at(session, "/edit"), json={"revision": 1, "message": "TWO"}, headers={**key}
        )

    assert sent.status_code == retried.status_code == 200
    assert retried.json() == sent.json()
    assert sent.json() == {
        "success": True,
        "session": session,
        "revision": 3,
        "restored": 1,
        "step": "ChatStep",
    }
    assert humans(await engine.get_session(session)) == ["one", "two"]
    assert edited.status_code == 422  # the key names the undo: it cannot name an edit too
    assert error_body(edited) == failure(
        "The Idempotency-Key 'undo-7f3a' was already used for a different request (another route, "
        "flow, message, session, revision or config). Send each new message with a new key, and "
        "reuse a key only to retry the same request.",
        session,
        code="idempotency_key_reused",
    )


async def test_h5_a_retried_edit_fork_and_rewind_get_the_first_result(store: Store) -> None:
    engine, first = served(store)
    _, second = served(store)
    async with client_for(first) as one, client_for(second) as two:
        session = await talk(one, "one", "two")
        replies = []
        for tail, body, key in (
            ("/edit", {"revision": 1, "message": "TWO"}, "e-1"),
            ("/fork", {"at_revision": 0}, "f-1"),
            ("/rewind", {"to_revision": 0}, "r-1"),
        ):
            for client in (one, two):
                keyed = {"Idempotency-Key": key}
                replies.append(await client.post(at(session, tail), json=body, headers=keyed))

    edit, edit_again, fork, fork_again, rewind, rewind_again = replies
    assert edit.json() == edit_again.json() and edit.json()["message"] == "echo: TWO"
    assert ("Idempotent-Replayed" in edit.headers, edit_again.headers["Idempotent-Replayed"]) == (
        False,
        "true",
    )
    copy = fork.json()["session"]
    assert fork_again.json() == fork.json() and copy != session
    assert fork_again.headers["chat_session_id"] == copy
    assert rewind.json() == rewind_again.json() and rewind.json()["revision"] == 3
    assert humans(await engine.get_session(session)) == ["one"]
    assert humans(await engine.get_session(copy)) == ["one"]
    history = [entry["action"] for entry in await engine.history(session)]
    assert history == ["rewind", "edit", "turn", "turn"]


@pytest.mark.parametrize(
    ("headers", "code", "message"),
    [
        (
            {"Idempotency-Key": "two words"},
            "invalid_idempotency_key",
            "The Idempotency-Key header must be 1 to 255 visible ASCII characters (a UUID "
            "works well); send a new one for each new message and the same one when you retry.",
        ),
        (
            [("Idempotency-Key", "a"), ("Idempotency-Key", "b")],
            "duplicate_header",
            "The Idempotency-Key header was sent more than once. Send it once, with one value.",
        ),
    ],
)
async def test_h5_a_bad_key_on_a_history_change_is_400_and_changes_nothing(
    headers: Any, code: str, message: str
) -> None:
    engine, app = served(MemoryStore())
    async with client_for(app) as client:
        session = await talk(client, "one", "two")
        replies = [
            await client.post(at(session, tail), json=body, headers=headers)
            for tail, body in (
                ("/undo", {}),
                ("/rewind", {"to_revision": 0}),
                ("/fork", {}),
                ("/edit", {"revision": 1, "message": "TWO"}),
            )
        ]
    for reply in replies:
        assert reply.status_code == 400, reply.text
        assert error_body(reply) == failure(message, code=code)
    doc = await engine.get_session(session)
    assert doc is not None and doc["revision"] == 1 and humans(doc) == ["one", "two"]
