"""The realised cost of a run from its step records: seed 001's arithmetic, vectorised.

Symbols, per record i in log order: ``s[i]`` step, ``t[i]`` wall time (s), ``g[i]`` GPUs
allocated from then on, ``k[i]`` tokens per step. Per pair (i, i+1):

- ``dt = t[i+1] − t[i]``; paid GPU-seconds ``dt · g[i]`` (allocated, not busy).
- ``forward`` when ``s[i+1] > s[i]``; otherwise a **rollback** (a restart from an
  earlier checkpoint, or the same step run again).
- steps run ``d``: ``s[i+1] − s[i]`` forward; after a rollback, the steps between the
  checkpoint and the first line logged after it are not in the log, so they are taken as
  one log interval (the median forward step difference), and the report says so.
- new steps ``n = max(0, min(s[i+1], S) − min(M[i], S))`` with ``M`` the running maximum
  of the step and ``S`` the last step: forward progress that survives to the end.
  ``Σ n = S − s[0]``, the advanced steps.
- a **gap** is a forward pair slower per step than ``gap_factor`` × the median: a
  restart that resumed where it stopped, a hang, a data-loader stall.

Productive time counts the time of new steps (a gap contributes only its new steps at
the median step time); everything else in the wall time is lost to restarts and gaps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from napkin.errors import InputError
from napkin.ledger.records import NotEnoughRecords
from napkin.units import DAY, HOUR, MILLION, YEAR
from napkin.units import format as _fmt

MAX_EVENTS = 20
MAX_SPAN_S = 10 * YEAR  # a log whose clock spans more is not one run: a corrupt t_wall


# ------------------------------------------------------------------------------ formulas
def paid_gpu_seconds(t_wall: Any, *, gpus_allocated: Any) -> float:
    """gpu_s = Σ (t[i+1] − t[i]) · g[i]

    Trap: busy GPUs instead of allocated ones, or step time instead of wall-clock gaps;
    both leave out the restarts, stragglers and stalls that are still paid for.
    Source: seed 001, "Tracking the realised cost during a run" (allocated, not busy).
    """
    import numpy as np

    t = np.asarray(t_wall, dtype=float)
    return float(np.sum(np.diff(t) * np.asarray(gpus_allocated, dtype=float)[:-1]))


def advanced_tokens(first_step: float, *, last_step: float, tokens_per_step: float) -> float:
    """advanced = (last step − first step) · tokens_per_step

    Trap: counting processed tokens; re-runs after a rollback inflate the denominator
    and flatter the cost.
    Source: seed 001, "Which tokens to count".
    """
    return (last_step - first_step) * tokens_per_step


def usd_per_million_tokens(usd: float, *, n_tokens: float) -> float:
    """usd_per_M = usd / tokens · 1e6

    Trap: a denominator without its definition; say advanced (or processed) beside it.
    Source: seed 001, "usd_per_m = usd / advanced * 1e6".
    """
    return usd / n_tokens * MILLION


def realised_mfu(advanced_tokens: float, *, flops_per_token: float, gpu_seconds: float,
                 dense_flops_per_s: float) -> float:
    """mfu_realised = flops_per_token · advanced_tokens / (allocated GPU-seconds · dense peak)

    Trap: the trainer's own MFU is over busy step time; this one is over paid time, so
    restarts, gaps and stragglers pull it down (it is MFU × goodput).
    Source: seed 001 (cost ∝ 1 / (MFU · goodput)); seed 004 (MFU, 6N model FLOPs, dense peak).
    """
    return flops_per_token * advanced_tokens / (gpu_seconds * dense_flops_per_s)


# ------------------------------------------------------------------------------ analysis
@dataclass
class Ledger:
    """Totals of a run, the restart events and the per-day split (all base units)."""

    usd_per_gpu_hour: float
    first_step: int
    last_step: int
    max_step: int
    records: int
    wall_s: float
    gpu_seconds: float
    usd: float
    advanced_steps: float
    processed_steps: float
    advanced_tokens: float
    processed_tokens: float
    productive_s: float
    stride_steps: float
    median_step_s: float
    rollbacks: int
    gaps: int
    events: list[dict] = field(default_factory=list)
    days: list[dict] = field(default_factory=list)
    t_first: float = 0.0
    t_last: float = 0.0
    gpus_min: float = 0.0
    gpus_max: float = 0.0
    tokens_per_step_min: float = 0.0
    tokens_per_step_max: float = 0.0

    @property
    def usd_per_million_advanced(self) -> float:
        return usd_per_million_tokens(self.usd, n_tokens=self.advanced_tokens)


def analyse(rec: Any, *, usd_per_gpu_hour: float, gap_factor: float = 5.0) -> Ledger:
    """Totals, restarts and per-day figures of ``rec`` (a :class:`napkin.ledger.records.Records`)."""
    import numpy as np

    s = np.asarray(rec.step, dtype=float)
    t = np.asarray(rec.t_wall, dtype=float)  # no copy when already float64
    g = np.asarray(rec.gpus, dtype=float)
    k = np.asarray(rec.tokens, dtype=float)
    dt = np.diff(t)
    ds = np.diff(s)
    span = float(t.max() - t.min())
    if span > MAX_SPAN_S:  # before anything is sized by the span (days, gaps)
        i = int(np.argmax(np.abs(dt)))
        raise InputError("t_wall", rec.where(i + 1), f"does not look like one run's clock: it jumps by "
                         f"{_fmt(float(dt[i]), 'seconds')} from the record "
                         f"before ({float(t[i]):.10g} to {float(t[i + 1]):.10g}); the log spans "
                         f"{span / YEAR:.3g} years", "fix or drop that record's clock")
    forward = ds > 0
    if not forward.any():
        raise NotEnoughRecords("step", rec.where(0), f"does not advance (step {int(s[0])} to {int(s[-1])} over "
                         f"{len(s)} records)", "a cost per token needs forward progress")
    first, last = s[0], s[-1]
    if last <= first:
        raise NotEnoughRecords("step", rec.where(len(s) - 1), f"must end after the first step {int(first)} (it ends at "
                         f"{int(last)}): no forward progress to divide by", "give the log up to a later step")
    stride = float(np.median(ds[forward]))
    d = np.where(forward, ds, stride)
    high = np.maximum.accumulate(s)[:-1]
    new = np.maximum(0.0, np.minimum(s[1:], last) - np.minimum(high, last))
    k_next = k[1:]
    per_step = dt / d  # d > 0 everywhere (the stride after a rollback)
    med = float(np.median(per_step[forward]))
    gap = forward & (per_step > gap_factor * med) if med > 0 else np.zeros_like(forward)
    productive = np.where(forward, np.where(gap, np.minimum(dt, new * med), dt * new / d), 0.0)
    gpu_s_pair = dt * g[:-1]
    gpu_s = float(gpu_s_pair.sum())
    led = Ledger(
        usd_per_gpu_hour=usd_per_gpu_hour, first_step=int(first), last_step=int(last), max_step=int(s.max()),
        records=len(s), wall_s=float(t[-1] - t[0]), gpu_seconds=gpu_s, usd=gpu_s / HOUR * usd_per_gpu_hour,
        advanced_steps=float(last - first), processed_steps=float(d.sum()),
        advanced_tokens=float((new * k_next).sum()), processed_tokens=float((d * k_next).sum()),
        productive_s=float(productive.sum()), stride_steps=stride, median_step_s=med,
        rollbacks=int((~forward).sum()), gaps=int(gap.sum()), t_first=float(t[0]), t_last=float(t[-1]),
        gpus_min=float(g.min()), gpus_max=float(g.max()), tokens_per_step_min=float(k.min()),
        tokens_per_step_max=float(k.max()),
    )
    if led.advanced_tokens <= 0:
        raise InputError("tokens", rec.where(len(s) - 1), "is zero over the steps that advanced",
                         "give --tokens-per-step or a tokens column with the tokens in each step")
    for i in np.flatnonzero(~forward | gap)[:MAX_EVENTS]:
        i = int(i)
        led.events.append({
            "kind": "rollback" if not forward[i] else "gap", "at": rec.where(i + 1),
            "from_step": int(s[i]), "to_step": int(s[i + 1]), "seconds": float(dt[i]),
            "steps_lost": int(max(0.0, high[i] - s[i + 1] + (d[i] if not forward[i] else 0.0))),
        })
    led.days = _per_day(rec, t, dt, {"gpu_seconds": gpu_s_pair, "advanced_tokens": new * k_next,
                                     "processed_tokens": d * k_next, "productive_s": productive, "wall_s": dt})
    for day in led.days:
        day["usd"] = day["gpu_seconds"] / HOUR * usd_per_gpu_hour
    return led


def _per_day(rec: Any, t: Any, dt: Any, q: dict[str, Any]) -> list[dict]:
    """Additive per-pair quantities split over calendar days (UTC), pro rata across midnight."""
    import datetime as _dt

    import numpy as np

    origin = 0.0 if rec.time_absolute else float(t[0])
    day_all = np.floor((t - origin) / DAY).astype(np.int64)
    day0, day1 = day_all[:-1], day_all[1:]
    lo = int(day0.min())
    n_days = int(day1.max()) - lo + 1
    idx = day0 - lo if lo else day0
    sums = {name: np.bincount(idx, weights=arr, minlength=n_days) for name, arr in q.items()}
    for i in np.flatnonzero((day1 != day0) & (dt > 0)):  # few: at most one per midnight
        a, b = float(t[i]), float(t[i + 1])
        for name, arr in q.items():  # move the whole pair out of its first day, then split it
            sums[name][day0[i] - lo] -= arr[i]
        for day in range(int(day0[i]), int(day1[i]) + 1):
            start, end = max(a, origin + day * DAY), min(b, origin + (day + 1) * DAY)
            frac = (end - start) / (b - a)
            for name, arr in q.items():
                sums[name][day - lo] += arr[i] * frac
    counts = np.bincount(day_all - lo, minlength=n_days)
    days = []
    for j in range(n_days):
        if sums["wall_s"][j] <= 0 and counts[j] == 0:
            continue
        label = (_dt.datetime.fromtimestamp((lo + j) * DAY, _dt.UTC).strftime("%Y-%m-%d") if rec.time_absolute
                 else f"day {lo + j + 1}")
        days.append({"date": label, "records": int(counts[j]), **{n: float(v[j]) for n, v in sums.items()}})
    return days


# ----------------------------------------------------------------------- running (live)
class RunningLedger:
    """The same definitions, updated one record at a time (for trainer callbacks).

    Within one process the step only moves forward, so this matches :func:`analyse` on
    the same records exactly (a test checks it); a restart is a new process and a new
    log, which ``napkin ledger report`` joins.
    """

    def __init__(self, usd_per_gpu_hour: float):
        self.usd_per_gpu_hour = usd_per_gpu_hour
        self.first_step: float | None = None
        self.last: tuple[float, float, float] | None = None  # step, t, gpus
        self.high = 0.0
        self.gpu_seconds = 0.0
        self.advanced_tokens = 0.0
        self.processed_tokens = 0.0

    def add(self, step: float, t_wall: float, gpus: float, tokens: float) -> None:
        if self.last is None:
            self.first_step, self.high = step, step
        else:
            s0, t0, g0 = self.last
            self.gpu_seconds += (t_wall - t0) * g0
            if step > s0:
                self.processed_tokens += (step - s0) * tokens
                self.advanced_tokens += max(0.0, step - self.high) * tokens
                self.high = max(self.high, step)
        self.last = (step, t_wall, gpus)

    @property
    def usd(self) -> float:
        return self.gpu_seconds / HOUR * self.usd_per_gpu_hour

    @property
    def usd_per_million(self) -> float | None:
        if self.advanced_tokens <= 0:
            return None
        return usd_per_million_tokens(self.usd, n_tokens=self.advanced_tokens)
