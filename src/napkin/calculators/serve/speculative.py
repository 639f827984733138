"""Speculative decoding: a small draft model proposes k tokens, the target verifies them in one pass.

Both are steps of the operator model: the draft on the same GPUs (TP only, its own shapes), the
verification a target step with k + 1 tokens per sequence that reads each sequence's KV cache
once while its k extra queries attend to it. The speed-up applies to the decode share of a step.
"""

from __future__ import annotations

from napkin.calculators import replica as rep
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.formulas import serving as sv
from napkin.model import ModelSpec

from .decode import Context
from .inputs import Setup
from .request import ServeRequest
from .schedule import total


def speculative(r: Report, s: Setup, req: ServeRequest, dm: ModelSpec, c: Context, decode_step_s: float) -> float:
    """Draft k tokens, verify them in one target pass; returns the speed-up of a decode step (> 1 helps)."""
    k = req.draft_tokens
    a = resolve.given_or_default(r, "acceptance", req.acceptance, "speculative_acceptance",
                                 given_note="probability the target accepts a drafted token", unit="fraction")
    etok = r.step("spec_tokens_per_pass", "(1 − a^(k+1)) / (1 − a)",
                  value=float(sv.speculative_tokens_per_pass(a, draft_tokens=k)), unit="number", a=a, k=k,
                  cites=sv.speculative_tokens_per_pass)
    b = float(sv.microbatch(req.batch, pp=s.pp))
    draft = rep.replica(dm, s.g, tp=s.tp, bytes_per_weight=s.b_w, kv_bytes_per_value=s.b_kv, e=s.eff,
                        compute_precision=s.compute_precision, link_bytes_per_s_per_direction=s.link,
                        scale_up=s.replica.rates.allreduce_curve is not None, link_bus=s.link_bus,
                        ring_latency_s=s.ring_latency_s)  # the target's GPUs: its ring
    held = float(dm.kv_held_tokens(c.ctx_avg))
    d_step = r.step("draft_step_s", "Σ operators of one draft decode step (same GPUs, TP only)",
                    value=total(draft.operators(b, kv_tokens=b * held, logits=b)), unit="seconds")
    verify = s.replica.operators(b * (k + 1), kv_tokens=b * c.held_avg, prefill_pairs=b * c.held_avg * k,
                                 logits=b * (k + 1))
    v_step = r.step("verify_step_s", "Σ operators of a target step with k + 1 tokens per sequence (each KV read "
                    "once, k more queries on it)", value=total(verify), unit="seconds", k=k)
    pass_s = r.step("spec_pass_s", "k · draft_step_s + verify_step_s",
                    value=float(sv.speculative_pass_seconds(d_step, draft_tokens=k, verify_step_s=v_step)),
                    unit="seconds", cites=sv.speculative_pass_seconds)
    speedup = r.step("spec_speedup", "decode_step_s / (spec_pass_s / spec_tokens_per_pass)",
                     value=decode_step_s / (pass_s / etok), unit="number")
    if speedup <= 1:
        r.warn("draft-slower", f"speculative decoding is slower here ({speedup:.2f}x): the draft and the "
                               "verification cost more than the accepted tokens save")
    r.note("speculative decoding emits exactly the tokens the target alone would: it changes the speed, not the output")
    return speedup
