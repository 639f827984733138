"""Report steps that several calculators write the same way: the KV cache of a model.

Shared working, not physics: the numbers come from :mod:`napkin.formulas.memory` and
:class:`napkin.model.ModelSpec`; these functions record them in a Report with the same
formula text wherever they appear (memory, serve, journey, plan serve).
"""

from __future__ import annotations

import math
from typing import Any

from napkin.derivation import Report
from napkin.formulas import memory as mem
from napkin.formulas import serving as sv
from napkin.model import ModelSpec
from napkin.units import format as _fmt


def kv_step(r: Report, m: ModelSpec, b: float, precision: str) -> float:
    """Record kv_bytes_per_token for a model (GQA or MLA) and return it."""
    if m.attention == "mla":
        return r.step("kv_bytes_per_token", "L · (kv_lora_rank + rope_dim) · bytes  (MLA: one latent, no factor 2)",
                      value=mem.kv_bytes_per_token_mla(m.n_layers, kv_lora_rank=m.kv_lora_rank,
                                                       qk_rope_head_dim=m.qk_rope_head_dim, bytes_per_value=b),
                      unit="bytes", L=m.n_layers, kv_lora_rank=m.kv_lora_rank, rope_dim=m.qk_rope_head_dim,
                      bytes=b, precision=precision)
    return r.step("kv_bytes_per_token", "2 · L · h_kv · d_h · bytes",
                  value=mem.kv_bytes_per_token(m.n_layers, n_kv_heads=m.n_kv_heads, head_dim=m.head_dim,
                                               bytes_per_value=b),
                  unit="bytes", L=m.n_layers, h_kv=m.n_kv_heads, d_h=m.head_dim, bytes=b, precision=precision)


def kv_held_step(r: Report, m: ModelSpec, context: float, key: str = "kv_tokens_held",
                 context_name: str = "context") -> float:
    """Tokens' worth of KV one sequence of ``context`` tokens holds (ModelSpec.kv_held_tokens),
    recorded as a step with a note when a sliding window caps it; ``context`` itself otherwise."""
    if not m.window_caps(context):
        return context
    held = r.step(key, f"{context_name} − (L_w / L) · max({context_name} − W, 0)  (sliding-window layers keep W)",
                  value=float(m.kv_held_tokens(context)), unit="count", L_w=m.n_sliding_layers, L=m.n_layers,
                  W=(m.sliding_window, "count"), **{context_name: (context, "count")})
    kv_window_note(r, m, context)
    return held


def kv_held(r: Report, m: ModelSpec, context: float, expr: str) -> tuple[float, str]:
    """(tokens' worth of KV a sequence of ``context`` tokens holds, that amount as formula text).

    Without a sliding window, or below it, that is ``context`` and ``expr`` unchanged; when the
    window caps it, ``held(expr)`` (defined in the note this adds). Every caller that multiplies
    kv_bytes_per_token by a context length goes through this or ModelSpec.kv_bytes.
    """
    if not m.window_caps(context):
        return context, expr
    kv_window_note(r, m, context)
    return float(m.kv_held_tokens(context)), "held" + (expr if expr.startswith("(") else f"({expr})")


def kv_window_note(r: Report, m: ModelSpec, context: float) -> None:
    """The derivation note when a sliding window (or Llama 4's chunked attention) caps a sequence's cache (once per
    report)."""
    if not m.window_caps(context):
        return
    held = float(m.kv_held_tokens(context))
    which = "all" if m.n_sliding_layers == m.n_layers else f"{m.n_sliding_layers} of the {m.n_layers}"
    head = (f"sliding window: {which} layers of {m.name} cache only the last {m.sliding_window:,} tokens"
            if m.window_kind == "sliding" else  # Llama 4: fixed chunks, at most W tokens held, counted at W
            f"chunked attention: {which} layers of {m.name} attend within fixed {m.sliding_window:,}-token chunks "
            f"and hold at most {m.sliding_window:,} tokens (counted at that bound)")
    text = (f"{head}, so one sequence of {context:,.0f} tokens holds {held:,.0f} tokens' worth of KV, "
            f"{held / context:.0%} of kv_bytes_per_token × {context:,.0f}; "
            f"held(c) = c − (L_w / L) · max(c − W, 0) with L_w = {m.n_sliding_layers}, L = {m.n_layers}, "
            f"W = {m.sliding_window:,}")
    if not any(n.startswith(head) for n in r.notes):
        r.note(text)


def kv_copies(m: ModelSpec, tp: Any) -> Any:
    """Copies of the model's KV cache a tensor-parallel group of ``tp`` GPUs keeps (formulas.serving.kv_replication):
    1 where the KV heads split evenly; MLA's one latent per token, which every head reads, on every GPU."""
    return sv.kv_replication(tp, n_kv_heads=m.n_kv_heads, latent=m.attention == "mla")


def kv_copies_why(m: ModelSpec, tp: float, repl: float) -> str:
    """Why a tensor-parallel group of ``tp`` GPUs holds a GQA cache ``repl`` times: more GPUs than KV heads (a
    head kept on several), or fewer that do not divide them (each GPU sized for the most heads one keeps)."""
    if tp > m.n_kv_heads:
        return f"TP {tp:g} exceeds the {m.n_kv_heads:g} KV heads: each head is kept on {repl:g} GPUs"
    return (f"TP {tp:g} does not divide the {m.n_kv_heads:g} KV heads: each GPU is sized for the "
            f"{math.ceil(m.n_kv_heads / tp):g} heads the fullest one keeps, {repl:g} times the cache over the group")


def kv_replication_step(r: Report, m: ModelSpec, tp: float, kv_total: float) -> tuple[float, float]:
    """(replication, KV shards) of a model's cache over ``tp`` GPUs, recorded (with a warning) when the cache is
    held more than once: MLA's one latent per token is read by every head, so each GPU of the group keeps all
    of it; GQA with more GPUs than KV heads keeps each head on several."""
    latent = m.attention == "mla"
    shards = sv.kv_shards(tp, n_kv_heads=m.n_kv_heads, latent=latent)
    repl = kv_copies(m, tp)
    if repl > 1:
        r.step("kv_replication", "tp / kv_shards" + ("  (MLA: one latent every head reads)" if latent else
                                                      "  (kv_shards = h_kv / ceil(h_kv / tp))"),
               value=float(repl), unit="number", tp=tp, kv_shards=float(shards), cites=sv.kv_replication)
        extra = kv_total * (repl - 1)
        r.step("kv_replicated_bytes", "kv_total_bytes · (replication − 1)", value=extra, unit="bytes")
        if latent:
            r.warn("kv-replicated", f"MLA caches one latent per token that all heads read: TP {tp:g} keeps a full copy "
                                    f"on every GPU ({_fmt(extra, 'bytes')} more than one copy)")
        else:
            r.warn("kv-replicated", f"{kv_copies_why(m, tp, float(repl))}, costing {_fmt(extra, 'bytes')} of KV "
                                    "memory beyond one copy")
    return float(repl), float(shards)
