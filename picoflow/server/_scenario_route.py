"""`POST /ai/scenario`: the chat page's "Save as test" (X5), off unless the app enables it.

    app = offer_scenario_export(create_app(engine))

It answers the current session exported as a scenario file (`picoflow.scenarios`), so a
conversation that went wrong can become a regression test in one click. The session belongs to
the caller as for every other route (H4): another principal's id is unknown here too.
"""

from __future__ import annotations

import json
from dataclasses import replace

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from picoflow.server._errors import ApiError
from picoflow.server._headers import SESSION_HEADER
from picoflow.server._limits import read_optional_body
from picoflow.server._routes import Principal, SessionId, Settings

__all__ = ["offer_scenario_export", "scenario_router"]

scenario_router = APIRouter()


def offer_scenario_export(app: FastAPI) -> FastAPI:
    """Add `POST /ai/scenario` and the chat page's "Save as test" link to a `create_app` app.

    Off by default because it hands out whole conversations as files; each session is
    exported only to its owner (H4). Returns the app.
    """
    app.state.picoflow = replace(app.state.picoflow, scenario_export=True)
    app.include_router(scenario_router)
    return app


@scenario_router.post("/ai/scenario", summary="Export the session as a scenario file")
async def export_scenario(
    principal: Principal, settings: Settings, session_id: SessionId, request: Request
) -> Response:
    """The session named by the header as a `*.scenario.json` (a download); it takes no body."""
    await read_optional_body(request, settings.limits)  # one that is sent is checked (H8)
    from picoflow.scenarios import (
        export_session,  # the scenarios build on the engine, not the server
    )

    if session_id is None:
        raise ApiError(
            400,
            f"Send the session to export in the {SESSION_HEADER} header; none was sent.",
            code="invalid_session_header",
        )
    if await settings.engine.get_session(session_id, owner=principal) is None:
        raise ApiError(
            404, "There is no such session to export.", code="unknown_session", session=session_id
        )
    scenario = await export_session(settings.engine.store, session_id)
    name = f"{scenario['flowName']}-{session_id[:12]}.scenario.json"
    return Response(
        json.dumps(scenario, indent=2, ensure_ascii=False) + "\n",
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
