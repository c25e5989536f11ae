"""Serve flows over HTTP: PicoFlow's REST contract, Server-Sent Events and a chat page.

Needs the `server` extra (`pip install 'picoflow[server]'`: FastAPI and uvicorn).

    app = create_app(FlowEngine(flows=[HotelFlow]))
    uvicorn.run(app, host="127.0.0.1", port=8000)

See `docs/server.md` for the routes and `docs/deployment.md` for limits, authentication and
what each status code means for a client.
"""

from __future__ import annotations

from picoflow.server._auth import Principal, api_key_auth
from picoflow.server._scenario_route import offer_scenario_export
from picoflow.server.app import create_app

__all__ = ["create_app", "api_key_auth", "Principal", "offer_scenario_export"]
