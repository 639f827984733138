"""ModelSpec: a transformer's architecture, its parameter count and its KV layout.

Paper symbols, mapped once:
    L  n_layers        d  d_model         h  n_heads        h_kv  n_kv_heads
    d_h head_dim       f  d_ff            V  vocab_size     E  n_experts (routed)
    k  n_active_experts (routed, per token)                 s  n_shared_experts
    W  sliding_window (tokens)                              L_w n_sliding_layers

The parameter count is computed from the architecture and checked against the
published count in the tests (0.1% dense, 0.5% MoE total).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from napkin.errors import InputError
from napkin.formulas import memory as mem


class ModelSpec(msgspec.Struct, kw_only=True, frozen=True):
    key: str = ""
    name: str
    family: str = ""
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    gated_mlp: bool = True
    vocab_size: int
    tied_embeddings: bool = False
    attention: str = "gqa"  # mha | gqa | mqa | mla
    position: str = "rope"  # rope | learned | relative | alibi
    max_position: int = 0  # rows of a learned position table
    # Transformer-XL relative attention (Gopher, Chinchilla): each layer projects the
    # sinusoidal relative-position embedding with its own d x d matrix W_R.
    relative_pos_proj: bool = False
    max_context: int = 0
    qkv_bias: bool = False
    linear_bias: bool = False  # every linear layer has a bias (GPT-2, GPT-3)
    norm: str = "rmsnorm"  # rmsnorm | layernorm
    norms_per_layer: int = 2
    # MLA (DeepSeek-V2/V3)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # MoE
    n_experts: int = 0
    n_active_experts: int = 0
    n_shared_experts: int = 0
    d_ff_expert: int = 0
    n_dense_layers: int = 0  # layers with a dense MLP of d_ff (DeepSeek's leading first_k_dense_replace; Llama 4 Maverick's every other layer)
    d_ff_shared: int = 0  # width of each shared expert when it differs from d_ff_expert (Qwen2-MoE: shared_expert_intermediate_size)
    shared_expert_gate: bool = False  # a d -> 1 sigmoid gate on the shared expert per MoE layer (Qwen2-MoE)
    router_bias: bool = False  # the router has a bias per expert (gpt-oss)
    # Attention extras counted in the parameters
    qk_norm: bool = False  # an RMSNorm of width head_dim on q and on k per layer (Qwen3, Gemma 3)
    attention_sinks: bool = False  # one learned sink logit per query head per layer (gpt-oss)
    # Sliding-window attention: n_sliding_layers of the n_layers attend to (and cache) only
    # the last sliding_window tokens (Mistral 7B v0.1: all 32 at 4096; Gemma 2: every other
    # layer at 4096, the rest global). 0 and 0: every layer caches the whole context.
    sliding_window: int = 0
    n_sliding_layers: int = 0
    # "sliding" (the last W tokens; Mistral, Gemma, gpt-oss) or "chunked" (Llama 4: fixed, non-overlapping
    # chunks of W tokens; a chunked layer holds at most W tokens of KV, on average half that)
    window_kind: str = "sliding"
    # Weights a checkpoint ships beside the language model (a vision encoder and its projector): held in
    # memory, never touched by a text token. Not in params or active_params; in checkpoint_params.
    vision_params: int = 0
    # The precision the checkpoint stores its weights in, when its quantization_config fixes one (fp8 for
    # DeepSeek-V3's release, fp4 for gpt-oss's MXFP4 experts, int4 for AWQ/GPTQ); "" when the checkpoint
    # leaves it to the user (bf16 releases). quantized_scope says which weights it covers: "" every weight
    # of the language model, "linear" the attention and MLP matrices (embeddings, head and norms stay at
    # the checkpoint's 16-bit dtype), "experts" the routed experts only (gpt-oss). See quantized_params().
    weight_precision: str = ""
    quantized_scope: str = ""
    # provenance
    published_params: float = 0.0
    published_active_params: float = 0.0
    published_params_digits: int = 0  # significant figures the published count is given to
    training_tokens: float = 0.0
    aliases: list[str] = []
    hf_model_type: str = ""
    source: str = ""
    params_source: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        for f in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "vocab_size"):
            if getattr(self, f) <= 0:
                raise InputError(f, getattr(self, f), "must be a positive integer")
        if self.attention not in ("mha", "gqa", "mqa", "mla"):
            raise InputError("attention", self.attention, "must be one of mha, gqa, mqa, mla")
        if self.sliding_window < 0 or not 0 <= self.n_sliding_layers <= self.n_layers:
            raise InputError("n_sliding_layers", self.n_sliding_layers, f"must be between 0 and n_layers ({self.n_layers})",
                             "give how many layers attend over the sliding window")
        if (self.sliding_window > 0) != (self.n_sliding_layers > 0):
            raise InputError("sliding_window", self.sliding_window,
                             f"and n_sliding_layers ({self.n_sliding_layers}) must be given together",
                             "a window needs the layers that use it, and the reverse")
        if self.window_kind not in ("sliding", "chunked"):
            raise InputError("window_kind", self.window_kind, "must be sliding or chunked")
        if self.quantized_scope not in ("", "linear", "experts"):
            raise InputError("quantized_scope", self.quantized_scope, "must be empty, linear or experts")
        if self.n_kv_heads > self.n_heads:
            raise InputError("n_kv_heads", self.n_kv_heads, f"exceeds n_heads ({self.n_heads})",
                             "key-value heads are at most the query heads")

    # ------------------------------------------------------------ parameters
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    def _norm_params(self, width: int) -> int:
        return width * (2 if self.norm == "layernorm" else 1)

    def attention_params(self) -> int:
        """Weights of one attention block (projections, their biases, MLA's norms).

        Trap: Transformer-XL relative attention adds a d x d position projection per
        layer; leaving it out undercounts Gopher/Chinchilla by ~7% (64.7B, not 70B).
        """
        d, h, hkv, dh = self.d_model, self.n_heads, self.n_kv_heads, self.head_dim
        if self.attention == "mla":
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = d * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * h * qk
            else:
                q = d * h * qk
            kv = (d * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * h * (self.qk_nope_head_dim + self.v_head_dim))
            o = h * self.v_head_dim * d
            return q + kv + o
        q = d * h * dh
        kv = 2 * d * hkv * dh
        o = h * dh * d
        bias = 0
        if self.qkv_bias or self.linear_bias:
            bias += h * dh + 2 * hkv * dh
        if self.linear_bias:
            bias += d
        rel = d * d if self.relative_pos_proj else 0  # W_R of Dai et al. (2019), eq. 4
        qk_norm = 2 * dh if self.qk_norm else 0  # one weight vector of d_h for q, one for k
        sinks = h if self.attention_sinks else 0
        return q + kv + o + bias + rel + qk_norm + sinks

    def _mlp(self, f: int) -> int:
        d = self.d_model
        w = (3 if self.gated_mlp else 2) * d * f
        if self.linear_bias:
            w += f * (2 if self.gated_mlp else 1) + d
        return w

    def mlp_params(self) -> tuple[int, int]:
        """(total, active) MLP weights summed over all layers, routers and shared-expert gates included."""
        n_moe = self.n_moe_layers
        n_dense = self.n_layers - n_moe
        total = active = n_dense * self._mlp(self.d_ff)
        if n_moe:
            expert = self._mlp(self.d_ff_expert or self.d_ff)
            shared = self.n_shared_experts * self._mlp(self.d_ff_shared or self.d_ff_expert or self.d_ff)
            router = self.d_model * self.n_experts + (self.n_experts if self.router_bias else 0)
            gate = self.d_model if self.shared_expert_gate else 0
            total += n_moe * (self.n_experts * expert + shared + router + gate)
            active += n_moe * (self.n_active_experts * expert + shared + router + gate)
        return total, active

    @property
    def n_moe_layers(self) -> int:
        """Layers whose MLP is routed experts: L less the dense ones (0 for a dense model)."""
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    def routed_expert_params(self) -> int:
        """Weights of the routed experts over all MoE layers (what an "experts" quantization covers)."""
        return self.n_moe_layers * self.n_experts * self._mlp(self.d_ff_expert or self.d_ff)

    def quantized_params(self) -> float:
        """Parameters the checkpoint stores at ``weight_precision`` (0 when it fixes none).

        The rest of ``checkpoint_params`` is stored at the checkpoint's 16-bit dtype:
        weight bytes = quantized · bytes(weight_precision) + (checkpoint_params − quantized) · 2.

        Trap: block-scaled formats carry scales beside the values (MXFP4: one 8-bit scale per 32
        values, 4.25 bits a weight; DeepSeek's fp8: one fp32 scale per 128 x 128 block, 0.02%), so
        0.5 byte per fp4 weight undercounts gpt-oss-120b's 60.8 GiB checkpoint by about 6%.
        Source: the checkpoint's config.json quantization_config (modules_to_not_convert for gpt-oss).
        """
        if not self.weight_precision:
            return 0.0
        if self.quantized_scope == "experts":
            return float(self.routed_expert_params())
        if self.quantized_scope == "linear":
            bd = self.params_breakdown()
            return float(bd["attention"] + bd["mlp"])
        return self.params

    def embedding_head_params(self) -> float:
        """The embedding table and the LM head (tied: the table alone): what stays 16-bit when an engine
        quantizes the linear layers."""
        bd = self.params_breakdown()
        return float(bd["embedding"] + bd["lm_head"])

    def params_breakdown(self) -> dict[str, int]:
        """Parameters by part; 'total' and 'active' sum them (active routes k experts)."""
        d, v = self.d_model, self.vocab_size
        embed = v * d
        pos = self.max_position * d if self.position == "learned" else 0
        head = 0 if self.tied_embeddings else v * d
        attn = self.n_layers * self.attention_params()
        mlp_total, mlp_active = self.mlp_params()
        norms = self.n_layers * self.norms_per_layer * self._norm_params(d) + self._norm_params(d)
        base = embed + pos + head + attn + norms
        return {
            "embedding": embed + pos,
            "lm_head": head,
            "attention": attn,
            "mlp": mlp_total,
            "norms": norms,
            "total": base + mlp_total,
            "active": base + mlp_active,
        }

    @property
    def params(self) -> float:
        return float(self.params_breakdown()["total"])

    @property
    def checkpoint_params(self) -> float:
        """Every parameter the checkpoint holds: the language model plus any vision encoder."""
        return self.params + self.vision_params

    @property
    def active_params(self) -> float:
        """Parameters one token's forward pass touches: all for dense, k routed for MoE."""
        return float(self.params_breakdown()["active"])

    def moe_split(self) -> tuple[float, float]:
        """(shared, routed) parameters: shared + routed · k/E = active, shared + routed = total.

        Shared is what every token touches (attention, dense layers, shared experts,
        embeddings); routed is every routed expert together. A dense model is all shared.
        """
        if not self.is_moe:
            return self.params, 0.0
        e, k = self.n_experts, self.n_active_experts
        routed = (self.params - self.active_params) * e / (e - k)
        return self.params - routed, routed

    @property
    def routing(self) -> tuple[float, float]:
        """(E, k): routed experts and those each token picks; (1, 1) for a dense model."""
        return (self.n_experts, self.n_active_experts) if self.is_moe else (1.0, 1.0)

    # ------------------------------------------------------------- attention
    @property
    def d_attn(self) -> float:
        """Width of the attention products per token: h · d_h (MLA: h · (qk + v) / 2).

        MLA's query-key heads (nope + rope dims, 192 on DeepSeek-V3) are wider than its
        value heads (128): QKᵀ and AV each count their own width, so the mean stands for both.
        """
        if self.attention == "mla":
            return self.n_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim) / 2.0
        return float(self.n_heads * self.head_dim)

    def window(self) -> dict[str, float]:
        """The sliding window as the attention-FLOPs formulas take it: W (∞ when none) and L_w."""
        return {"window_tokens": self.window_tokens, "window_layers": float(self.n_sliding_layers)}

    def layer_shapes(self, tp: Any, *, kv_bytes_per_value: float, bytes_per_weight: float,
                     mlp_bytes_per_weight: float | None = None) -> Any:
        """The widths one GPU multiplies per layer under tensor parallelism ``tp`` (scalar or array),
        as :class:`napkin.formulas.operators.LayerShapes`: the operator model's view of this model.

        The attention projections' weights are ``attention_params()`` (MLA's low-rank factors
        included) split into the output projection (h · d_v in) and the rest (QKV, as one GEMM);
        KV bytes per token are one layer's share of ``kv_bytes_per_token``, split over the GPUs
        that hold whole KV heads (MLA's latent is replicated); dense and MoE layers are mixed by
        their share of the L layers.
        """
        from napkin.formulas import operators as op
        from napkin.formulas.serving import kv_shards

        d, h, L = self.d_model, self.n_heads, self.n_layers
        gated = 2 if self.gated_mlp else 1
        v_dim = self.v_head_dim if self.attention == "mla" else self.head_dim
        out_in = h * v_dim
        qkv = (self.attention_params() - out_in * d) / d
        shards = kv_shards(tp, n_kv_heads=self.n_kv_heads, latent=self.attention == "mla")
        moe = self.is_moe
        fe = self.d_ff_expert or self.d_ff
        fs = (self.d_ff_shared or fe) * self.n_shared_experts if moe else 0
        return op.LayerShapes(
            d_model=d, qkv_out=qkv / tp, attn_out_in=out_in / tp,
            mlp_in_out=gated * self.d_ff / tp, mlp_out_in=self.d_ff / tp,
            n_experts=self.n_experts if moe else 0, top_k=self.n_active_experts if moe else 0,
            expert_in_out=gated * fe / tp if moe else 0, expert_out_in=fe / tp if moe else 0,
            shared_in_out=gated * fs / tp, shared_out_in=fs / tp,
            moe_fraction=self.n_moe_layers / L if moe else 0.0,
            kv_bytes_per_token=self.kv_values_per_token() / L * kv_bytes_per_value / shards,
            attn_flops_per_kv_token=4.0 * self.d_attn / tp, vocab_out=self.vocab_size / tp, n_layers=L,
            bytes_per_weight=bytes_per_weight,
            mlp_bytes_per_weight=bytes_per_weight if mlp_bytes_per_weight is None else mlp_bytes_per_weight)

    # ------------------------------------------------------------- KV cache
    def kv_values_per_token(self) -> int:
        """Cached values per token over all layers.

        GQA/MHA/MQA: 2 · L · h_kv · d_h (K and V). MLA: L · (kv_lora_rank + rope dim),
        one latent per token, no factor of 2.
        """
        if self.attention == "mla":
            return self.n_layers * (self.kv_lora_rank + self.qk_rope_head_dim)
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim

    def kv_bytes_per_token(self, bytes_per_value: float = 2.0) -> float:
        """Bytes one token adds to the cache while every layer still holds it (all layers)."""
        return self.kv_values_per_token() * bytes_per_value

    @property
    def window_layers_fraction(self) -> float:
        """L_w / L: the share of layers whose cache stops at the sliding window."""
        return self.n_sliding_layers / self.n_layers

    @property
    def window_tokens(self) -> float:
        """W, or infinity when no layer has a sliding window."""
        return float(self.sliding_window) if self.sliding_window else math.inf

    def kv_held_tokens(self, context_tokens: Any) -> Any:
        """Tokens' worth of KV one sequence of ``context_tokens`` holds (capped by the window)."""
        return mem.kv_held_tokens(context_tokens, window_tokens=self.window_tokens,
                                  window_layers_fraction=self.window_layers_fraction)

    def kv_bytes(self, context_tokens: Any, bytes_per_value: float = 2.0) -> Any:
        """KV cache bytes of one sequence holding ``context_tokens`` tokens.

        Sliding-window layers stop at their window, so Mistral 7B at 32Ki tokens holds 4,096
        tokens' worth, not 32,768 (kv_held_tokens, times kv_bytes_per_token).
        """
        return mem.kv_sequence_bytes(self.kv_bytes_per_token(bytes_per_value), context_tokens=context_tokens,
                                     window_tokens=self.window_tokens,
                                     window_layers_fraction=self.window_layers_fraction)

    def kv_shared_prefix_tokens(self, prefix_tokens: Any, context_tokens: Any) -> Any:
        """Tokens' worth of a shared cached prefix still held when each sequence is at ``context_tokens``."""
        return mem.kv_shared_prefix_tokens(prefix_tokens, context_tokens=context_tokens,
                                           window_tokens=self.window_tokens,
                                           window_layers_fraction=self.window_layers_fraction)

    def window_caps(self, context_tokens: float) -> bool:
        """True when some layers' sliding window holds less than ``context_tokens``."""
        return bool(self.sliding_window) and context_tokens > self.sliding_window
