"""The Hugging Face config.json reader against real configs (tests/fixtures/hf, sources
in SOURCES.md): each loads to the same parameter count and KV bytes per token as the
catalog entry for the same model, within the catalog's published-count rule, and bad
input fails with an InputError that names the field, the key and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from napkin import catalog
from napkin.catalog.hf import load_config
from napkin.errors import InputError
from tests.test_catalog import kv_bytes_bf16, param_tolerance

FIXTURES = Path(__file__).parent / "fixtures" / "hf"

# fixture folder -> (catalog key, attention kind)
CASES = {
    "llama-3.1-8b": ("llama-3.1-8b", "gqa"),
    "llama-3.2-3b": ("llama-3.2-3b", "gqa"),
    "mistral-7b-v0.1": ("mistral-7b", "gqa"),
    "mixtral-8x7b-v0.1": ("mixtral-8x7b", "gqa"),
    "qwen2.5-7b": ("qwen2.5-7b", "gqa"),
    "gemma-2-9b-it": ("gemma-2-9b", "gqa"),
    "deepseek-v3": ("deepseek-v3", "mla"),
    "gpt2": ("gpt2", "mha"),
    "qwen3-8b": ("qwen3-8b", "gqa"),
    "qwen3-32b": ("qwen3-32b", "gqa"),
    "qwen3-30b-a3b": ("qwen3-30b-a3b", "gqa"),
    "gpt-oss-20b": ("gpt-oss-20b", "gqa"),
    "gpt-oss-120b": ("gpt-oss-120b", "gqa"),
    "llama-4-scout-17b-16e": ("llama-4-scout", "gqa"),
}

# Fixtures of families with no catalog entry: folder -> (the checkpoint's published parameter count,
# attention kind). Sources: the Hugging Face Hub's safetensors count of each repository (SOURCES.md).
PUBLISHED = {
    "phi-3-mini-4k-instruct": (3_821_079_552, "mha"),           # microsoft/Phi-3-mini-4k-instruct (3.8B)
    "gemma-3-4b-it": (4_300_079_472, "gqa"),                    # google/gemma-3-4b-it (4.3B, vision included)
    "mistral-small-3.2-24b": (24_011_361_280, "gqa"),           # mistralai/Mistral-Small-3.2-24B-Instruct-2506
    "qwen1.5-moe-a2.7b-chat-gptq-int4": (14_315_784_192, "mha"),  # Qwen/Qwen1.5-MoE-A2.7B (model card: 14.3B)
}


def test_every_fixture_is_covered():
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} == set(CASES) | set(PUBLISHED)


@pytest.mark.parametrize("folder", sorted(PUBLISHED))
def test_fixture_matches_published_count(folder):
    """The whole checkpoint (vision tower included) reproduces the Hub's count exactly."""
    count, kind = PUBLISHED[folder]
    spec = load_config(str(FIXTURES / folder))
    assert spec.attention == kind
    assert spec.checkpoint_params == count
    assert spec.kv_bytes_per_token(2.0) == kv_bytes_bf16(spec)


@pytest.mark.parametrize("folder", sorted(CASES))
def test_fixture_matches_catalog(folder):
    key, kind = CASES[folder]
    spec = load_config(str(FIXTURES / folder / "config.json"))
    ref = catalog.models()[key]
    assert spec.attention == kind
    assert spec.hf_model_type == ref.hf_model_type
    assert spec.params == ref.params
    assert spec.active_params == ref.active_params
    assert spec.vision_params == ref.vision_params and spec.window_kind == ref.window_kind
    assert (spec.weight_precision, spec.quantized_scope) == (ref.weight_precision, ref.quantized_scope)
    assert spec.kv_bytes_per_token(2.0) == ref.kv_bytes_per_token(2.0) == kv_bytes_bf16(spec)
    assert abs(spec.checkpoint_params / ref.published_params - 1) <= param_tolerance(ref)
    assert (spec.sliding_window, spec.n_sliding_layers) == (ref.sliding_window, ref.n_sliding_layers)
    assert spec.kv_bytes(32768) == ref.kv_bytes(32768)


@pytest.mark.parametrize("folder", sorted(set(CASES) | set(PUBLISHED)))
def test_folder_path_reads_its_config(folder):
    by_file = load_config(str(FIXTURES / folder / "config.json"))
    by_folder = load_config(str(FIXTURES / folder))
    assert by_folder == by_file
    assert catalog.model(str(FIXTURES / folder)).params == by_file.params


def test_family_specifics():
    assert load_config(str(FIXTURES / "qwen2.5-7b")).qkv_bias  # no config key, always biased
    gemma = load_config(str(FIXTURES / "gemma-2-9b-it"))
    assert gemma.norms_per_layer == 4 and gemma.tied_embeddings and gemma.head_dim == 256
    gpt2 = load_config(str(FIXTURES / "gpt2"))
    assert gpt2.position == "learned" and gpt2.linear_bias and gpt2.d_ff == 4 * 768
    v3 = load_config(str(FIXTURES / "deepseek-v3"))
    assert (v3.n_experts, v3.n_active_experts, v3.n_shared_experts, v3.n_dense_layers) == (256, 8, 1, 3)
    assert "multi-token-prediction" in v3.note
    assert load_config(str(FIXTURES / "mixtral-8x7b-v0.1")).n_experts == 8


