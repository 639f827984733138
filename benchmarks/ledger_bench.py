"""`napkin ledger report` against its floors: rows per second, the ratio to a bare polars read, peak memory.

Generates a step log in a temporary folder (steps with two restarts that roll back, a GPU
count change and a stall; Unix-seconds t_wall, or ISO timestamps with --iso), then:

- default: times read + report in this process (the CLI's code path, without the store) and
  prints rows/s;
- ``--vs-polars``: runs ``napkin ledger report LOG`` and a bare ``polars.read_csv(LOG)`` as
  separate processes of this interpreter, interleaved, and prints the median of each and their
  ratio (the goal: at most 1.5);
- ``--memory``: writes a log of ``--gb`` gigabytes (1 by default) and prints the peak resident
  memory of ``napkin ledger report`` on it (``getrusage(RUSAGE_CHILDREN).ru_maxrss``; the goal:
  under 500 MB), with its totals and skip counts.

    .venv/bin/python benchmarks/ledger_bench.py [--rows 10000000] [--iso] [--jsonl] [--repeat 3]
    .venv/bin/python benchmarks/ledger_bench.py --vs-polars [--rows 3000000] [--repeat 7]
    .venv/bin/python benchmarks/ledger_bench.py --memory [--gb 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPORT = [sys.executable, "-c", "import sys; from napkin.cli import main; sys.argv[0] = 'napkin'; main()",
          "ledger", "report", "--price", "2.50/h", "--no-store"]


def make_log(path: str, rows: int, iso: bool, jsonl: bool = False, *, damaged: int = 0) -> None:
    """``rows`` records (and ``damaged`` lines cut short, spread through the log)."""
    import numpy as np
    import polars as pl

    step = np.arange(rows, dtype=np.int64)
    t = 1_714_521_600.0 + step * 7.5
    third = rows // 3
    step[third:] -= 50  # a restart that rolled back 50 steps
    t[third:] += 1800  # after 30 minutes down
    step[2 * third:] -= 20
    t[2 * third:] += 600
    t[rows // 2:] += 3600  # a stall of an hour
    gpus = np.where(np.arange(rows) < rows // 4, 512, 480)  # a node dropped out
    df = pl.DataFrame({"step": step, "t_wall": t, "gpus_allocated": gpus, "tokens": np.full(rows, 4_194_304),
                       "loss": np.linspace(3.0, 1.8, rows)})
    if iso:
        df = df.with_columns(pl.from_epoch((pl.col("t_wall") * 1e6).cast(pl.Int64), time_unit="us")
                             .dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").alias("t_wall"))
    if jsonl:
        df.write_ndjson(path)
    else:
        df.write_csv(path)
    if damaged:
        with open(path, "a") as fh:
            fh.write("".join(f"{rows + i},1714521\n" for i in range(damaged)))


def in_process(a: argparse.Namespace) -> None:
    from napkin import calculate

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "steps.jsonl" if a.jsonl else "steps.csv")
        t0 = time.perf_counter()
        make_log(path, a.rows, a.iso, a.jsonl)
        size = os.path.getsize(path)
        print(f"generated {a.rows:,} rows ({size / 1e6:,.0f} MB) in {time.perf_counter() - t0:.1f} s")
        best = float("inf")
        for i in range(a.repeat):
            t0 = time.perf_counter()
            r = calculate("ledger", {"logs": [path], "price": "2.50/h", "plan_usd_per_million": "0.08"})
            dt = time.perf_counter() - t0
            best = min(best, dt)
            print(f"run {i + 1}: read + report {dt:.2f} s = {a.rows / dt / 1e6:.2f}M rows/s "
                  f"({size / dt / 1e6:,.0f} MB/s); {r['records']:,} records, "
                  f"${r['usd_per_million_advanced_tokens']:.4f}/M advanced, {r['restarts']['count']} restarts")
        print(f"best: {a.rows / best / 1e6:.2f}M rows/s ({best:.2f} s for {a.rows:,} rows)")


def vs_polars(a: argparse.Namespace) -> None:
    from floors import _run as floors_run  # (wall, CPU) seconds of one run, as floors.py times them

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "steps.csv")
        make_log(path, a.rows, a.iso)
        bare = [sys.executable, "-c", f"import polars as pl; pl.read_csv({path!r})"]
        ours = [*REPORT, path]
        print(f"{a.rows:,} rows, {os.path.getsize(path) / 1e6:,.0f} MB; {a.repeat} interleaved runs of each "
              f"(one process each, {sys.executable})")
        floors_run(bare), floors_run(ours)  # warm the page cache and the bytecode
        t_bare, t_ours = [], []
        for _ in range(a.repeat):
            t_bare.append(floors_run(bare))
            t_ours.append(floors_run(ours))
        for what, i in (("wall", 0), ("CPU (user + system)", 1)):
            b, o = statistics.median(x[i] for x in t_bare), statistics.median(x[i] for x in t_ours)
            print(f"{what}: bare polars.read_csv median {b:.3f} s, napkin ledger report median {o:.3f} s: "
                  f"ratio {o / b:.2f}x" + (" (goal: at most 1.5x)" if not i else ""))
        print("runs (wall s): bare " + ", ".join(f"{x[0]:.2f}" for x in t_bare) + "; napkin "
              + ", ".join(f"{x[0]:.2f}" for x in t_ours))


def peak_of(cmd: list[str]) -> None:
    """Run ``cmd`` and print its peak resident memory in bytes (this process stays small: a child forked from
    a process that holds a large log would start with that process's pages counted)."""
    subprocess.run(cmd, check=True, stdout=sys.stdout)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr)  # KiB on Linux


