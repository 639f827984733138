"""Serving the web calculator: a listening socket, and uvicorn over it (what ``napkin web`` runs).

``listen(host, port)`` binds first, so a busy port or an unknown host is one line before
anything starts; ``serve(sock, host)`` runs the app on it until Ctrl-C. Off loopback the
server answers any Host name (the listener is already exposed); on loopback, only
loopback names (DNS rebinding).
"""

from __future__ import annotations

import socket
from typing import Callable

import uvicorn

from napkin.errors import NapkinError
from napkin.web.app import create_app
from napkin.web.guard import is_loopback, trusted_hosts_for

__all__ = ["is_loopback", "listen", "serve", "url_for"]


def url_for(host: str, port: int) -> str:
    """The address a person opens: ``http://127.0.0.1:8000/`` (an IPv6 address in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening (port 0 picks a free one)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise NapkinError(f"host {host!r} cannot be resolved ({exc.strerror}); give an address such as 127.0.0.1") \
            from None
    family, socktype, proto, _, addr = infos[0]
    # proto must say TCP: asyncio sets TCP_NODELAY only on such sockets, and without it
    # a keep-alive response waits ~40 ms on the client's delayed ACK
    sock = socket.socket(family, socktype, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        raise NapkinError(f"port {port} on {host} cannot be used ({exc.strerror}); give another with --port, "
                          "or --port 0") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(sock: socket.socket, host: str, *, on_start: Callable[[], None] | None = None) -> None:
    """Run the web calculator on a listening socket until Ctrl-C; ``on_start()`` once the app is built."""
    try:
        app = create_app(trusted_hosts=trusted_hosts_for(host))
        if on_start is not None:
            on_start()
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", server_header=False)
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