# ------------------------------------------------------------------------ bad input
def _write(tmp_path: Path, cfg: dict | str) -> str:
    p = tmp_path / "config.json"
    p.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return str(p)


def _llama(**changes) -> dict:
    cfg = json.loads((FIXTURES / "llama-3.1-8b" / "config.json").read_text())
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    return cfg


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as e:
        load_config(str(tmp_path / "nope" / "config.json"), field="model")
    assert e.value.field == "model"
    assert "nope" in str(e.value) and "config.json" in str(e.value)


def test_folder_without_config(tmp_path):
    with pytest.raises(InputError, match="folder holding one"):
        load_config(str(tmp_path))


def test_bad_json(tmp_path):
    path = _write(tmp_path, '{"model_type": "llama",\n  "hidden_size": 4096,,}')
    with pytest.raises(InputError) as e:
        load_config(path)
    assert "not valid JSON" in str(e.value) and "line 2" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_json_not_an_object(tmp_path):
    with pytest.raises(InputError, match="not a JSON object"):
        load_config(_write(tmp_path, "[1, 2, 3]"))


def test_encoder_model_type_is_refused(tmp_path):
    with pytest.raises(InputError) as e:
        load_config(_write(tmp_path, _llama(model_type="bert")), field="--model")
    msg = str(e.value)
    assert e.value.field == "--model" and "model_type" in msg and "bert" in msg and "llama" in msg
    assert "not a decoder-only" in msg


def test_encoder_decoder_flag_is_refused(tmp_path):
    with pytest.raises(InputError, match="not a decoder-only"):
        load_config(_write(tmp_path, _llama(model_type="my_seq2seq", is_encoder_decoder=True)))


def test_unknown_decoder_falls_back_with_a_note(tmp_path):
    """An unknown model_type is read as a Llama-style decoder, and the note says what was assumed."""
    spec = load_config(_write(tmp_path, _llama(model_type="olmo_next")))
    llama = load_config(str(FIXTURES / "llama-3.1-8b"))
    assert spec.params == llama.params and spec.kv_bytes_per_token() == llama.kv_bytes_per_token()
    assert "'olmo_next' is not one napkin knows" in spec.note and "Llama-style" in spec.note
    assert "check the parameter count" in spec.note


def test_unknown_moe_decoder_reads_the_usual_expert_keys(tmp_path):
    spec = load_config(_write(tmp_path, _llama(model_type="new_moe", num_experts=8, num_experts_per_tok=2,
                                               moe_intermediate_size=1024)))
    assert (spec.n_experts, spec.n_active_experts, spec.d_ff_expert) == (8, 2, 1024)
    assert "not one napkin knows" in spec.note


def test_missing_model_type(tmp_path):
    with pytest.raises(InputError, match="'model_type'"):
        load_config(_write(tmp_path, _llama(model_type=None)))


@pytest.mark.parametrize("key", ["num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size"])
def test_missing_key_is_named(tmp_path, key):
    path = _write(tmp_path, _llama(**{key: None}))
    with pytest.raises(InputError) as e:
        load_config(path)
    msg = str(e.value)
    assert e.value.field == "model" and repr(key) in msg and path in msg and "add" in msg
    assert "\n" not in msg


def test_missing_key_deepseek(tmp_path):
    cfg = json.loads((FIXTURES / "deepseek-v3" / "config.json").read_text())
    del cfg["kv_lora_rank"]
    with pytest.raises(InputError, match="'kv_lora_rank'"):
        load_config(_write(tmp_path, cfg))


@pytest.mark.parametrize("value", [-1, 0, "4096", 40.5, True])
def test_bad_value_is_named(tmp_path, value):
    with pytest.raises(InputError) as e:
        load_config(_write(tmp_path, _llama(hidden_size=value)))
    assert "'hidden_size'" in str(e.value) and "positive integer" in str(e.value)


def test_kv_heads_must_divide_heads(tmp_path):
    with pytest.raises(InputError, match="num_key_value_heads"):
        load_config(_write(tmp_path, _llama(num_key_value_heads=5)))


def test_llama_without_kv_heads_is_mha_with_a_note(tmp_path):
    spec = load_config(_write(tmp_path, _llama(num_key_value_heads=None)))
    assert spec.attention == "mha" and spec.n_kv_heads == spec.n_heads == 32
    assert "num_key_value_heads is absent" in spec.note and "GQA" in spec.note


def test_absent_tie_uses_family_default(tmp_path):
    gemma = json.loads((FIXTURES / "gemma-2-9b-it" / "config.json").read_text())
    assert "tie_word_embeddings" not in gemma  # Gemma 2's file relies on the default
    llama = load_config(_write(tmp_path, _llama(tie_word_embeddings=None)))
    assert not llama.tied_embeddings


def test_mqa_from_one_kv_head(tmp_path):
    assert load_config(_write(tmp_path, _llama(num_key_value_heads=1))).attention == "mqa"


