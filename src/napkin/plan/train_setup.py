"""What `napkin plan train` holds fixed while it searches: the model's geometry, the accelerator,
the efficiencies and the run's options, resolved once into plain floats (``TrainSetup``).

Each default comes from catalog/assumptions.toml (``train_*`` tables; those that differ by
accelerator carry a ``by_gpu`` table beside the ``value`` used for parts without a figure)
and is recorded in the report as an assumption with its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from napkin import catalog
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import activations as A
from napkin.hardware import Accelerator
from napkin.model import ModelSpec

OPTIMIZER_BYTES = {"adam": 12.0, "adam-8bit": 6.0, "sgd": 8.0}  # fp32 master + state, per parameter
OPTIMIZER_NOTE = {"adam": "fp32 master weights, m and v: 4 + 4 + 4 bytes per parameter (ZeRO, Rajbhandari et al. "
                          "2020, section 3.1: K = 12)",
                  "adam-8bit": "fp32 master weights and 8-bit m and v: 4 + 1 + 1 bytes per parameter (Dettmers et al. "
                               "2022, 8-bit Optimizers via Block-wise Quantization)",
                  "sgd": "fp32 master weights and momentum: 4 + 4 bytes per parameter"}
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 3.0}  # fp8: the bf16 weights plus Transformer Engine's cached fp8 copy
# Efficiency defaults by accelerator (assumptions table key -> what it is)
EFFICIENCY_KEYS = ("train_gemm_peak_fraction", "train_gemm_training_fraction", "train_attention_training_fraction",
                   "train_gemm_tokens_half",
                   "train_attention_efficiency", "train_bandwidth_efficiency", "train_collective_efficiency",
                   "train_scale_out_efficiency", "train_dp_overlap", "train_cp_overlap", "train_tp_exposed",
                   "train_ep_exposed", "train_pp_exposed")


@dataclass(frozen=True)
class TrainSetup:
    """Every scalar the search holds fixed (base units). Picklable, so a dask worker gets one."""

    # model geometry (per layer, averaged over the layers for MoE models with dense layers)
    n_layers: float
    d_model: float
    n_heads: float
    n_kv_heads: float
    d_attn: float
    d_kv: float
    d_ff_active: float  # f-width one token passes through (k routed + shared experts for MoE)
    mlp_inputs: float  # 2 for a gated MLP (gate and up), 1 otherwise
    ff_tensors: float  # f-wide tensors kept for the backward (activations.MLP_FF_TENSORS)
    moe_copies: float  # k, averaged over the layers (0 dense)
    router_experts: float  # E, averaged over the layers (0 dense)
    n_experts: float
    top_k: float
    moe_layers: float
    vocab_size: float
    rope: float
    layer_dense_params: float  # attention, norms, dense MLP or shared experts, router: per layer
    layer_expert_params: float  # routed experts, all E of them, per layer (averaged)
    embedding_params: float
    head_params: float
    tied_head_params: float  # a tied output layer's weights, copied onto the last stage when p > 1
    params: float
    active_params: float
    # accelerator
    gpu: str
    peak: float  # dense FLOP/s of the GEMMs at the run's precision
    attention_peak: float  # dense FLOP/s of the attention kernel (bf16)
    memory_bytes: float
    memory_bytes_per_s: float
    link_bytes_per_s: float  # one direction of the scale-up link
    scale_up_domain: float
    scale_out_bytes_per_s: float
    # efficiencies and overlaps
    gemm_peak_fraction: float
    gemm_training_fraction: float  # share of the best-shape GEMM throughput a whole step's GEMMs reach (fitted)
    attention_training_fraction: float  # the same for the attention kernel (fitted)
    gemm_tokens_half: float
    attention_efficiency: float
    bandwidth_efficiency: float
    collective_efficiency: float
    scale_out_efficiency: float
    latency_s: float
    dp_overlap: float
    cp_overlap: float
    tp_exposed: float
    ep_exposed: float
    pp_exposed: float
    # the run
    seq_len: float
    global_batch_seqs: float
    batch_tolerance: float
    weight_bytes: float
    grad_bytes: float
    optimizer_bytes: float
    act_bytes: float
    runtime_bytes: float
    usable_fraction: float
    flash: float
    dropout: float
    fsdp_hybrid: float
    uneven_stages: float  # 1 when --pp was given: its layers may split unevenly (the busiest stage sets the pace)
    flops_per_token: float  # model FLOPs per token under the run's convention
    attention_flops_per_token: float  # the convention's attention term (0 under 6N)
    flops_convention: str
    tokens: float  # tokens of the whole run (nan when not given)
    usd_per_gpu_hour: float  # nan when there is no price
    goodput: float = 1.0  # share of paid time that advances training (wall time, GPU-hours and cost)

    @property
    def usable_bytes(self) -> float:
        return self.memory_bytes * self.usable_fraction


def efficiency_default(key: str, gpu: str) -> tuple[float, str]:
    """(value, where it comes from) of a default that may differ by accelerator (``by_gpu``)."""
    entry = catalog.table("assumptions")[key]
    by_gpu = entry.get("by_gpu", {})
    if gpu in by_gpu:
        return float(by_gpu[gpu]), f"{entry['note']} ({gpu})"
    return float(entry["value"]), entry["note"] + (" (no figure for this part: the general value)" if by_gpu else "")


def resolve_efficiency(r: Report, g: Accelerator, given: dict[str, float | None],
                       precision: str = "bf16") -> dict[str, float]:
    """Every efficiency and overlap: given, or the accelerator's sourced default, each recorded."""
    out = {}
    for key in EFFICIENCY_KEYS:
        name = key.removeprefix("train_")
        if given.get(name) is not None:
            out[name] = r.assume(name, float(given[name]), "given", unit=catalog.default(key).unit, basis="given")
            continue
        if key == "train_gemm_peak_fraction" and precision == "fp8":
            key = "train_gemm_peak_fraction_fp8"
        value, note = efficiency_default(key, g.key)
        d = catalog.default(key)
        out[name] = r.assume(name, value, note, unit=None if d.unit == "number" else d.unit, source=d.source,
                             replaced_by=d.replaced_by)
    return out


