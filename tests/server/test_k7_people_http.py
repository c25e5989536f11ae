"""K7 over HTTP: only approvers resolve and only operators answer; each refusal has its status."""

from __future__ import annotations

from typing import Any

import pytest
from server_flows import api, client_for, sse
from support.approval_flows import booking_flow

from picoflow.server import Principal
from picoflow.server._people_routes import EventHub, _events

ROLES = {"ann": frozenset(), "boss": frozenset({"approver"}), "sam": frozenset({"operator"})}


def by_header(request: Any) -> Principal | None:
    name = request.headers.get("X-User")
    return Principal(name, ROLES[name]) if name in ROLES else None


def as_user(name: str, session: str | None = None) -> dict[str, str]:
    headers = {"X-User": name}
    if session:
        headers["CHAT_SESSION_ID"] = session
    return headers


BOOK = {"flowName": "BookingFlow", "message": "book Ritz 900", "config": {"limit": 500}}
APPROVED = "Result: Booked Ritz for 900."


async def _asked(client: Any, user: str = "ann") -> tuple[str, str]:
    reply = await client.post("/ai/run", json=BOOK, headers=as_user(user))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    return body["session"], body["pendingApprovals"][0]["id"]


async def test_k2_a_user_message_while_pending_is_200_with_the_waiting_reply() -> None:
    _, app = api(booking_flow(), authorize=by_header)
    async with client_for(app) as client:
        session, approval_id = await _asked(client)
        again = await client.post("/ai/run", json=BOOK, headers=as_user("ann", session))
    assert again.status_code == 200
    assert again.json()["message"] == (
        "I'm still waiting for a person to approve book. I'll continue as soon as it is "
        "decided; what you wrote is noted."
    )
    assert [a["id"] for a in again.json()["pendingApprovals"]] == [approval_id]


async def test_k7_an_approver_lists_and_resolves_once() -> None:
    _, app = api(booking_flow(), authorize=by_header)
    async with client_for(app) as client:
        session, approval_id = await _asked(client)
        listed = await client.get("/ai/approvals", headers=as_user("boss"))
        route = f"/ai/approvals/{approval_id}"
        done = await client.post(
            route, json={"decision": "approve"}, headers=as_user("boss", session)
        )
        again = await client.post(
            route, json={"decision": "approve"}, headers=as_user("boss", session)
        )
        other = await client.post(
            route, json={"decision": "reject"}, headers=as_user("boss", session)
        )
        unknown = await client.post(
            "/ai/approvals/apr_nope", json={"decision": "approve"}, headers=as_user("boss", session)
        )
        bad = await client.post(route, json={"decision": "maybe"}, headers=as_user("boss", session))
    assert [(a["id"], a["session"], a["owner"]) for a in listed.json()] == [
        (approval_id, session, "ann")
    ]
    assert (done.status_code, done.json()["message"], done.json()["pendingApprovals"]) == (
        200,
        APPROVED,
        [],
    )
    assert (again.status_code, again.json()["message"]) == (200, APPROVED)
    assert (other.status_code, other.json()["code"]) == (409, "approval_already_resolved")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "approval_not_found")
    assert (bad.status_code, bad.json()["message"]) == (
        400,
        "decision must be one of approve, reject, edit; got 'maybe'.",
    )


async def test_k7_without_the_role_it_is_403() -> None:
    _, app = api(booking_flow(), authorize=by_header)
    async with client_for(app) as client:
        session, approval_id = await _asked(client)
        listing = await client.get("/ai/approvals", headers=as_user("ann"))
        resolving = await client.post(
            f"/ai/approvals/{approval_id}",
            json={"decision": "approve"},
            headers=as_user("sam", session),
        )
        nobody = await client.get("/ai/approvals")
    assert (listing.status_code, listing.json()["code"], listing.json()["message"]) == (
        403,
        "role_required",
        "This needs the 'approver' role, and principal 'ann' does not have it. Return "
        "Principal(name, roles={'approver'}) from authorize() for the people who may.",
    )
    assert (resolving.status_code, resolving.json()["code"]) == (403, "role_required")
    assert nobody.status_code == 401


