"""The exact median of values handed over a piece at a time, in bounded memory.

The ledger's gap rule and rollback rule need two medians over every record pair (the
step time and the log interval): ``np.median`` of the whole array, which a 1 GB log could
not hold. :class:`Values` keeps the pieces in memory up to ``IN_MEMORY`` values (then the
median is the middle of all of them partitioned, as ``np.median`` finds it) and past it as raw float64 in an
anonymous temporary file; :func:`median` then selects the middle values 16 bits of their
sortable key at a time (four counting passes over the file), which is exact.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Iterator

IN_MEMORY = 4_000_000  # values held in memory (32 MB of float64) before the rest go to a temporary file
PIECE = 1 << 20  # values read back at once from the file


class Values:
    """float64 values, appended a piece at a time (NaN is not a value: leave it out)."""

    def __init__(self) -> None:
        self.pieces: list[Any] = []
        self.n = 0
        self.spill: BinaryIO | None = None

    def add(self, values: Any) -> None:
        import numpy as np

        values = np.ascontiguousarray(values, dtype=np.float64)
        if not values.size:
            return
        self.n += values.size
        if self.spill is None and self.n <= IN_MEMORY:
            self.pieces.append(values.copy() if values.base is not None else values)
            return
        if self.spill is None:
            import tempfile

            self.spill = tempfile.TemporaryFile(prefix="napkin-median-")
            for p in self.pieces:
                self.spill.write(p.tobytes())
            self.pieces = []
        self.spill.write(values.tobytes())

    def __iter__(self) -> Iterator[Any]:
        import numpy as np

        if self.spill is None:
            yield from self.pieces
            return
        self.spill.seek(0)
        while True:
            buf = self.spill.read(8 * PIECE)
            if not buf:
                return
            yield np.frombuffer(buf, dtype=np.float64)

    def close(self) -> None:
        if self.spill is not None:
            self.spill.close()
            self.spill = None


def median(values: Values) -> float | None:
    """np.median of every value (None when there are none): the mean of the two middle ones when their
    number is even."""
    import numpy as np

    if values.n == 0:
        return None
    n = values.n
    if values.spill is None:  # np.median's answer, without its copy: the middle of a partition in place
        a = np.concatenate(values.pieces) if len(values.pieces) > 1 else values.pieces[0].copy()
        mid = [(n - 1) // 2, n // 2]
        a.partition(mid)
        return float(a[mid[0]]) if n % 2 else float(np.mean(a[mid]))
    lo = _kth(values, (n - 1) // 2)
    if n % 2:
        return lo
    at_most = sum(int(np.count_nonzero(p <= lo)) for p in values)
    if at_most > n // 2:
        return lo
    hi = min(float(p[p > lo].min()) for p in values if np.any(p > lo))
    return float((lo + hi) / 2)  # as np.median: the mean of the two middle values


def _key(x: Any) -> Any:
    """A uint64 key that sorts as the float64 values do (negatives flipped, positives with the sign bit set)."""
    import numpy as np

    u = x.view(np.uint64)
    return np.where(u >> np.uint64(63), ~u, u | np.uint64(1 << 63))


def _value(key: int) -> float:
    import numpy as np

    u = np.uint64(key)
    raw = u & np.uint64((1 << 63) - 1) if u >> np.uint64(63) else ~u
    return float(np.array([raw], dtype=np.uint64).view(np.float64)[0])


def _kth(values: Values, k: int) -> float:
    """The k-th smallest value (0-based): the key found 16 bits at a time, counting the values that share
    the bits found so far."""
    import numpy as np

    prefix, rank = 0, k
    for shift in (48, 32, 16, 0):
        counts = np.zeros(1 << 16, dtype=np.int64)
        for piece in values:
            key = _key(piece)
            if shift < 48:
                key = key[(key >> np.uint64(shift + 16)) == np.uint64(prefix)]
            counts += np.bincount(((key >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.int64), minlength=1 << 16)
        cum = np.cumsum(counts)
        b = int(np.searchsorted(cum, rank, side="right"))
        rank -= int(cum[b - 1]) if b else 0
        prefix = (prefix << 16) | b
    return _value(prefix)

