"""Browser tests: `napkin web` in a subprocess, driven by the system Chromium through Playwright.

The browser is the distribution's Chromium (/usr/bin/chromium; `make test` installs it),
never one downloaded by Playwright. Without it these tests FAIL: a run where the browser
tests did not run is not a passing run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def system_chromium() -> str | None:
    for candidate in (os.environ.get("NAPKIN_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    path = system_chromium()
    if path is None:
        pytest.fail("the browser tests need the system Chromium (/usr/bin/chromium): "
                    "apt-get install chromium (`make test` does it); never a browser download")
    return {**browser_type_launch_args, "executable_path": path, "headless": True, "args": CHROMIUM_ARGS}


def _serve(preamble: str, home: Path):
    """`napkin web --port 0` in a subprocess (after ``preamble``); yields the address it prints.

    Its chart-library cache and data directory are under ``home``, a temporary folder."""
    log = tempfile.TemporaryFile()
    env = dict(os.environ, XDG_CACHE_HOME=str(home / "cache"), XDG_DATA_HOME=str(home / "data"))
    proc = subprocess.Popen([sys.executable, "-c", f"{preamble}from napkin.cli import main; main()", "web", "--port",
                             "0"], stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT, env=env)
    line = proc.stdout.readline()
    match = re.fullmatch(r"napkin web: serving on (http://127\.0\.0\.1:\d+/) \(Ctrl-C to stop\)\n", line)
    if not match:
        proc.kill()
        log.seek(0)
        pytest.fail(f"napkin web did not start: {line!r} {log.read().decode(errors='replace')}")
    yield match.group(1)
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> str:
    """`napkin web --port 0` in a subprocess; the address it prints."""
    yield from _serve("", tmp_path_factory.mktemp("server"))


@pytest.fixture(scope="session")
def cited_server(tmp_path_factory) -> str:
    """The same with a test calculator whose step cites its formula (tests/web/cited.py)."""
    yield from _serve("from tests.web import cited; cited.register(); ", tmp_path_factory.mktemp("cited-server"))


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    """Where the tests photograph the page: a temporary folder (pytest keeps the last few runs' for review)."""
    return tmp_path_factory.mktemp("screenshots")


class Watch:
    """What a page did that it should not: script errors, CSP violations, requests off the machine."""

    def __init__(self, page, server: str):
        self.page = page
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.host = urlparse(server).netloc
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.add_init_script(
            "window.__csp = [];"
            "document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")
        page.context.route("**/*", self._route)

    def _route(self, route) -> None:
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.netloc == self.host:
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def csp(self) -> list[str]:
        return self.page.evaluate("window.__csp")

    def assert_clean(self, *, allow: tuple[str, ...] = ()) -> None:
        errors = [e for e in self.errors if not any(a in e for a in allow)]
        assert errors == []
        assert self.csp() == []
        assert self.outside == []


@pytest.fixture
def watch(page, server) -> Watch:
    page.set_default_timeout(30_000)  # a 2-core CI runner under the whole suite; a pass takes well under 1 s
    return Watch(page, server)


@pytest.fixture
def cited_watch(page, cited_server) -> Watch:
    page.set_default_timeout(30_000)  # a 2-core CI runner under the whole suite; a pass takes well under 1 s
    return Watch(page, cited_server)

