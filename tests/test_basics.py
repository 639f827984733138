"""The seed-004 calculators through the Python API: the sliding-window KV cap in every
caller, training-state fit, MFU above one, all-reduce beyond the scale-up domain, the
whole architecture from `model`, and no overflow from any finite input.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import napkin
from napkin import catalog
from napkin.errors import InputError
from napkin.formulas import memory as mem

MISTRAL = catalog.model("mistral-7b")
GEMMA = catalog.model("gemma-2-9b")
LLAMA8 = catalog.model("llama-3.1-8b")


# ------------------------------------------------------------------ sliding-window KV
def test_held_tokens_formula():
    """Mistral 7B paper (arXiv:2310.06825) section 2: with W = 4096 the rolling buffer holds
    4,096 tokens whatever the sequence length; Gemma 2 slides half its layers."""
    assert mem.kv_held_tokens(32768, window_tokens=4096, window_layers_fraction=1.0) == 4096
    assert mem.kv_held_tokens(1000, window_tokens=4096, window_layers_fraction=1.0) == 1000
    assert mem.kv_held_tokens(8192, window_tokens=4096, window_layers_fraction=0.5) == 6144
    assert mem.kv_held_tokens(8192) == 8192  # no window: the whole context


def test_held_tokens_is_array_safe():
    import numpy as np

    c = np.array([1000.0, 4096.0, 8192.0, 32768.0])
    assert mem.kv_held_tokens(c, window_tokens=4096, window_layers_fraction=0.5).tolist() == [1000, 4096, 6144,
                                                                                             18432]


def test_shared_prefix_tokens():
    """A shared prefix slides out of the window layers once a sequence's own tokens fill it."""
    f = dict(window_tokens=4096, window_layers_fraction=1.0)
    assert mem.kv_shared_prefix_tokens(20000, context_tokens=32000, **f) == 0  # 12,000 own tokens > W
    assert mem.kv_shared_prefix_tokens(3000, context_tokens=4000, **f) == 3000  # all inside the window
    assert mem.kv_shared_prefix_tokens(3000, context_tokens=5000, **f) == 2096  # W − 2,000 own tokens
    assert mem.kv_shared_prefix_tokens(3000, context_tokens=5000) == 3000  # no window


def test_model_kv_bytes():
    """Mistral 7B at 32Ki: 4,096 × 131,072 B = 536,870,912 B, 8x less than 4.295 GB uncapped."""
    assert MISTRAL.kv_bytes(32768) == 4096 * 131072 == 536_870_912
    assert GEMMA.kv_bytes(8192) == 6144 * GEMMA.kv_bytes_per_token()
    assert LLAMA8.kv_bytes(131072) == 131072 * LLAMA8.kv_bytes_per_token()


def test_memory_caps_kv_at_the_window():
    r = napkin.memory(model="mistral-7b", context=32768)
    assert r["kv_tokens_held"] == 4096
    assert r["kv_total_bytes"] == 536_870_912
    assert any(n.startswith("sliding window: all layers of Mistral 7B") for n in r.notes)
    # below the window nothing changes and no step or note is added
    short = napkin.memory(model="mistral-7b", context=4096, sequences=2)
    assert short["kv_total_bytes"] == 2 * 4096 * 131072 and "kv_tokens_held" not in short.results
    assert not any("sliding window" in n for n in short.notes)



def test_memory_names_llama4_chunked_attention():
    """Llama 4 Scout's config.json (attention_chunk_size 8192; no_rope_layers: every fourth layer global) chunks 36
    of its 48 layers: at 32Ki they hold at most 8,192 tokens each, so 12 · 32,768 + 36 · 8,192 = 688,128 layer-tokens
    = 14,336 tokens of all 48 layers (2 · 48 · 8 · 128 · 2 = 196,608 B a token). The note says chunked, not
    'sliding window' (review: it said Llama 4 caches 'only the last 8,192 tokens')."""
    r = napkin.memory(model="llama-4-scout", context=32768)
    assert r["kv_tokens_held"] == (12 * 32768 + 36 * 8192) / 48 == 14336
    assert r["kv_total_bytes"] == 14336 * 196_608
    assert any(n.startswith("chunked attention: 36 of the 48 layers of Llama 4 Scout (17B-16E) attend within fixed "
                            "8,192-token chunks and hold at most 8,192 tokens") for n in r.notes)
    assert not any("sliding window" in n for n in r.notes)

def test_memory_gemma2_half_the_layers():
    r = napkin.memory(model="gemma-2-9b", context=8192, sequences=4)
    assert r["kv_total_bytes"] == 4 * 6144 * 344064


