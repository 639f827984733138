"""Prefill: the prompt's FLOPs (the 2N term and attention, capped by any sliding window, less a
cached prefix) and one prompt's prefill on an idle replica, from the operator model."""

from __future__ import annotations

from napkin.calculators.replica import describe
from napkin.derivation import Report
from napkin.formulas import flops
from napkin.formulas import operators as op
from napkin.formulas import serving as sv

from .inputs import Setup, beyond_scale_up
from .request import ServeRequest
from .schedule import pairs_per_request

LONG_CONTEXT_SHARE = 0.10  # warn when attention adds more than this to the 2N prefill


def prefill_flops(r: Report, s: Setup, req: ServeRequest) -> float:
    """Linear plus attention FLOPs of the prompt's new (uncached) tokens, with the long-context warning."""
    m = s.m
    prefix = req.cached_prefix
    new = req.prompt - prefix
    lin = r.step("prefill_linear_flops", "2 · N_active · (prompt − cached_prefix)",
                 value=flops.prefill_flops(m.active_params, prompt_tokens=new), unit="flops",
                 N_active=(m.active_params, "count"), tokens=(new, "count"), cites=flops.prefill_flops)
    causal = req.convention != "full"
    attn_full = float(sv.prefill_attention_flops(m.n_layers, d_attn=m.d_attn, new_tokens=new, cached_tokens=prefix,
                                                 causal=causal, **m.window()))
    if req.convention == "2N":
        attn = 0.0
        r.set("prefill_attention_flops", 0.0, "flops")
    elif m.window_caps(req.prompt):  # some layers see at most W keys per query
        glob = "(L − L_w) · T · (P + T/2)" if causal else "(L − L_w) · T · (P + T)"
        win = "L_w · Σ min(i, W)  (i = P+1 … P+T)" if causal else "L_w · T · min(P + T, W)"
        attn = r.step("prefill_attention_flops", f"4 · d_attn · ({glob} + {win})", value=attn_full, unit="flops",
                      L=m.n_layers, L_w=m.n_sliding_layers, W=(m.sliding_window, "count"), d_attn=m.d_attn,
                      T=(new, "count"), P=(prefix, "count"),
                      note="sliding-window layers attend to at most the last W tokens",
                      cites=sv.prefill_attention_flops)
    else:
        attn = r.step("prefill_attention_flops",
                      "4 · L · d_attn · T · (P + T/2)" if causal else "4 · L · d_attn · T · (P + T)",
                      value=attn_full, unit="flops", L=m.n_layers, d_attn=m.d_attn, T=(new, "count"),
                      P=(prefix, "count"), cites=sv.prefill_attention_flops)
    pf = r.step("prefill_flops", "prefill_linear_flops + prefill_attention_flops",
                value=flops.prefill_flops(m.active_params, prompt_tokens=new, attention_flops=attn), unit="flops",
                note=f"FLOPs convention: {req.convention}", cites=flops.prefill_flops)
    share = attn_full / lin
    if share > LONG_CONTEXT_SHARE:
        if req.convention == "2N":
            r.warn("long-context", f"the 2N convention leaves out attention, which adds {share:.0%} to this prefill's "
                                   f"FLOPs at {req.prompt:,.0f} tokens: use --convention causal")
        else:
            r.warn("long-context", f"at {req.prompt:,.0f} prompt tokens attention adds {share:.0%} to the 2N prefill "
                                   f"FLOPs: 2N alone undercounts")
    return pf


def prefill(r: Report, s: Setup, req: ServeRequest) -> tuple[float, bool]:
    """(one prompt's prefill on an idle replica, whether the TP group crosses the scale-out network)."""
    prefill_flops(r, s, req)
    far = beyond_scale_up(r, s, req)
    new, cached = req.prompt - req.cached_prefix, req.cached_prefix
    ops = s.replica.operators(new, prefill_pairs=pairs_per_request(s, new, cached), logits=1.0)
    t = r.step("prefill_s", "Σ operators of one prompt's prefill on an idle replica", value=float(
        op.total_seconds(ops)), unit="seconds", tokens=(new, "count"), cites=op.step_seconds,
        note=describe(ops))
    r.step("prefill_mfu", "prefill_flops / (prefill_s · tp · peak)", value=r["prefill_flops"] / (t * s.tp * s.peak),
           unit="fraction", note="what the model predicts the prefill reaches, not an input")
    return t, far
