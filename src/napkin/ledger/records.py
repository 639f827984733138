"""Step records from one or more logs, in run order, checked: the input of the arithmetic.

Several logs of one run (a restart that wrote a new file) are put in time order by their
first record when their clocks are Unix time; logs timed from their own start are
chained in the order given, end to start (the time between them is not in the logs, so
it is not counted, and the report says so). A duplicate (the same step as the record before: a line
written twice, or by another rank a moment later) is dropped and counted. Time must not go
backwards: a log out of order is an error that names the line, never a silent re-sort
that would hide a restart, unless ``skip_bad_clock``: then a record earlier than the one
before it is skipped and counted, or, when it is no earlier than the one before that, the
one before it (a clock that jumped forward) is. Two logs whose times overlap are an error
that names both. Time must advance: a log whose every record is at the same time (dates
without a time of day) has no paid time to count.

The records stay where the readers put them (frame by frame, in memory or spilled to a
temporary file); :meth:`Records.chunks` hands them out in run order as numpy arrays, a
piece at a time, so the arithmetic runs in bounded memory however long the log.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Iterator

from napkin.errors import InputError, quote

EXTRAS = ("mfu_logged",)  # columns the report reads besides the four fields
BACKWARDS = "t_wall goes backwards"  # why a record is skipped with skip_bad_clock: earlier than the one kept before it
JUMPED = "t_wall jumps ahead of the records after it"  # later than the records on both sides of it


class NotEnoughRecords(InputError):
    """The log has too few records (yet) for a cost: empty, one record, or no forward progress."""


@dataclass
class Chunk:
    """Records in run order (numpy arrays of one length)."""

    step: Any
    t_wall: Any
    gpus: Any
    tokens: Any
    line: Any
    source: Any
    extras: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.step)

    def take(self, idx: Any) -> Chunk:
        return Chunk(self.step[idx], self.t_wall[idx], self.gpus[idx], self.tokens[idx], self.line[idx],
                     self.source[idx], {k: v[idx] for k, v in self.extras.items()})


def _concat(a: Chunk, b: Chunk) -> Chunk:
    import numpy as np

    return Chunk(*(np.concatenate([getattr(a, f), getattr(b, f)]) for f in
                   ("step", "t_wall", "gpus", "tokens", "line", "source")),
                 {k: np.concatenate([a.extras.get(k, np.full(len(a), np.nan)), b.extras.get(k, np.full(len(b), np.nan))])
                  for k in set(a.extras) | set(b.extras)})


def _chunk(df: Any, source: int, offset: float) -> Chunk:
    import numpy as np
    import polars as pl

    t = df["t_wall"].to_numpy()
    if offset:
        t = t + offset
    return Chunk(df["step"].to_numpy().astype(np.float64), t, df["gpus_allocated"].to_numpy(),
                 df["tokens"].to_numpy(), df["line"].to_numpy(), np.full(df.height, source, dtype=np.int32),
                 {c: df[c].cast(pl.Float64, strict=False).to_numpy() for c in EXTRAS if c in df.columns})


@dataclass
class Records:
    """The records of a run, read a chunk at a time (:meth:`chunks`), with what was found checking them."""

    parts: list[tuple[int, Any]]  # (source index, FrameStore or Chunk) in run order
    sources: list[str]
    time_absolute: bool = True
    location: str = "line"
    chained: bool = False  # logs timed from their own start, put end to start
    offsets: dict[int, float] = field(default_factory=dict)  # source -> seconds added (chained logs)
    skip_bad_clock: bool = False
    clock_per_record: bool = True
    duplicates: int = 0
    bad_clock: list[tuple[int, int, str]] = field(default_factory=list)  # (source, line, why) of the first few skipped
    bad_clock_count: int = 0
    n: int = 0
    first: tuple[float, float, int, int] = (0.0, 0.0, 0, 0)  # step, t_wall, line, source
    last: tuple[float, float, int, int] = (0.0, 0.0, 0, 0)
    jump: tuple[float, int, int, float, float] = (0.0, 0, 0, 0.0, 0.0)  # the clock's largest step: s, source, line,
    # from, to
    early: Any = None  # the reader's pass over one log's records (napkin.ledger.early.EarlyPass), when it holds

    @classmethod
    def of(cls, *, step: Any, t_wall: Any, gpus: Any, tokens: Any, line: Any, source: Any, sources: list[str],
           **kw: Any) -> Records:
        """Records from arrays already in run order (one chunk), checked as a log's would be."""
        import numpy as np

        c = Chunk(np.asarray(step, dtype=float), np.asarray(t_wall, dtype=float), np.asarray(gpus, dtype=float),
                  np.asarray(tokens, dtype=float), np.asarray(line), np.asarray(source, dtype=np.int32))
        rec = cls(parts=[(0, c)], sources=sources, **kw)
        rec.check()
        return rec

    _counting = False

    def __len__(self) -> int:
        return self.n

    def where(self, source: int, line: int) -> str:
        return f"{quote(self.sources[int(source)])}:{self.location} {int(line)}"

    # ---------------------------------------------------------------------------------------------- the pass
    def chunks(self, *, counting: bool = False) -> Iterator[Chunk]:
        """The records in run order, duplicates and (with ``skip_bad_clock``) bad clocks dropped (and, when
        ``counting``, counted)."""
        self._counting = counting
        if self.skip_bad_clock:
            yield from self._held_chunks()
            return
        prev: tuple[float, float, int, int] | None = None  # step, t_wall, source, line of the last handed out
        for c in self._raw():
            c = self.in_order(c, prev)
            if len(c):
                prev = last_of(c)
                yield c

    def in_order(self, c: Chunk, prev: tuple[float, float, int, int] | None) -> Chunk:
        """``c`` after ``prev`` (step, t_wall, source, line of the record before it): an error where time goes
        backwards or two logs overlap, its duplicates dropped (and counted, in a counting pass)."""
        import numpy as np

        if prev is not None and c.source[0] != prev[2] and c.t_wall[0] < prev[1]:
            self._overlap(prev, c)
        t, s = c.t_wall, c.step
        dt = np.diff(t)
        if not (np.all(dt >= 0) and (prev is None or t[0] >= prev[1])):
            i = 0 if prev is not None and t[0] < prev[1] else int(np.flatnonzero(dt < 0)[0]) + 1
            before = prev if i == 0 else (s[i - 1], t[i - 1], c.source[i - 1], c.line[i - 1])
            self._backwards(before, c, i)
        dup = np.zeros(len(c), dtype=bool)
        dup[1:] = np.diff(s) == 0  # the step logged again (time is in order here): no step of its own
        if prev is not None:
            dup[0] = s[0] == prev[0]
        if dup.any():
            if self._counting:
                self.duplicates += int(dup.sum())
            c = c.take(np.flatnonzero(~dup))
        return c

    def chunk_again(self, frame: int, prev: tuple[float, float, int, int] | None) -> Chunk:
        """The records of the log's ``frame``-th frame as :meth:`chunks` hands them out after ``prev`` (one log,
        its clock in order: the records an early pass saw)."""
        source, part = self.parts[0]
        return self.in_order(_chunk(part._load(frame), source, self.offsets.get(source, 0.0)), prev)

    def _raw(self) -> Iterator[Chunk]:
        for source, part in self.parts:
            for df in ([part] if isinstance(part, Chunk) else part):
                c = df if isinstance(df, Chunk) else _chunk(df, source, self.offsets.get(source, 0.0))
                if len(c):
                    yield c

    def _held_chunks(self) -> Iterator[Chunk]:
        """With ``skip_bad_clock``: a record's fate can hang on the one after it (a clock that jumped forward
        is found by the record that comes back), so the last two kept of each chunk wait for the next."""
        import numpy as np

        held: Chunk | None = None
        for c in self._raw():
            if held is not None and c.source[0] != held.source[-1] and c.t_wall[0] < held.t_wall[-1]:
                self._overlap((held.step[-1], held.t_wall[-1], held.source[-1], held.line[-1]), c)
            c = c if held is None else _concat(held, c)
            keep = self._keep_in_order(c)
            c = c if keep.all() else c.take(np.flatnonzero(keep))
            if len(c) > 2:
                yield c.take(slice(0, len(c) - 2))
                held = c.take(slice(len(c) - 2, len(c)))
            else:
                held = c
        if held is not None and len(held):
            yield held

    def _keep_in_order(self, c: Chunk) -> Any:
        """Which records of ``c`` stay: not a duplicate of the one before, and in time order (the rule of the
        module, record by record where time goes backwards). Its first record stays."""
        import numpy as np

        t, s = c.t_wall, c.step
        dt = np.diff(t)
        keep = np.ones(len(c), dtype=bool)
        if np.all(dt >= 0):
            keep[1:] = np.diff(s) != 0
            if self._counting:
                self.duplicates += int((~keep).sum())
            return keep
        kept = [0]
        for i in range(1, len(c)):
            j = kept[-1]
            if s[i] == s[j] and t[i] >= t[j]:
                keep[i] = False
                if self._counting:
                    self.duplicates += 1
            elif t[i] >= t[j]:
                kept.append(i)
            elif len(kept) >= 2 and t[i] >= t[kept[-2]]:
                keep[j] = False  # the record before jumped forward: it is the bad one
                self._bad(c, j, JUMPED)
                kept[-1] = i
            else:
                keep[i] = False
                self._bad(c, i, BACKWARDS)
        return keep

    def _bad(self, c: Chunk, i: int, why: str) -> None:
        if self._counting:
            self.bad_clock_count += 1
            if len(self.bad_clock) < 20:
                self.bad_clock.append((int(c.source[i]), int(c.line[i]), why))

    def _overlap(self, prev: tuple, c: Chunk) -> None:
        a, b = self.sources[int(prev[2])], self.sources[int(c.source[0])]
        raise InputError("logs", f"{a}, {b}",
                         f"must not overlap in time ({quote(b)} starts at {_fmt_t(c.t_wall[0], self.time_absolute)}, "
                         f"before {quote(a)} ends at {_fmt_t(prev[1], self.time_absolute)} at "
                         f"{self.where(prev[2], prev[3])})",
                         "give the logs of one run, whose restarts follow each other; two jobs that ran at once "
                         "are two runs: report each on its own")

    def _backwards(self, before: tuple, c: Chunk, i: int) -> None:
        raise InputError("t_wall", f"{_fmt_t(c.t_wall[i], self.time_absolute)} at {self.where(c.source[i], c.line[i])}",
                         f"must not go backwards (it was {_fmt_t(before[1], self.time_absolute)} at "
                         f"{self.where(before[2], before[3])}; {self._places()} place(s) in all)",
                         "a step log must be in time order: give each restart's log as its own file, or "
                         "--skip-bad-clock to skip (and count) each record whose clock goes backwards")

    def _places(self) -> int:
        """How many times the clock goes backwards in the logs (for the error's count)."""
        import numpy as np

        places, prev = 0, None
        for source, part in self.parts:
            prev = None  # across logs it is an overlap, said otherwise
            for df in ([part] if isinstance(part, Chunk) else part):
                t = df.t_wall if isinstance(df, Chunk) else df["t_wall"].to_numpy()
                if prev is not None and len(t):
                    t = np.concatenate([[prev], t])
                places += int((np.diff(t) < 0).sum())
                prev = t[-1] if len(t) else prev
        return places

    # ---------------------------------------------------------------------------------------------- checking
    def check(self, clock: str = "") -> None:
        """One pass over the records: the errors of the module, and what the arithmetic needs from all of them
        before it starts (:class:`Tally`). ``clock``: the logs' clock resolution, when they say it."""
        import numpy as np

        self.duplicates = self.bad_clock_count = 0
        self.bad_clock = []
        if self.early is not None:  # the reader's pass over these records, as they came
            tally, self.duplicates = self.early.tally, self.early.duplicates
        else:
            tally = Tally()
            for c in self.chunks(counting=True):
                tally.add(c)
        self.tally = tally
        self.n = n = tally.n
        if tally.first is None or tally.last is None:
            raise NotEnoughRecords("log", ", ".join(self.sources), "has no step records",
                                   "give a log with step, t_wall, gpus_allocated and tokens per record")
        first, last = self.first, self.last = tally.first, tally.last
        self.jump = tally.jump
        if n == 1:
            k = self.duplicates
            again = (f"; {k} more line{'s' * (k != 1)} log{'s' * (k == 1)} the same step again, which does not "
                     "advance" if k else "")
            raise NotEnoughRecords("log", self.sources[first[3]], f"has one step record (step {int(first[0])} at "
                                   f"{self.location} {first[2]}{again}): a cost needs at least two, and the time "
                                   "between them", "give a longer log")
        if last[1] <= first[1]:
            whole = all(bool(np.all(c.t_wall == np.floor(c.t_wall))) for c in self.chunks())
            clock = clock or ("whole seconds: a 1-s resolution" if whole else "fractions of a second")
            raise NotEnoughRecords("t_wall", f"{_fmt_t(first[1], self.time_absolute)} at {self.where(first[3], first[2])} "
                                   f"to {self.where(last[3], last[2])}",
                                   f"does not advance: all {n} records (steps {int(tally.steps[0])} to "
                                   f"{int(tally.steps[1])}) are at one time, so there is no paid time to count (the "
                                   f"log's clock has {clock})",
                                   "log the wall time of each step to the second: ISO timestamps with a time of day, "
                                   "or Unix seconds")