def test_serve_caps_kv_at_the_window():
    r = napkin.calculate("serve", {"model": "mistral-7b", "gpu": "h100-sxm", "prompt": 30000, "output": 2000,
                                   "batch": 8})
    assert r["kv_bytes_per_sequence"] == 536_870_912
    assert r["kv_total_bytes"] == 8 * 536_870_912
    step = next(s for s in r.steps if s.name == "kv_bytes_per_sequence")
    assert step.formula == "kv_bytes_per_token · held(prompt + output)"
    # the shared prefix has slid out of every layer: each sequence holds only its last 4,096 tokens
    p = napkin.calculate("serve", {"model": "mistral-7b", "gpu": "h100-sxm", "prompt": 30000, "output": 2000,
                                   "batch": 8, "cached_prefix": 20000})
    assert p["kv_total_bytes"] == 8 * 536_870_912


def test_serve_without_window_unchanged():
    r = napkin.calculate("serve", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "prompt": 30000, "output": 2000,
                                   "batch": 8, "cached_prefix": 20000})
    kv = LLAMA8.kv_bytes_per_token()
    assert r["kv_total_bytes"] == kv * (20000 + 8 * 12000)


def test_plan_serve_fits_with_the_window():
    """Mistral 7B, 32k tokens per request, one H100 at 90%: 96 sequences of 536.9 MB fit beside
    14.5 GB of weights; uncapped (4.19 GB each) not even 16 would."""
    from napkin.plan.serve import PlanServeRequest, evaluate_grid
    from napkin.request import parse_request

    req = parse_request(PlanServeRequest, {"model": "mistral-7b", "rate": "1/s", "prompt": 30000, "output": 2000,
                                           "gpu": "h100-sxm", "max_gpus": 1, "batch": "16,96"})
    a = evaluate_grid(req)["arrays"]
    assert a["fits"][0, 0, 0, :].tolist() == [True, True]


def test_journey_and_card_cap_max_context():
    r = napkin.calculate("journey", {"model": "mistral-7b", "gpus": 1, "precision": "bf16", "encoding": "rule"})
    assert r["max_context_kv_bytes"] == 536_870_912
    card = napkin.calculate("card", {"model": "mistral-7b", "gpus": 1, "precision": "bf16", "encoding": "rule"})
    row = next(x for x in card["rows"] if x["key"] == "max_context_kv_bytes")
    assert row["value"] == 536_870_912 and row["formula"] == "kv_bytes_per_token · held(max_context)"


# ------------------------------------------------------------------ training-state fit
def test_training_fit_7b_on_8():
    """seed 004: 16 bytes per parameter, fully sharded; 7B is 112 GB against 8 × 80 GB × 0.8."""
    r = napkin.memory(params=7e9, training=True, gpu="h100", gpus=8)
    assert r["fits"] is True
    assert r["capacity_bytes"] == 640e9 and r["usable_bytes"] == 512e9
    assert r["needed_bytes"] == 112e9 and r["free_bytes"] == 400e9
    assert r["min_gpus_for_state"] == 2 and isinstance(r["min_gpus_for_state"], int)
    assert any("activations come on top" in n for n in r.notes)


def test_training_fit_70b_short():
    """seed 004: 70B needs 1.12 TB, 18 GPUs of 80 GB at 80% usable; 8 are short by 608 GB."""
    r = napkin.memory(params=70e9, training=True, gpu="h100", gpus=8)
    assert r["fits"] is False
    assert r["short_by_bytes"] == pytest.approx(608e9)
    assert r["gpus_needed"] == r["min_gpus_for_state"] == 18
    assert isinstance(r["gpus_needed"], int)
    assert napkin.memory(params=70e9, training=True, gpu="h100", gpus=18)["fits"] is True


# ------------------------------------------------------------------ MFU
def test_mfu_above_one_warns():
    """6 · 70e9 · 4e6 / 1 s over 1,024 × 989.5 TFLOP/s = 1.658: impossible, so it warns."""
    r = napkin.calculate("mfu", {"params": "70B", "tokens_per_step": "4M", "step_time": "1s", "gpus": 1024,
                                 "gpu": "h100"})
    assert r["mfu"] == pytest.approx(6 * 70e9 * 4e6 / (1024 * 989.5e12), rel=1e-12)
    w = [w for w in r.warnings if w.code == "mfu-above-one"]
    assert len(w) == 1
    for cause in ("step time is too short", "tokens per step too large", "too few GPUs counted", "peak too low",
                  "wrong precision"):
        assert cause in w[0].message


def test_plausible_mfu_does_not_warn():
    r = napkin.calculate("mfu", {"params": "70B", "tokens_per_step": "4M", "step_time": "2.07s", "gpus": 2048,
                                 "gpu": "h100"})
    assert 0 < r["mfu"] < 1 and not r.warnings


