"""Rung 4, prefill: the prompt's FLOPs (2N per token, attention on the meter with --attention), its time
by the napkin rule (one MFU) and by the operator model `napkin serve` runs, and the KV cache it writes."""

from __future__ import annotations

from napkin.calculators import resolve
from napkin.calculators.replica import describe, error_bars
from napkin.calculators.steps import kv_held, kv_step
from napkin.derivation import Report
from napkin.formulas import flops
from napkin.formulas import journey as jf
from napkin.formulas import operators as op
from napkin.formulas import serving as sv

from . import node
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


def napkin_rule(r: Report, t: Trip, pf: float) -> None:
    """The prefill at one assumed MFU of the node's dense peak: the round figure to hold the model against."""
    req = t.req
    resolve.assume_field(r, "mfu", req, "journey_prefill_mfu")
    r.set("mfu", req.mfu, "fraction")
    eff = r.step("effective_flops_per_s", "gpus · dense peak · MFU", value=t.node_peak * req.mfu, unit="flops_per_s",
                 gpus=t.n_gpus, peak=(t.peak, "flops_per_s"), MFU=(req.mfu, "fraction"))
    r.step("prefill_napkin_s", "prefill_flops / effective_flops_per_s  (the napkin rule: one MFU for the whole "
           "prompt)", value=jf.prefill_seconds_at_mfu(pf, n_gpus=t.n_gpus, dense_flops_per_s=t.peak, mfu=req.mfu),
           unit="seconds", prefill_flops=(pf, "flops"), effective=(eff, "flops_per_s"), cites=jf.prefill_seconds_at_mfu)


def operator_model(r: Report, t: Trip, pf: float) -> None:
    """The prompt's prefill on the node as `napkin serve` times it: the sum of its operators."""
    T = t.prompt_tokens
    t.prefill_pairs = t.replica.prefill_pairs(T)
    ops = t.replica.operators(T, prefill_pairs=t.prefill_pairs, logits=1.0)
    t.prefill_s = r.step("prefill_s", f"Σ operators of the prompt's prefill on TP {t.n_gpus}  (the operator model: "
                         "GEMMs, attention, element-wise kernels, all-reduces, fixed costs)",
                         value=float(op.total_seconds(ops)), unit="seconds", tokens=(T, "count"),
                         cites=op.step_seconds)
    r.step("prefill_mfu", "prefill_flops / (prefill_s · gpus · dense peak)",
           value=pf / (t.prefill_s * t.node_peak), unit="fraction",
           note="what the operator model predicts the prefill reaches, against the napkin rule's MFU")
    r.step("prefill_tokens_per_s", "prompt_tokens / prefill_s", value=T / t.prefill_s, unit="per_s",
           prompt_tokens=(T, "count"))
    r.note(f"prefill operators: {describe(ops)}")


def prefill(walk: Walk, t: Trip) -> None:
    req, m = t.req, t.m
    r = walk.start("prefill")
    t.prefill_flops = pf = prefill_flops(r, t)
    napkin_rule(r, t, pf)
    operator_model(r, t, pf)
    t.kv_bytes_per_token = kv_tok = kv_step(r, m, t.kv_bytes_per_value, req.kv_precision)
    held, held_expr = kv_held(r, m, t.prompt_tokens, "prompt_tokens")
    r.step("prompt_kv_bytes", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held, unit="bytes",
           prompt_tokens=(t.prompt_tokens, "count"))
    if m.max_context:
        held, held_expr = kv_held(r, m, m.max_context, "max_context")
        r.step("max_context_kv_bytes", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held,
               unit="bytes", max_context=(m.max_context, "count"))
    if t.free > 0:
        repl = node.cache_copies(r, t)
        if repl > 1:
            r.step("kv_capacity_tokens", "free_bytes / (kv_bytes_per_token · kv_replication)",
                   value=t.free / (kv_tok * repl), unit="count", free_bytes=(t.free, "bytes"), kv_replication=repl)
        else:
            r.step("kv_capacity_tokens", "free_bytes / kv_bytes_per_token", value=t.free / kv_tok, unit="count",
                   free_bytes=(t.free, "bytes"))
    r.step("ttft_s", "prefill_s  (on an idle node: queueing and the network add to it)", value=t.prefill_s,
           unit="seconds")
    bar = error_bars(t.g, t.n_gpus, moe=t.m.is_moe).get("ttft_s")
    if bar:
        r.note(f"the operator model's TTFT against published runs (napkin validate): {bar}")
    walk.close("prefill", r, pf)
