"""Helpers shared by the ledger tests (logs are written by the tests themselves)."""

from __future__ import annotations

import datetime as dt

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC).timestamp()  # 2024-05-01T00:00:00Z


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_csv(path, rows, *, header="step,t_wall,gpus_allocated,tokens", extra_lines=()):
    """rows: tuples matching the header; extra_lines: (index, raw text) inserted before that row."""
    lines = [",".join(str(v) for v in r) for r in rows]
    for idx, raw in sorted(extra_lines, reverse=True):
        lines.insert(idx, raw)
    path.write_text(header + "\n" + "\n".join(lines) + "\n")
    return str(path)


# The hand-checked log of test_hand_computed (seed 001's definitions, worked by hand there).
HAND = [(0, T0 + 0, 8, 1000), (10, T0 + 100, 8, 1000), (20, T0 + 200, 8, 1000),
        (15, T0 + 500, 4, 1000), (25, T0 + 600, 4, 1000), (30, T0 + 650, 4, 1000)]


# Eleven records 30 s apart on 8 GPUs, 1,000 tokens a step (steps 0..100 by 10): 300 s, $0.00083/GPU-s at $3.60/h.
BASE_ROWS = [(s, T0 + 3 * s, 8, 1000) for s in range(0, 101, 10)]
