"""The front ends' protocols (G1-G3): AG-UI 1.0 and the AI SDK's UI message stream.

`install_protocols(app)` adds `POST /ai-sdk/{flowName}` (and its reconnect, `GET
/ai-sdk/{flowName}/{chatId}/stream`) always, and `POST /ag-ui/{flowName}`
when the `ag-ui` extra is installed (`pip install 'picoflow[ag-ui]'`): the AG-UI route is built
on the `ag-ui-protocol` package, which the rest of picoflow never imports. Without the extra,
the AG-UI route answers 501 naming it, so a misconfigured server says what to install.
"""

from __future__ import annotations

import importlib.util

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from picoflow.server._errors import ApiError
from picoflow.server.protocols._ai_sdk import ai_sdk_router
from picoflow.server.protocols._ai_sdk_resume import ai_sdk_resume_router
from picoflow.server.protocols._common import RESPONSES

__all__ = ["install_protocols"]


def install_protocols(app: FastAPI) -> None:
    """Serve the protocol routes on `app`; AG-UI's only with its extra installed."""
    app.include_router(ai_sdk_router)
    app.include_router(ai_sdk_resume_router)  # O5: useChat({resume: true})
    if importlib.util.find_spec("ag_ui") is not None:
        from picoflow.server.protocols._ag_ui import ag_ui_router

        app.include_router(ag_ui_router)
    else:
        app.add_api_route("/ag-ui/{flow_name}", _no_extra, methods=["POST"], responses=RESPONSES)


async def _no_extra(flow_name: str, request: Request) -> JSONResponse:
    raise ApiError(
        501,
        "This server has no AG-UI support installed. Install it with "
        "`pip install 'picoflow[ag-ui]'` and restart the server.",
        code="ag_ui_not_installed",
    )
