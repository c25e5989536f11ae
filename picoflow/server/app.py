"""`create_app`: a FlowEngine behind PicoFlow's HTTP contract, with streaming and a chat page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..engine import FlowEngine
from ._auth import Authorize
from ._errors import install_error_handlers
from ._headers import REQUEST_ID_HEADER, SESSION_HEADER, SESSION_HEADER_ALT
from ._heap import settle_heap
from ._idempotency import IDEMPOTENCY_HEADER
from ._limits import Limits
from ._routes import STATIC_DIR, ServerSettings, router
from ._schemas import RunRequest

__all__ = ["create_app"]

_DESCRIPTION = """\
Run turns of picoflow flows over HTTP, the way PicoFlow clients expect.

Start a session with `POST /ai/run` and no `CHAT_SESSION_ID` header; send the returned
`session` back in that header on every later turn (a completed or unknown id starts a new
session, so always read `session` from the reply). Stop when `completed` is true.
`chat-session-id` is accepted as a second spelling of the header.
"""
_NO_DOCS: dict[str, Any] = {"docs_url": None, "redoc_url": None, "openapi_url": None}


def create_app(
    engine: FlowEngine,
    *,
    authorize: Authorize | None = None,
    max_body_bytes: int = 256 * 1024,
    max_config_bytes: int = 16 * 1024,
    max_message_chars: int = 8000,
    max_json_depth: int = 32,
    max_header_bytes: int = 32 * 1024,
    max_headers: int = 100,
    expose_docs: bool = True,
    cors_origins: Iterable[str] = (),
    shutdown_grace: float = 30.0,
) -> FastAPI:
    """Serve `engine` over HTTP: the PicoFlow REST contract, SSE streaming and a chat page.

    The app closes the engine (and so its store) when the server shuts down, because a served
    engine has no other owner left to do it once the server's event loop is gone. Every limit
    is checked before the body is held in memory or any model is called (H1);
    `docs/deployment.md` explains how to choose them.

    Args:
        engine: The engine whose flows the app serves.
        authorize: Who may call the API (H4): a function of the request returning the
            caller's principal name, or None for "no valid credentials" (401); see
            `api_key_auth`. Each session belongs to the principal that created it. Without
            it, anyone who can reach the server may run turns and end any session they know.
        max_body_bytes: Larger request bodies get 413, checked on `Content-Length` and while
            the body streams in, so no more than this is ever buffered.
        max_config_bytes: A larger `config` (as compact JSON) gets 413; it is stored with the
            session, so it bounds what one session costs the store.
        max_message_chars: Longer messages get 413, which bounds what one turn can cost.
        max_json_depth: Bodies nested deeper than this get 400.
        max_header_bytes: Requests whose headers (names and values) add up to more get 431.
        max_headers: Requests with more headers than this get 431.
        expose_docs: False removes `/docs`, `/redoc` and `/openapi.json` (a public server
            need not describe itself).
        cors_origins: Browser origins allowed to call the API from other sites (e.g.
            `["https://chat.example.com"]`, or `["*"]`); none by default, so only the chat
            page served by this app can call it from a browser.
        shutdown_grace: Seconds a shutdown waits for running turns before closing the store
            (O6); new turns meanwhile get 503 `shutting_down`.

    Raises:
        ValueError: a limit is not a positive integer.
    """
    sizes = (max_body_bytes, max_config_bytes, max_message_chars, max_json_depth)
    limits = Limits(*sizes, max_header_bytes=max_header_bytes, max_headers=max_headers)
    settings = ServerSettings(engine=engine, limits=limits, authorize=authorize)
    app = _new_app(settings, expose_docs, shutdown_grace)
    app.state.picoflow = settings
    _allow_cross_site(app, list(cors_origins))
    return app


def _new_app(settings: ServerSettings, expose_docs: bool, grace: float) -> FastAPI:
    """The app with its routes, error handlers and static files; settings come after."""
    docs: dict[str, Any] = {} if expose_docs else _NO_DOCS
    app = FastAPI(
        title="picoflow",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=_closing(settings, grace),
        **docs,
    )
    install_error_handlers(app)
    app.include_router(router)
    _describe_run_body(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app


def _closing(
    settings: ServerSettings, grace: float
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: settle the collector (see `_heap`), then drain and close.

    When it stops, running turns get `grace` seconds to finish (O6); then the engine closes.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settle_heap()
        yield
        await settings.turns.drain(grace)
        await settings.engine.aclose()

    return lifespan


def _describe_run_body(app: FastAPI) -> None:
    """Add `RunRequest` to the OpenAPI components: routes read their body themselves (H1)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        fresh = app.openapi_schema is None
        schema = generate()
        if fresh:
            schemas = schema.setdefault("components", {}).setdefault("schemas", {})
            schemas["RunRequest"] = RunRequest.model_json_schema(by_alias=True)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _allow_cross_site(app: FastAPI, origins: list[str]) -> None:
    """CORS for pages of other sites; browsers only let them read headers listed as exposed."""
    if not origins:
        return
    names = [SESSION_HEADER, SESSION_HEADER_ALT, REQUEST_ID_HEADER]
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=["GET", "POST"],
        allow_headers=["Content-Type", "Authorization", "X-API-Key", IDEMPOTENCY_HEADER, *names],
        expose_headers=[*names, "Retry-After", "Idempotent-Replayed"],
    )
