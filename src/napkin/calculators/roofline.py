"""``napkin roofline``: the ridge point of a GPU, and the FLOP/s a kernel of a given intensity can attain."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin.calculators import Calculator
from napkin.calculators.resolve import gpu_or_none, peak_of
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import roofline as roof
from napkin.request import field

S = msgspec.Struct


class RooflineRequest(S, kw_only=True, forbid_unknown_fields=True):
    gpu: Annotated[str | None, field("name", "accelerator")] = None
    precision: Annotated[str, field("precision", "compute precision")] = "bf16"
    intensity: Annotated[float | None, field("number", "arithmetic intensity, FLOP per byte moved", gt=0, unit="FLOP/B")] = None
    peak: Annotated[float | None, field("flops_per_s", "dense peak (instead of the catalog's)", gt=0)] = None
    bandwidth: Annotated[float | None, field("bytes_per_s", "memory bandwidth (instead of the catalog's)", gt=0)] = None


def run_roofline(req: RooflineRequest) -> Report:
    g = gpu_or_none(req.gpu)
    r = Report("Roofline" + (f": {g.name} {req.precision}" if g else ""), command="roofline")
    peak = peak_of(r, g, req.precision, req.peak)
    if req.bandwidth is not None:
        bw = req.bandwidth
    elif g is not None:
        bw = g.memory_bytes_per_s
    else:
        raise InputError("bandwidth", "nothing", "is required", "give --gpu NAME or --bandwidth 3.35TB/s")
    r.set("dense_flops_per_s", peak, "flops_per_s")
    r.set("memory_bytes_per_s", bw, "bytes_per_s")
    ridge = r.step("ridge_flops_per_byte", "peak / bandwidth", value=roof.ridge_flops_per_byte(peak, memory_bytes_per_s=bw),
                   unit="number", peak=(peak, "flops_per_s"), bandwidth=(bw, "bytes_per_s"),
                   cites=roof.ridge_flops_per_byte)
    if req.intensity is not None:
        att = r.step("attainable_flops_per_s", "min(peak, intensity · bandwidth)",
                     value=float(roof.attainable_flops_per_s(req.intensity, dense_flops_per_s=peak, memory_bytes_per_s=bw)),
                     unit="flops_per_s", intensity=req.intensity, bandwidth=(bw, "bytes_per_s"), peak=(peak, "flops_per_s"),
                     cites=roof.attainable_flops_per_s)
        r.step("fraction_of_peak", "attainable / peak", value=att / peak, unit="fraction")
        bound = "memory" if req.intensity < ridge else "compute"
        r.set("bound", bound)
        if bound == "memory":
            r.note("memory-bound by construction: the fix is fewer bytes (fusion, quantisation) or more FLOPs "
                   "per byte (batching), not more threads")
    return r


ROOFLINE = Calculator("roofline", RooflineRequest, run_roofline, "Roofline",
                      "Ridge point, attainable FLOP/s and which roof binds at an intensity.",
                      establishes="the ceiling a kernel of this intensity can reach",
                      needs_measuring="achieved FLOP/s and bytes of the real kernel, from a profiler")
