"""The meter is the sum of the rungs, for any model, accelerator and prompt; and the fit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate, catalog
from napkin.formulas import journey as jf, serving

MODELS = ["llama-3.1-405b", "llama-3.1-70b", "deepseek-v3"]


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    prompt=st.text(min_size=1, max_size=200).filter(lambda s: s.strip()),
    system_tokens=st.integers(0, 200_000),
    output_tokens=st.integers(1, 20_000),
    gpus=st.integers(1, 16),
    precision=st.sampled_from(["bf16", "fp8", "int4"]),
    attention=st.booleans(),
)
def test_meter_is_the_sum_of_the_rungs(model, prompt, system_tokens, output_tokens, gpus, precision, attention):
    r = calculate("journey", model=model, prompt=prompt, system_tokens=system_tokens, output_tokens=output_tokens,
                  gpus=gpus, precision=precision, attention=attention, encoding="rule")
    rungs = r["rungs"]
    assert [x["key"] for x in rungs] == ["tokens", "weights", "memory_wall", "prefill", "decode", "bill", "training"]
    running = 0.0
    for rung in rungs:
        running += rung["flops"]
        assert rung["meter_flops"] == running  # the meter after each rung, exactly
    assert r["meter_flops"] == running == sum(x["flops"] for x in rungs)
    # only prefill and decode spend FLOPs; and together they are 2·N_active per token of the sequence
    assert [x["key"] for x in rungs if x["flops"]] == ["prefill", "decode"]
    m = catalog.model(model)
    tokens = r["prompt_tokens"] + output_tokens
    expected = 2 * m.active_params * tokens
    if attention:
        expected += r["prefill_attention_flops"] + r["decode_attention_flops"]
    assert r["meter_flops"] == pytest.approx(expected, rel=1e-12)
    # a journey always ends: it fits, or says how many GPUs it takes and runs on them
    assert r["fits"] or (r["gpus_needed"] > gpus and r["gpus_used"] == r["gpus_needed"])


def test_attention_term_of_decode_is_the_longer_prefill_less_the_prompt():
    """4·L·d·T_out·(T_in + T_out/2) = 2·L·d·((T_in + T_out)² − T_in²): the causal sum over the answer."""
    L, d, t_in, t_out = 126, 16384, 1000, 300
    decode = serving.prefill_attention_flops(L, d_attn=d, new_tokens=t_out, cached_tokens=t_in)
    whole = 2 * L * (t_in + t_out) ** 2 * d  # a plain causal prefill of prompt and answer: 2·L·T²·d
    prompt = 2 * L * t_in ** 2 * d
    assert decode == pytest.approx(whole - prompt, rel=1e-12)


def test_too_large_model_says_so_and_how_many_gpus(run_cli):
    """405B at bf16 (812 GB) on one 80 GB H100: the journey goes on, on the 11 GPUs it takes."""
    r = calculate("journey", model="llama-3.1-405b", gpu="h100", gpus=1, precision="bf16")
    needed = r["weights_bytes"] + r["kv_bytes_per_token"] * 1300
    assert r["fits"] is False
    assert r["gpus_needed"] == math.ceil(needed / 80e9) == 11
    assert r["short_by_bytes"] == pytest.approx(needed - 80e9, rel=1e-12)
    assert r["gpus_used"] == 11 and r["gpus"] == 1
    assert len(r["rungs"]) == 7 and r["meter_flops"] > 0
    assert r["weight_read_s"] == pytest.approx(r["weights_bytes"] / (11 * 3.35e12), rel=1e-12)
    (warning,) = [w for w in r.warnings if w.code == "does-not-fit"]
    assert warning.message == (
        "Llama 3.1 405B at bf16 needs 812.4 GB for weights and this request's KV cache; 1 × H100 SXM hold 80 GB. "
        "It takes at least 11 GPUs; the rest of the journey runs on 11")
    out = run_cli("journey", "--gpus", "1", "--precision", "bf16").stdout
    assert "  fits                         no\n" in out
    assert "  gpus_needed                  11  = ceil(needed_bytes / memory_per_gpu)" in out
    assert "  note: tensor parallelism splits the 128 heads evenly, so a real deployment rounds 11 GPUs up to 16\n" in out
    assert "warning [does-not-fit]: Llama 3.1 405B at bf16 needs 812.4 GB" in out


def test_fp8_on_a_part_without_fp8_runs_at_bf16():
    """The A100 has no FP8 tensor cores: FP8 weights multiply at the BF16 peak, and the output says so."""
    r = calculate("journey", gpu="a100-sxm-80gb")
    assert r["compute_precision"] == "bf16"
    assert r["dense_flops_per_s"] == catalog.gpu("a100-sxm-80gb").peak("bf16")
    assert any(w.code == "compute-precision" for w in r.warnings)


def test_moe_computes_with_active_params():
    """DeepSeek-V3: memory holds 671B, each token computes with ~37B (seed 003, "the MoE asterisk")."""
    r = calculate("journey", model="deepseek-v3", gpus=16)
    m = catalog.model("deepseek-v3")
    assert r["weights_bytes"] == pytest.approx(m.params, rel=1e-12)  # fp8: 1 byte per parameter
    assert r["flops_per_token"] == pytest.approx(2 * m.active_params, rel=1e-12)
    assert r["decode_bytes_per_token"] == pytest.approx(m.active_params + r["kv_bytes_per_sequence"], rel=1e-12)


# ---------------------------------------------------------------------- the journey's formulas
def test_decode_intensity_and_batch_at_ridge():
    """Seed 003: at FP8 one weight byte carries ~2 FLOPs at batch 1; compute binds from ridge · b / 2."""
    assert jf.decode_intensity_flops_per_byte(1, bytes_per_param=1.0) == 2.0
    assert jf.decode_intensity_flops_per_byte(64, bytes_per_param=2.0) == 64.0
    assert jf.batch_at_ridge(590.7, bytes_per_param=1.0) == pytest.approx(295.35)
    # at the ridge batch the intensity is the ridge, by construction
    b = jf.batch_at_ridge(295.0, bytes_per_param=2.0)
    assert jf.decode_intensity_flops_per_byte(b, bytes_per_param=2.0) == pytest.approx(295.0)


def test_tp_allreduce_volume():
    """Megatron TP: 2 all-reduces a layer of d_model bf16 values; a ring moves 2(n−1)/n of each per rank."""
    # 405B on 8 GPUs: 2 · 126 · 2 · 7/8 · 16384 · 2 = 14,450,688 bytes per token per rank
    assert jf.tp_allreduce_bytes_per_token(16384, n_layers=126, bytes_per_value=2.0, n_ranks=8) == 14_450_688
    assert jf.tp_allreduce_bytes_per_token(16384, n_layers=126, bytes_per_value=2.0, n_ranks=1) == 0.0


def test_energy_is_power_times_time_times_share():
    # 8 × 700 W for 9.2 s alone: 51.5 kJ; one 64th of it when the node is shared
    assert jf.energy_joules(9.2, n_gpus=8, watts_per_gpu=700) == pytest.approx(51_520)
    assert jf.energy_joules(9.2, n_gpus=8, watts_per_gpu=700, share=1 / 64) == pytest.approx(805)


def test_context_longer_than_the_window_is_warned():
    """GPT-2 holds 1,024 tokens; the seed's 1,000 in + 300 out overflows it, and the journey says so."""
    r = calculate("journey", model="gpt2", gpu="rtx-4090", gpus=1, precision="bf16")
    (w,) = [w for w in r.warnings if w.code == "context-too-long"]
    assert w.message.startswith("1,000 prompt + 300 output tokens exceed GPT-2")
    assert not [w for w in calculate("journey").warnings if w.code == "context-too-long"]


