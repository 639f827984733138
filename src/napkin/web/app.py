"""The web calculator: one static page and a JSON API over every calculator.

``create_app()`` builds the Starlette app; ``napkin web`` serves it with uvicorn. The house:

* :mod:`napkin.web.api`: the JSON API's handlers (what each route answers);
* :mod:`napkin.web.calculation`: one calculation from raw values, with what the web refuses;
* :mod:`napkin.web.names`: what a name or a file may be on the web (catalog names or uploads);
* :mod:`napkin.web.views`: what the page shows (formatted figures, tables, the working);
* :mod:`napkin.web.command`: the same calculation as a shell command;
* :mod:`napkin.web.uploads`: uploaded files, kept in memory;
* :mod:`napkin.web.guard`: security headers, body limits, the Host and cross-site checks;
* :mod:`napkin.web.vega`: the chart library, bundled by vl-convert;
* :mod:`napkin.web.examples`: the worked example each tab opens with.

No formulas here: requests go through :func:`napkin.request.parse_request` and the
calculator's ``run``, as on the command line. Starlette is imported by this package only,
which only ``napkin web`` (and the tests) load.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from napkin.web import api as handlers
from napkin.web.api import json_errors
from napkin.web.guard import MAX_JSON_BYTES, MAX_UPLOAD_BYTES, Guard
from napkin.web.vega import vega_bundle, warm_bundle

log = logging.getLogger("napkin.web")

STATIC = Path(__file__).parent / "static"


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})


async def favicon(request: Request) -> Response:
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")


async def vendor_js(request: Request) -> Response:
    try:
        bundle = await run_in_threadpool(vega_bundle)
    except Exception:
        log.exception("could not build the vega bundle")
        return Response("/* charts unavailable: vl-convert-python is not installed */\n",
                        media_type="text/javascript", status_code=503)
    headers = {"cache-control": "public, max-age=86400", "vary": "accept-encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["content-encoding"] = "gzip"
        return Response(bundle["gzip"], media_type="text/javascript", headers=headers)
    return Response(bundle["raw"], media_type="text/javascript", headers=headers)


def create_app(*, trusted_hosts: tuple[str, ...] | None = None, warm: bool = True,
               json_limit: int = MAX_JSON_BYTES, upload_limit: int = MAX_UPLOAD_BYTES) -> Starlette:
    """The web calculator.

    ``trusted_hosts`` limits the Host header (``napkin web`` passes the loopback names
    when it binds to loopback); ``warm`` builds the chart library in the background at
    startup so the first page load does not wait for it; the limits bound request bodies.
    """
    from contextlib import asynccontextmanager

    from starlette.middleware import Middleware

    @asynccontextmanager
    async def lifespan(app: Starlette):  # noqa: ANN202
        if warm:
            threading.Thread(target=warm_bundle, name="napkin-vega-bundle", daemon=True).start()
        yield

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/api", json_errors(handlers.list_calculators)),
        Route("/api/{name}", json_errors(handlers.get_calculator), methods=["GET"]),
        Route("/api/{name}", json_errors(handlers.post_calculator), methods=["POST"]),
        Route("/api/{name}/view", json_errors(handlers.post_view), methods=["POST"]),
        Route("/api/{name}/charts", json_errors(handlers.post_charts), methods=["POST"]),
        Route("/api/{name}/cli", json_errors(handlers.post_cli), methods=["POST"]),
        Route("/static/vendor/vega.js", vendor_js),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, lifespan=lifespan,
                     middleware=[Middleware(Guard, trusted_hosts=trusted_hosts, json_limit=json_limit,
                                             upload_limit=upload_limit)])
