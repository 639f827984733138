"""Rung 4, prefill: the prompt's FLOPs (2N per token, attention on the meter with --attention), its
time from the prefill step of formulas.serving, and the KV cache it writes."""

from __future__ import annotations

from napkin.calculators import resolve
from napkin.calculators.steps import kv_held, kv_step
from napkin.derivation import Report
from napkin.formulas import flops
from napkin.formulas import serving as sv

from .walk import Trip, Walk

ATTENTION_WARN_SHARE = 0.10  # warn when the left-out attention term exceeds this share of 2N·T


def prefill_flops(r: Report, t: Trip) -> float:
    """2 · N_active · T, plus the causal attention term when the meter counts it (else a warning past 10%)."""
    req, m = t.req, t.m
    T = t.prompt_tokens
    t.flops_per_token = r.step("flops_per_token", "2 · N_active", value=flops.forward_flops_per_token(t.n_active),
                               unit="flops", N_active=(t.n_active, "count"), cites=flops.forward_flops_per_token)
    # as serve counts it: no window gives exactly 2 · L · T² · d_attn
    attn = sv.prefill_attention_flops(m.n_layers, d_attn=m.d_attn, new_tokens=T, **m.window())
    r.step("prefill_attention_flops", "2 · L · T² · d_attn  (causal)" + (
        f"; {m.n_sliding_layers} layers attend to at most {m.window_tokens:,.0f} tokens" if m.n_sliding_layers else ""),
        value=attn, unit="flops", L=m.n_layers, T=(T, "count"), d_attn=m.d_attn, cites=sv.prefill_attention_flops)
    if req.attention:
        return r.step("prefill_flops", "2 · N_active · T + attention", value=flops.prefill_flops(
            t.n_active, prompt_tokens=T, attention_flops=attn), unit="flops",
            N_active=(t.n_active, "count"), T=(T, "count"), attention=(attn, "flops"), cites=flops.prefill_flops)
    pf = r.step("prefill_flops", "2 · N_active · T", value=flops.prefill_flops(t.n_active, prompt_tokens=T),
                unit="flops", N_active=(t.n_active, "count"), T=(T, "count"), cites=flops.prefill_flops)
    share = attn / pf
    if share > ATTENTION_WARN_SHARE:
        r.warn("attention-term", f"at {T:,} prompt tokens the causal attention term adds "
                                 f"{share:.0%} to 2·N·T prefill FLOPs, which the meter leaves out "
                                 f"(add --attention to count it)")
    return pf


def prefill(walk: Walk, t: Trip) -> None:
    req, m = t.req, t.m
    r = walk.start("prefill")
    t.prefill_flops = pf = prefill_flops(r, t)
    resolve.assume_field(r, "mfu", req, "journey_prefill_mfu")
    r.set("mfu", req.mfu, "fraction")
    t.effective_flops_per_s = eff = r.step(
        "effective_flops_per_s", "gpus · dense peak · MFU", value=t.node_peak * req.mfu, unit="flops_per_s",
        gpus=t.n_gpus, peak=(t.peak, "flops_per_s"), MFU=(req.mfu, "fraction"))
    # the node as one device (gpus · peak), compute only, as the working says: no weight-read floor, no all-reduces
    parts = sv.prefill_step_parts(pf, weights_bytes=0.0, tp=1, n_layers=m.n_layers, d_model=m.d_model,
                                  new_tokens=t.prompt_tokens, memory_bytes_per_s=t.node_bw,
                                  dense_flops_per_s=t.node_peak, compute_efficiency=req.mfu)
    t.prefill_s = r.step("prefill_s", "prefill_flops / effective_flops_per_s", value=sv.step_seconds(parts),
                         unit="seconds", prefill_flops=(pf, "flops"), effective=(eff, "flops_per_s"),
                         cites=sv.prefill_step_parts)
    r.step("prefill_tokens_per_s", "effective_flops_per_s / flops_per_token", value=eff / t.flops_per_token,
           unit="per_s")
    t.kv_bytes_per_token = kv_tok = kv_step(r, m, t.kv_bytes_per_value, req.kv_precision)
    held, held_expr = kv_held(r, m, t.prompt_tokens, "prompt_tokens")
    r.step("prompt_kv_bytes", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held, unit="bytes",
           prompt_tokens=(t.prompt_tokens, "count"))
    if m.max_context:
        held, held_expr = kv_held(r, m, m.max_context, "max_context")
        r.step("max_context_kv_bytes", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held,
               unit="bytes", max_context=(m.max_context, "count"))
    if t.free > 0:
        r.step("kv_capacity_tokens", "free_bytes / kv_bytes_per_token", value=t.free / kv_tok, unit="count",
               free_bytes=(t.free, "bytes"))
    r.step("ttft_s", "prefill_s  (compute only: queueing and network add to it)", value=t.prefill_s, unit="seconds")
    walk.close("prefill", r, pf)
