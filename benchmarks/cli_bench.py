"""Time the CLI: single calculations against `python -c pass`, as ratios.

Run: .venv/bin/python benchmarks/cli_bench.py [--repeat 20]
Prints the median wall time of each and its ratio to a bare Python start; a single
calculation should answer in well under 100 ms above it, so heavy imports must stay lazy.
The cases cover one module (`memory`), a package with composition through the registry
(`train`, `compare` running train per part) and a sweep (`train --vary`, one plan per row).
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
    import tempfile

    from floors import environment  # bytecode and catalog copies as installed, in a temporary folder

    tmp = tempfile.TemporaryDirectory()
    environment(tmp.name)
    base = median_s([sys.executable, "-c", "pass"], args.repeat)
    cases = {
        "napkin memory": [str(BIN / "napkin"), "memory", "--model", "llama-3.1-70b", "--context", "8k",
                          "--sequences", "32", "--gpu", "h100", "--gpus", "4"],
        "napkin train": [str(BIN / "napkin"), "train", "--params", "7B", "--tokens", "2T", "--gpu", "h100",
                         "--gpus", "1024"],
        "napkin compare": [str(BIN / "napkin"), "compare", "--gpu", "h100,b200,mi300x", "--params", "7B",
                           "--tokens", "2T"],
        "napkin train --vary": [str(BIN / "napkin"), "train", "--params", "7B", "--tokens", "2T", "--price", "2.5",
                                "--vary", "mfu=0.3,0.35,0.4,0.45,0.5", "--vary", "gpus=512,1024,2048,4096"],
        "napkin --version": [str(BIN / "napkin"), "--version"],
    }
    print(f"python -c pass        {base * 1e3:7.1f} ms")
    for name, cmd in cases.items():
        t = median_s(cmd, args.repeat)
        print(f"{name:<20}  {t * 1e3:7.1f} ms   ratio {t / base:5.2f}x   above python {(t - base) * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
