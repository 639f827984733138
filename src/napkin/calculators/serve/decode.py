"""Decode: the FLOPs and bytes of one step at the mean context, and its time from the decode step
of formulas.serving (memory, compute and communication parts, combined by step_seconds)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from napkin.calculators import resolve
from napkin.calculators.steps import kv_held
from napkin.derivation import Report
from napkin.formulas import serving as sv
from napkin.model import ModelSpec
from napkin.units import format as _fmt

from .inputs import Setup
from .memory import Memory
from .request import ServeRequest


@dataclass
class Workload:
    """One sequence's share of a decode step at the mean context, as the step formula takes it."""

    model: ModelSpec
    shared_weight_bytes: float
    routed_weight_bytes: float
    kv_read_bytes_per_sequence: float
    flops_per_token: float
    kv_shards: float


def step_inputs(s: Setup, w: Workload, *, pp: Any = None, tokens_per_sequence: float = 1.0) -> dict[str, Any]:
    """The decode step formula's inputs (plain numbers) for this replica and workload, all but the batch."""
    m = w.model
    e, k = m.routing
    return dict(
        tp=s.tp, pp=s.pp if pp is None else pp, n_layers=m.n_layers, d_model=m.d_model,
        shared_weight_bytes=w.shared_weight_bytes, routed_weight_bytes=w.routed_weight_bytes, n_experts=e,
        n_active_experts=k, kv_read_bytes_per_sequence=w.kv_read_bytes_per_sequence, kv_shards=w.kv_shards,
        flops_per_token=w.flops_per_token, memory_bytes_per_s=s.bw, dense_flops_per_s=s.peak,
        bandwidth_efficiency=s.bw_eff, compute_efficiency=s.mfu, link_bytes_per_s_per_direction=s.link,
        allreduce_latency_s=s.allreduce_latency, tokens_per_sequence=tokens_per_sequence)


def bound_of(parts: sv.StepParts) -> str:
    """Which part of a step binds: communication when it exceeds both roofs, else the larger roof."""
    if parts.comm_s > max(parts.memory_s, parts.compute_s):
        return "communication"
    return "bandwidth" if parts.memory_s >= parts.compute_s else "compute"


def flops_per_token(r: Report, m: ModelSpec, req: ServeRequest, ctx_avg: float) -> float:
    use_attn = req.convention != "2N"
    windowed = use_attn and m.window_caps(ctx_avg)
    fpt_expr = ("2 · N_active" if not use_attn else
                "2 · N_active + 4 · d_attn · ((L − L_w) · ctx + L_w · min(ctx, W))" if windowed else
                "2 · N_active + 4 · L · d_attn · ctx")
    return r.step("decode_flops_per_token", fpt_expr,
                  value=float(sv.decode_flops_per_token(m.active_params, n_layers=m.n_layers, d_attn=m.d_attn,
                                                        context_tokens=ctx_avg, attention=use_attn, **m.window())),
                  unit="flops", ctx=(ctx_avg, "count"),
                  **({"L_w": m.n_sliding_layers, "W": (m.sliding_window, "count")} if windowed else {}),
                  note="ctx = prompt + output/2, the mean over the answer", cites=sv.decode_flops_per_token)


def workload(r: Report, s: Setup, req: ServeRequest, fit: Memory) -> Workload:
    """The step's FLOPs and bytes at ctx = prompt + output/2, recorded as decode_step_flops and _bytes."""
    m = s.m
    ctx_avg = req.prompt + req.output / 2.0
    fpt = flops_per_token(r, m, req, ctx_avg)
    held_avg, ctx_expr = kv_held(r, m, ctx_avg, "ctx")
    w = Workload(m, fit.shared_weight_bytes, fit.routed_weight_bytes, fit.kv_bytes_per_token * held_avg, fpt,
                 fit.kv_shards)
    e, k = m.routing
    b_micro = float(sv.microbatch(req.batch, pp=s.pp))
    w_read = float(sv.moe_weights_read_bytes(b_micro, shared_bytes=w.shared_weight_bytes,
                                             routed_bytes=w.routed_weight_bytes, n_experts=e, n_active_experts=k))
    if m.is_moe:
        r.step("weights_read_bytes", "shared + routed · (1 − (1 − k/E)^b)   (experts some token picked)",
               value=w_read, unit="bytes", shared=(w.shared_weight_bytes, "bytes"),
               routed=(w.routed_weight_bytes, "bytes"), k=k, E=e, b=b_micro, cites=sv.moe_weights_read_bytes)
        if req.batch > 1:
            r.note(f"at batch {req.batch} the tokens pick {(w_read - w.shared_weight_bytes) / w.routed_weight_bytes:.0%}"
                   f" of the routed experts per layer (uniform routing): a batched MoE step reads far more than its "
                   "active weights")
    r.step("decode_step_bytes", f"active weights read + batch · kv_bytes_per_token · {ctx_expr}" +
           (" (per micro-batch)" if s.pp > 1 else ""),
           value=req.batch / b_micro * w_read + req.batch * w.kv_read_bytes_per_sequence, unit="bytes",
           weights_read=(w_read, "bytes"), batch=req.batch, ctx=(ctx_avg, "count"))
    r.step("decode_step_flops", "batch · decode_flops_per_token", value=req.batch * fpt, unit="flops",
           batch=req.batch)
    return w


