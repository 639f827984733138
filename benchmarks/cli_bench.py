"""Time the CLI: a `napkin memory` call against `python -c pass`, as a ratio.

Run: .venv/bin/python benchmarks/cli_bench.py [--repeat 20]
Prints the median wall time of each and their ratio; a single calculation should
answer in well under 100 ms, so heavy imports must stay lazy.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def median_s(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    base = median_s([sys.executable, "-c", "pass"], args.repeat)
    cases = {
        "napkin memory": [str(BIN / "napkin"), "memory", "--model", "llama-3.1-70b", "--context", "8k",
                          "--sequences", "32", "--gpu", "h100", "--gpus", "4"],
        "napkin --version": [str(BIN / "napkin"), "--version"],
    }
    print(f"python -c pass        {base * 1e3:7.1f} ms")
    for name, cmd in cases.items():
        t = median_s(cmd, args.repeat)
        print(f"{name:<20}  {t * 1e3:7.1f} ms   ratio {t / base:5.2f}x   above python {(t - base) * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