class Tally:
    """What one pass over the records finds: how many, the first and the last, the extremes, the largest
    step of the clock, and the values of the medians the arithmetic's rules need (forward step differences
    and step times; the trainer's own MFU)."""

    def __init__(self) -> None:
        from napkin.ledger.median import Values

        self.n = 0
        self.first: tuple[float, float, int, int] | None = None  # step, t_wall, line, source
        self.last: tuple[float, float, int, int] | None = None
        self.jump = (0.0, 0, 0, 0.0, 0.0)  # seconds, source, line (of the record after), from, to
        self.steps = [float("inf"), float("-inf")]
        self.gpus = [float("inf"), float("-inf")]
        self.tokens = [float("inf"), float("-inf")]
        self.forward_ds, self.forward_step_s, self.mfu_logged = Values(), Values(), Values()
        self.rising = 0  # forward pairs whose tokens rise (a cumulative column rises at nearly all)

    def add(self, c: Chunk) -> None:
        import numpy as np

        if self.first is None:
            self.first = (float(c.step[0]), float(c.t_wall[0]), int(c.line[0]), int(c.source[0]))
            t, s, k, off = c.t_wall, c.step, c.tokens, 1
        else:
            t, s, k, off = (np.concatenate([[self.last[1]], c.t_wall]), np.concatenate([[self.last[0]], c.step]),
                            np.concatenate([[self.last_tokens], c.tokens]), 0)
        if len(t) > 1:
            dt, ds = np.diff(t), np.diff(s)
            j = int(np.argmax(dt))
            if dt[j] > self.jump[0]:
                self.jump = (float(dt[j]), int(c.source[j + off]), int(c.line[j + off]), float(t[j]), float(t[j + 1]))
            forward = ds > 0
            if self.tokens[0] < self.tokens[1] or k.min() < k.max():  # tokens that vary: do they rise with the step?
                self.rising += int((forward & (np.diff(k) > 0)).sum())
            if not forward.all():
                dt, ds = dt[forward], ds[forward]
            self.forward_ds.add(ds)
            self.forward_step_s.add(dt / ds)
        logged = c.extras.get("mfu_logged")
        if logged is not None:
            self.mfu_logged.add(logged[np.isfinite(logged)])
        self.last = (float(c.step[-1]), float(c.t_wall[-1]), int(c.line[-1]), int(c.source[-1]))
        self.last_tokens = float(c.tokens[-1])
        for span, arr in ((self.steps, c.step), (self.gpus, c.gpus), (self.tokens, c.tokens)):
            span[0], span[1] = min(span[0], float(arr.min())), max(span[1], float(arr.max()))
        self.n += len(c)