def _d_attn(m: ModelSpec) -> tuple[float, float]:
    """(query width a · d_h, K/V width h_kv · d_h); MLA materialises per-head K and V for training."""
    if m.attention == "mla":
        return float(m.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)), float(m.n_heads * m.v_head_dim)
    return float(m.n_heads * m.head_dim), float(m.n_kv_heads * m.head_dim)


def geometry(m: ModelSpec, *, fused_swiglu: bool) -> dict[str, float]:
    """The model's per-layer widths and parameter split, averaged over its layers."""
    L = m.n_layers
    n_moe = (L - m.n_dense_layers) if m.is_moe else 0
    fe = m.d_ff_expert or m.d_ff
    b = m.params_breakdown()
    # the routed experts' weights: total minus active MLP weights are the E − k experts no token uses
    unused = b["total"] - b["active"]
    routed_total = unused * m.n_experts / (m.n_experts - m.n_active_experts) if n_moe else 0.0
    d_attn, d_kv = _d_attn(m)
    f_active = ((L - n_moe) * m.d_ff + n_moe * (m.n_active_experts + m.n_shared_experts) * fe) / L
    kind = "gelu" if not m.gated_mlp else ("swiglu-fused" if fused_swiglu else "swiglu")
    return {
        "n_layers": float(L), "d_model": float(m.d_model), "n_heads": float(m.n_heads),
        "n_kv_heads": float(m.n_heads if m.attention == "mla" else m.n_kv_heads), "d_attn": d_attn, "d_kv": d_kv,
        "d_ff_active": f_active, "mlp_inputs": 2.0 if m.gated_mlp else 1.0, "ff_tensors": A.MLP_FF_TENSORS[kind],
        "moe_copies": n_moe * m.n_active_experts / L, "router_experts": n_moe * m.n_experts / L,
        "n_experts": float(m.n_experts), "top_k": float(m.n_active_experts), "moe_layers": float(n_moe),
        "vocab_size": float(m.vocab_size), "rope": 1.0 if m.position == "rope" else 0.0,
        "layer_dense_params": (b["attention"] + b["mlp"] - routed_total + b["norms"]) / L,
        "layer_expert_params": routed_total / L, "embedding_params": float(b["embedding"]),
        "head_params": float(b["lm_head"]), "tied_head_params": float(m.vocab_size * m.d_model) * m.tied_embeddings,
        "params": float(b["total"]), "active_params": float(b["active"]),
    }


