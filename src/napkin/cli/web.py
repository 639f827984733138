"""``napkin web``: serve the local web calculator (Starlette + uvicorn, the ``web`` extra)."""

from __future__ import annotations

import click

from napkin.cli.common import fail, guarded


@click.command(help="Serve the web calculator: one page and a JSON API over the same calculators as the CLI.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback exposes the calculator to the network.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@guarded
def web(host: str, port: int, open_browser: bool) -> None:
    try:
        from napkin.web import server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "napkin":  # a module of napkin itself: a broken build, not the extra
            raise
        fail(f"`napkin web` needs the web extra ({exc.name} is missing): pip install 'llm-napkin[web]'")
        return
    sock = server.listen(host, port)
    url = server.url_for(host, sock.getsockname()[1])
    if not server.is_loopback(host):
        click.echo(f"warning: listening on {host}, not loopback: anyone who can reach this machine can use "
                   "the calculator (no authentication); use --host 127.0.0.1 to keep it local", err=True)

    def started() -> None:
        click.echo(f"napkin web: serving on {url} (Ctrl-C to stop)")
        if open_browser:
            import threading
            import webbrowser

            threading.Timer(0.3, webbrowser.open, args=(url,)).start()

    server.serve(sock, host, on_start=started)
