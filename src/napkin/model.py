"""ModelSpec: a transformer's architecture, its parameter count and its KV layout.

Paper symbols, mapped once:
    L  n_layers        d  d_model         h  n_heads        h_kv  n_kv_heads
    d_h head_dim       f  d_ff            V  vocab_size     E  n_experts (routed)
    k  n_active_experts (routed, per token)                 s  n_shared_experts

The parameter count is computed from the architecture and checked against the
published count in the tests (0.1% dense, 0.5% MoE total).
"""

from __future__ import annotations

import msgspec

from napkin.errors import InputError


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
        return self.kv_values_per_token() * bytes_per_value
