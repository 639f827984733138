"""The records' first pass made while the log is read, not after it.

A report makes two passes over a run's records (:mod:`napkin.ledger.records`: the checks and the
tallies the rules need; :mod:`napkin.ledger.realised`: the sums, which need the medians the first
pass finds). The reader hands each frame of records to an :class:`EarlyPass` as it keeps it, so the
first pass runs while the next pieces of the log are parsed, and the usual chunk's sums (every step
new: no rollback) are figured then too; once the medians are known, the second pass takes those
sums where the rules allow and reads again only the other chunks (a restart, a gap, a midnight).

It is a shortcut, never a second set of rules: it calls the same code the passes do, and any
error in it (a clock that goes backwards, which the full check reports with its count) drops it,
so the full passes run as they would without it. It holds for one log read whole in order (not
several logs, not ``--skip-bad-clock``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from napkin.ledger.realised import Quick, _Carry, quick
from napkin.ledger.records import Records, Tally, _chunk, last_of


@dataclass
class Item:
    """One kept chunk: its frame, the record before it (as the in-order check sees it) and its figures."""

    frame: int
    prev: tuple[float, float, int, int] | None
    quick: Quick | None


class EarlyPass:
    """Called with each frame a log's reader keeps (:class:`~napkin.ledger.readers.lines.FrameStore`)."""

    def __init__(self, read: Any = None) -> None:
        self.read = read  # the LogRead: whether its clock is Unix time decides where its days start
        self.check = Records(parts=[], sources=["log"])  # only its in-order rule runs here
        self.check._counting = True
        self.tally = Tally()
        self.items: list[Item] = []
        self.seen = 0  # frames handed over
        self.ok = True
        self._prev: tuple[float, float, int, int] | None = None
        self._carry: _Carry | None = None

    @property
    def duplicates(self) -> int:
        return self.check.duplicates

    def __call__(self, df: Any) -> None:
        frame = self.seen
        self.seen += 1
        if not self.ok:
            return
        try:
            self._add(frame, df)
        except Exception:  # noqa: BLE001  (the full passes run instead, and report it)
            self.ok, self.items = False, []

    def _add(self, frame: int, df: Any) -> None:
        c = self.check.in_order(_chunk(df, 0, 0.0), self._prev)
        if not len(c):
            return
        self.tally.add(c)
        absolute = self.read is None or self.read.time_absolute
        qk = quick(c, self._carry, origin=0.0 if absolute else self.tally.first[1])  # as Days places them
        if qk is not None:
            qk.q = None  # its sums by day are kept; the arrays would hold the whole log
        self.items.append(Item(frame, self._prev, qk))
        self._prev = last_of(c)
        last = float(c.step[-1])  # quick reads the record before a chunk, not the high-water step
        self._carry = _Carry(last, float(c.t_wall[-1]), float(c.gpus[-1]), last)


def early_pass(frames: Any) -> EarlyPass | None:
    """The early pass over ``frames`` (a FrameStore) when it saw every frame and held."""
    watch = getattr(frames, "watch", None)
    if isinstance(watch, EarlyPass) and watch.ok and watch.seen == len(frames):
        return watch
    return None
