"""The web server's guard: security headers, body limits, the Host check and cross-site refusal.

:class:`Guard` wraps the whole app (ASGI middleware). It adds the security headers to every
response, refuses a body over its limit (413, also when it streams without a length),
answers only to loopback names when bound to loopback (DNS rebinding), and refuses a
browser's cross-site POST (a form on another site posting to 127.0.0.1).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from napkin import units
from napkin.errors import NapkinError, quote
from napkin.units import MEBI

MAX_JSON_BYTES = int(MEBI)  # a request is a few hundred bytes; 1 MiB is generous
MAX_UPLOAD_BYTES = int(50 * MEBI)  # a training log; kept in memory, never written to disk

CSP = ("default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
       "script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether an address to listen on is this machine only."""
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def trusted_hosts_for(host: str) -> tuple[str, ...] | None:
    """The Host names a server listening on ``host`` answers to: loopback names (and the address
    itself) on loopback; any name off loopback, where the listener is already exposed."""
    if not is_loopback(host):
        return None
    return LOOPBACK_HOSTS + ((host,) if host not in LOOPBACK_HOSTS else ())


class BodyTooLarge(NapkinError):
    def __init__(self, limit: int, what: str):
        self.limit = limit
        self.what = what
        super().__init__(f"{what} is larger than the {units.format(limit, 'bytes', binary=True)} limit")

    def to_dict(self) -> dict:
        return {"field": "body", "value": None, "problem": f"exceeds the {self.what} limit",
                "fix": f"send at most {units.format(self.limit, 'bytes', binary=True)}", "message": str(self)}


def error_response(status: int, exc: Exception) -> JSONResponse:
    """An error as JSON: ``{field, value, problem, fix, message}``, never a traceback."""
    body = exc.to_dict() if hasattr(exc, "to_dict") else {
        "field": None, "value": None, "problem": str(exc), "fix": None, "message": str(exc)}
    return JSONResponse(quoted(body), status_code=status)


def quoted(body: dict) -> dict:
    """An error's parts with control characters escaped (:func:`napkin.errors.quote`), as JSON can hold them.

    What a user typed comes back in ``field``, ``value``, ``problem`` and ``message`` (an unknown
    key is the field; a step of a list is in the problem): a newline or an ESC in it must not
    make a second line, or move a terminal's cursor, wherever the page or a script shows it.
    A value that is not a finite number (an uploaded calibration's 1e400) is written as text:
    JSON has no inf.
    """
    def one(v: object) -> object:
        if isinstance(v, str):
            return quote(v)
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        return v

    return {k: one(v) for k, v in body.items()}


def _cross_site(headers: Any) -> bool:
    """A browser request sent by a page of another origin (a form on a hostile site posting to
    127.0.0.1): its Sec-Fetch-Site says so, or its Origin is not this server's Host. curl and
    scripts send neither header, and are not refused."""
    if headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return True
    origin = headers.get("origin")
    if not origin:
        return False
    from urllib.parse import urlsplit

    return origin == "null" or urlsplit(origin).netloc.lower() != headers.get("host", "").lower()


def _refusal(headers: Headers, trusted_hosts: tuple[str, ...] | None, method: str | None) -> JSONResponse | None:
    """The answer to a request from a name or a site this server does not serve (None to serve it)."""
    if trusted_hosts is not None:
        host = headers.get("host", "")
        hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        if hostname.lower() not in trusted_hosts:
            return JSONResponse({"field": "host", "value": quote(host), "problem": "is not this server's address",
                                 "fix": "open the address `napkin web` printed", "message": "invalid Host header"},
                                status_code=400)
    if method not in ("GET", "HEAD", "OPTIONS") and _cross_site(headers):
        return JSONResponse({"field": "origin", "value": quote(headers.get("origin") or headers.get("sec-fetch-site")),
                             "problem": "is another site: this server answers its own page only",
                             "fix": "use the page `napkin web` serves, or call the API without a browser",
                             "message": "cross-site request refused"}, status_code=403)
    return None


class Guard:
    """Security headers on every response, body size limits, and (on loopback) a Host check.

    The Host check refuses DNS-rebinding: a page elsewhere that points its own name at
    127.0.0.1 reaches this server with its own name in the Host header.
    """

    def __init__(self, app: Any, *, trusted_hosts: tuple[str, ...] | None = None,
                 json_limit: int = MAX_JSON_BYTES, upload_limit: int = MAX_UPLOAD_BYTES):
        self.app = app
        self.trusted_hosts = trusted_hosts
        self.json_limit = json_limit
        self.upload_limit = upload_limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_secure(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                names = {k.lower() for k, _ in message.get("headers", [])}
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + [
                    (k, v) for k, v in SECURITY_HEADERS if k not in names]
            await send(message)

        headers = Headers(scope=scope)
        refusal = _refusal(headers, self.trusted_hosts, scope.get("method"))
        if refusal is not None:
            await refusal(scope, receive, send_secure)
            return
        multipart = headers.get("content-type", "").lower().startswith("multipart/form-data")
        limit = self.upload_limit if multipart else self.json_limit
        what = "upload" if multipart else "request body"
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            await error_response(413, BodyTooLarge(limit, what))(scope, receive, send_secure)
            return
        seen = 0

        async def receive_limited() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit, what)
            return message

        try:
            await self.app(scope, receive_limited, send_secure)
        except BodyTooLarge as exc:
            if started:
                raise
            await error_response(413, exc)(scope, receive, send_secure)
