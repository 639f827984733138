"""Memory bandwidth: a large copy, and a large read.

**Convention: a copy of B bytes moves 2·B bytes, B read plus B written**, which is how
datasheets' bandwidth and STREAM's "copy" count it. (A CPU may also read the
destination before writing it, a third B the convention does not count, so a CPU copy
understates the bus rate.) The buffers are many times the last-level cache, so the
traffic goes to memory, not to cache.

The read probe sums a buffer of B bytes (B read, nothing written of note): decode is
almost all reads, so its roofline uses the better of the two rates. A calibration
carries the copy rate, named as such, and its fraction of the catalog's bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from napkin.measure.noise import Timing, time_repeats
from napkin.units import GIBI, MEBI

CONVENTION = "copy: bytes read + bytes written (2 × buffer); read: bytes read (1 × buffer)"


def default_buffer_bytes(device: Any, quick: bool) -> float:
    """Each buffer: 4× (quick) or 8× the last-level cache on a CPU; 1 or 2 GiB on a GPU."""
    if device.kind == "cuda":
        size = (1 if quick else 2) * GIBI
        if device.memory_bytes:
            size = min(size, device.memory_bytes / 8)
        return size
    return max((4 if quick else 8) * device.cache_bytes, 64 * MEBI)


@dataclass(frozen=True)
class BandwidthResult:
    buffer_bytes: float
    copy: Timing
    read: Timing
    catalog_bytes_per_s: float | None

    @property
    def copy_bytes_per_s(self) -> float:
        """Best copy rate: 2 · buffer / best time (read + written)."""
        return 2.0 * self.buffer_bytes / self.copy.best_s

    @property
    def copy_median_bytes_per_s(self) -> float:
        return 2.0 * self.buffer_bytes / self.copy.median_s

    @property
    def read_bytes_per_s(self) -> float:
        return self.buffer_bytes / self.read.best_s

    @property
    def roofline_bytes_per_s(self) -> float:
        """The rate the decode roofline uses: the better of copy and read."""
        return max(self.copy_bytes_per_s, self.read_bytes_per_s)

    @property
    def fraction_of_catalog(self) -> float | None:
        if not self.catalog_bytes_per_s:
            return None
        return self.copy_bytes_per_s / self.catalog_bytes_per_s

    @property
    def samples(self) -> list[float]:
        return list(self.copy.samples)

    def to_dict(self) -> dict:
        return {"buffer_bytes": self.buffer_bytes, "copy_bytes_per_s": self.copy_bytes_per_s,
                "copy_median_bytes_per_s": self.copy_median_bytes_per_s,
                "read_bytes_per_s": self.read_bytes_per_s,
                "catalog_bytes_per_s": self.catalog_bytes_per_s,
                "fraction_of_catalog": self.fraction_of_catalog, "convention": CONVENTION}


def measure(torch: Any, device: Any, *, buffer_bytes: float, warmup: int, repeats: int,
            flush: Callable[[], None] | None,
            progress: Callable[[str], None] | None = None) -> BandwidthResult:
    """Time a copy and a read of ``buffer_bytes`` (fp32 buffers; the dtype does not matter)."""
    n = int(buffer_bytes // 4)
    src = torch.ones(n, dtype=torch.float32, device=device.torch_device)
    dst = torch.empty_like(src)
    if progress:
        progress(f"copy {buffer_bytes / MEBI:.0f} MiB")
    copy = time_repeats(torch, device, lambda: dst.copy_(src), warmup=warmup, repeats=repeats, flush=flush)
    if progress:
        progress(f"read {buffer_bytes / MEBI:.0f} MiB")
    read = time_repeats(torch, device, lambda: src.sum(), warmup=warmup, repeats=repeats, flush=flush)
    del src, dst
    return BandwidthResult(float(n * 4), copy, read, device.catalog_bandwidth)
