"""Prefill: the prompt's FLOPs (the 2N term and attention, capped by any sliding window, less a
cached prefix) and the time to the first token, from the prefill step of formulas.serving."""

from __future__ import annotations

from napkin.derivation import Report
from napkin.formulas import flops
from napkin.formulas import serving as sv

from .inputs import Setup, beyond_scale_up
from .request import ServeRequest

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


def prefill(r: Report, s: Setup, req: ServeRequest, weights_bytes: float) -> tuple[float, bool]:
    """(TTFT, whether the TP group crosses the scale-out network): the prefill step on the TP group."""
    m = s.m
    pf = prefill_flops(r, s, req)
    new = req.prompt - req.cached_prefix
    parts = sv.prefill_step_parts(pf, weights_bytes=weights_bytes, tp=s.tp, n_layers=m.n_layers, d_model=m.d_model,
                                  new_tokens=new, memory_bytes_per_s=s.bw, dense_flops_per_s=s.peak,
                                  bandwidth_efficiency=s.bw_eff, compute_efficiency=s.mfu,
                                  link_bytes_per_s_per_direction=s.link, allreduce_latency_s=s.allreduce_latency)
    r.step("prefill_compute_s", "prefill_flops / (tp · peak · mfu)", value=parts.compute_s,
           unit="seconds", tp=s.tp, peak=(s.peak, "flops_per_s"), mfu=s.mfu, cites=sv.prefill_step_parts)
    far = beyond_scale_up(r, s, req)
    if s.tp > 1:
        r.step("prefill_comm_s", "L · 2 · (2 · (tp − 1)/tp · T · d · 2 B / link + latency)", value=float(parts.comm_s),
               unit="seconds", L=m.n_layers, T=(new, "count"), d=m.d_model,
               link=(s.link, "bytes_per_s"), latency=(s.allreduce_latency, "seconds"), cites=sv.tp_comm_seconds)
    ttft = r.step("ttft_s", "max(prefill_flops / (tp · peak · mfu), weights / (tp · bw · η_bw)) + prefill_comm",
                  value=float(sv.step_seconds(parts)), unit="seconds", cites=sv.step_seconds)
    r.note("TTFT here is the prefill on an idle replica: queueing and network add to it")
    return ttft, far