def hand_model(req: Any) -> ModelSpec:
    """A ModelSpec from --layers/--hidden/--heads (and the optional widths), for a model not in the catalog."""
    need = {"layers": req.layers, "hidden": req.hidden, "heads": req.heads}
    missing = [k for k, v in need.items() if v is None]
    if missing:
        raise InputError(missing[0], "nothing", "is required without --model",
                         "give --model NAME|config.json, or --layers, --hidden and --heads")
    if req.hidden % req.heads:
        raise InputError("heads", req.heads, f"does not divide --hidden ({req.hidden})", "give --head-dim as well")
    head_dim = req.head_dim or req.hidden // req.heads
    gated = True if req.gated_mlp is None else req.gated_mlp
    ffn = req.ffn or (int(8 * req.hidden / 3 / 256 + 0.999) * 256 if gated else 4 * req.hidden)
    experts = req.experts or 0
    return ModelSpec(name=f"{req.layers}-layer, {req.hidden}-wide model", n_layers=req.layers, d_model=req.hidden,
                     n_heads=req.heads, n_kv_heads=req.kv_heads or req.heads, head_dim=head_dim, d_ff=ffn,
                     gated_mlp=gated, vocab_size=req.vocab or 32000, n_experts=experts,
                     n_active_experts=(req.top_k or 2) if experts else 0, d_ff_expert=req.expert_ffn or 0,
                     position="rope" if gated else "learned", norm="rmsnorm" if gated else "layernorm",
                     linear_bias=not gated)


def optimizer_bytes(r: Report, raw: str) -> float:
    """Bytes of optimizer state (with the fp32 master copy) per parameter: a name or a number."""
    key = raw.strip().lower()
    if key in OPTIMIZER_BYTES:
        return r.assume("optimizer_bytes_per_param", OPTIMIZER_BYTES[key], OPTIMIZER_NOTE[key], unit="bytes",
                        basis="given" if raw != "adam" else "assumed")
    try:
        value = float(key)
    except ValueError:
        raise InputError("optimizer", raw, "is not an optimizer napkin knows",
                         "use adam, adam-8bit, sgd, or the bytes of state per parameter (e.g. 12)") from None
    if not (0 <= value < 64) or math.isnan(value):
        raise InputError("optimizer", raw, "must be between 0 and 64 bytes per parameter")
    return r.assume("optimizer_bytes_per_param", value, "given as bytes per parameter", unit="bytes", basis="given")


def with_overrides(setup: TrainSetup, **changes: Any) -> TrainSetup:
    """A copy of the setup with some fields changed (a validation point's cluster, a fitted parameter)."""
    return replace(setup, **changes)


def global_batch_seqs(raw: str, seq_len: float) -> tuple[float, str]:
    """Sequences per step from ``2048seq`` (sequences) or ``16Mi`` / ``4M tokens`` (tokens / seq_len)."""
    from napkin import units

    text = str(raw).strip()
    low = text.lower()
    for word in ("sequences", "sequence", "seqs", "seq"):
        if low.endswith(word):
            n = units.parse(text[: -len(word)].strip() or "nothing", "count", "global_batch")
            if n <= 0 or n != int(n):
                raise InputError("global_batch", raw, "must be a whole, positive number of sequences",
                                 "e.g. 2048seq")
            return n, f"{n:,.0f} sequences"
    tokens = units.parse(text, "count", "global_batch")
    if tokens < seq_len:
        raise InputError("global_batch", raw, f"is less than one sequence of {seq_len:,.0f} tokens",
                         "give tokens per step (16Mi) or sequences (2048seq)")
    return tokens / seq_len, f"{units.format(tokens, 'count')} tokens"
