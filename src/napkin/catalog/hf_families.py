"""Per-family readers of a Hugging Face config.json (see catalog.hf for the key map).

Each reader takes a ``Reader`` over the config (or its ``text_config``), the fields common
to every family, and a list of notes, and returns ModelSpec fields. What each family adds
to the Llama-style decoder is read from the keys its transformers configuration class
defines; where a family's Hub configs leave keys out, ``DEFAULTS`` holds that class's
defaults (used values are listed in the spec's note).
"""

from __future__ import annotations

from typing import Any, Callable

from napkin.catalog.hf import Reader
from napkin.errors import InputError

Spec = dict[str, Any]

# Architecture defaults of the configuration classes whose Hub configs omit keys (transformers
# Gemma3TextConfig and Llama4TextConfig): Gemma 3's text_config lists only what differs from them.
DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                    "max_position_embeddings": 131072, "sliding_window": 4096},
    "llama4_text": {"vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
                    "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                    "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 16, "num_experts_per_tok": 1,
                    "max_position_embeddings": 131072},
}


def attention_kind(h: int, hkv: int, r: Reader) -> str:
    if h % hkv:
        raise InputError(r.field, hkv, f"has num_key_value_heads that does not divide num_attention_heads ({h})",
                         f"each KV head serves a whole group of query heads; fix {r.path}")
    if hkv == h:
        return "mha"
    return "mqa" if hkv == 1 else "gqa"


def head_dim(d: int, h: int, r: Reader) -> int:
    if r.get("head_dim") is not None:
        return r.int("head_dim")
    if d % h:
        raise InputError(r.field, d, f"has hidden_size not divisible by num_attention_heads ({h}) and no head_dim",
                         f"add head_dim to {r.path}")
    return d // h


def generic_note(mt: str) -> str:
    return (f"model_type {mt!r} is not one napkin knows: read as a Llama-style decoder (gated MLP, RMSNorm, "
            "RoPE, no biases unless attention_bias/mlp_bias say so, routed experts from num_local_experts or "
            "num_experts when present). Any extra weights the family has (norms on q and k, shared experts, "
            "adapters) are not counted; check the parameter count against the model card.")


