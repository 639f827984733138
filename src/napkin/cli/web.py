"""``napkin web``: serve the local web calculator (Starlette + uvicorn, the ``web`` extra)."""

from __future__ import annotations

import click

from napkin.cli.common import fail, guarded

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


@click.command(help="Serve the web calculator: one page and a JSON API over the same calculators as the CLI.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback exposes the calculator to the network.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@guarded
def web(host: str, port: int, open_browser: bool) -> None:
    import socket

    try:
        import uvicorn

        from napkin.web.app import LOOPBACK_HOSTS, create_app
    except ModuleNotFoundError as exc:
        fail(f"`napkin web` needs the web extra ({exc.name} is missing): pip install 'llm-napkin[web]'")
        return
    loopback = host in LOOPBACK or host.startswith("127.")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        fail(f"host {host!r} cannot be resolved ({exc.strerror}); give an address such as 127.0.0.1")
        return
    family, socktype, proto, _, addr = infos[0]
    # proto must say TCP: asyncio sets TCP_NODELAY only on such sockets, and without it
    # a keep-alive response waits ~40 ms on the client's delayed ACK
    sock = socket.socket(family, socktype, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        fail(f"port {port} on {host} cannot be used ({exc.strerror}); give another with --port, or --port 0")
        return
    sock.listen(128)
    sock.set_inheritable(True)
    bound_port = sock.getsockname()[1]
    url = url_for(host, bound_port)
    if not loopback:
        click.echo(f"warning: listening on {host}, not loopback: anyone who can reach this machine can use "
                   "the calculator (no authentication); use --host 127.0.0.1 to keep it local", err=True)
    trusted = tuple(LOOPBACK_HOSTS) + ((host,) if host not in LOOPBACK_HOSTS else ()) if loopback else None
    app = create_app(trusted_hosts=trusted)
    click.echo(f"napkin web: serving on {url} (Ctrl-C to stop)")
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(0.3, webbrowser.open, args=(url,)).start()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", server_header=False)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
