"""What each newer Hugging Face family adds to the Llama-style reading, against the real configs in
tests/fixtures/hf (sources in SOURCES.md), and the weight precision a quantization_config fixes.

Golden counts are the Hugging Face Hub's safetensors parameter counts of the same repositories
(cited per test); tests/test_hf_transformers.py checks every fixture against transformers itself.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from napkin.catalog.hf import load_config, spec_from_config
from napkin.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "hf"


def _cfg(folder: str) -> dict:
    return json.loads((FIXTURES / folder / "config.json").read_text())


def _spec(cfg: dict, tmp_path: Path, name: str = "config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return load_config(str(p))


# ------------------------------------------------------------------------------ families
def test_qwen3_reads_qk_norm_and_no_biases():
    s = load_config(str(FIXTURES / "qwen3-8b"))
    assert s.qk_norm and not s.qkv_bias and not s.linear_bias and not s.tied_embeddings
    assert s.sliding_window == 0  # use_sliding_window false


def test_qwen3_moe_every_layer_routed():
    s = load_config(str(FIXTURES / "qwen3-30b-a3b"))
    assert (s.n_experts, s.n_active_experts, s.d_ff_expert, s.n_dense_layers, s.n_shared_experts) == (128, 8, 768, 0, 0)


def test_qwen3_moe_decoder_sparse_step_and_mlp_only_layers(tmp_path):
    """transformers Qwen3MoeDecoderLayer: layer i is MoE unless in mlp_only_layers or (i+1) % step."""
    cfg = _cfg("qwen3-30b-a3b")
    cfg.update(decoder_sparse_step=2, mlp_only_layers=[1, 3])  # 24 odd-indexed MoE layers, less 2
    s = _spec(cfg, tmp_path)
    assert s.n_moe_layers == 22 and s.n_dense_layers == 26 and s.d_ff == 6144


def test_qwen2_moe_gated_shared_expert_and_gptq(tmp_path):
    """Qwen1.5-MoE-A2.7B: 60 experts of 1,408, top-4, one shared expert of 5,632 behind a sigmoid gate;
    14.3B total and 2.7B activated (model card). The GPTQ release stores the matrices at int4."""
    s = load_config(str(FIXTURES / "qwen1.5-moe-a2.7b-chat-gptq-int4"))
    assert (s.n_experts, s.n_active_experts, s.d_ff_expert) == (60, 4, 1408)
    assert (s.n_shared_experts, s.d_ff_shared, s.shared_expert_gate, s.qkv_bias) == (1, 5632, True, True)
    assert s.params == 14_315_784_192
    assert s.active_params == pytest.approx(2.7e9, rel=0.01)
    assert (s.weight_precision, s.quantized_scope) == ("int4", "linear") and "gptq" in s.note


def test_phi3_slides_every_layer():
    """Phi-3-mini-4k: sliding_window 2047, which transformers applies to every layer."""
    s = load_config(str(FIXTURES / "phi-3-mini-4k-instruct"))
    assert (s.sliding_window, s.n_sliding_layers) == (2047, 32) and s.attention == "mha"


def test_gemma3_multimodal_reads_text_config_and_counts_siglip():
    """gemma-3-4b-it: 3,880,263,168 language model + 419,816,304 SigLIP and projector = the Hub's 4,300,079,472;
    five local layers (1,024 tokens) to one global: layers 5, 11, 17, 23, 29 of 34 are global."""
    s = load_config(str(FIXTURES / "gemma-3-4b-it"))
    assert s.hf_model_type == "gemma3" and s.tied_embeddings and s.qk_norm and s.norms_per_layer == 4
    assert (s.sliding_window, s.n_sliding_layers) == (1024, 29)
    assert s.vision_params == 419_816_304 and s.checkpoint_params == 4_300_079_472
    assert "siglip_vision_model" in s.note


def test_gemma3_text_alone_is_the_language_model(tmp_path):
    """A gemma3_text config (Gemma3ForCausalLM) is the text_config: the same language model, no vision."""
    multi = load_config(str(FIXTURES / "gemma-3-4b-it"))
    text = _spec(_cfg("gemma-3-4b-it")["text_config"], tmp_path)
    assert text.params == multi.params and text.vision_params == 0
    assert (text.sliding_window, text.n_sliding_layers) == (1024, 29)


def test_gemma3_hub_shape_uses_transformers_defaults(tmp_path):
    """google/gemma-3-4b-it's config.json on the Hub lists only what differs from Gemma3TextConfig
    (vocab 262,208, 8 heads, 4 KV heads, head_dim 256 are left out); the note names each default used."""
    cfg = _cfg("gemma-3-4b-it")
    keep = {"hidden_size", "intermediate_size", "model_type", "num_hidden_layers", "rope_scaling", "sliding_window"}
    cfg["text_config"] = {k: v for k, v in cfg["text_config"].items() if k in keep}
    s = _spec(cfg, tmp_path)
    assert s.checkpoint_params == 4_300_079_472
    for shown in ("vocab_size = 262208", "num_attention_heads = 8", "num_key_value_heads = 4", "head_dim = 256"):
        assert shown in s.note


def test_llama4_scout_chunked_attention_shared_expert_and_vision():
    """Scout: 16 experts top-1 plus a shared expert on all 48 layers; chunked attention (8,192) on the 36
    RoPE layers; the Hub's 108,641,793,536 = 107,769,861,120 language model + 871,932,416 vision."""
    s = load_config(str(FIXTURES / "llama-4-scout-17b-16e"))
    assert (s.n_experts, s.n_active_experts, s.n_shared_experts, s.n_dense_layers) == (16, 1, 1, 0)
    assert (s.sliding_window, s.n_sliding_layers, s.window_kind) == (8192, 36, "chunked")
    assert s.params == 107_769_861_120 and s.vision_params == 871_932_416
    assert not s.qk_norm  # Llama 4's q/k norm is an L2 norm without weights


