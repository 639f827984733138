"""The matmul ceiling: the most FLOP/s this device's own matmul reaches, per precision.

For each precision a sweep of shapes is timed (warm-ups, a cache flush before each
timed repeat, device-synchronised timing). A product of an (m × k) and a (k × n)
matrix is ``2·m·n·k`` FLOPs. Per shape the median and the best repeat are kept; the
ceiling is the best over the sweep, and the shape that gave it is named. Beside it
sits the catalog's dense peak when the device is in the catalog: the ratio is the
matmul fraction of peak that a calibration carries into plans.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from napkin.measure.noise import Timing, time_repeats

# precisions this probe can time, and what it does for them
SUPPORTED = ("fp32", "tf32", "bf16", "fp16")
NOT_MEASURED = {
    "fp8": "fp8 needs scaled matmuls (torch._scaled_mm) and a part that has them; not measured",
    "int8": "int8 matmuls are not timed by this probe",
    "fp4": "fp4 is not timed by this probe", "int4": "int4 is not timed by this probe",
    "fp6": "fp6 is not timed by this probe",
}
DEFAULT_PRECISIONS = {"cpu": ("fp32", "bf16"), "cuda": ("bf16", "fp16", "tf32", "fp32")}

# square sizes of the sweep, and two long-skinny shapes that training meets (m, n, k)
SHAPES = {
    ("cpu", True): [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024)],
    ("cpu", False): [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 1024, 1024)],
    ("cuda", True): [(4096, 4096, 4096), (8192, 8192, 8192)],
    ("cuda", False): [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                      (16384, 16384, 16384), (16384, 8192, 1024), (8192, 8192, 16384)],
}


def flops_of(m: int, n: int, k: int) -> float:
    """FLOPs of one (m × k)·(k × n) product: 2·m·n·k (a multiply and an add per term)."""
    return 2.0 * m * n * k


@dataclass(frozen=True)
class ShapeResult:
    m: int
    n: int
    k: int
    timing: Timing
    rerun: bool = False  # timed again after the training run, to check the ceiling

    @property
    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> float:
        return flops_of(self.m, self.n, self.k)

    @property
    def best_flops_per_s(self) -> float:
        return self.flops / self.timing.best_s

    @property
    def median_flops_per_s(self) -> float:
        return self.flops / self.timing.median_s

    def to_dict(self) -> dict:
        return {"shape": self.label, "best_flops_per_s": self.best_flops_per_s,
                "median_flops_per_s": self.median_flops_per_s, "best_s": self.timing.best_s,
                "median_s": self.timing.median_s}


@dataclass(frozen=True)
class MatmulResult:
    precision: str
    shapes: tuple[ShapeResult, ...]
    catalog_peak_flops_per_s: float | None

    @property
    def best(self) -> ShapeResult:
        return max(self.shapes, key=lambda s: s.best_flops_per_s)

    @property
    def ceiling_flops_per_s(self) -> float:
        """The best FLOP/s of any repeat of any shape: the achievable ceiling."""
        return self.best.best_flops_per_s

    @property
    def median_flops_per_s(self) -> float:
        """The median repeat at the shape that gave the ceiling."""
        return self.best.median_flops_per_s

    @property
    def fraction_of_peak(self) -> float | None:
        if not self.catalog_peak_flops_per_s:
            return None
        return self.ceiling_flops_per_s / self.catalog_peak_flops_per_s

    @property
    def samples(self) -> list[float]:
        return list(self.best.timing.samples)

    def to_dict(self) -> dict:
        return {"precision": self.precision, "ceiling_flops_per_s": self.ceiling_flops_per_s,
                "median_flops_per_s": self.median_flops_per_s, "shape": self.best.label,
                "catalog_peak_flops_per_s": self.catalog_peak_flops_per_s,
                "fraction_of_peak": self.fraction_of_peak, "shapes": [s.to_dict() for s in self.shapes]}


def dtype_of(torch: Any, precision: str) -> Any:
    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
            "fp16": torch.float16}[precision]


def why_not(precision: str, device_kind: str) -> str | None:
    """Why a precision is not measured on this device, or None if it is."""
    if precision in NOT_MEASURED:
        return NOT_MEASURED[precision]
    if precision == "tf32" and device_kind != "cuda":
        return "tf32 is a GPU tensor-core mode; a CPU computes fp32"
    if precision not in SUPPORTED:
        return f"{precision} is not timed by this probe"
    return None


class _Tf32:
    """Turn TF32 matmuls on (tf32) or off (fp32: the true fp32 rate) and restore after."""

    def __init__(self, torch: Any, on: bool):
        self.torch, self.on = torch, on

    def __enter__(self) -> None:
        self.saved = self.torch.backends.cuda.matmul.allow_tf32
        self.torch.backends.cuda.matmul.allow_tf32 = self.on

    def __exit__(self, *exc: Any) -> None:
        self.torch.backends.cuda.matmul.allow_tf32 = self.saved


def measure(torch: Any, device: Any, precision: str, shapes: list[tuple[int, int, int]], *,
            warmup: int, repeats: int, flush: Callable[[], None] | None,
            progress: Callable[[str], None] | None = None) -> MatmulResult:
    """Time every shape at one precision; the ceiling and its shape, beside the catalog peak."""
    dtype = dtype_of(torch, precision)
    results = []
    with _Tf32(torch, precision == "tf32"):
        for m, n, k in shapes:
            if progress:
                progress(f"matmul {precision} {m}x{n}x{k}")
            a = torch.randn(m, k, dtype=dtype, device=device.torch_device)
            b = torch.randn(k, n, dtype=dtype, device=device.torch_device)
            c = torch.empty(m, n, dtype=dtype, device=device.torch_device)

            def run(a: Any = a, b: Any = b, c: Any = c) -> None:
                torch.mm(a, b, out=c)

            inner = _inner_calls(torch, device, run, flops_of(m, n, k))
            timing = time_repeats(torch, device, run, warmup=warmup, repeats=repeats, flush=flush, inner=inner)
            results.append(ShapeResult(m, n, k, timing))
            del a, b, c
    return MatmulResult(precision, tuple(results), device.catalog_peak(precision))


def rerun_best(torch: Any, device: Any, res: MatmulResult, *, warmup: int, repeats: int,
               flush: Callable[[], None] | None, progress: Callable[[str], None] | None = None) -> MatmulResult:
    """Time the ceiling's shape once more and add it to the sweep.

    Other work on the machine only ever slows a kernel, so a ceiling taken while the
    machine was busy is too low; a second look later lifts it if the first was unlucky.
    """
    b = res.best
    again = measure(torch, device, res.precision, [(b.m, b.n, b.k)], warmup=warmup, repeats=repeats, flush=flush,
                    progress=progress).shapes[0]
    return MatmulResult(res.precision, res.shapes + (ShapeResult(b.m, b.n, b.k, again.timing, rerun=True),),
                        res.catalog_peak_flops_per_s)


def _inner_calls(torch: Any, device: Any, run: Callable[[], None], flops: float) -> int:
    """Calls per timed repeat so one repeat lasts long enough to time (≥ ~2 ms on a GPU)."""
    if device.kind != "cuda":
        return 1
    t = time_repeats(torch, device, run, warmup=1, repeats=1, flush=None).best_s
    return int(min(50, max(1, math.ceil(2e-3 / max(t, 1e-7)))))