# ------------------------------------------------------------------------------ Llama-style
def llama_like(r: Reader, common: Spec, notes: list[str]) -> Spec:
    mt = r.mt
    d, h = r.int("hidden_size"), r.int("num_attention_heads")
    if r.get("num_key_value_heads") is None:
        hkv = h
        notes.append("num_key_value_heads is absent: read as MHA (num_key_value_heads = "
                     f"num_attention_heads = {h}), as transformers does; if the checkpoint is GQA "
                     "the KV cache is overstated by heads / kv_heads. Check the model card.")
    else:
        hkv = r.int("num_key_value_heads")
    spec: Spec = {
        **common,
        "n_layers": r.int("num_hidden_layers"), "d_model": d, "n_heads": h, "n_kv_heads": hkv,
        "head_dim": head_dim(d, h, r), "d_ff": r.int("intermediate_size"), "gated_mlp": True,
        "vocab_size": r.int("vocab_size"), "attention": attention_kind(h, hkv, r),
        "max_context": r.int("max_position_embeddings", 0, allow_zero=True),
    }
    if mt in ("qwen2", "qwen2_moe") and r.bool("qkv_bias", True):
        # Qwen2 attention puts a bias on q, k and v (not o); Qwen2-MoE's qkv_bias key defaults to true.
        spec["qkv_bias"] = True
    attn_bias, mlp_bias = r.bool("attention_bias", mt == "gpt_oss"), r.bool("mlp_bias", False)
    if attn_bias and (mlp_bias or mt == "gpt_oss"):
        spec["linear_bias"] = True  # gpt-oss: q/k/v/o biases and expert biases, no config key for the latter
    elif attn_bias:
        spec["qkv_bias"] = True
        notes.append("attention_bias is true: q, k, v biases are counted; the o_proj bias "
                     "(hidden_size per layer) is not.")
    elif mlp_bias:
        notes.append("mlp_bias is true: MLP biases (2·intermediate_size + hidden_size per layer) are not counted.")
    if mt in ("gemma2", "gemma3_text"):
        spec["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
    if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
        spec["qk_norm"] = True  # q_norm and k_norm: RMSNorm over head_dim
    spec.update(sliding_window(r, spec["n_layers"]))
    return spec


def sliding_window(r: Reader, n_layers: int) -> dict[str, int]:
    """sliding_window and n_sliding_layers, as transformers decides which layers slide.

    ``layer_types`` (newer configs) names each layer; without it: Gemma 2 slides the even
    layers (``Gemma2DecoderLayer.is_sliding = not layer_idx % 2``); Gemma 3 slides every
    layer but each ``sliding_window_pattern``-th (default 6: five local to one global);
    Qwen2 and Qwen3 slide layers from ``max_window_layers`` on, and only when
    ``use_sliding_window`` is true (the released configs say false); Mistral, Mixtral and
    Phi-3 slide every layer when ``sliding_window`` is set (Mistral 7B v0.1: 4096;
    Phi-3-mini-4k: 2047; v0.2 on and Mixtral: null); gpt-oss alternates.
    """
    mt = r.mt
    if r.get("sliding_window") is None:
        return {}
    if mt.startswith(("qwen2", "qwen3")) and not r.bool("use_sliding_window", False):
        return {}
    window = r.int("sliding_window")
    types = r.str_list("layer_types", n_layers)
    if types is not None:
        n = sum(t == "sliding_attention" for t in types)
    elif mt == "gemma2":
        n = (n_layers + 1) // 2
    elif mt == "gemma3_text":
        pattern = r.int("sliding_window_pattern", 6)
        n = sum(1 for i in range(n_layers) if (i + 1) % pattern)
    elif mt == "gpt_oss":
        n = (n_layers + 1) // 2
    elif mt.startswith(("qwen2", "qwen3")):
        n = max(n_layers - r.int("max_window_layers", 0, allow_zero=True), 0)
    elif mt in ("mistral", "mixtral", "phi3"):
        n = n_layers
    else:
        return {}
    return {"sliding_window": window, "n_sliding_layers": n} if n else {}


# ------------------------------------------------------------------------------ mixture of experts
def mixtral(r: Reader, common: Spec, notes: list[str]) -> Spec:
    spec = llama_like(r, common, notes)
    spec.update(n_experts=r.int("num_local_experts"), n_active_experts=r.int("num_experts_per_tok"),
                d_ff_expert=spec["d_ff"])
    return spec


def qwen_moe(r: Reader, common: Spec, notes: list[str]) -> Spec:
    """Qwen2-MoE and Qwen3-MoE: layer i is MoE unless listed in mlp_only_layers or (i+1) % decoder_sparse_step."""
    spec = llama_like(r, common, notes)
    L = spec["n_layers"]
    step = r.int("decoder_sparse_step", 1)
    only_dense = set(r.int_list("mlp_only_layers") or [])
    n_experts = r.int("num_experts")
    n_moe = sum(1 for i in range(L) if i not in only_dense and (i + 1) % step == 0)
    spec.update(n_experts=n_experts, n_active_experts=r.int("num_experts_per_tok"),
                d_ff_expert=r.int("moe_intermediate_size"), n_dense_layers=L - n_moe)
    shared = r.int("shared_expert_intermediate_size", 0, allow_zero=True) if r.mt == "qwen2_moe" else 0
    if shared:
        spec.update(n_shared_experts=1, d_ff_shared=shared, shared_expert_gate=True)
    return spec


def gpt_oss(r: Reader, common: Spec, notes: list[str]) -> Spec:
    """gpt-oss: every layer MoE; experts of intermediate_size with biases; router bias; attention sinks."""
    spec = llama_like(r, common, notes)
    k = r.int("num_experts_per_tok") if r.get("num_experts_per_tok") is not None else r.int("experts_per_token")
    spec.update(n_experts=r.int("num_local_experts"), n_active_experts=k, d_ff_expert=spec["d_ff"],
                router_bias=True, attention_sinks=True)
    return spec


def llama4(r: Reader, common: Spec, notes: list[str]) -> Spec:
    """Llama 4: routed experts plus one shared expert of intermediate_size on the MoE layers
    (moe_layers, or every interleave_moe_layer_step-th), dense MLPs of intermediate_size_mlp on
    the rest; chunked attention on the RoPE layers (no_rope_layers[i] = 1), global NoPE on the rest."""
    spec = llama_like(r, common, notes)
    L = spec["n_layers"]
    moe_layers = r.int_list("moe_layers")
    if moe_layers is None:
        step = r.int("interleave_moe_layer_step", 1)
        moe_layers = list(range(step - 1, L, step))
    n_moe = len({i for i in moe_layers if i < L})
    spec.update(n_experts=r.int("num_local_experts"), n_active_experts=r.int("num_experts_per_tok"),
                d_ff_expert=spec["d_ff"], n_shared_experts=1, n_dense_layers=L - n_moe,
                d_ff=r.int("intermediate_size_mlp") if n_moe < L else spec["d_ff"])
    chunk = r.int("attention_chunk_size", 0, allow_zero=True)
    types = r.str_list("layer_types", L)
    if types is not None:
        n_chunked = sum(t == "chunked_attention" for t in types)
    else:
        rope = r.int_list("no_rope_layers", L) or [int((i + 1) % r.int("no_rope_layer_interval", 4) != 0)
                                                  for i in range(L)]
        n_chunked = sum(1 for flag in rope if flag)
    if chunk and n_chunked:
        spec.update(sliding_window=chunk, n_sliding_layers=n_chunked, window_kind="chunked")
    return spec


# ------------------------------------------------------------------------------ DeepSeek, GPT-2
def deepseek(r: Reader, common: Spec, notes: list[str]) -> Spec:
    d, h = r.int("hidden_size"), r.int("num_attention_heads")
    L = r.int("num_hidden_layers")
    freq = r.int("moe_layer_freq", 1)
    if freq != 1:
        raise InputError(r.field, freq, "has config.json key 'moe_layer_freq' other than 1, which napkin does not model",
                         f"every layer after first_k_dense_replace is counted as MoE; file {r.path}")
    n_dense = r.int("first_k_dense_replace", 0, allow_zero=True)
    if n_dense > L:
        raise InputError(r.field, n_dense, f"has first_k_dense_replace above num_hidden_layers ({L})",
                         f"fix {r.path}")
    v_head = r.int("v_head_dim")
    if r.get("num_nextn_predict_layers"):
        notes.append(f"num_nextn_predict_layers = {r.get('num_nextn_predict_layers')}: the multi-token-"
                     "prediction module is not counted (DeepSeek's published totals exclude it).")
    return {
        **common,
        "n_layers": L, "d_model": d, "n_heads": h, "n_kv_heads": r.int("num_key_value_heads", h),
        "head_dim": v_head, "d_ff": r.int("intermediate_size"), "gated_mlp": True,
        "vocab_size": r.int("vocab_size"), "attention": "mla",
        "max_context": r.int("max_position_embeddings", 0, allow_zero=True),
        "q_lora_rank": r.int("q_lora_rank", 0, allow_zero=True), "kv_lora_rank": r.int("kv_lora_rank"),
        "qk_nope_head_dim": r.int("qk_nope_head_dim"), "qk_rope_head_dim": r.int("qk_rope_head_dim"),
        "v_head_dim": v_head,
        "n_experts": r.int("n_routed_experts"), "n_active_experts": r.int("num_experts_per_tok"),
        "n_shared_experts": r.int("n_shared_experts", 0, allow_zero=True),
        "d_ff_expert": r.int("moe_intermediate_size"), "n_dense_layers": n_dense,
    }


def gpt2(r: Reader, common: Spec, notes: list[str]) -> Spec:
    d, h = r.int("n_embd"), r.int("n_head")
    n_pos = r.int("n_positions")
    return {
        **common,
        "n_layers": r.int("n_layer"), "d_model": d, "n_heads": h, "n_kv_heads": h,
        "head_dim": head_dim(d, h, r), "d_ff": r.int("n_inner", 4 * d), "gated_mlp": False,
        "vocab_size": r.int("vocab_size"), "attention": "mha", "position": "learned",
        "max_position": n_pos, "max_context": n_pos, "linear_bias": True, "norm": "layernorm",
    }


def generic(r: Reader, common: Spec, notes: list[str]) -> Spec:
    """An unknown decoder: Llama-style, with routed experts when the usual keys are there."""
    spec = llama_like(r, common, notes)
    experts = r.get("num_local_experts") or r.get("num_experts")
    if experts:
        key = "num_local_experts" if r.get("num_local_experts") else "num_experts"
        fe = r.int("moe_intermediate_size") if r.get("moe_intermediate_size") is not None else spec["d_ff"]
        spec.update(n_experts=r.int(key), n_active_experts=r.int("num_experts_per_tok"), d_ff_expert=fe)
    return spec


READERS: dict[str, Callable[[Reader, Spec, list[str]], Spec]] = {
    "llama": llama_like, "mixtral": mixtral, "qwen_moe": qwen_moe, "gpt_oss": gpt_oss, "llama4": llama4,
    "deepseek": deepseek, "gpt2": gpt2, "generic": generic,
}

_FAMILY = {
    "llama": "llama", "mistral": "llama", "qwen2": "llama", "qwen3": "llama", "phi3": "llama", "gemma2": "llama",
    "gemma3_text": "llama", "mixtral": "mixtral", "qwen2_moe": "qwen_moe", "qwen3_moe": "qwen_moe",
    "gpt_oss": "gpt_oss", "llama4_text": "llama4", "deepseek_v2": "deepseek", "deepseek_v3": "deepseek",
    "gpt2": "gpt2",
}


def family_of(mt: str) -> str:
    """The reader for a (text) model_type; ``generic`` for one napkin does not know."""
    return _FAMILY.get(mt, "generic")
