"""`create_app`: a FlowEngine behind PicoFlow's HTTP contract, with streaming and a chat page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..engine import FlowEngine
from ._errors import install_error_handlers
from ._headers import REQUEST_ID_HEADER, SESSION_HEADER, SESSION_HEADER_ALT
from ._routes import STATIC_DIR, ServerSettings, router

__all__ = ["create_app"]

_DESCRIPTION = """\
Run turns of picoflow flows over HTTP, the way PicoFlow clients expect.

Start a session with `POST /ai/run` and no `CHAT_SESSION_ID` header; send the returned
`session` back in that header on every later turn (a completed or unknown id starts a new
session, so always read `session` from the reply). Stop when `completed` is true.
`chat-session-id` is accepted as a second spelling of the header.
"""


def create_app(
    engine: FlowEngine,
    *,
    max_message_chars: int = 8000,
    cors_origins: Iterable[str] = (),
) -> FastAPI:
    """Serve `engine` over HTTP: the PicoFlow REST contract, SSE streaming and a chat page.

    The app closes the engine (and so its store) when the server shuts down, because a served
    engine has no other owner left to do it once the server's event loop is gone.

    Args:
        engine: The engine whose flows the app serves.
        max_message_chars: Longer messages get 413 before any model is called, which bounds
            what one request can cost.
        cors_origins: Browser origins allowed to call the API from other sites (e.g.
            `["https://chat.example.com"]`, or `["*"]`); none by default, so only the chat
            page served by this app can call it from a browser.

    Raises:
        ValueError: `max_message_chars` is not a positive integer.
    """
    if type(max_message_chars) is not int or max_message_chars < 1:
        raise ValueError(
            f"max_message_chars must be a positive integer, got {max_message_chars!r}."
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await engine.aclose()

    app = FastAPI(
        title="picoflow", version=__version__, description=_DESCRIPTION, lifespan=lifespan
    )
    app.state.picoflow = ServerSettings(engine=engine, max_message_chars=max_message_chars)
    install_error_handlers(app)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _allow_cross_site(app, list(cors_origins))
    return app


def _allow_cross_site(app: FastAPI, origins: list[str]) -> None:
    """CORS for pages of other sites; browsers only let them read headers listed as exposed."""
    if not origins:
        return
    names = [SESSION_HEADER, SESSION_HEADER_ALT, REQUEST_ID_HEADER]
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=["GET", "POST"],
        allow_headers=["Content-Type", *names],
        expose_headers=names,
    )
