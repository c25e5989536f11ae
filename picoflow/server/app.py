"""`create_app`: a FlowEngine behind PicoFlow's HTTP contract, with streaming and a chat page."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from picoflow import __version__
from picoflow.engine import FlowEngine
from picoflow.server._auth import Authorize
from picoflow.server._errors import install_error_handlers
from picoflow.server._headers import REQUEST_ID_HEADER, SESSION_HEADER, SESSION_HEADER_ALT
from picoflow.server._heap import settle_heap
from picoflow.server._history_routes import history_router
from picoflow.server._idempotency import IDEMPOTENCY_HEADER
from picoflow.server._idle_task import IdleCompaction
from picoflow.server._input_rules import InputRules
from picoflow.server._kept import DEFAULT_TTL_SECONDS, KEEPALIVE_SECONDS, StreamKeeper
from picoflow.server._limits import Limits
from picoflow.server._observe import install_observability
from picoflow.server._people_routes import PeopleSettings, people_router
from picoflow.server._resume import resume_router
from picoflow.server._routes import STATIC_DIR, ServerSettings, router, run_router, run_turn
from picoflow.server._schemas import RunEnvelope, RunRequest
from picoflow.server.protocols import install_protocols

__all__ = ["create_app"]

_DESCRIPTION = """\
Run turns of picoflow flows over HTTP, the way PicoFlow clients expect.

