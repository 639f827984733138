"""Speculative decoding: a small draft model proposes k tokens, the target verifies them in one pass.

Both the draft step and the verification pass are the decode step of formulas.serving: the
draft on the same GPUs (TP only), the verification with k + 1 tokens per sequence.
"""

from __future__ import annotations

from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.formulas import serving as sv
from napkin.model import ModelSpec

from .decode import Workload, step_inputs
from .inputs import Setup
from .request import ServeRequest


def draft_workload(s: Setup, req: ServeRequest, dm: ModelSpec) -> Workload:
    """The draft model's share of a decode step at the mean context, on the target's TP group."""
    ctx_avg = req.prompt + req.output / 2.0
    fpt = float(sv.decode_flops_per_token(dm.active_params, n_layers=dm.n_layers, d_attn=dm.d_attn,
                                          context_tokens=ctx_avg, attention=req.convention != "2N", **dm.window()))
    shared, routed = dm.moe_split()
    shards = sv.kv_shards(s.tp, n_kv_heads=dm.n_kv_heads, latent=dm.attention == "mla")
    return Workload(dm, shared * s.b_w, routed * s.b_w, dm.kv_bytes(ctx_avg, s.b_kv), fpt, shards)


def speculative(r: Report, s: Setup, req: ServeRequest, dm: ModelSpec, target: Workload, step_s: float) -> float:
    """Draft k tokens with a small model, verify them in one target pass; returns the TPOT."""
    k = req.draft_tokens
    a = resolve.given_or_default(r, "acceptance", req.acceptance, "speculative_acceptance",
                                 given_note="probability the target accepts a drafted token", unit="fraction")
    etok = r.step("spec_tokens_per_pass", "(1 − a^(k+1)) / (1 − a)",
                  value=float(sv.speculative_tokens_per_pass(a, draft_tokens=k)), unit="number", a=a, k=k,
                  cites=sv.speculative_tokens_per_pass)
    draft = sv.decode_step_parts(req.batch, **step_inputs(s, draft_workload(s, req, dm), pp=1))
    d_step = r.step("draft_step_s", "max(memory, compute) + comm of one draft step (same GPUs, TP only)",
                    value=float(sv.step_seconds(draft, pp=1)), unit="seconds", cites=sv.decode_step_parts)
    verify = sv.decode_step_parts(req.batch, **step_inputs(s, target, tokens_per_sequence=k + 1.0))
    v_step = r.step("verify_step_s", "decode step with k + 1 tokens per sequence (FLOPs and messages × (k+1))",
                    value=float(sv.step_seconds(verify, pp=s.pp)), unit="seconds", k=k, cites=sv.decode_step_parts)
    pass_s = r.step("spec_pass_s", "k · draft_step_s + verify_step_s",
                    value=float(sv.speculative_pass_seconds(d_step, draft_tokens=k, verify_step_s=v_step)),
                    unit="seconds", cites=sv.speculative_pass_seconds)
    tpot = pass_s / etok
    r.set("tpot_without_draft_s", step_s, "seconds")
    r.step("spec_speedup", "decode_step_s / (spec_pass_s / spec_tokens_per_pass)", value=step_s / tpot, unit="number")
    if tpot >= step_s:
        r.warn("draft-slower", f"speculative decoding is slower here ({step_s / tpot:.2f}x): the draft and the "
                               "verification cost more than the accepted tokens save")
    r.note("speculative decoding emits exactly the tokens the target alone would: it changes the speed, not the output")
    return tpot
