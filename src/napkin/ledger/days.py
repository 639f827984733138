"""A run's figures by calendar day: each record pair's quantities split over the days it spans (UTC; from the
first record when the clock is not Unix time), pro rata across midnight, a chunk at a time."""

from __future__ import annotations

from typing import Any

from napkin.units import DAY, HOUR


class Days:
    """Additive per-pair quantities split over calendar days (UTC; from the first record when the clock is
    not Unix time), pro rata across midnight, a chunk at a time."""

    def __init__(self, rec: Any, t0: float, t_last: float):
        import numpy as np

        self.absolute = rec.time_absolute
        self.origin = 0.0 if rec.time_absolute else t0
        self.lo = int(np.floor((t0 - self.origin) / DAY))
        self.n = int(np.floor((t_last - self.origin) / DAY)) - self.lo + 1
        self.sums: dict[str, Any] = {}
        self.counts = np.zeros(self.n, dtype=np.int64)

    def add(self, t: Any, records_t: Any, q: dict[str, Any]) -> None:
        """A chunk's pairs (times ``t``, the record before it first), its records' times and its quantities."""
        self.merge(DayPart.of(t, records_t, q, self.origin))

    def merge(self, part: DayPart) -> None:
        """A chunk's figures by day (:class:`DayPart`, made with this origin) added in."""
        import numpy as np

        if not self.sums:
            self.sums = {name: np.zeros(self.n) for name in part.sums}
        at = part.lo - self.lo
        for name, arr in part.sums.items():
            self.sums[name][at:at + len(arr)] += arr
        self.counts[at:at + len(part.counts)] += part.counts

    def table(self, usd_per_gpu_hour: float) -> list[dict]:
        import datetime as _dt

        out = []
        for j in range(self.n):
            if self.sums["wall_s"][j] <= 0 and self.counts[j] == 0:
                continue
            label = (_dt.datetime.fromtimestamp((self.lo + j) * DAY, _dt.UTC).strftime("%Y-%m-%d") if self.absolute
                     else f"day {self.lo + j + 1}")
            day = {"date": label, "records": int(self.counts[j]),
                   **{n: float(v[j]) for n, v in self.sums.items() if n != "busy_gpu_seconds"}}
            day["usd"] = day["gpu_seconds"] / HOUR * usd_per_gpu_hour
            day["busy_gpu_seconds"] = float(self.sums["busy_gpu_seconds"][j])
            out.append(day)
        return out


class DayPart:
    """One chunk's quantities by day, from its first pair's day (``lo``): what :meth:`Days.merge` adds."""

    def __init__(self, lo: int, sums: dict[str, Any], counts: Any, origin: float):
        self.lo, self.sums, self.counts, self.origin = lo, sums, counts, origin

    @classmethod
    def of(cls, t: Any, records_t: Any, q: dict[str, Any], origin: float) -> DayPart:
        import math

        import numpy as np

        lo = int(math.floor((float(t[0]) - origin) / DAY))
        n = int(math.floor((float(t[-1]) - origin) / DAY)) - lo + 1
        if n == 1:  # the usual chunk: all in one day (time is in order)
            return cls(lo, {name: np.array([arr.sum()]) for name, arr in q.items()},
                       np.array([len(records_t)], dtype=np.int64), origin)
        sums = {name: np.zeros(n) for name in q}
        day = (np.floor((t - origin) / DAY)).astype(np.int64) - lo
        day0, day1 = day[:-1], day[1:]
        starts = np.concatenate([[0], np.flatnonzero(day0[1:] != day0[:-1]) + 1])  # day0 never falls: time is in order
        for name, arr in q.items():
            sums[name][day0[starts]] += np.add.reduceat(arr, starts)
        for i in np.flatnonzero(day1 != day0):  # few: at most one per midnight
            a, b = float(t[i]), float(t[i + 1])
            if b <= a:
                continue
            for name, arr in q.items():  # move the whole pair out of its first day, then split it
                sums[name][day0[i]] -= arr[i]
            for k in range(int(day0[i]), int(day1[i]) + 1):
                start = max(a, origin + (k + lo) * DAY)
                end = min(b, origin + (k + lo + 1) * DAY)
                for name, arr in q.items():
                    sums[name][k] += arr[i] * (end - start) / (b - a)
        counts = np.bincount(day[len(day) - len(records_t):], minlength=n)
        return cls(lo, sums, counts, origin)
