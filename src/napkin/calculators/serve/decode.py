"""Decode: what one decode step of the batch moves and computes, the bandwidth floor of the napkin
rule, and the smallest batch at which the weights' GEMMs stop being memory-bound.

The step's time itself is the operator model's (formulas.operators, through the replica the
inputs room built); the scheduling room decides which tokens ride in each step.
"""

from __future__ import annotations

from dataclasses import dataclass

from napkin.calculators.steps import kv_held
from napkin.derivation import Report
from napkin.formulas import operators as op
from napkin.formulas.binding import BINDING, GEMMS, binding
from napkin.formulas import serving as sv
from napkin.model import ModelSpec

from .inputs import Setup
from .memory import Memory
from .request import ServeRequest



@dataclass
class Context:
    """The decode workload at the mean context of an answer."""

    ctx_avg: float  # prompt + output / 2
    held_avg: float  # tokens' worth of KV one sequence holds at ctx_avg (a sliding window caps it)
    kv_bytes_per_token: float


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


def workload(r: Report, s: Setup, req: ServeRequest, fit: Memory) -> Context:
    """The step's FLOPs and bytes at ctx = prompt + output/2, and the napkin rule's bandwidth floor."""
    m = s.m
    ctx_avg = req.prompt + req.output / 2.0
    fpt = flops_per_token(r, m, req, ctx_avg)
    held_avg, ctx_expr = kv_held(r, m, ctx_avg, "ctx")
    kv_read = fit.kv_bytes_per_token * held_avg
    e, k = m.routing
    b_micro = float(sv.microbatch(req.batch, pp=s.pp))
    w_read = float(sv.moe_weights_read_bytes(b_micro, shared_bytes=fit.shared_weight_bytes,
                                             routed_bytes=fit.routed_weight_bytes, n_experts=e, n_active_experts=k))
    if m.is_moe:
        r.step("weights_read_bytes", "shared + routed · (1 − (1 − k/E)^b)   (experts some token picked)",
               value=w_read, unit="bytes", shared=(fit.shared_weight_bytes, "bytes"),
               routed=(fit.routed_weight_bytes, "bytes"), k=k, E=e, b=b_micro, cites=sv.moe_weights_read_bytes)
        if req.batch > 1:
            r.note(f"at batch {req.batch} the tokens pick "
                   f"{(w_read - fit.shared_weight_bytes) / fit.routed_weight_bytes:.0%} of the routed experts per layer "
                   "(uniform routing): a batched MoE step reads far more than its active weights")
    moved = r.step("decode_step_bytes", f"active weights read + batch · kv_bytes_per_token · {ctx_expr}" +
                   (" (per micro-batch)" if s.pp > 1 else ""),
                   value=req.batch / b_micro * w_read + req.batch * kv_read, unit="bytes",
                   weights_read=(w_read, "bytes"), batch=req.batch, ctx=(ctx_avg, "count"))
    r.step("decode_step_flops", "batch · decode_flops_per_token", value=req.batch * fpt, unit="flops",
           batch=req.batch)
    floor = r.step("decode_floor_s", "decode_step_bytes / (gpus · bandwidth)   (the napkin rule: every byte once, "
                   "at the datasheet rate)", value=moved / (s.tp * s.pp * s.bw), unit="seconds",
                   gpus=s.tp * s.pp, bandwidth=(s.bw, "bytes_per_s"),
                   note="a floor: no kernel reaches the datasheet bandwidth, and compute, communication and fixed "
                        "costs add to it")
    r.step("decode_floor_tokens_per_s", "batch / decode_floor_s", value=req.batch / floor, unit="per_s")
    return Context(ctx_avg, held_avg, fit.kv_bytes_per_token)


def decode_step(s: Setup, batch: float, c: Context) -> dict[str, op.OperatorTime]:
    """The operators of a decode step of ``batch`` sequences at the mean context (one micro-batch round)."""
    b = float(sv.microbatch(batch, pp=s.pp))
    return s.replica.operators(b, kv_tokens=b * c.held_avg, logits=b)


def bound_of(ops: dict[str, op.OperatorTime]) -> str:
    """What binds a step: the class of operators taking the most time (formulas.binding)."""
    return BINDING[int(binding(ops))]


def compute_bound(r: Report, s: Setup, c: Context, *, max_batch: int) -> None:
    """The smallest batch whose weight GEMMs compute as long as they stream, against the batch memory holds."""

    def memory_and_compute(bb: float) -> tuple[float, float]:
        ops = decode_step(s, bb, c)
        return (sum(float(ops[k].memory_s) for k in GEMMS[:3]), sum(float(ops[k].compute_s) for k in GEMMS[:3]))

    cbb = sv.compute_bound_batch(memory_and_compute)
    if cbb is None:
        r.set("compute_bound_batch", None)
        r.note("no batch makes the weights' GEMMs compute-bound")
        return
    r.step("compute_bound_batch", "smallest batch with GEMM compute time ≥ GEMM memory time", value=cbb,
           unit="count", effective_ridge=(s.peak * s.eff.gemm / (s.bw * s.eff.bandwidth), "number"),
           cites=sv.compute_bound_batch)
    if cbb > max_batch and max_batch > 0:
        r.note(f"memory holds at most {max_batch:,.0f} sequences, short of the {cbb:,.0f} that would make the "
               "weights' GEMMs compute-bound: decode on this replica is always bandwidth-bound")
