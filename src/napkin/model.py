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
    n_dense_layers: int = 0  # leading layers with a dense MLP (DeepSeek first_k_dense_replace)
    # Sliding-window attention: n_sliding_layers of the n_layers attend to (and cache) only
    # the last sliding_window tokens (Mistral 7B v0.1: all 32 at 4096; Gemma 2: every other
    # layer at 4096, the rest global). 0 and 0: every layer caches the whole context.
    sliding_window: int = 0
    n_sliding_layers: int = 0
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
        return q + kv + o + bias + rel

    def _mlp(self, f: int) -> int:
        d = self.d_model
        w = (3 if self.gated_mlp else 2) * d * f
        if self.linear_bias:
            w += f * (2 if self.gated_mlp else 1) + d
        return w

    def mlp_params(self) -> tuple[int, int]:
        """(total, active) MLP weights summed over all layers, routers included."""
        n_moe = self.n_layers - self.n_dense_layers if self.is_moe else 0
        n_dense = self.n_layers - n_moe
        total = active = n_dense * self._mlp(self.d_ff)
        if n_moe:
            fe = self.d_ff_expert or self.d_ff
            expert = self._mlp(fe)
            router = self.d_model * self.n_experts
            total += n_moe * ((self.n_experts + self.n_shared_experts) * expert + router)
            active += n_moe * ((self.n_active_experts + self.n_shared_experts) * expert + router)
        return total, active

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
