"""Rate of the training planner's search, and the wall time of the README's `napkin plan train` command.

Run: .venv/bin/python benchmarks/plan_train_bench.py [--repeat 5]

1. Configurations evaluated per second with every degree free (TP, PP, CP, DP, ZeRO, recompute,
   micro-batch, interleave, sequence parallelism), in this process on one core: the search of
   `napkin plan train` (grid, mask, ranking, merge), imports and catalog loading excluded. The rate
   is given per CPU-second (time.process_time: what one core does, whatever else the machine
   runs) and per wall-second. Searches: Llama 3.1 70B on 1,024 H100s (the README's), Llama 3.1
   405B on 1,024 to 16,384, and Mixtral 8x7B with expert parallelism on 512.
2. The wall time of `napkin plan train --model llama-3.1-70b --gpu h100-sxm --gpus 1024 --seq-len
   8192 --global-batch 16M --json` as a fresh process (what a user waits for).
The floor the issue sets: 10M configurations/s on one core; the command well under a second.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

FLOOR_PER_S = 10e6
CASES = {
    "70B, 1,024 H100": dict(model="llama-3.1-70b", gpu="h100-sxm", gpus=[1024], seq_len=8192, global_batch="16Mi"),
    "405B, 1k-16k H100": dict(model="llama-3.1-405b", gpu="h100-sxm", gpus=[1024, 2048, 4096, 8192, 16384],
                              seq_len=8192, global_batch="16Mi"),
    "Mixtral, 512 H100": dict(model="mixtral-8x7b", gpu="h100-sxm", gpus=[512], seq_len=4096, global_batch="4Mi"),
}


def rate(raw: dict, repeat: int) -> tuple[int, float, float]:
    """(configurations, seconds per search by CPU time, by wall time): the median of ``repeat`` searches."""
    from napkin.derivation import Report
    from napkin.plan.train_request import PlanTrainRequest
    from napkin.plan.train_resolve import resolve
    from napkin.plan.train_search import chunks, merge, search_chunk
    from napkin.request import parse_request

    S, _m, _g, space, sizes = resolve(parse_request(PlanTrainRequest, raw), Report("bench"))
    pieces = chunks(S, sizes, space)
    cpu, wall = [], []
    n = 0
    for _ in range(repeat + 1):  # the first is a warm-up
        c0, w0 = time.process_time(), time.perf_counter()
        res = merge([search_chunk(S, k, rows, space, 10) for k, rows in pieces], 10)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        n = res["evaluated"]
    return n, statistics.median(cpu[1:]), statistics.median(wall[1:])


def command_wall(repeat: int) -> float:
    exe = Path(sys.executable).with_name("napkin")
    args = [str(exe), "plan", "train", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "1024",
            "--seq-len", "8192", "--global-batch", "16M", "--json"]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    from floors import temporary_environment

    tmp = temporary_environment()  # noqa: F841 - kept until main returns
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, raw in CASES.items():
        n, cpu, wall = rate(raw, args.repeat)
        print(f"{name:<20} {n:>11,} configurations  {cpu * 1e3:8.1f} ms CPU  {n / cpu:>14,.0f}/s per CPU-second  "
              f"{n / wall:>14,.0f}/s per wall-second   (floor {FLOOR_PER_S:,.0f}/s: x{n / cpu / FLOOR_PER_S:.1f})")
    t = command_wall(args.repeat)
    print(f"`napkin plan train --model llama-3.1-70b --gpu h100-sxm --gpus 1024 --seq-len 8192 --global-batch 16M "
          f"--json`: {t * 1e3:.0f} ms wall (median of {args.repeat} fresh processes)")


if __name__ == "__main__":
    main()
