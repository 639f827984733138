"""The JSON API: ``GET /api``, ``GET|POST /api/<name>`` and ``POST /api/<name>/{view,charts,cli}``.

* ``GET /api`` lists every registered calculator with its fields (kind, unit, bounds,
  default), what a result establishes and what needs measuring, and the worked example
  each tab opens with.
* ``POST /api/<name>`` takes the calculator's request (the CLI's fields, raw values: unit
  strings or numbers) and returns exactly what ``napkin <name> --json`` prints; with
  ``?cite=1``, exactly what ``napkin <name> --json --cite`` prints (each step's formula
  function with its equation, trap and source; each default's source).
  Invalid input gets 422 with ``{field, value, problem, fix, message}``; never a traceback.
* ``POST /api/<name>/view`` is what the page calls: the same report plus the formatted
  rows, the working with its citations, the charts and the equivalent CLI command.
* ``POST /api/<name>/charts`` and ``POST /api/<name>/cli`` return those parts alone.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from napkin.errors import InputError, NapkinError, UnknownName
from napkin.version import __version__
from napkin.web import calculation
from napkin.web.calculation import WEB_GRID_CAP, calculator, charts_for, web_checks
from napkin.web.command import cli_command
from napkin.web.guard import MAX_JSON_BYTES, MAX_UPLOAD_BYTES, BodyTooLarge, error_response
from napkin.web.uploads import read_multipart, uploads_as_paths
from napkin.web.views import describe_calculator, view

log = logging.getLogger("napkin.web")

TRUE = ("1", "true", "yes", "on")
FALSE = ("", "0", "false", "no", "off")


def json_errors(fn: Callable) -> Callable:
    """Turn napkin errors into 4xx JSON and anything else into a 500 without a traceback."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except BodyTooLarge as exc:
            return error_response(413, exc)
        except UnknownName as exc:
            if exc.what == "calculator":
                return error_response(404, exc)
            return error_response(422, exc)
        except NapkinError as exc:
            return error_response(422, exc)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return JSONResponse({"field": None, "value": None, "problem": "internal error",
                                 "fix": "run the same inputs with the CLI to see the details",
                                 "message": "internal error: the calculation failed"}, status_code=500)

    return endpoint


async def read_input(request: Request, name: str) -> dict[str, Any]:
    """The raw request: a JSON object, or a multipart form whose files stay in memory."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    calculator(name)  # 404 before reading a body for a name that does not exist
    if ctype == "multipart/form-data":
        return await read_multipart(request)
    if ctype not in ("application/json", ""):
        raise InputError("content-type", ctype, "is not accepted",
                         "send a JSON object with content-type: application/json (or multipart/form-data with a file)")
    body = b""
    async for chunk in request.stream():
        body += chunk
    if not body.strip():
        return {}
    try:
        raw = json.loads(body)
    except RecursionError:  # [[[[... a few thousand deep: the parser's own bound, before any field is read
        raise InputError("body", body[:80].decode("utf-8", "replace"), "is nested too deeply to be a request",
                         'send one object of values, lists and NAME: VALUE pairs, such as {"params": "7B"}') from None
    except (ValueError, UnicodeDecodeError):
        raise InputError("body", body[:80].decode("utf-8", "replace"), "is not valid JSON",
                         'send an object such as {"params": "7B"}') from None
    if not isinstance(raw, dict):
        raise InputError("body", str(raw)[:80], "must be a JSON object", 'send {"field": value, ...}')
    return raw


async def list_calculators(request: Request) -> Response:
    """GET /api: built once per app, on the first request that succeeds."""
    state = request.app.state
    if getattr(state, "listing", None) is None:
        state.listing = await run_in_threadpool(_listing_body)
    return Response(state.listing, media_type="application/json")


def _listing_body() -> bytes:
    from napkin import calculators, catalog

    return json.dumps({
        "napkin": __version__,
        "calculators": [describe_calculator(name) for name in calculators.available()],
        "catalog": {"gpus": sorted(catalog.gpus()), "models": sorted(catalog.models())},
        "limits": {"json_bytes": MAX_JSON_BYTES, "upload_bytes": MAX_UPLOAD_BYTES, "grid": WEB_GRID_CAP},
    }, ensure_ascii=False, allow_nan=False).encode()


async def get_calculator(request: Request) -> Response:
    return JSONResponse(describe_calculator(request.path_params["name"]))


def _cite(request: Request) -> bool:
    """``?cite=1``: the answer of ``--json --cite``."""
    value = request.query_params.get("cite", "")
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise InputError("cite", value, "must be 1 or 0", "give ?cite=1 for each step's formula, trap and source")


async def post_calculator(request: Request) -> Response:
    name = request.path_params["name"]
    cite = _cite(request)
    raw = await read_input(request, name)
    text = await run_in_threadpool(calculation.run_json, name, raw, cite=cite)
    return Response(text, media_type="application/json")


async def post_view(request: Request) -> Response:
    name = request.path_params["name"]
    raw = await read_input(request, name)
    return JSONResponse(await run_in_threadpool(view, name, raw))


async def post_charts(request: Request) -> Response:
    name = request.path_params["name"]
    raw = await read_input(request, name)

    def charts() -> dict:
        with uploads_as_paths(web_checks(name, raw), calculator(name).request) as (resolved, clean):
            out = charts_for(name, calculation.run(name, resolved))
            return json.loads(clean(json.dumps(out, allow_nan=False, default=str)))

    return JSONResponse(await run_in_threadpool(charts))


async def post_cli(request: Request) -> Response:
    name = request.path_params["name"]
    raw = await read_input(request, name)
    return JSONResponse({"command": cli_command(name, raw)})
