"""Time `napkin web`: start-up, and the round trip of one calculation through the real server.

Run: .venv/bin/python benchmarks/web_bench.py [--repeat 200]

Starts `napkin web --port 0` as a user would, and prints
  * start-up: from launching the process to the address printed, and to the first
    answer of GET /api (which loads every calculator);
  * the median and 95th-percentile round trip of POST /api/<name> (what --json prints)
    and POST /api/<name>/view (what the page asks for as the user types), over one
    keep-alive connection, for the memory and train worked examples;
  * the round trip as a fraction of the 100 ms the issue allows.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from napkin.web.examples import EXAMPLES  # noqa: E402

BUDGET_MS = 100.0


def start() -> tuple[subprocess.Popen, int, float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "from napkin.cli import main; main()", "web", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    printed = time.perf_counter() - t0
    m = re.search(r":(\d+)/", line)
    if not m:
        proc.kill()
        raise SystemExit(f"napkin web did not start: {line!r}")
    port = int(m.group(1))
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", "/api")
    conn.getresponse().read()
    answered = time.perf_counter() - t0
    conn.close()
    return proc, port, printed, answered


def round_trips(port: int, path: str, body: dict, repeat: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    data = json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    out = []
    for i in range(repeat + 5):
        t0 = time.perf_counter()
        conn.request("POST", path, body=data, headers=headers)
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit(f"{path}: {r.status}")
        if i >= 5:  # the first few warm the imports and caches
            out.append(time.perf_counter() - t0)
    conn.close()
    return out


def main() -> None:
    from floors import temporary_environment

    tmp = temporary_environment()  # noqa: F841 - kept until main returns
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    proc, port, printed, answered = start()
    try:
        print(f"start-up: address printed after {printed * 1e3:6.0f} ms; first GET /api answered after "
              f"{answered * 1e3:6.0f} ms")
        print(f"{'request':28} {'median':>9} {'p95':>9}  {'median / 100 ms':>15}")
        for name in ("memory", "train"):
            for suffix in ("", "/view"):
                times = sorted(round_trips(port, f"/api/{name}{suffix}", EXAMPLES[name], args.repeat))
                med = statistics.median(times) * 1e3
                p95 = times[int(0.95 * (len(times) - 1))] * 1e3
                print(f"POST /api/{name + suffix:18} {med:7.2f} ms {p95:7.2f} ms  {med / BUDGET_MS:15.3f}")
    finally:
        proc.terminate()
        proc.wait(5)


if __name__ == "__main__":
    main()