@pytest.mark.parametrize("raw, field", [
    ({"step_time": "1e-300s"}, "step_time"),
    ({"step_time": "1e308s", "params": 1, "tokens_per_step": 1, "gpus": 10**9}, "step_time"),  # MFU underflows to 0
    ({"params": "1e308"}, "params"),
    ({"params": "1e300", "tokens_per_step": "1e10"}, "params"),  # past napkin.limits' range: refused first
    ({"peak": "1e300", "gpu": None, "gpus": 10**8}, "peak"),
])
def test_mfu_not_finite_is_an_input_error(raw, field):
    base = {"params": "70B", "tokens_per_step": "4M", "step_time": "1s", "gpus": 1024, "gpu": "h100"}
    with pytest.raises(InputError) as e:
        napkin.calculate("mfu", {**base, **raw})
    assert e.value.field == field and "\n" not in str(e.value)


# ------------------------------------------------------------------ all-reduce domain
@pytest.mark.parametrize("link, ranks, domain, warns", [
    ("a100-pcie", 8, 2, True),   # the NVLink bridge joins a pair
    ("h100", 64, 8, True),       # HGX H100: 8 GPUs per NVLink domain
    ("h100", 8, 8, False),
    ("gb200", 72, 72, False),    # NVL72
    ("gb200", 144, 72, True),
    ("l40s", 2, 1, True),        # no NVLink: PCIe
    ("tpu-v5p", 6144, 6144, False),
    ("tpu-v5p", 8192, 6144, True),
])
def test_allreduce_scale_up_domain(link, ranks, domain, warns):
    r = napkin.calculate("allreduce", {"size": "1GB", "ranks": ranks, "link": link})
    assert r["scale_up_domain"] == domain
    w = [w for w in r.warnings if w.code == "beyond-scale-up-domain"]
    assert bool(w) == warns
    if warns:
        assert "--link-bandwidth" in w[0].message
        assert f"{catalog.gpu(link).link_bytes_per_s_per_direction / 1e9:g} GB/s" in w[0].message


def test_allreduce_given_bandwidth_has_no_domain():
    r = napkin.calculate("allreduce", {"size": "1GB", "ranks": 64, "link_bandwidth": "50GB/s", "unidirectional": True})
    assert "scale_up_domain" not in r.results and not r.warnings


# ------------------------------------------------------------------ model
def test_model_shows_the_whole_architecture():
    v3 = napkin.architecture("deepseek-v3")
    expect = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
              "v_head_dim": 128, "n_experts": 256, "n_active_experts": 8, "n_shared_experts": 1,
              "d_ff_expert": 2048, "n_dense_layers": 3, "d_ff_dense": 18432, "gated_mlp": True,
              "tied_embeddings": False, "published_params": 671e9, "published_active_params": 37e9}
    assert {k: v3[k] for k in expect} == expect
    assert "d_ff" not in v3.results  # 18432 is only the 3 dense layers' width
    assert any(n.startswith("d_ff_dense (18,432) is the feed-forward width of the first 3 layers") for n in v3.notes)
    mistral = napkin.architecture("mistral-7b")
    assert (mistral["sliding_window"], mistral["n_sliding_layers"]) == (4096, 32)
    gpt2 = napkin.architecture("gpt2")
    assert gpt2["gated_mlp"] is False and gpt2["tied_embeddings"] is True and gpt2["position"] == "learned"
    assert "sliding_window" not in gpt2.results and "n_experts" not in gpt2.results


# ------------------------------------------------------------------ no overflow
finite_big = st.floats(min_value=-300, max_value=308).map(lambda e: 10.0 ** e)
big_int = st.integers(min_value=1, max_value=10**300)


@settings(max_examples=150, deadline=None)
@given(params=finite_big, context=finite_big, sequences=big_int, gpus=big_int, memory=finite_big,
       usable=st.floats(min_value=1e-300, max_value=1.0), training=st.booleans(),
       model=st.sampled_from([None, "llama-3.1-8b", "mistral-7b"]))
def test_memory_never_overflows(params, context, sequences, gpus, memory, usable, training, model):
    """Any finite input gives a finite report or a one-line InputError, never an internal error."""
    raw = {"context": context, "sequences": sequences, "gpus": gpus, "memory": memory, "usable": usable,
           "training": training}
    raw.update({"model": model} if model else {"params": params, "layers": 32, "kv_heads": 8, "head_dim": 128})
    try:
        r = napkin.calculate("memory", raw)
    except InputError as e:
        assert "\n" not in str(e)
        return
    r.to_json()  # allow_nan=False: an inf or nan anywhere raises
    for v in r.results.values():
        if isinstance(v, float):
            assert math.isfinite(v)