def last_of(c: Chunk) -> tuple[float, float, int, int]:
    """(step, t_wall, source, line) of the last record of ``c``."""
    return float(c.step[-1]), float(c.t_wall[-1]), int(c.source[-1]), int(c.line[-1])


def _fmt_t(t: float, absolute: bool) -> str:
    if absolute:
        try:
            return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S") + " UTC"
        except (ValueError, OverflowError, OSError):  # beyond the calendar: a corrupt clock, shown as it is
            return f"{t:.10g} s since 1970"
    return f"{t:g} s"


def combine(reads: list[Any], *, skip_bad_clock: bool = False) -> Records:
    """One Records from several LogReads, in run order and checked (see the module)."""
    if not reads:
        raise InputError("logs", "nothing", "is required", "give one or more step logs")
    absolute = all(r.time_absolute for r in reads)
    if not absolute and any(r.time_absolute for r in reads) and len(reads) > 1:
        raise InputError("logs", ", ".join(r.path for r in reads),
                         "mix Unix timestamps and seconds-from-start", "give logs with one kind of clock")
    firsts = {i: _first_t(r) for i, r in enumerate(reads)}
    order = [i for i in range(len(reads)) if firsts[i] is not None]
    if absolute:
        order.sort(key=lambda i: firsts[i])
    offsets: dict[int, float] = {}
    chained = not absolute and len(order) > 1
    if chained:
        end = 0.0
        for i in order:
            offsets[i] = end - firsts[i]
            end = _last_t(reads[i]) + offsets[i]
    rec = Records(parts=[(i, reads[i].frames) for i in order], sources=[r.path for r in reads],
                  time_absolute=absolute, location=reads[0].location, chained=chained, offsets=offsets,
                  skip_bad_clock=skip_bad_clock, clock_per_record=all(r.clock_per_record for r in reads))
    if len(reads) == 1 and not skip_bad_clock and order:
        from napkin.ledger.early import early_pass

        rec.early = early_pass(reads[0].frames)
    if not order:
        shown = reads[0]
        detail = ""
        if shown.skipped:
            detail = f" ({shown.skipped_count} skipped: " + "; ".join(
                f"{shown.location} {n}: {why}" for n, why in shown.skipped[:3]) + ")"
        raise NotEnoughRecords("log", ", ".join(r.path for r in reads), "has no step records" + detail,
                               "give a log with step, t_wall, gpus_allocated and tokens per record")
    rec.check(next((r.clock for r in reads if r.clock), ""))
    return rec


def _first_t(read: Any) -> float | None:
    df = None if read.frames is None else read.frames.first()
    return None if df is None else float(df["t_wall"][0])


def _last_t(read: Any) -> float:
    return float(read.frames.last()["t_wall"][-1])
