"""A ModelSpec from a Hugging Face ``config.json``: a file, a folder holding one, or a repo id
(``org/name``) found in the local Hugging Face cache.

Read, not trusted: every key the parameter count needs is looked up by name, and a
missing or malformed one is an InputError that names the key, the file and the fix.
Nothing is downloaded; a repo id is looked up in the local cache only (catalog.hf_cache).

Families read, by ``model_type`` (the per-family readers are in catalog.hf_families):

    llama, mistral, qwen2, phi3   dense, gated (SwiGLU) MLP, RMSNorm, RoPE, GQA
    qwen3                         as llama, with a per-head RMSNorm on q and k
    gemma2, gemma3(_text)         four norms per layer, tied head, explicit head_dim, local and
                                  global layers (Gemma 2 alternating; Gemma 3 five local : one)
    mixtral                       routed experts on every layer (num_local_experts, top-k)
    qwen2_moe, qwen3_moe          routed experts (num_experts), Qwen2-MoE's gated shared expert
    llama4(_text)                 routed + shared expert, dense layers interleaved (Maverick),
                                  chunked attention on three layers of four
    gpt_oss                       routed experts with biases, attention sinks, alternating
                                  128-token sliding window
    deepseek_v2, deepseek_v3      MLA attention, shared + routed experts, leading dense layers
    gpt2                          learned positions, LayerNorm, biases everywhere, tied head
    mistral3, gemma3, llama4      multimodal wrappers: the language model from text_config,
                                  the vision encoder counted apart (catalog.hf_vision)

Any other decoder ``model_type`` is read as a Llama-style decoder, and the spec's ``note``
says what was assumed; encoder and encoder-decoder types are refused.

HF keys mapped once (paper symbol in brackets, see napkin.model):

    num_hidden_layers [L]  hidden_size [d]  num_attention_heads [h]
    num_key_value_heads [h_kv] (absent: h, as transformers assumes)
    head_dim [d_h] (absent: d / h)   intermediate_size [f]   vocab_size [V]
    tie_word_embeddings (absent: the family's transformers default)
    num_local_experts / num_experts / n_routed_experts [E]   num_experts_per_tok [k]
    n_shared_experts / shared_expert_intermediate_size [s]   moe_intermediate_size
    first_k_dense_replace / decoder_sparse_step / mlp_only_layers / moe_layers
    q_lora_rank  kv_lora_rank  qk_nope_head_dim  qk_rope_head_dim  v_head_dim
    attention_bias / mlp_bias   max_position_embeddings   quantization_config
    sliding_window [W]  layer_types / sliding_window_pattern / use_sliding_window (Qwen2) [L_w]
    attention_chunk_size / no_rope_layers (Llama 4)

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

# The transformers default for tie_word_embeddings when the key is absent, per family
# (the `tie_word_embeddings` default of each configuration class). mistral3 is False although
# transformers 5's Mistral3Config defaults to True: the released checkpoints ship their own
# lm_head (the Hub counts 24,011,361,280 parameters for Mistral-Small-3.2-24B, head included).
TIED_DEFAULT = {
    "llama": False, "mistral": False, "mixtral": False, "qwen2": False, "qwen3": False, "phi3": False,
    "gemma2": True, "gemma3": True, "gemma3_text": True, "qwen2_moe": False, "qwen3_moe": False,
    "llama4": False, "llama4_text": False, "gpt_oss": False, "mistral3": False,
    "deepseek_v2": False, "deepseek_v3": False, "gpt2": True,
}
SUPPORTED = tuple(sorted(TIED_DEFAULT))

# Not decoders: napkin sizes causal language models only.
ENCODERS = frozenset({
    "bert", "roberta", "xlm-roberta", "deberta", "deberta-v2", "distilbert", "albert", "electra", "modernbert",
    "t5", "mt5", "umt5", "bart", "mbart", "pegasus", "marian", "whisper", "vit", "clip", "siglip", "wav2vec2",
})

# multimodal wrapper model_type -> the model_type its text_config is read as when it names none
TEXT_OF = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral"}


def _resolve(path: str, field: str) -> Path:
    """The config.json that ``path`` names (itself, or the one in a folder): a regular file, else InputError."""
    import os

    from napkin.files import regular_file

    p = Path(path).expanduser()
    if os.path.isdir(p):
        p = p / "config.json"
    try:
        os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(field, str(path), "is not a config.json file or a folder holding one",
                         "give the path to a Hugging Face config.json, a repo id in the local Hugging Face "
                         "cache, or a catalog model name; see `napkin catalog models`") from None
    except (OSError, ValueError):  # a name over 255 bytes, a NUL byte: said by regular_file
        pass
    return regular_file(p, field)  # a symlink loop, a FIFO, a device: one line naming what it is


MAX_CONFIG_BYTES = 4 * 2**20  # a config.json is kilobytes; a larger file is not one


def _read(p: Path, field: str) -> dict[str, Any]:
    from napkin.files import read_bounded

    try:
        raw = read_bounded(p, field, MAX_CONFIG_BYTES)
    except InputError as exc:
        if exc.problem.startswith("is larger"):
            raise InputError(field, str(p), "is over 4 MiB, too large for a config.json",
                             "give the model's config.json, not a weights file") from None
        raise
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(field, str(p), f"is not readable as UTF-8 text ({exc.__class__.__name__})",
                         "give the model's config.json as downloaded") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(field, str(p), f"is not valid JSON: {exc.msg} at line {exc.lineno} "
                         f"column {exc.colno}", "give the model's config.json as downloaded") from None
    except RecursionError:
        raise InputError(field, str(p), "is nested too deeply to be a config.json",
                         "give the model's config.json as downloaded") from None
    if not isinstance(cfg, dict):
        raise InputError(field, str(p), f"is not a JSON object (it is a {type(cfg).__name__})",
                         "a config.json is one object of keys such as model_type and hidden_size")
    return cfg


class Reader:
    """Typed look-ups into one config.json (or its text_config), with errors that name the key and the file.

    ``defaults`` are the family's transformers defaults for keys its Hub configs leave out;
    each one used is recorded in ``defaulted`` so the spec's note can say so.
    """

    def __init__(self, cfg: dict[str, Any], path: Path, field: str, model_type: str,
                 defaults: dict[str, Any] | None = None):
        self.cfg, self.path, self.field, self.mt = cfg, path, field, model_type
        self.defaults = defaults or {}
        self.defaulted: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        value = self.cfg.get(key)
        if value is None and key in self.defaults:
            value = self.defaults[key]
            self.defaulted[key] = value
        return value

    def int(self, key: str, default: int | None = None, *, allow_zero: bool = False) -> int:
        value = self.get(key)
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
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InputError(self.field, value, f"has config.json key {key!r} that must be true or false",
                             f"fix {key!r} in {self.path}")
        return value

    def int_list(self, key: str, n: int | None = None) -> list[int] | None:
        """A list of non-negative integers (layer indices, 0/1 flags), or None when absent."""
        value = self.get(key)
        if value is None:
            return None
        if (not isinstance(value, list) or (n is not None and len(value) != n)
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
            size = f"{n} " if n is not None else ""
            raise InputError(self.field, str(self.path), f"has config.json key {key!r} that is not a list of "
                             f"{size}non-negative integers", f"fix {key!r} in {self.path}")
        return value

    def str_list(self, key: str, n: int) -> list[str] | None:
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or len(value) != n or not all(isinstance(t, str) for t in value):
            raise InputError(self.field, str(self.path), f"has config.json key {key!r} that is not a list of "
                             f"{n} layer names", f"fix {key!r} in {self.path}")
        return value


def load_config(path: str, field: str = "model") -> ModelSpec:
    """Read a Hugging Face config.json (file or folder) into a ModelSpec.

    ``field`` is the option the path came from (``--model``), so errors name it.
    """
    p = _resolve(path, field)
    return spec_from_config(_read(p, field), p, field)


def spec_from_config(cfg: dict[str, Any], p: Path, field: str = "model", name: str | None = None) -> ModelSpec:
    """A ModelSpec from a parsed config.json; ``p`` names the file in errors and in the spec's source."""
    from napkin.catalog import hf_families as fam
    from napkin.catalog.hf_quant import weight_precision
    from napkin.catalog.hf_vision import vision_params

    outer_mt = cfg.get("model_type")
    text = cfg.get("text_config")
    if outer_mt is None and not isinstance(text, dict):
        raise InputError(field, str(p), "has no key 'model_type' in its config.json",
                         "napkin reads " + ", ".join(SUPPORTED) + " configs, and other decoders as Llama-style")
    if outer_mt in ENCODERS or cfg.get("is_encoder_decoder") is True:
        raise InputError(field, outer_mt, "is a config.json model_type that is not a decoder-only language model",
                         f"napkin sizes causal language models such as llama, qwen3 or gpt_oss; file {p}")
    notes: list[str] = []
    if isinstance(text, dict):
        mt = text.get("model_type") or TEXT_OF.get(str(outer_mt), outer_mt)
        inner = dict(text)
        for key in ("tie_word_embeddings", "quantization_config"):  # wrappers keep these at the top
            if key not in inner and key in cfg:
                inner[key] = cfg[key]
    else:
        mt, inner = outer_mt, cfg
    mt = str(mt)
    family = fam.family_of(mt)
    r = Reader(inner, p, field, mt, fam.DEFAULTS.get(mt))
    # a checkpoint folder names its config.json; any other file is named by itself (cfg2.json -> cfg2)
    shown = name or str(cfg.get("_name_or_path") or (p.parent.name if p.name == "config.json" else p.stem) or p.stem)
    common: dict[str, Any] = {
        "key": f"hf:{shown}", "name": shown, "family": str(outer_mt or mt), "hf_model_type": str(outer_mt or mt),
        "source": str(p), "tied_embeddings": r.bool("tie_word_embeddings", TIED_DEFAULT.get(mt, False)),
    }
    if family == "generic":
        notes.append(fam.generic_note(mt))
    spec = fam.READERS[family](r, common, notes)
    spec.update(weight_precision(r, spec, notes))
    if isinstance(cfg.get("vision_config"), dict):
        spec.update(vision_params(cfg, str(outer_mt), spec["d_model"], notes))
    if r.defaulted:
        shown_defaults = ", ".join(f"{k} = {v}" for k, v in sorted(r.defaulted.items()))
        notes.append(f"Keys absent from the config.json, taken at transformers' {mt} defaults: {shown_defaults}.")
    note = " ".join(notes)
    return ModelSpec(**spec, note=note) if note else ModelSpec(**spec)
