"""Rows per second of `napkin ledger report` on a 10-million-row step log (CSV or JSON Lines).

Generates the log in a temporary folder (steps with two restarts that roll back, a GPU
count change and a stall; Unix-seconds t_wall, or ISO timestamps with --iso), then times
read + report (the same code path as the CLI, without the store) and prints rows/s.

    .venv/bin/python benchmarks/ledger_bench.py [--rows 10000000] [--iso] [--jsonl] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def make_log(path: str, rows: int, iso: bool, jsonl: bool = False) -> None:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--iso", action="store_true", help="ISO timestamps instead of Unix seconds")
    ap.add_argument("--jsonl", action="store_true", help="JSON Lines instead of CSV")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
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


if __name__ == "__main__":
    main()
