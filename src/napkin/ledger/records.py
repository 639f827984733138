"""Step records from one or more logs, in run order, checked: the input of the arithmetic.

Several logs of one run (a restart that wrote a new file) are put in time order by their
first record when their clocks are Unix time; logs timed from their own start are
chained in the order given, end to start (the time between them is not in the logs, so
it is not counted, and the report says so). Exact duplicates (same step at the same
time, a line written twice) are dropped and counted. Time must not go backwards: a log
out of order is an error that names the lines, never a silent re-sort that would hide a
restart; two logs whose times overlap are an error that names both. Time must advance:
a log whose every record is at the same time (dates without a time of day) has no paid
time to count.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from napkin.errors import InputError


class NotEnoughRecords(InputError):
    """The log has too few records (yet) for a cost: empty, one record, or no forward progress."""


@dataclass
class Records:
    """Parallel arrays in log order (numpy), and where each record came from."""

    step: Any
    t_wall: Any
    gpus: Any
    tokens: Any
    line: Any
    source: Any  # index into ``sources``
    sources: list[str]
    time_absolute: bool = True
    duplicates: int = 0
    location: str = "line"
    extras: dict[str, Any] = field(default_factory=dict)  # e.g. mfu_logged, loss (numpy, aligned)
    chained: bool = False  # logs timed from their own start, put end to start

    def __len__(self) -> int:
        return len(self.step)

    def where(self, i: int) -> str:
        return f"{self.sources[int(self.source[i])]}:{self.location} {int(self.line[i])}"


def _fmt_t(t: float, absolute: bool) -> str:
    if absolute:
        try:
            return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S") + " UTC"
        except (ValueError, OverflowError, OSError):  # beyond the calendar: a corrupt clock, shown as it is
            return f"{t:.10g} s since 1970"
    return f"{t:g} s"


def combine(reads: list[Any], *, extra_columns: tuple[str, ...] = ("mfu_logged", "loss")) -> Records:
    """One Records from several LogReads; duplicates dropped and counted; time order checked."""
    import numpy as np
    import polars as pl

    if not reads:
        raise InputError("logs", "nothing", "is required", "give one or more step logs")
    frames = []
    absolute = all(r.time_absolute for r in reads)
    if not absolute and any(r.time_absolute for r in reads) and len(reads) > 1:
        raise InputError("logs", ", ".join(r.path for r in reads),
                         "mix Unix timestamps and seconds-from-start", "give logs with one kind of clock")
    order = list(range(len(reads)))
    if absolute:
        order.sort(key=lambda i: reads[i].frame["t_wall"].min() if reads[i].frame.height else float("inf"))
    offset = 0.0
    for idx in order:
        r = reads[idx]
        f = r.frame
        if f.height == 0:
            continue
        keep = ["line", "step", "t_wall", "gpus_allocated", "tokens",
                *[c for c in extra_columns if c in f.columns]]
        f = f.select(keep).with_columns(pl.lit(idx, dtype=pl.Int32).alias("source"))
        if not absolute and len(reads) > 1:
            f = f.with_columns(pl.col("t_wall") - f["t_wall"][0] + offset)
            offset = float(f["t_wall"][-1])
        frames.append(f)
    if not frames:
        shown = reads[0]
        detail = ""
        if shown.skipped:
            detail = f" ({shown.skipped_count} skipped: " + "; ".join(
                f"{shown.location} {n}: {why}" for n, why in shown.skipped[:3]) + ")"
        raise NotEnoughRecords("log", ", ".join(r.path for r in reads), "has no step records" + detail,
                         "give a log with step, t_wall, gpus_allocated and tokens per record")
    df = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    n_before = df.height
    t_np, s_np = df["t_wall"].to_numpy(), df["step"].to_numpy()
    if np.all(np.diff(t_np) >= 0):
        # time in order: a duplicate line repeats the step and time of its predecessor
        dup = np.zeros(len(t_np), dtype=bool)
        dup[1:] = (np.diff(t_np) == 0) & (np.diff(s_np) == 0)
        if dup.any():
            df = df.filter(pl.Series(~dup))
    else:
        df = df.filter(pl.struct(["step", "t_wall"]).is_first_distinct())
    duplicates = n_before - df.height
    sources = [r.path for r in reads]
    rec = Records(step=df["step"].to_numpy(), t_wall=df["t_wall"].to_numpy(), gpus=df["gpus_allocated"].to_numpy(),
                  tokens=df["tokens"].to_numpy(), line=df["line"].to_numpy(), source=df["source"].to_numpy(),
                  sources=sources, time_absolute=absolute, duplicates=duplicates, location=reads[0].location,
                  extras={c: df[c].cast(pl.Float64, strict=False).to_numpy() for c in extra_columns
                          if c in df.columns},  # a text value (a nested object kept as text) is NaN here
                  chained=not absolute and len(frames) > 1)
    if len(rec) == 1:
        raise NotEnoughRecords("log", sources[0], f"has one step record (step {int(rec.step[0])} at "
                         f"{rec.location} {int(rec.line[0])}): a cost needs at least two, and the time between them",
                         "give a longer log")
    back = np.flatnonzero(np.diff(rec.t_wall) < 0)
    if back.size:
        i = int(back[0]) + 1
        if rec.source[i] != rec.source[i - 1]:  # two logs: the later one starts before the earlier one ends
            a, b = sources[int(rec.source[i - 1])], sources[int(rec.source[i])]
            raise InputError("logs", f"{a}, {b}",
                             f"must not overlap in time ({b} starts at {_fmt_t(rec.t_wall[i], absolute)}, before "
                             f"{a} ends at {_fmt_t(rec.t_wall[i - 1], absolute)} at {rec.where(i - 1)})",
                             "give the logs of one run, whose restarts follow each other; two jobs that ran at once "
                             "are two runs: report each on its own")
        raise InputError("t_wall", f"{_fmt_t(rec.t_wall[i], absolute)} at {rec.where(i)}",
                         f"must not go backwards (it was {_fmt_t(rec.t_wall[i - 1], absolute)} at {rec.where(i - 1)}; "
                         f"{back.size} place(s) in all)",
                         "a step log must be in time order; give each restart's log as its own file")
    if rec.t_wall[-1] <= rec.t_wall[0]:
        whole = np.all(rec.t_wall == np.floor(rec.t_wall))
        clock = next((r.clock for r in reads if r.clock), "") or (
            "whole seconds: a 1-s resolution" if whole else "fractions of a second")
        raise NotEnoughRecords("t_wall", f"{_fmt_t(rec.t_wall[0], absolute)} at {rec.where(0)} to "
                               f"{rec.where(len(rec) - 1)}",
                               f"does not advance: all {len(rec)} records (steps {int(rec.step.min())} to "
                               f"{int(rec.step.max())}) are at one time, so there is no paid time to count (the "
                               f"log's clock has {clock})",
                               "log the wall time of each step to the second: ISO timestamps with a time of day, "
                               "or Unix seconds")
    return rec
