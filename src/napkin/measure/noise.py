"""Timing, and how much to trust it: CPU time over wall time, and the spread of repeats.

Every probe times its kernel the same way: warm-ups first, a cache flush (a write
larger than the last-level cache) before each timed run, device-synchronised timing
(CUDA events on a GPU, ``time.perf_counter`` on a CPU), and both the median and the
best of the repeats kept.

Two signs that other work shared the machine while we measured:

* **CPU time / wall time** of the process inside a section's timed repeats. A compute-bound kernel on
  ``t`` threads of an idle machine keeps ``t`` CPUs busy, so the ratio is near ``t``
  (about 2.0 for two threads). Much less means the threads were waiting for a CPU.
  Only meaningful on a CPU device: a GPU probe's host thread mostly waits.
* **Spread** of the repeats, ``(median − best) / best``: a quiet machine repeats a
  kernel within a few percent.

A section is marked ``contended`` when its CPU/wall ratio is below
``CPU_SHARE_THRESHOLD`` of the threads it should keep busy, or its spread exceeds
``SPREAD_THRESHOLD``.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from napkin.units import KILO

CPU_SHARE_THRESHOLD = 0.75  # below 75% of the expected CPU/wall ratio: contended
SPREAD_THRESHOLD = 0.10  # median more than 10% slower than the best repeat: contended


@dataclass
class Section:
    """One measurement section: its wall time, and the timed repeats of its kernels."""

    name: str
    expected_cpu_per_wall: float | None  # threads a compute-bound CPU kernel keeps busy; None on a GPU
    wall_s: float = 0.0
    timings: list[Timing] = field(default_factory=list)
    load_before: float | None = None

    def add(self, timing: Timing) -> Timing:
        self.timings.append(timing)
        return timing

    @property
    def cpu_per_wall(self) -> float:
        """Process CPU seconds over wall seconds inside the timed repeats of this section."""
        wall = sum(sum(t.samples) for t in self.timings)
        cpu = sum(sum(t.cpu_samples) for t in self.timings)
        return cpu / wall if wall > 0 else 0.0

    @property
    def spread(self) -> float:
        """The median over the section's kernels of (median − best) / best."""
        spreads = [t.spread for t in self.timings if len(t.samples) > 1]
        return statistics.median(spreads) if spreads else 0.0

    @property
    def reasons(self) -> list[str]:
        out = []
        if self.expected_cpu_per_wall and self.cpu_per_wall < CPU_SHARE_THRESHOLD * self.expected_cpu_per_wall:
            out.append(f"CPU/wall {self.cpu_per_wall:.2f} is below {CPU_SHARE_THRESHOLD:.0%} of the "
                       f"{self.expected_cpu_per_wall:g} an idle machine gives")
        if self.spread > SPREAD_THRESHOLD:
            out.append(f"repeats spread {self.spread:.0%} (median over best), above {SPREAD_THRESHOLD:.0%}")
        return out

    @property
    def contended(self) -> bool:
        return bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        return {"wall_s": self.wall_s, "cpu_per_wall": self.cpu_per_wall,
                "expected_cpu_per_wall": self.expected_cpu_per_wall, "spread": self.spread,
                "load_average": self.load_before, "contended": self.contended,
                "reasons": self.reasons}


class Meter:
    """Collects one Section per probe: ``with meter.section("matmul", expected=2):``."""

    def __init__(self) -> None:
        self.sections: dict[str, Section] = {}

    def section(self, name: str, expected_cpu_per_wall: float | None) -> _SectionTimer:
        sec = Section(name, expected_cpu_per_wall, load_before=load_average())
        self.sections[name] = sec
        return _SectionTimer(sec)

    @property
    def contended(self) -> bool:
        return any(s.contended for s in self.sections.values())


class _SectionTimer:
    def __init__(self, section: Section):
        self.section = section

    def __enter__(self) -> Section:
        self._wall = time.perf_counter()
        return self.section

    def __exit__(self, *exc: Any) -> None:
        self.section.wall_s += time.perf_counter() - self._wall


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def relative_spread(samples: list[float]) -> float:
    """(median − best) / best of a list of times; 0 for fewer than two samples."""
    if len(samples) < 2:
        return 0.0
    best = min(samples)
    return (statistics.median(samples) - best) / best if best > 0 else 0.0


@dataclass(frozen=True)
class Timing:
    """Repeats of one timed kernel: wall seconds per call, their median and best, and the
    process CPU seconds spent over the same repeats."""

    samples: tuple[float, ...]
    cpu_samples: tuple[float, ...] = ()

    @property
    def best_s(self) -> float:
        return min(self.samples)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        return relative_spread(list(self.samples))


def make_flush(torch: Any, device: Any) -> Callable[[], None]:
    """A function that writes a buffer twice the last-level cache, evicting what a kernel left there."""
    n = int(2 * device.cache_bytes // 4)
    buf = torch.empty(max(n, 1024), dtype=torch.float32, device=device.torch_device)
    counter = [0.0]

    def flush() -> None:
        counter[0] += 1.0
        buf.fill_(counter[0])

    return flush


def time_repeats(torch: Any, device: Any, fn: Callable[[], Any], *, warmup: int, repeats: int,
                 flush: Callable[[], None] | None, inner: int = 1) -> Timing:
    """Time ``fn`` ``repeats`` times after ``warmup`` untimed calls; seconds per call.

    A flush runs before each timed repeat, outside the timed region. On CUDA the
    region is bracketed by events and synchronised; ``inner`` calls per repeat
    amortise the timer for very short kernels.
    """
    cuda = device.kind == "cuda"
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize(device.index)
    samples, cpu = [], []
    for _ in range(repeats):
        if flush is not None:
            flush()
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device.index)
            c0 = time.process_time()
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / KILO  # elapsed_time is in milliseconds
        else:
            c0 = time.process_time()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            seconds = time.perf_counter() - t0
        cpu.append((time.process_time() - c0) / inner)
        samples.append(seconds / inner)
    return Timing(tuple(samples), tuple(cpu))