@pytest.mark.parametrize("allowed", [False, True])
async def test_k7_an_approver_may_not_approve_its_own_request_unless_allowed(allowed: bool) -> None:
    _, app = api(booking_flow(), authorize=by_header, allow_self_approval=allowed)
    async with client_for(app) as client:
        session, approval_id = await _asked(client, user="boss")
        reply = await client.post(
            f"/ai/approvals/{approval_id}",
            json={"decision": "approve"},
            headers=as_user("boss", session),
        )
    if allowed:
        assert (reply.status_code, reply.json()["message"]) == (200, APPROVED)
    else:
        assert (reply.status_code, reply.json()["code"]) == (403, "self_approval")


async def test_k7_the_turn_stream_carries_approval_requested() -> None:
    _, app = api(booking_flow(), authorize=by_header)
    async with client_for(app) as client:
        reply = await client.post("/ai/stream", json=BOOK, headers=as_user("ann"))
    events = sse(reply.text)
    kinds = [kind for kind, _ in events]
    assert kinds[-2:] == ["approval_requested", "done"]
    assert events[-2][1]["tool"] == "book"
    assert events[-1][1]["pendingApprovals"][0]["id"] == events[-2][1]["id"]


async def test_k7_an_operator_answers_and_hands_back() -> None:
    _, app = api(booking_flow(), authorize=by_header)
    async with client_for(app) as client:
        first = await client.post(
            "/ai/run",
            json={"flowName": "BookingFlow", "message": "a person"},
            headers=as_user("ann"),
        )
        session = first.json()["session"]
        queue = await client.get("/ai/handoffs", headers=as_user("sam"))
        answered = await client.post(
            "/ai/operator/reply",
            json={"message": "Hello, Sam here."},
            headers=as_user("sam", session),
        )
        refused = await client.post(
            "/ai/operator/reply", json={"message": "Hi"}, headers=as_user("boss", session)
        )
        back = await client.post("/ai/operator/return", json={}, headers=as_user("sam", session))
        again = await client.post("/ai/operator/return", json={}, headers=as_user("sam", session))
    assert [(h["session"], h["note"]) for h in queue.json()] == [
        (session, "The guest asked: a person")
    ]
    assert (answered.status_code, answered.json()["message"]) == (200, "Hello, Sam here.")
    assert refused.status_code == 403
    assert back.status_code == 200
    assert (again.status_code, again.json()["code"]) == (409, "not_in_handoff")


async def test_k7_session_events_deliver_what_the_people_routes_publish() -> None:
    hub = EventHub()
    answers = iter([True, False])  # checked before waiting: someone is expected, then nobody

    async def waits() -> bool:
        return next(answers)

    events = _events(hub, "s1", waits)
    assert await anext(events) == ": listening\n\n"
    hub.publish("s1", "operator_message", {"message": "Hi", "by": "sam"})
    hub.publish("s2", "operator_message", {"message": "not yours"})
    assert await anext(events) == (
        'event: operator_message\ndata: {"message": "Hi", "by": "sam"}\n\n'
    )
    hub.publish("s1", "approval_resolved", {"message": "Booked."})
    assert await anext(events) == 'event: approval_resolved\ndata: {"message": "Booked."}\n\n'
    assert await anext(events) == "event: idle\ndata: {}\n\n"
    with pytest.raises(StopAsyncIteration):
        await anext(events)


async def test_k7_session_events_of_a_session_that_waits_for_nobody_end_at_once() -> None:
    _, app = api(booking_flow(), authorize=by_header)
    async with client_for(app) as client:
        first = await client.post(
            "/ai/run", json={"flowName": "BookingFlow", "message": "hi"}, headers=as_user("ann")
        )
        session = first.json()["session"]
        idle = await client.get(f"/ai/events?session={session}", headers=as_user("ann"))
        other = await client.get(f"/ai/events?session={session}", headers=as_user("boss"))
    assert idle.text == ": listening\n\nevent: idle\ndata: {}\n\n"
    assert (other.status_code, other.json()["code"]) == (404, "session_not_found")