def decode(r: Report, s: Setup, req: ServeRequest, w: Workload, *, far: bool, max_batch: int) -> float:
    """The decode step's seconds at the request's batch, with its parts, what binds and the compute-bound batch."""
    m, g = s.m, s.g
    parts = sv.decode_step_parts(req.batch, **step_inputs(s, w))
    mem_s, comp_s, comm_s = (float(x) for x in parts)
    b_micro = float(sv.microbatch(req.batch, pp=s.pp))
    r.step("decode_memory_s", "bytes_per_gpu / (bw · η_bw)", value=mem_s, unit="seconds",
           bw=(s.bw, "bytes_per_s"), eta_bw=s.bw_eff, note="one stage, one GPU" if s.pp > 1 else "",
           cites=sv.decode_step_parts)
    r.step("decode_compute_s", "flops_per_gpu / (peak · mfu)", value=comp_s, unit="seconds",
           peak=(s.peak, "flops_per_s"), mfu=s.mfu, cites=sv.decode_step_parts)
    if s.tp > 1:
        r.step("decode_comm_s", "L · 2 · (2 · (tp − 1)/tp · b · d · 2 B / link + latency)", value=comm_s,
               unit="seconds", L=m.n_layers / s.pp, b=b_micro, d=m.d_model, tp=s.tp,
               link=(s.link, "bytes_per_s"), latency=(s.allreduce_latency, "seconds"),
               note=f"{2 * m.n_layers / s.pp:g} all-reduces of {_fmt(b_micro * m.d_model * sv.ACTIVATION_BYTES, 'bytes')}",
               cites=sv.tp_comm_seconds)
        resolve.assume_field(r, "allreduce_latency", req, "allreduce_latency_s")
    step_s = r.step("decode_step_s", "pp · (max(decode_memory_s, decode_compute_s) + decode_comm_s)",
                    value=float(sv.step_seconds(parts, pp=s.pp)), unit="seconds", pp=s.pp, cites=sv.step_seconds)
    r.set("bound", bound_of(parts))
    if far:
        r.warn("beyond-scale-up-domain",
               f"TP {s.tp} spans {math.ceil(s.tp / g.scale_up_domain)} scale-up domains of {g.scale_up_domain} "
               f"{g.name} ({g.link_name}): its all-reduces cross the scale-out network at {_fmt(s.link, 'bytes_per_s')} "
               f"per GPU, not {_fmt(g.link_bytes_per_s_per_direction, 'bytes_per_s')}, so {_fmt(comm_s, 'seconds')} of "
               f"each {_fmt(step_s, 'seconds')} decode step is communication; "
               f"keep TP within {g.scale_up_domain} GPUs and use pipeline stages across domains")
    if s.pp > 1:
        r.note(f"{s.pp} pipeline stages hold more memory but a token passes them in turn: they add throughput only "
               f"with at least {s.pp} micro-batches in flight")
    compute_bound(r, s, w, max_batch=max_batch)
    return step_s


def compute_bound(r: Report, s: Setup, w: Workload, *, max_batch: int) -> None:
    """The smallest batch whose step computes as long as it streams, against the batch memory holds."""

    inputs = step_inputs(s, w)

    def memory_and_compute(bb: float) -> tuple[float, float]:
        p = sv.decode_step_parts(bb, **inputs)
        return float(p.memory_s), float(p.compute_s)

    cbb = sv.compute_bound_batch(memory_and_compute)
    if cbb is None:
        r.set("compute_bound_batch", None)
        r.note("no batch makes this decode step compute-bound: the KV read grows as fast as the FLOPs")
        return
    r.step("compute_bound_batch", "smallest batch with decode_compute_s ≥ decode_memory_s", value=cbb,
           unit="count", effective_ridge=(s.peak * s.mfu / (s.bw * s.bw_eff), "number"), cites=sv.compute_bound_batch)
    if cbb > max_batch and max_batch > 0:
        r.note(f"memory holds at most {max_batch} sequences, short of the {cbb:,.0f} that would make decode "
               "compute-bound: this replica is always bandwidth-bound")
