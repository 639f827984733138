"""Writes sample-run.csv: three days of a 7B run on 64 H100s, 4Mi tokens per step, logged every 50 steps.

Day 1 runs at 7.0 s per step. On day 2 a node fails: the run restarts 40 minutes later from the
checkpoint 300 steps back. On day 3 a slow node stretches steps to 9.6 s. One line was cut short
when the job was killed, and one line was written twice. Deterministic: run it again to get the same file.

    python examples/logs/make_sample.py
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

T0 = dt.datetime(2024, 5, 1, 0, 0, tzinfo=dt.UTC).timestamp()
TOKENS = 4 * 2**20  # 4Mi tokens per step: 1,024 sequences of 4,096
GPUS = 64
EVERY = 50


def main() -> None:
    rows: list[str] = []
    step, t, loss = 0, T0, 3.2

    def log() -> None:
        iso = dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows.append(f"{step},{iso},{GPUS},{TOKENS},{loss:.4f}")

    log()
    while t + EVERY * 7.0 <= T0 + 1.6 * 86400:  # healthy
        step, t, loss = step + EVERY, t + EVERY * 7.0, loss * 0.9995
        log()
    rows.append(rows[-1])  # a line written twice
    rows.append(f"{step + EVERY},2024-05-02T1")  # cut short when the job was killed
    t += 40 * 60 + 4 * 7.0 * EVERY  # 40 min to restart, and the lost steps since the checkpoint
    step -= 300 - EVERY
    log()
    while t + EVERY * 7.0 <= T0 + 2.0 * 86400:
        step, t, loss = step + EVERY, t + EVERY * 7.0, loss * 0.9995
        log()
    while t + EVERY * 9.6 <= T0 + 3.0 * 86400:  # a slow node
        step, t, loss = step + EVERY, t + EVERY * 9.6, loss * 0.9995
        log()
    out = Path(__file__).with_name("sample-run.csv")
    out.write_text("step,t_wall,gpus_allocated,tokens,loss\n" + "\n".join(rows) + "\n")
    print(f"wrote {out} ({len(rows)} lines)")


if __name__ == "__main__":
    main()