def test_memory_overflow_names_the_input():
    with pytest.raises(InputError) as e:
        napkin.memory(model="llama-3.1-8b", context=1e300, sequences=1_000_000)
    assert e.value.field == "context"


def test_memory_holds_mla_latent_once_per_gpu_of_the_group():
    """DeepSeek-V3's MLA caches one latent per token that every head reads: over 8 GPUs as one tensor-parallel
    group each keeps all of it, as `napkin serve` counts it (review: memory said a batch of 4,000 fits where
    serve needed 449 GB per GPU)."""
    ds = catalog.model("deepseek-v3")
    kv_tok = ds.n_layers * (ds.kv_lora_rank + ds.qk_rope_head_dim) * 1  # fp8: one byte per value
    r = napkin.memory(model="deepseek-v3", precision="fp8", kv_precision="fp8", gpu="h200", gpus=8, context=1300,
                      sequences=64)
    assert r["kv_total_bytes"] == kv_tok * 1300 * 64 and r["kv_replication"] == 8
    assert r["needed_bytes"] == pytest.approx(r["weights_bytes"] + 8 * r["kv_total_bytes"], rel=1e-12)
    assert r["fits"] and "kv-replicated" in [w.code for w in r.warnings]
    big = napkin.memory(model="deepseek-v3", precision="fp8", kv_precision="fp8", gpu="h200", gpus=8, context=1300,
                        sequences=4000)
    assert big["fits"] is False and big["gpus_needed"] is None  # one copy (365 GB) is more than a GPU holds
    assert any(n.startswith("no tensor-parallel group holds it: MLA keeps the whole cache") for n in big.notes)
    gqa = napkin.memory(model="llama-3.1-70b", gpu="h100", gpus=8, context=8192, sequences=32)  # 8 KV heads, TP 8
    assert "kv_replication" not in gqa.results and gqa["needed_bytes"] == gqa["weights_bytes"] + gqa["kv_total_bytes"]



def test_memory_says_why_an_uneven_gqa_split_holds_more_cache():
    """Fuzz repro: `napkin memory --model llama-3.1-70b --gpu h100 --context 128k --gpus 3` warned "TP 3 exceeds the
    8 KV heads: each head is kept on 1.125 GPUs"; 3 GPUs are fewer than 8 heads, and each is sized for ceil(8/3) = 3
    of them, 9/8 of the cache over the group."""
    r = napkin.memory(model="llama-3.1-70b", gpu="h100", gpus=3, context="128k")
    assert r["kv_replication"] == 9 / 8 and r["kv_replicated_bytes"] == pytest.approx(r["kv_total_bytes"] / 8)
    assert [w.message for w in r.warnings if w.code == "kv-replicated"] == [
        "TP 3 does not divide the 8 KV heads: each GPU is sized for the 3 heads the fullest one keeps, 1.125 times the "
        "cache over the group, costing 5.243 GB of KV memory beyond one copy"]
    wide = napkin.memory(model="llama-3.1-70b", gpu="h100", gpus=16, context="128k")
    assert [w.message for w in wide.warnings if w.code == "kv-replicated"] == [
        "TP 16 exceeds the 8 KV heads: each head is kept on 2 GPUs, costing 41.94 GB of KV memory beyond one copy"]

def test_memory_warns_past_the_context_window():
    r = napkin.memory(model="llama-2-7b", context="8Ki", gpu="h100")
    assert [w.message for w in r.warnings if w.code == "context-too-long"] == [
        "8,192 tokens exceed Llama 2 7B's 4,096-token context window; the figures below are what it would hold if "
        "it did not"]
    assert "context-too-long" not in [w.code for w in napkin.memory(model="llama-2-7b", context=4096).warnings]


def test_journey_counts_the_mla_cache_once_per_gpu():
    r = napkin.journey(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8")
    free, seq = r["free_bytes"], r["kv_bytes_per_sequence"]
    assert r["max_sequences_in_memory"] == math.floor(free / (seq * 8))
    assert r["kv_capacity_tokens"] == pytest.approx(free / (r["kv_bytes_per_token"] * 8), rel=1e-12)


def test_memory_says_why_no_group_holds_a_gqa_cache():
    """Review: gpus_needed read none with no word for a GQA model: its cache splits over 8 KV heads at most."""
    r = napkin.memory(model="llama-3.1-8b", gpu="h100", context="128Ki", sequences=64)
    assert r["gpus_needed"] is None
    assert any(n.startswith("no tensor-parallel group holds it: the cache splits over the 8 KV heads at most, so "
                            "every GPU keeps at least 1/8 of it (137.4 GB)") for n in r.notes)
