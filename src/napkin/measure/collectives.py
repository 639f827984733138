"""All-reduce bus bandwidth over a process group, for a range of message sizes.

Run under torchrun, one process per device::

    torchrun --nproc-per-node 8 -m napkin.measure --collectives --save calibration.toml

NCCL on GPUs, gloo on CPUs (torch.distributed). For each message size every rank
all-reduces the same fp32 buffer ``iters`` times after warm-ups; the time of a step is
the slowest rank's. Two rates, as nccl-tests reports them:

* algorithm bandwidth ``algbw = size / time``;
* bus bandwidth ``busbw = algbw · 2·(n − 1) / n``: the bytes each rank's link carries
  per second in one direction under a ring, whatever ``n`` is.

The bus bandwidth is the per-direction link rate that napkin's ring all-reduce model
(``napkin.formulas.comm``) divides by, so ``napkin allreduce --size S --ranks n
--link-bandwidth <busbw> --unidirectional`` predicts the measured time. ``--save``
adds the figures to an existing calibration (``allreduce_bus_bytes_per_s``, keyed by
message size).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from napkin.units import KIBI, MEBI

SIZES = {
    ("cpu", True): [4 * KIBI, 64 * KIBI, MEBI],
    ("cpu", False): [4 * KIBI, 64 * KIBI, MEBI, 16 * MEBI, 64 * MEBI],
    ("cuda", True): [MEBI, 16 * MEBI, 256 * MEBI],
    ("cuda", False): [MEBI, 4 * MEBI, 16 * MEBI, 64 * MEBI, 256 * MEBI, 1024 * MEBI],
}


def bus_bytes_per_s(size_bytes: float, *, seconds: float, n_ranks: float) -> float:
    """busbw = size / t · 2·(n − 1) / n

    The ring all-reduce moves 2·(n − 1)/n of the buffer over each rank's link, so this
    is the link rate (one direction) the collective achieved.
    Trap: algbw (size / t) is not a link rate: it falls with n at a fixed link speed;
    and a bidirectional link rating is twice the one-direction rate busbw compares with.
    Source: nccl-tests, doc/PERFORMANCE.md ("bus bandwidth"); the ring all-reduce's 2·(n−1)/n (Patarasuk and Yuan 2009).
    """
    return size_bytes / seconds * 2.0 * (n_ranks - 1.0) / n_ranks


def size_label(size_bytes: float) -> str:
    """``4 KiB`` -> ``4KiB``: a compact key for the calibration table."""
    from napkin import units

    return units.format(size_bytes, "bytes", binary=True).replace(" ", "")


@dataclass(frozen=True)
class Point:
    size_bytes: float
    seconds: float  # slowest rank, per all-reduce
    n_ranks: int

    @property
    def algbw_bytes_per_s(self) -> float:
        return self.size_bytes / self.seconds

    @property
    def bus_bytes_per_s(self) -> float:
        return bus_bytes_per_s(self.size_bytes, seconds=self.seconds, n_ranks=self.n_ranks)

    @property
    def label(self) -> str:
        return size_label(self.size_bytes)

    def to_dict(self) -> dict:
        return {"size_bytes": self.size_bytes, "label": self.label, "seconds": self.seconds,
                "algbw_bytes_per_s": self.algbw_bytes_per_s, "bus_bytes_per_s": self.bus_bytes_per_s}


def sweep(torch: Any, dist: Any, sizes: list[float], *, device: str, warmup: int, iters: int) -> list[Point]:
    """All-reduce each size ``iters`` times on every rank; the slowest rank's time per call."""
    n = dist.get_world_size()
    cuda = device.startswith("cuda")
    points = []
    for size in sizes:
        x = torch.ones(max(1, int(size // 4)), dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(x)
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        if cuda:
            torch.cuda.synchronize()
        t = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        points.append(Point(float(x.numel() * 4), float(t.item()), n))
        del x
    return points


def report(points: list[Point], *, backend: str, device_name: str) -> Any:
    from napkin.derivation import Report

    n = points[0].n_ranks if points else 0
    r = Report(f"All-reduce over {n} ranks ({backend})", command="measure --collectives")
    r.set("device", device_name)
    r.set("ranks", n, "count")
    r.set("backend", backend)
    for p in points:
        r.step(f"allreduce_{p.label}_bus_bytes_per_s", "size / time · 2·(n − 1) / n", value=p.bus_bytes_per_s,
               unit="bytes_per_s", size=(p.size_bytes, "bytes"), time=(p.seconds, "seconds"), n=n)
    if points:
        best = max(points, key=lambda p: p.bus_bytes_per_s)
        r.set("best_bus_bytes_per_s", best.bus_bytes_per_s, "bytes_per_s")
        r.set("best_at_size", best.label)
        r.note(f"bus bandwidth is the one-direction link rate of a ring: `napkin allreduce --size S --ranks {n} "
               f"--link-bandwidth {best.bus_bytes_per_s:.4g} --unidirectional` predicts the measured time "
               f"at large sizes")
    return r
