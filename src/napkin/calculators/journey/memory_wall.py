"""Rung 3, the memory wall: the node's peak and bandwidth, the ridge, and how far below it decode runs."""

from __future__ import annotations

from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import flops
from napkin.formulas import journey as jf
from napkin.formulas import roofline as roof
from napkin.hardware import Accelerator

from . import node
from .walk import Trip, Walk


def compute_precision(g: Accelerator, prec: str, report: Report) -> str:
    """The precision the tensor cores run at: the weights' own, or the nearest the part has."""
    p = resolve.compute_precision(g, prec)
    if p is None:
        raise InputError("precision", prec, f"has no tensor-core peak on the {g.name}", "give --precision bf16")
    if p != prec:
        report.warn("compute-precision",
                    f"the {g.name} has no dense {prec} peak; {prec} weights are multiplied at {p}, so "
                    f"prefill runs at the {p} peak")
    return p


def memory_wall(walk: Walk, t: Trip) -> None:
    g, n_gpus, b = t.g, t.n_gpus, t.bytes_per_param
    r = walk.start("memory_wall")
    cprec = compute_precision(g, t.req.precision, r)
    t.peak = peak = g.peak(cprec)
    r.set("mac_flops", flops.FORWARD_FLOPS_PER_PARAM, "flops")
    r.set("compute_precision", cprec)
    r.assume("dense_flops_per_s", peak, f"{g.name} dense {cprec} peak ({g.source})", unit="flops_per_s",
             basis="catalog")
    r.set("dense_flops_per_s", peak, "flops_per_s")
    r.step("mac_s", "2 FLOP / dense peak  (one multiply-accumulate's share of a second)",
           value=flops.FORWARD_FLOPS_PER_PARAM / peak, unit="seconds", peak=(peak, "flops_per_s"))
    t.node_peak = r.step("node_flops_per_s", "gpus · dense peak", value=n_gpus * peak, unit="flops_per_s",
                         gpus=n_gpus)
    bw = g.memory_bytes_per_s
    r.set("memory_bytes_per_s", bw, "bytes_per_s")
    t.node_bw = r.step("node_memory_bytes_per_s", "gpus · bandwidth", value=n_gpus * bw, unit="bytes_per_s",
                       gpus=n_gpus)
    t.ridge = r.step("ridge_flops_per_byte", "peak / bandwidth",
                     value=roof.ridge_flops_per_byte(peak, memory_bytes_per_s=bw), unit="number",
                     peak=(peak, "flops_per_s"), bandwidth=(bw, "bytes_per_s"), cites=roof.ridge_flops_per_byte)
    r.step("weight_read_one_gpu_s", "weights_bytes / bandwidth  (through one GPU)",
           value=roof.weight_read_seconds(t.weights, memory_bytes_per_s=bw), unit="seconds",
           weights=(t.weights, "bytes"), bandwidth=(bw, "bytes_per_s"), cites=roof.weight_read_seconds)
    r.step("weight_read_s", "weights_bytes / (gpus · bandwidth)",
           value=roof.weight_read_seconds(t.weights, memory_bytes_per_s=bw, n_gpus=n_gpus), unit="seconds",
           weights=(t.weights, "bytes"), gpus=n_gpus, cites=roof.weight_read_seconds)
    intensity1 = r.step("decode_intensity_flops_per_byte", "2 · batch / bytes_per_param  (batch 1)",
                        value=jf.decode_intensity_flops_per_byte(1, bytes_per_param=b), unit="number",
                        batch=1, bytes_per_param=b, cites=jf.decode_intensity_flops_per_byte)
    r.step("decode_fraction_of_ridge", "decode intensity / ridge", value=intensity1 / t.ridge, unit="fraction")
    node.build(r, t, cprec)
    r.note("datasheet peaks are ceilings: the kernels reach gemm_efficiency of the dense peak on a large GEMM and "
           "bandwidth_efficiency of the HBM bandwidth (see the assumptions for where each comes from); the prefill "
           "and decode times below are the operator model's, as `napkin serve` computes them")
    r.note("the multiply-accumulate above is counted where it runs, in prefill: the meter does not move here, so "
           "Σ is exactly 2·N·(prompt + output)")
    walk.close("memory_wall", r, 0.0)
