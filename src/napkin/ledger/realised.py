"""The realised cost of a run from its step records: paid GPU time over advanced tokens, vectorised.

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
from napkin.ledger.days import DayPart, Days
from napkin.ledger.records import NotEnoughRecords
from napkin.units import HOUR, MILLION, YEAR
from napkin.units import format as _fmt

MAX_EVENTS = 20
MAX_SPAN_S = 10 * YEAR  # a log whose clock spans more is not one run: a corrupt t_wall


# ------------------------------------------------------------------------------ formulas
def paid_gpu_seconds(t_wall: Any, *, gpus_allocated: Any) -> float:
    """gpu_s = Σ (t[i+1] − t[i]) · g[i]

    Trap: busy GPUs instead of allocated ones, or step time instead of wall-clock gaps;
    both leave out the restarts, stragglers and stalls that are still paid for.
    Source: reasoning: a GPU is paid for while it is allocated, busy or not (cloud bills meter
    allocation; Dubey et al. 2024 report Llama 3's effective training time the same way).
    """
    import numpy as np

    t = np.asarray(t_wall, dtype=float)
    return float(np.sum(np.diff(t) * np.asarray(gpus_allocated, dtype=float)[:-1]))


def advanced_tokens(first_step: Any, *, last_step: Any, tokens_per_step: Any) -> Any:
    """advanced = (last step − first step) · tokens_per_step

    Array-safe: :func:`analyse` applies it to every record pair, from the high-water step
    before the pair to the (higher) step after it, so the pairs add up to the run's.
    Trap: counting processed tokens; re-runs after a rollback inflate the denominator
    and flatter the cost.
    Source: reasoning: the step counter at the end of the run times tokens per step is the
    training the model kept; Chowdhery et al. 2022 (PaLM) count MFU over the same tokens.
    """
    return (last_step - first_step) * tokens_per_step


def usd_per_million_tokens(usd: float, *, n_tokens: float) -> float:
    """usd_per_M = usd / tokens · 1e6

    Trap: a denominator without its definition; say advanced (or processed) beside it.
    Source: reasoning: dollars over tokens, per million (the unit API prices use).
    """
    return usd / n_tokens * MILLION


def realised_mfu(advanced_tokens: float, *, flops_per_token: float, gpu_seconds: float,
                 dense_flops_per_s: float) -> float:
    """mfu_realised = flops_per_token · advanced_tokens / (allocated GPU-seconds · dense peak)

    Trap: the trainer's own MFU is over busy step time; this one is over paid time, so
    restarts, gaps and stragglers pull it down (it is MFU × goodput while the GPU count holds).
    Source: Chowdhery et al. 2022, appendix B (MFU: 6N model FLOPs over the dense peak); cost per
    token ∝ 1 / (MFU · goodput) follows.
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
    busy_gpu_seconds: float = 0.0  # GPU-seconds of the productive time (the steps that advanced)
    mfu_logged_median: float | None = None  # the trainer's own MFU, where the log has it

    @property
    def usd_per_million_advanced(self) -> float:
        return usd_per_million_tokens(self.usd, n_tokens=self.advanced_tokens)


@dataclass
class _Carry:
    """The record before a chunk, and the running high-water step."""

    step: float
    t: float
    gpus: float
    high: float


def _pairs(c: Any, prev: _Carry | None) -> tuple[Any, ...]:
    """(s, t, g) of the chunk with the record before it in front, and dt, ds between them."""
    import numpy as np

    if prev is None:
        s, t, g = c.step, c.t_wall, c.gpus
    else:
        s, t, g = (np.concatenate([[prev.step], c.step]), np.concatenate([[prev.t], c.t_wall]),
                   np.concatenate([[prev.gpus], c.gpus]))
    return s, t, g, np.diff(t), np.diff(s)


@dataclass
class Quick:
    """A chunk whose every pair moves forward, figured as the usual chunk is (every step new, none a gap); it
    is taken so when the run's rules allow (:meth:`_Sums.usual`): no pair slower per step than the gap
    threshold, no step past the last, and the record before it at the high-water step."""

    max_rate: float  # the slowest pair's seconds per step
    s_last: float
    total: dict[str, float]
    q: dict[str, Any] | None  # the per-pair arrays (an early pass keeps only their sums by day)
    days: Any  # a napkin.ledger.days.DayPart of q, with ``origin`` given
    carry: tuple[float, float, float, float]  # the _Carry after it


def quick(c: Any, prev: _Carry | None, pairs: tuple[Any, ...] | None = None, *,
          origin: float | None = None) -> Quick | None:
    """The :class:`Quick` figures of chunk ``c`` after ``prev`` (by day from ``origin``, when given); None when a
    pair does not move forward (or the chunk is the run's first record alone)."""
    import numpy as np

    s, t, g, dt, ds = pairs or _pairs(c, prev)
    if not len(dt) or not bool(np.all(ds > 0)):
        return None
    k_next = c.tokens if prev is not None else c.tokens[1:]
    gpu_s_pair = dt * g[:-1]
    tokens = advanced_tokens(s[:-1], last_step=s[1:], tokens_per_step=k_next)  # every step new: = processed
    q = {"gpu_seconds": gpu_s_pair, "advanced_tokens": tokens, "processed_tokens": tokens,
         "productive_s": dt, "wall_s": dt, "busy_gpu_seconds": gpu_s_pair}
    total = {"gpu_s": float(gpu_s_pair.sum()), "processed_steps": float(s[-1] - s[0]),
             "advanced_tokens": float(tokens.sum()), "productive_s": float(t[-1] - t[0])}
    total.update(processed_tokens=total["advanced_tokens"], busy_gpu_s=total["gpu_s"])
    days = None if origin is None else DayPart.of(t, c.t_wall, q, origin)
    return Quick(float((dt / ds).max()), float(s[-1]), total, q, days,
                 (float(s[-1]), float(t[-1]), float(g[-1]), float(s[-1])))


class _Sums:
    """The run's sums, restarts and gaps, added a chunk at a time."""

    def __init__(self, rec: Any, *, last: float, stride: float, med: float, gap_factor: float, days: Any):
        self.rec, self.last, self.stride, self.med = rec, last, stride, med
        self.gap_factor, self.days = gap_factor, days
        self.sums = dict.fromkeys(("gpu_s", "processed_steps", "advanced_tokens", "processed_tokens", "productive_s",
                                   "busy_gpu_s"), 0.0)
        self.rollbacks = self.gaps = 0
        self.events: list[dict] = []

    def usual(self, qk: Quick | None, prev: _Carry | None) -> bool:
        """Every step of the chunk new and none a gap: its :class:`Quick` figures hold."""
        return (qk is not None and (prev is None or prev.step >= prev.high) and qk.s_last <= self.last
                and (self.med <= 0 or qk.max_rate <= self.gap_factor * self.med))

    def add(self, total: dict[str, float]) -> None:
        for key, value in total.items():
            self.sums[key] += value

    def chunk(self, c: Any, prev: _Carry | None) -> _Carry:
        """Chunk ``c`` after ``prev`` added; the carry after it."""
        pairs = _pairs(c, prev)
        s, t, g, dt, ds = pairs
        if not len(dt):  # the run's first record alone: no pair yet
            return _Carry(float(s[-1]), float(t[-1]), float(g[-1]), float(s[-1]))
        qk = quick(c, prev, pairs)
        if self.usual(qk, prev):
            assert qk is not None and qk.q is not None
            q, total, high_end = qk.q, qk.total, qk.s_last
        else:
            k_next = c.tokens if prev is not None else c.tokens[1:]
            q, total, counts, found, high_end = _pairs_in_full(
                c, prev, s, t, g, dt, ds, k_next, last=self.last, stride=self.stride, med=self.med,
                gap_factor=self.gap_factor, room=max(MAX_EVENTS - len(self.events), 0), rec=self.rec)
            self.rollbacks, self.gaps = self.rollbacks + counts[0], self.gaps + counts[1]
            self.events += found
        self.add(total)
        if self.days is not None:
            self.days.add(t, c.t_wall, q)
        return _Carry(float(s[-1]), float(t[-1]), float(g[-1]), high_end)


def _medians(rec: Any) -> dict[str, Any]:
    """The medians the rules need, and the extremes (gathered by the records' check)."""
    from napkin.ledger.median import median

    tally = rec.tally
    out = {"max_step": tally.steps[1], "g": tally.gpus, "k": tally.tokens, "forward": tally.forward_ds.n,
           "stride": median(tally.forward_ds), "med": median(tally.forward_step_s), "mfu": median(tally.mfu_logged)}
    return out


def analyse(rec: Any, *, usd_per_gpu_hour: float, gap_factor: float = 5.0) -> Ledger:
    """Totals, restarts and per-day figures of ``rec`` (a :class:`napkin.ledger.records.Records`), in two passes
    over its records: the medians, then the sums (per day only where the log has a clock per record). When the
    reader made the first pass as it read (``rec.early``), the second reads again only the chunks that are not
    the usual kind."""
    s0, t0 = rec.first[:2]
    last, t_last = rec.last[:2]
    span = t_last - t0
    if span > MAX_SPAN_S:  # before anything is sized by the span (days, gaps)
        jump, source, line, a, b = rec.jump
        raise InputError("t_wall", rec.where(source, line), f"does not look like one run's clock: it jumps by "
                         f"{_fmt(jump, 'seconds')} from the record before ({a:.10g} to {b:.10g}); the log spans "
                         f"{span / YEAR:.3g} years", "fix or drop that record's clock")
    m = _medians(rec)
    if not m["forward"]:
        raise NotEnoughRecords("step", rec.where(rec.first[3], rec.first[2]), f"does not advance (step {int(s0)} to "
                               f"{int(last)} over {rec.n} records)", "a cost per token needs forward progress")
    if last <= s0:
        raise NotEnoughRecords("step", rec.where(rec.last[3], rec.last[2]), f"must end after the first step "
                               f"{int(s0)} (it ends at {int(last)}): no forward progress to divide by",
                               "give the log up to a later step")
    stride, med = float(m["stride"]), float(m["med"])
    days = Days(rec, t0, t_last) if rec.clock_per_record else None
    acc = _Sums(rec, last=last, stride=stride, med=med, gap_factor=gap_factor, days=days)
    prev: _Carry | None = None
    if rec.early is None:
        for c in rec.chunks():
            prev = acc.chunk(c, prev)
    else:  # the reader's pass has the usual chunks' figures: only the others are read again
        for item in rec.early.items:
            qk = item.quick
            if acc.usual(qk, prev) and (days is None or (qk.days is not None and qk.days.origin == days.origin)):
                acc.add(qk.total)
                if days is not None:
                    days.merge(qk.days)
                prev = _Carry(*item.quick.carry)
            else:
                prev = acc.chunk(rec.chunk_again(item.frame, item.prev), prev)
    sums, rollbacks, gaps, events = acc.sums, acc.rollbacks, acc.gaps, acc.events
    gpu_s = sums["gpu_s"]
    led = Ledger(
        usd_per_gpu_hour=usd_per_gpu_hour, first_step=int(s0), last_step=int(last), max_step=int(m["max_step"]),
        records=rec.n, wall_s=float(t_last - t0), gpu_seconds=gpu_s, usd=gpu_s / HOUR * usd_per_gpu_hour,
        advanced_steps=float(last - s0), processed_steps=sums["processed_steps"],
        advanced_tokens=sums["advanced_tokens"], processed_tokens=sums["processed_tokens"],
        productive_s=sums["productive_s"], stride_steps=stride, median_step_s=med, rollbacks=rollbacks, gaps=gaps,
        events=events, t_first=float(t0), t_last=float(t_last), gpus_min=m["g"][0], gpus_max=m["g"][1],
        tokens_per_step_min=m["k"][0], tokens_per_step_max=m["k"][1], busy_gpu_seconds=sums["busy_gpu_s"],
        mfu_logged_median=m["mfu"],
    )
    if led.advanced_tokens <= 0:
        raise InputError("tokens", rec.where(rec.last[3], rec.last[2]), "is zero over the steps that advanced",
                         "give --tokens-per-step or a tokens column with the tokens in each step")
    led.days = days.table(usd_per_gpu_hour) if days is not None else []
    return led


def _pairs_in_full(c: Any, prev: _Carry | None, s: Any, t: Any, g: Any, dt: Any, ds: Any, k_next: Any, *,
                   last: float, stride: float, med: float, gap_factor: float, room: int, rec: Any) -> tuple:
    """The per-pair quantities of a chunk with rollbacks, gaps or steps past the last (the module's rules)."""
    import numpy as np

    high = np.maximum.accumulate(s if prev is None else np.concatenate([[max(prev.high, prev.step)], s[1:]]))[:-1]
    forward = ds > 0
    d = np.where(forward, ds, stride)
    reached = np.minimum(high, last)  # forward progress counts only from the high-water step, up to the last step
    new = np.maximum(np.minimum(s[1:], last), reached) - reached
    per_step = dt / d  # d > 0 everywhere (the stride after a rollback)
    gap = forward & (per_step > gap_factor * med) if med > 0 else np.zeros_like(forward)
    productive = np.where(forward, np.where(gap, np.minimum(dt, new * med), dt * new / d), 0.0)
    gpu_s_pair = dt * g[:-1]
    advanced = advanced_tokens(reached, last_step=reached + new, tokens_per_step=k_next)
    q = {"gpu_seconds": gpu_s_pair, "advanced_tokens": advanced, "processed_tokens": d * k_next,
         "productive_s": productive, "wall_s": dt, "busy_gpu_seconds": productive * g[:-1]}
    total = {"gpu_s": float(gpu_s_pair.sum()), "processed_steps": float(d.sum()),
             "advanced_tokens": float(q["advanced_tokens"].sum()), "processed_tokens": float(q["processed_tokens"].sum()),
             "productive_s": float(productive.sum()), "busy_gpu_s": float(q["busy_gpu_seconds"].sum())}
    off = 0 if prev is None else 1  # index into the chunk of a pair's second record: i + 1 - off
    events = []
    for i in np.flatnonzero(~forward | gap)[:room]:
        i = int(i)
        events.append({
            "kind": "rollback" if not forward[i] else "gap",
            "at": rec.where(c.source[i + 1 - off], c.line[i + 1 - off]),
            "from_step": int(s[i]), "to_step": int(s[i + 1]), "seconds": float(dt[i]),
            "steps_lost": int(max(0.0, high[i] - s[i + 1] + (d[i] if not forward[i] else 0.0))),
        })
    high_end = float(max(high[-1], s[-1])) if len(high) else float(s[-1])
    return q, total, (int((~forward).sum()), int(gap.sum())), events, high_end


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