def test_system_tokens_note_describes_this_prompt():
    """The system-tokens line describes the prompt at hand (review: --system-tokens 500 printed '988 tokens around a
    12-token question: a 1,000-token prompt'). The question is 9 o200k tokens (its question_tokens step)."""
    d = calculate("journey", model="llama-3.1-8b", system_tokens=500,
                  prompt="Explain how a transformer decodes one token.").to_dict()
    a = {x["name"]: x for x in d["assumptions"]}["system_tokens"]
    assert (a["value"], a["basis"]) == (500, "given")
    q = d["question_tokens"]
    assert a["note"].endswith(f"(500 tokens around this {q}-token question: a {500 + q}-token prompt)")
    assert d["prompt_tokens"] == 500 + q


def test_max_sequences_differs_from_serve_and_says_why():
    """journey counts sequences against the datasheet capacity (NVIDIA H100 datasheet: 80 GB a GPU), serve against
    90% of what the runtime reports (85,061,827,297 bytes, the catalog's reading from vLLM); the journey says so.
    By hand: Llama 3.1 8B in fp8 is 8,030,261,248 bytes by the napkin rule (journey), 9,080,934,400 as an engine
    holds it (serve: the embedding and the LM head, 2 · 128,256 · 4,096, at 2 bytes); a 1,000 + 200-token sequence
    holds 2 · 32 layers · 8 KV heads · 128 · 2 bytes = 131,072 bytes a token (config.json); TP 8 splits both by 8."""
    kv_seq = 131072 * 1200
    j = calculate("journey", model="llama-3.1-8b", gpus=8, output_tokens=200)  # default prompt: 1,000 tokens
    assert j["prompt_tokens"] == 1000
    assert j["max_sequences_in_memory"] == math.floor((8 * 80e9 - 8_030_261_248) / kv_seq) == 4017
    s = calculate("serve", model="llama-3.1-8b", gpu="h100", gpus=8, precision="fp8", prompt=1000, output=200, batch=64)
    assert 8_030_261_248 + 2 * 128_256 * 4_096 == 9_080_934_400
    assert s["max_batch"] == math.floor((85_061_827_297 * 0.9 - 9_080_934_400 / 8) / (kv_seq / 8)) == 3836
    step = next(x for x in j.to_dict()["derivation"] if x["name"] == "max_sequences_in_memory")
    assert "datasheet capacity" in step["note"] and "`napkin serve` budgets 90%" in step["note"]
