"""A ModelSpec from a Hugging Face ``config.json`` (a file, or a folder holding one).

Read, not trusted: every key the parameter count needs is looked up by name, and a
missing or malformed one is an InputError that names the key, the file and the fix.
Nothing is downloaded; the file is read from disk.

Families read, by ``model_type``:

    llama, mistral, qwen2     dense, gated (SwiGLU) MLP, RMSNorm, RoPE, GQA
    gemma2                    as above, four norms per layer, tied head, explicit head_dim,
                              sliding-window (local) and global layers alternating
    mixtral                   routed experts on every layer (num_local_experts, top-k)
    deepseek_v2, deepseek_v3  MLA attention, shared + routed experts, leading dense layers
    gpt2                      learned positions, LayerNorm, biases everywhere, tied head

HF keys mapped once (paper symbol in brackets, see napkin.model):

    num_hidden_layers [L]  hidden_size [d]  num_attention_heads [h]
    num_key_value_heads [h_kv] (absent: h, as transformers assumes)
    head_dim [d_h] (absent: d / h)   intermediate_size [f]   vocab_size [V]
    tie_word_embeddings (absent: the family's transformers default)
    num_local_experts / n_routed_experts [E]   num_experts_per_tok [k]
    n_shared_experts [s]   moe_intermediate_size   first_k_dense_replace
    q_lora_rank  kv_lora_rank  qk_nope_head_dim  qk_rope_head_dim  v_head_dim
    attention_bias / mlp_bias   max_position_embeddings
    sliding_window [W]  layer_types / use_sliding_window + max_window_layers (Qwen2) [L_w]

Trap: a Llama-family config without ``num_key_value_heads`` is read as MHA (the
transformers default). If the checkpoint is really GQA the KV cache comes out
h / h_kv times too large; the spec's ``note`` says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from napkin.errors import InputError
from napkin.model import ModelSpec

# The transformers default for tie_word_embeddings when the key is absent, per family.
_TIED_DEFAULT = {
    "llama": False, "mistral": False, "mixtral": False, "qwen2": False, "gemma2": True,
    "deepseek_v2": False, "deepseek_v3": False, "gpt2": True,
}
SUPPORTED = tuple(sorted(_TIED_DEFAULT))


def _resolve(path: str, field: str) -> Path:
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise InputError(field, str(path), "is not a config.json file or a folder holding one",
                         "give the path to a Hugging Face config.json, or a catalog model name; "
                         "see `napkin catalog models`")
    return p


def _read(p: Path, field: str) -> dict[str, Any]:
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(field, str(p), f"is not readable as UTF-8 text ({exc.__class__.__name__})",
                         "give the model's config.json as downloaded") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(field, str(p), f"is not valid JSON: {exc.msg} at line {exc.lineno} "
                         f"column {exc.colno}", "give the model's config.json as downloaded") from None
    if not isinstance(cfg, dict):
        raise InputError(field, str(p), f"is not a JSON object (it is a {type(cfg).__name__})",
                         "a config.json is one object of keys such as model_type and hidden_size")
    return cfg


class _Reader:
    """Typed look-ups into one config.json, with errors that name the key and the file."""

    def __init__(self, cfg: dict[str, Any], path: Path, field: str, model_type: str):
        self.cfg, self.path, self.field, self.mt = cfg, path, field, model_type

    def int(self, key: str, default: int | None = None, *, allow_zero: bool = False) -> int:
        value = self.cfg.get(key)
        if value is None:
            if default is not None:
                return default
            raise InputError(self.field, str(self.path),
                             f"has no key {key!r} in its config.json (model_type {self.mt} needs it)",
                             f"add {key!r} to the file, or pick a catalog model")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (value == 0 and not allow_zero):
            raise InputError(self.field, value,
                             f"has config.json key {key!r} that must be a positive integer",
                             f"fix {key!r} in {self.path}")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InputError(self.field, value, f"has config.json key {key!r} that must be true or false",
                             f"fix {key!r} in {self.path}")
        return value


def _attention_kind(h: int, hkv: int, r: _Reader) -> str:
    if h % hkv:
        raise InputError(r.field, hkv, f"has num_key_value_heads that does not divide num_attention_heads ({h})",
                         f"each KV head serves a whole group of query heads; fix {r.path}")
    if hkv == h:
        return "mha"
    return "mqa" if hkv == 1 else "gqa"


def _head_dim(d: int, h: int, r: _Reader) -> int:
    if r.cfg.get("head_dim") is not None:
        return r.int("head_dim")
    if d % h:
        raise InputError(r.field, d, f"has hidden_size not divisible by num_attention_heads ({h}) and no head_dim",
                         f"add head_dim to {r.path}")
    return d // h


def load_config(path: str, field: str = "model") -> ModelSpec:
    """Read a Hugging Face config.json (file or folder) into a ModelSpec.

    ``field`` is the option the path came from (``--model``), so errors name it.
    """
    p = _resolve(path, field)
    cfg = _read(p, field)
    mt = cfg.get("model_type")
    if mt is None:
        raise InputError(field, str(p), "has no key 'model_type' in its config.json",
                         "napkin reads " + ", ".join(SUPPORTED) + " configs")
    if mt not in _TIED_DEFAULT:
        raise InputError(field, mt, "has a config.json model_type napkin cannot size",
                         "napkin reads " + ", ".join(SUPPORTED) + f" configs; file {p}")
    r = _Reader(cfg, p, field, mt)
    # a checkpoint folder names its config.json; any other file is named by itself (cfg2.json -> cfg2)
    name = str(cfg.get("_name_or_path") or (p.parent.name if p.name == "config.json" else p.stem) or p.stem)
    common: dict[str, Any] = {
        "key": f"hf:{name}", "name": name, "family": mt, "hf_model_type": mt, "source": str(p),
        "tied_embeddings": r.bool("tie_word_embeddings", _TIED_DEFAULT[mt]),
    }
    notes: list[str] = []
    if mt == "gpt2":
        spec = _gpt2(r, common)
    elif mt.startswith("deepseek"):
        spec = _deepseek(r, common, notes)
    else:
        spec = _llama_like(r, common, notes)
    note = " ".join(notes)
    return ModelSpec(**spec, note=note) if note else ModelSpec(**spec)


def _gpt2(r: _Reader, common: dict[str, Any]) -> dict[str, Any]:
    d, h = r.int("n_embd"), r.int("n_head")
    n_pos = r.int("n_positions")
    return {
        **common,
        "n_layers": r.int("n_layer"), "d_model": d, "n_heads": h, "n_kv_heads": h,
        "head_dim": _head_dim(d, h, r), "d_ff": r.int("n_inner", 4 * d), "gated_mlp": False,
        "vocab_size": r.int("vocab_size"), "attention": "mha", "position": "learned",
        "max_position": n_pos, "max_context": n_pos, "linear_bias": True, "norm": "layernorm",
    }


def _llama_like(r: _Reader, common: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    mt = r.mt
    d, h = r.int("hidden_size"), r.int("num_attention_heads")
    if r.cfg.get("num_key_value_heads") is None:
        hkv = h
        if mt in ("llama", "mistral", "mixtral", "qwen2"):
            notes.append("num_key_value_heads is absent: read as MHA (num_key_value_heads = "
                         f"num_attention_heads = {h}), as transformers does; if the checkpoint is GQA "
                         "the KV cache is overstated by heads / kv_heads. Check the model card.")
    else:
        hkv = r.int("num_key_value_heads")
    f = r.int("intermediate_size")
    spec: dict[str, Any] = {
        **common,
        "n_layers": r.int("num_hidden_layers"), "d_model": d, "n_heads": h, "n_kv_heads": hkv,
        "head_dim": _head_dim(d, h, r), "d_ff": f, "gated_mlp": True,
        "vocab_size": r.int("vocab_size"), "attention": _attention_kind(h, hkv, r),
        "max_context": r.int("max_position_embeddings", 0, allow_zero=True),
    }
    if mt == "qwen2":
        # Qwen2's attention puts a bias on q, k and v (not o) with no config key for it.
        spec["qkv_bias"] = True
    attn_bias, mlp_bias = r.bool("attention_bias", False), r.bool("mlp_bias", False)
    if attn_bias and mlp_bias:
        spec["linear_bias"] = True
    elif attn_bias:
        spec["qkv_bias"] = True
        notes.append("attention_bias is true: q, k, v biases are counted; the o_proj bias "
                     "(hidden_size per layer) is not.")
    elif mlp_bias:
        notes.append("mlp_bias is true: MLP biases (2·intermediate_size + hidden_size per layer) are not counted.")
    if mt == "gemma2":
        spec["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
    spec.update(_sliding_window(r, spec["n_layers"]))
    if mt == "mixtral":
        spec.update(n_experts=r.int("num_local_experts"), n_active_experts=r.int("num_experts_per_tok"),
                    d_ff_expert=f)
    return spec


def _sliding_window(r: _Reader, n_layers: int) -> dict[str, int]:
    """sliding_window and n_sliding_layers, as transformers decides which layers slide.

    ``layer_types`` (newer configs) names each layer; without it: Gemma 2 slides the even
    layers (``Gemma2DecoderLayer.is_sliding = not layer_idx % 2``); Qwen2 slides layers
    from ``max_window_layers`` on, and only when ``use_sliding_window`` is true (the
    released Qwen2.5 configs say false); Mistral and Mixtral slide every layer when
    ``sliding_window`` is set (Mistral 7B v0.1: 4096; v0.2 on and Mixtral: null).
    """
    cfg, mt = r.cfg, r.mt
    if cfg.get("sliding_window") is None:
        return {}
    if mt == "qwen2" and not r.bool("use_sliding_window", False):
        return {}
    window = r.int("sliding_window")
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers or not all(isinstance(t, str) for t in types):
            raise InputError(r.field, str(r.path), f"has config.json key 'layer_types' that is not a list of "
                             f"{n_layers} layer names", f"fix 'layer_types' in {r.path}")
        n = sum(t == "sliding_attention" for t in types)
    elif mt == "gemma2":
        n = (n_layers + 1) // 2
    elif mt == "qwen2":
        n = max(n_layers - r.int("max_window_layers", 0, allow_zero=True), 0)
    elif mt in ("mistral", "mixtral"):
        n = n_layers
    else:
        return {}
    return {"sliding_window": window, "n_sliding_layers": n} if n else {}


def _deepseek(r: _Reader, common: dict[str, Any], notes: list[str]) -> dict[str, Any]:
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
    if r.cfg.get("num_nextn_predict_layers"):
        notes.append(f"num_nextn_predict_layers = {r.cfg['num_nextn_predict_layers']}: the multi-token-"
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