def test_deepseek_v2_lite_without_q_lora(tmp_path):
    """MLA with q_lora_rank null (queries projected directly): the sizing keys of
    deepseek-ai/DeepSeek-V2-Lite's config.json give its published 15.7B total and, less
    the 0.21B input embedding, its 2.4B activated (DeepSeek-V2 paper, arXiv:2405.04434)."""
    cfg = {"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944, "kv_lora_rank": 512,
           "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
           "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts_per_tok": 6,
           "num_hidden_layers": 27, "first_k_dense_replace": 1, "moe_layer_freq": 1, "q_lora_rank": None,
           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
           "tie_word_embeddings": False}
    spec = load_config(_write(tmp_path, cfg))
    assert spec.attention == "mla" and spec.q_lora_rank == 0
    assert spec.params == pytest.approx(15.7e9, rel=0.005)
    assert spec.active_params - spec.vocab_size * spec.d_model == pytest.approx(2.4e9, rel=0.03)
    assert spec.kv_bytes_per_token(2.0) == 27 * (512 + 64) * 2


def test_moe_layer_freq_other_than_one_is_refused(tmp_path):
    cfg = json.loads((FIXTURES / "deepseek-v3" / "config.json").read_text())
    cfg["moe_layer_freq"] = 2
    with pytest.raises(InputError, match="moe_layer_freq"):
        load_config(_write(tmp_path, cfg))


# ------------------------------------------------------------------ sliding windows
def test_sliding_window_from_real_configs():
    """Mistral-7B-v0.1: sliding_window 4096 on every layer; Gemma 2 9B: 4096 on the 21 even layers
    of 42 (transformers Gemma2DecoderLayer.is_sliding = not layer_idx % 2); Qwen2.5-7B sets
    sliding_window 131072 but use_sliding_window false; Mixtral's is null."""
    got = {f: (s.sliding_window, s.n_sliding_layers)
           for f in CASES for s in [load_config(str(FIXTURES / f))]}
    assert got["mistral-7b-v0.1"] == (4096, 32)
    assert got["gemma-2-9b-it"] == (4096, 21)
    assert got["qwen2.5-7b"] == (0, 0)
    assert got["mixtral-8x7b-v0.1"] == (0, 0)
    assert got["llama-3.1-8b"] == got["deepseek-v3"] == got["gpt2"] == (0, 0)


def _mistral(**changes) -> dict:
    cfg = json.loads((FIXTURES / "mistral-7b-v0.1" / "config.json").read_text())
    cfg.update(changes)
    return cfg


def test_mistral_v02_has_no_window(tmp_path):
    """Mistral 7B v0.2 and later set sliding_window null: the cache holds the whole context."""
    spec = load_config(_write(tmp_path, _mistral(sliding_window=None)))
    assert spec.sliding_window == 0 and spec.kv_bytes(32768) == 32768 * spec.kv_bytes_per_token()


def test_qwen2_window_from_max_window_layers(tmp_path):
    """transformers Qwen2: layers from max_window_layers on slide, when use_sliding_window is true."""
    cfg = json.loads((FIXTURES / "qwen2.5-7b" / "config.json").read_text())
    cfg.update(use_sliding_window=True, sliding_window=4096, max_window_layers=20)
    spec = load_config(_write(tmp_path, cfg))
    assert (spec.sliding_window, spec.n_sliding_layers) == (4096, 28 - 20)


def test_layer_types_names_each_layer(tmp_path):
    """Newer configs list each layer's kind; the count of sliding_attention is L_w."""
    types = ["sliding_attention"] * 5 + ["full_attention"] * 27
    spec = load_config(_write(tmp_path, _mistral(layer_types=types)))
    assert (spec.sliding_window, spec.n_sliding_layers) == (4096, 5)


@pytest.mark.parametrize("value", ["sliding_attention", ["sliding_attention"] * 3, [1] * 32])
def test_bad_layer_types_is_named(tmp_path, value):
    with pytest.raises(InputError, match="'layer_types'"):
        load_config(_write(tmp_path, _mistral(layer_types=value)))


@pytest.mark.parametrize("value", [-4096, 0, "4096", 40.5])
def test_bad_sliding_window_is_named(tmp_path, value):
    with pytest.raises(InputError, match="'sliding_window'"):
        load_config(_write(tmp_path, _mistral(sliding_window=value)))


def test_a_config_not_named_config_json_is_named_by_itself(tmp_path):
    """Found in review: cfg2.json in a folder was named after the folder."""
    import json

    from napkin.catalog import hf

    src = Path(__file__).parent / "fixtures" / "hf" / "llama-3.1-8b" / "config.json"
    cfg = json.loads(src.read_text())
    cfg.pop("_name_or_path", None)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "cfg2.json").write_text(json.dumps(cfg))
    (tmp_path / "runs" / "config.json").write_text(json.dumps(cfg))
    assert hf.load_config(str(tmp_path / "runs" / "cfg2.json")).name == "cfg2"
    assert hf.load_config(str(tmp_path / "runs" / "config.json")).name == "runs"
