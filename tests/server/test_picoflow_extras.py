"""PicoFlow's `/public/` static files and `/ai/chat` route: served only when asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_flows import GREETING, api, chat_flow, client_for


async def test_public_and_chat_are_off_by_default() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        chat = await client.post("/ai/chat", json={"flowName": "ChatFlow", "message": "hello"})
        public = await client.get("/public/logo.txt")
    assert (chat.status_code, public.status_code) == (404, 404)


async def test_public_dir_is_served_at_public(tmp_path: Path) -> None:
    (tmp_path / "logo.txt").write_text("pico", encoding="utf-8")
    _, app = api(chat_flow(), public_dir=tmp_path)
    async with client_for(app) as client:
        found = await client.get("/public/logo.txt")
        missing = await client.get("/public/nope.txt")
    assert (found.status_code, found.text, missing.status_code) == (200, "pico", 404)


def test_public_dir_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        api(chat_flow(), public_dir=tmp_path / "absent")
    assert str(caught.value) == (
        f"create_app(public_dir={str(tmp_path / 'absent')!r}): that is not a folder. Give the "
        "folder whose files /public/ serves, or leave public_dir unset."
    )


async def test_chat_route_runs_a_turn_like_run() -> None:
    engine, app = api(chat_flow(), chat_route=True)
    async with client_for(app) as client:
        reply = await client.post("/ai/chat", json={"flowName": "ChatFlow", "message": "hello"})
        again = await client.post(
            "/ai/chat",
            json={"flowName": "ChatFlow", "message": "more"},
            headers={"CHAT_SESSION_ID": reply.json()["session"]},
        )
    body = reply.json()
    assert (reply.status_code, body["success"], body["message"]) == (200, True, GREETING)
    assert reply.headers["CHAT_SESSION_ID"] == body["session"]
    assert again.json()["session"] == body["session"]
    assert (await engine.get_session(body["session"]))["revision"] == 1