def test_llama4_maverick_interleaved_layers(tmp_path):
    """Maverick's config differs from Scout's in interleave_moe_layer_step 2, 128 experts and no q/k norm:
    the Hub's 401,583,781,376 (meta-llama/Llama-4-Maverick-17B-128E)."""
    cfg = _cfg("llama-4-scout-17b-16e")
    text = cfg["text_config"]
    del text["moe_layers"]
    text.update(interleave_moe_layer_step=2, num_local_experts=128, use_qk_norm=False)
    s = _spec(cfg, tmp_path)
    assert s.n_dense_layers == 24 and s.d_ff == 16384 and s.checkpoint_params == 401_583_781_376


def test_llama4_default_no_rope_pattern(tmp_path):
    """Without no_rope_layers or layer_types, transformers puts a global NoPE layer every fourth layer."""
    cfg = _cfg("llama-4-scout-17b-16e")
    del cfg["text_config"]["no_rope_layers"]
    assert _spec(cfg, tmp_path).n_sliding_layers == 36
    cfg["text_config"]["attention_chunk_size"] = None
    assert _spec(cfg, tmp_path).sliding_window == 0


def test_gpt_oss_biases_sinks_router_bias_and_mxfp4():
    s = load_config(str(FIXTURES / "gpt-oss-120b"))
    assert s.linear_bias and s.attention_sinks and s.router_bias
    assert (s.sliding_window, s.n_sliding_layers) == (128, 18)
    assert (s.weight_precision, s.quantized_scope) == ("fp4", "experts")
    assert s.params == 116_829_156_672


def test_mistral3_reads_the_mistral_text_config_untied():
    """Mistral-Small-3.2-24B: the released checkpoint has its own lm_head (the Hub's 24,011,361,280 counts
    it), though transformers 5's Mistral3Config defaults tie_word_embeddings to true."""
    s = load_config(str(FIXTURES / "mistral-small-3.2-24b"))
    assert not s.tied_embeddings and s.sliding_window == 0
    assert s.vision_params == 438_958_080 and s.checkpoint_params == 24_011_361_280


def test_unknown_vision_encoder_is_named_not_counted(tmp_path):
    cfg = _cfg("llama-3.1-8b")
    cfg["vision_config"] = {"model_type": "new_vit", "hidden_size": 1024}
    s = _spec(cfg, tmp_path)
    assert s.vision_params == 0 and "new_vit" in s.note and "not counted" in s.note


@pytest.mark.parametrize("key, value", [("moe_layers", [0, "1"]), ("no_rope_layers", [1] * 47),
                                        ("layer_types", ["chunked_attention"] * 3)])
def test_bad_llama4_layer_lists_are_named(tmp_path, key, value):
    cfg = _cfg("llama-4-scout-17b-16e")
    cfg["text_config"][key] = value
    with pytest.raises(InputError, match=repr(key)):
        _spec(cfg, tmp_path)


# ------------------------------------------------------------------------------ quantization_config
def _quant(qc: dict, tmp_path: Path, base: str = "llama-3.1-8b"):
    cfg = _cfg(base)
    cfg["quantization_config"] = qc
    return _spec(cfg, tmp_path)


@pytest.mark.parametrize("qc, prec", [
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True}, "int4"),
    ({"quant_method": "gptq", "bits": 8}, "int8"),
    ({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}, "fp8"),  # Llama 3.1 405B FP8
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "int4"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8"),
    ({"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}}, "int4"),
    ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {}}, "fp4"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "fp4"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8"),
])
def test_quantization_config_sets_weight_precision(tmp_path, qc, prec):
    s = _quant(qc, tmp_path)
    assert (s.weight_precision, s.quantized_scope) == (prec, "linear")
    bd = s.params_breakdown()
    assert s.quantized_params() == bd["attention"] + bd["mlp"]  # embeddings, head and norms stay 16-bit


def test_mxfp4_on_a_dense_model_covers_the_linear_layers(tmp_path):
    s = _quant({"quant_method": "mxfp4"}, tmp_path)
    assert (s.weight_precision, s.quantized_scope) == ("fp4", "linear")


def test_unknown_quant_method_leaves_precision_and_says_so(tmp_path):
    s = _quant({"quant_method": "hqq", "nbits": 4}, tmp_path)
    assert s.weight_precision == "" and "'hqq'" in s.note and "--precision" in s.note


def test_odd_bit_width_is_refused(tmp_path):
    with pytest.raises(InputError, match="bits other than 4 or 8"):
        _quant({"quant_method": "gptq", "bits": 3}, tmp_path)


def test_quantization_config_not_an_object(tmp_path):
    with pytest.raises(InputError, match="'quantization_config'"):
        _quant("fp8", tmp_path)  # type: ignore[arg-type]


def test_spec_from_config_names_the_model(tmp_path):
    s = spec_from_config(copy.deepcopy(_cfg("qwen3-8b")), tmp_path / "x.json", name="Qwen/Qwen3-8B")
    assert s.name == "Qwen/Qwen3-8B" and s.key == "hf:Qwen/Qwen3-8B"


def test_oversized_file_is_refused_without_reading_it_all(tmp_path):
    p = tmp_path / "config.json"
    p.write_bytes(b"{" + b" " * (4 * 2**20 + 10) + b"}")
    with pytest.raises(InputError, match="over 4 MiB"):
        load_config(str(p))