def memory(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "steps.csv")
        rows = int(a.gb * 1e9 / 51)  # the generated lines are about 51 bytes each
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--make", path, str(rows)], check=True)
        size = os.path.getsize(path)
        print(f"generated {rows:,} rows and 3 cut-short lines ({size / 1e9:.2f} GB) in {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--peak-of", *REPORT, path, "--json"], check=True,
                             capture_output=True, text=True)
        dt = time.perf_counter() - t0
        peak = int(out.stderr.strip().splitlines()[-1])
        r = json.loads(out.stdout)
        print(f"napkin ledger report: {dt:.1f} s, peak resident memory {peak / 1e6:,.0f} MB (goal: under 500 MB)")
        print(f"  records {r['records']:,}, skipped {r['skipped_lines']['count']}, duplicates {r['duplicates']}, "
              f"${r['usd_per_million_advanced_tokens']:.6f}/M advanced, {r['gpu_hours_allocated']:,.3f} GPU-hours, "
              f"{r['restarts']['count']} restarts")


def main() -> None:
    if sys.argv[1:2] == ["--peak-of"]:
        return peak_of(sys.argv[2:])
    if sys.argv[1:2] == ["--make"]:
        return make_log(sys.argv[2], int(sys.argv[3]), False, damaged=3)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int)
    ap.add_argument("--iso", action="store_true", help="ISO timestamps instead of Unix seconds")
    ap.add_argument("--jsonl", action="store_true", help="JSON Lines instead of CSV")
    ap.add_argument("--repeat", type=int)
    ap.add_argument("--vs-polars", action="store_true", help="the ratio to a bare polars.read_csv, one process each")
    ap.add_argument("--memory", action="store_true", help="peak memory of `ledger report` on a large log")
    ap.add_argument("--gb", type=float, default=1.0, help="size of the --memory log in GB")
    a = ap.parse_args()
    # processes as an installed napkin runs them: bytecode compiled and catalogs precompiled, in a temporary folder
    from floors import environment

    tmp = tempfile.TemporaryDirectory()
    environment(tmp.name)
    if a.memory:
        memory(a)
    elif a.vs_polars:
        a.rows, a.repeat = a.rows or 3_000_000, a.repeat or 7
        vs_polars(a)
    else:
        a.rows, a.repeat = a.rows or 10_000_000, a.repeat or 3
        in_process(a)


if __name__ == "__main__":
    main()