Start a session with `POST /ai/run` and no `CHAT_SESSION_ID` header; send the returned
`session` back in that header on every later turn (a completed or unknown id starts a new
session, so always read `session` from the reply). Stop when `completed` is true.
`chat-session-id` is accepted as a second spelling of the header.
"""
_NO_DOCS: dict[str, Any] = {"docs_url": None, "redoc_url": None, "openapi_url": None}


# The options are grouped by concern on shared lines (hence `fmt: skip`), so the public face,
# its documented options and the few named steps that build the app fit the 50-line limit.
def create_app(
    engine: FlowEngine, *, authorize: Authorize | None = None,
    max_body_bytes: int = 256 * 1024, max_config_bytes: int = 16 * 1024,
    max_message_chars: int = 8000, max_json_depth: int = 32,
    max_header_bytes: int = 32 * 1024, max_headers: int = 100,
    expose_docs: bool = True, cors_origins: Iterable[str] = (), metrics: bool = False,
    allow_self_approval: bool = False, public_dir: str | os.PathLike[str] | None = None,
    chat_route: bool = False, shutdown_grace: float = 30.0,
    compact_idle_every: timedelta | float | None = None,
    stream_ttl: float = DEFAULT_TTL_SECONDS, stream_keepalive: float | None = KEEPALIVE_SECONDS,
) -> FastAPI:  # fmt: skip
    """Serve `engine` over HTTP: the PicoFlow REST contract, SSE streaming and a chat page.

    The app closes the engine (and its store) at shutdown: a served engine has no other owner
    once the server's loop is gone. See `docs/server.md` and, for limits, `docs/deployment.md`.

    Args:
        engine: The engine whose flows the app serves.
        authorize: Who may call the API (H4): a function of the request returning the caller's
            principal (a name or a `Principal` with roles), or None for 401; see `api_key_auth`.
            Without it, anyone who can reach the server may run turns in any session they know.
        max_body_bytes: Larger bodies get 413 (H1: limits are checked before a body is read).
        max_config_bytes: A larger `config` (compact JSON) gets 413.
        max_message_chars: Longer messages get 413.
        max_json_depth: Bodies nested deeper get 400.
        max_header_bytes: Requests whose headers add up to more get 431.
        max_headers: Requests with more headers than this get 431.
        expose_docs: False removes `/docs`, `/redoc` and `/openapi.json`.
        cors_origins: Other sites' origins whose pages may call the API (none by default).
        metrics: True serves Prometheus metrics at `/metrics` (O2; the `metrics` extra).
        allow_self_approval: Let a principal decide an approval its own session asked for (K7).
        public_dir: A folder served at `/public/` (PicoFlow's static files); off by default.
        chat_route: True also serves `POST /ai/chat` (chat-ui's route), the turn of `/ai/run`.
        shutdown_grace: Seconds a shutdown waits for running turns (O6; new ones get 503).
        compact_idle_every: Every this often, compact the sessions idle that long (M14).
        stream_ttl: Seconds the store keeps a streamed turn's events, for reconnects (O5).
        stream_keepalive: A silent stream sends a comment after 1-2 times this (O5); None: never.

    Raises:
        TypeError, ValueError: an option is not what its line above says (a limit not positive).
    """
    sizes = (max_body_bytes, max_config_bytes, max_message_chars, max_json_depth)
    limits = Limits(*sizes, max_header_bytes=max_header_bytes, max_headers=max_headers)
    streams = StreamKeeper(engine.store, stream_ttl, keepalive_every=stream_keepalive)
    people = PeopleSettings(allow_self_approval)
    settings = ServerSettings(engine, limits, authorize, people=people, streams=streams)
    app = _new_app(settings, expose_docs, shutdown_grace, compact_idle_every)
    _install(app, settings, list(cors_origins), metrics=metrics)
    _serve_picoflow_extras(app, public_dir, chat_route)
    return app


def _new_app(
    settings: ServerSettings,
    expose_docs: bool,
    grace: float,
    compact_idle_every: timedelta | float | None,
) -> FastAPI:
    """The FastAPI app with its lifespan and settings; routes and the rest come after."""
    idle = None
    if compact_idle_every is not None:  # checked here: a bad value stops create_app
        idle = IdleCompaction(settings.engine, compact_idle_every)
    app = FastAPI(
        title="picoflow",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=_closing(settings, grace, idle),
        **({} if expose_docs else _NO_DOCS),
    )
    app.state.picoflow = settings
    return app


def _install(app: FastAPI, settings: ServerSettings, origins: list[str], *, metrics: bool) -> None:
    """Error handlers, routes, static files, input rules, CORS and observability, in order.

    The input rules (H8-H11) wrap every route, those added later too; CORS wraps them, so a
    page of an allowed origin can read their refusals.
    """
    install_error_handlers(app)
    app.include_router(run_router)  # first, where `router` had it: route order is unchanged
    app.include_router(router)
    app.include_router(people_router)
    app.include_router(history_router)  # W1-W4 over HTTP
    app.include_router(resume_router)
    install_protocols(app)  # G1-G3: AG-UI and the AI SDK UI message stream
    _describe_run_body(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(InputRules, limits=settings.limits, authorize=settings.authorize)
    _allow_cross_site(app, origins)
    install_observability(app, settings.engine, metrics=metrics)


def _serve_picoflow_extras(
    app: FastAPI, public_dir: str | os.PathLike[str] | None, chat_route: bool
) -> None:
    """PicoFlow's `/public/` static files and its `/ai/chat` route, each only when asked for."""
    if public_dir is not None:
        folder = Path(public_dir)
        if not folder.is_dir():
            raise ValueError(
                f"create_app(public_dir={str(public_dir)!r}): that is not a folder. Give the "
                "folder whose files /public/ serves, or leave public_dir unset."
            )
        app.mount("/public", StaticFiles(directory=folder), name="public")
    if chat_route:
        app.add_api_route(
            "/ai/chat",
            run_turn,
            methods=["POST"],
            response_model=RunEnvelope,
            summary="Run one turn (PicoFlow chat-ui's route; same as /ai/run)",
        )


def _closing(
    settings: ServerSettings, grace: float, idle: IdleCompaction | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: settle the collector (see `_heap`), then drain and close.

    When it stops, the idle compaction (if any) stops first, then running turns get `grace`
    seconds to finish (O6); then the engine closes.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settle_heap()
        if idle is not None:
            idle.start()
        yield
        if idle is not None:
            await idle.stop()
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
        allow_headers=[
            *("Content-Type", "Authorization", "X-API-Key", IDEMPOTENCY_HEADER, "Last-Event-ID"),
            *names,
        ],
        expose_headers=[*names, "Retry-After", "Idempotent-Replayed"],
    )
