"""``napkin model``: a model's architecture, parameter counts (total and active) and KV bytes per token."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators.steps import kv_step
from napkin.derivation import Report
from napkin.hardware import bytes_per_value
from napkin.model import ModelSpec
from napkin.request import field
from napkin.units import format as fmt

S = msgspec.Struct


class ModelRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog name or path to a Hugging Face config.json", positional=True)]
    precision: Annotated[str, field("precision", "precision of weights and KV cache")] = "bf16"


def run_model(req: ModelRequest) -> Report:
    m = catalog.model(req.model)
    r = Report(f"{m.name}", command="model")
    b = bytes_per_value(req.precision)
    r.set("name", m.name)
    if m.family:
        r.set("family", m.family)
    _architecture(r, m)
    # ------------------------------------------------------------ parameters
    bd = m.params_breakdown()
    r.step("params", "embedding + lm_head + attention + mlp + norms", value=float(bd["total"]), unit="count",
           embedding=(bd["embedding"], "count"), lm_head=(bd["lm_head"], "count"),
           attention=(bd["attention"], "count"), mlp=(bd["mlp"], "count"), norms=(bd["norms"], "count"))
    if m.is_moe:
        r.step("active_params", "params with k of E routed experts per token", value=float(bd["active"]),
               unit="count", k=m.n_active_experts, E=m.n_experts, shared=m.n_shared_experts)
    else:
        r.set("active_params", float(bd["active"]), "count")
    if m.published_params:
        r.set("published_params", m.published_params, "count")
    if m.published_active_params:
        r.set("published_active_params", m.published_active_params, "count")
    if m.training_tokens:
        r.set("training_tokens", m.training_tokens, "count")
    kv_tok = kv_step(r, m, b, req.precision)
    if m.sliding_window:
        w = m.sliding_window
        if m.n_sliding_layers == m.n_layers:
            r.note(f"all {m.n_layers} layers attend over a {w:,}-token sliding window: one sequence's cache stops "
                   f"growing at {w:,} tokens ({fmt(float(m.kv_bytes(w, b)), 'bytes')}); `napkin memory --context` "
                   "applies the cap")
        else:
            r.note(f"{m.n_sliding_layers} of {m.n_layers} layers attend over a {w:,}-token sliding window: past "
                   f"{w:,} tokens a sequence's cache grows by {fmt(kv_tok * (1 - m.window_layers_fraction), 'bytes')} "
                   "per token (the global layers' share), not by kv_bytes_per_token; `napkin memory --context` "
                   "applies the cap")
    r.set("source", m.source)
    if m.params_source:
        r.set("params_source", m.params_source)
    if m.note:
        r.note(m.note)
    return r


def _architecture(r: Report, m: ModelSpec) -> None:
    """The architecture as the config gives it: attention, feed-forward, embeddings, positions and norms."""
    # ------------------------------------------------------------ attention
    for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim"):
        r.set(k, getattr(m, k))
    r.set("attention", m.attention)
    if m.attention == "mla":
        if m.q_lora_rank:
            r.set("q_lora_rank", m.q_lora_rank)
        for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            r.set(k, getattr(m, k))
    if m.sliding_window:
        r.set("sliding_window", m.sliding_window)
        r.set("n_sliding_layers", m.n_sliding_layers)
    if m.qkv_bias and not m.linear_bias:
        r.set("qkv_bias", True)
    # ------------------------------------------------------------ feed-forward
    r.set("gated_mlp", m.gated_mlp)
    if m.is_moe:
        r.set("n_experts", m.n_experts)
        r.set("n_active_experts", m.n_active_experts)
        if m.n_shared_experts:
            r.set("n_shared_experts", m.n_shared_experts)
        r.set("d_ff_expert", m.d_ff_expert or m.d_ff)
        if m.n_dense_layers:
            r.set("n_dense_layers", m.n_dense_layers)
            r.set("d_ff_dense", m.d_ff)
            r.note(f"d_ff_dense ({m.d_ff:,}) is the feed-forward width of the first {m.n_dense_layers} layers only, "
                   f"which are dense; the other {m.n_layers - m.n_dense_layers} route each token to "
                   f"{m.n_active_experts} of {m.n_experts} experts of width d_ff_expert ({m.d_ff_expert or m.d_ff:,})"
                   + (f" plus {m.n_shared_experts} shared" if m.n_shared_experts else ""))
    else:
        r.set("d_ff", m.d_ff)
    if m.linear_bias:
        r.set("linear_bias", True)
    # ------------------------------------------------------------ embeddings, positions, norms
    r.set("vocab_size", m.vocab_size)
    r.set("tied_embeddings", m.tied_embeddings)
    r.set("position", m.position)
    if m.position == "learned":
        r.set("max_position", m.max_position)
    if m.relative_pos_proj:
        r.set("relative_pos_proj", True)
    r.set("norm", m.norm)
    r.set("norms_per_layer", m.norms_per_layer)
    if m.max_context:
        r.set("max_context", m.max_context)


MODEL = Calculator("model", ModelRequest, run_model, "Model",
                   "Architecture, parameters (total and active) and KV bytes per token of a model.",
                   establishes="parameter counts (total, and active per token for MoE) and KV bytes per token, "
                               "from the architecture alone, checked against the published count",
                   needs_measuring="nothing for the arithmetic; a checkpoint's real tensor sizes if its config "
                                   "differs from the published architecture")
