"""`napkin web`: starts, prints its address, serves; refuses a busy port in one line; warns off loopback."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import pytest

from napkin.web.guard import CSP


def start(*args: str) -> tuple[subprocess.Popen, str, object]:
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-c", "from napkin.cli import main; main()", "web", *args],
                            stdout=subprocess.PIPE, stderr=err, text=True)
    return proc, proc.stdout.readline(), err


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_web_prints_its_address_and_serves_the_api_on_loopback():
    proc, line, err = start("--port", "0")
    try:
        m = re.fullmatch(r"napkin web: serving on http://127\.0\.0\.1:(\d+)/ \(Ctrl-C to stop\)\n", line)
        assert m, line
        port = int(m.group(1))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api") as r:
            assert r.headers["content-security-policy"] == CSP
            names = [c["name"] for c in json.loads(r.read())["calculators"]]
        assert "memory" in names
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/memory", method="POST",
                                     data=b'{"params": "70B"}', headers={"content-type": "application/json"})
        with urllib.request.urlopen(req) as r:
            assert json.loads(r.read())["weights_bytes"] == 140e9
        # bound to loopback, it answers only to loopback names (DNS rebinding)
        evil = urllib.request.Request(f"http://127.0.0.1:{port}/api", headers={"host": f"evil.example:{port}"})
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(evil)
        assert exc.value.code == 400
    finally:
        stop(proc)
    err.seek(0)
    assert err.read() == b""  # nothing but the address line: no access log, no banner


def test_web_off_loopback_warns():
    proc, line, err = start("--host", "0.0.0.0", "--port", "0")
    try:
        assert re.fullmatch(r"napkin web: serving on http://0\.0\.0\.0:\d+/ \(Ctrl-C to stop\)\n", line), line
    finally:
        stop(proc)
    err.seek(0)
    assert err.read().decode().splitlines()[0] == (
        "warning: listening on 0.0.0.0, not loopback: anyone who can reach this machine can use the calculator "
        "(no authentication); use --host 127.0.0.1 to keep it local")


def test_busy_port_is_one_line_and_exit_1(run_cli):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = run_cli("web", "--port", str(port), code=1)
    assert r.stderr == (f"error: port {port} on 127.0.0.1 cannot be used (Address already in use); "
                        "give another with --port, or --port 0\n")


def test_bad_port_is_a_usage_error(run_cli):
    r = run_cli("web", "--port", "70000", code=1)
    assert "70000 is not in the range 0<=x<=65535" in r.stderr
