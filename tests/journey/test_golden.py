"""Golden values of the journey of one prompt, each citing its worked example.

The worked examples round Llama 3.1 405B to N = 405B and give params = 405e9, so these runs
pass it (``params=``) and reproduce their figures. The catalog's architecture gives 405.85B;
test_default_run_is_the_catalog_count covers that run. The examples' times are napkin rules
(the prefill at one MFU); the journey prints them beside the operator model's, which is
`napkin serve`'s own: the tests below hold the two commands to the same figures.
"""

from __future__ import annotations

import math

import pytest

from napkin import calculate, catalog
from napkin.catalog import efficiency as eff
from napkin.formulas import journey as jf
from tests.conftest import approx, worked

H100_FP8 = catalog.gpu("h100-sxm").peak("fp8")


def journey(**kw):
    return calculate("journey", **kw)


def mfu_for(effective_flops_per_s: float, gpus: int = 8) -> float:
    """The MFU that makes the worked example's ~6.3 PFLOP/s node: 6.3e15 / (8 × 1979 TFLOP/s) = 0.398."""
    return effective_flops_per_s / (gpus * H100_FP8)


@pytest.mark.parametrize("ex", worked("journey-405b-prefill"), ids=str)
def test_prefill_810_tflop_in_129_ms(ex):
    eff = 6.3e15  # the example's "seconds_at_6p3_pflops"
    assert mfu_for(eff) == pytest.approx(0.40, abs=0.005)  # the example's 40% MFU of FP8 peak
    r = journey(params=ex.inputs["params"], system_tokens=ex.inputs["prompt_tokens"] - 12, mfu=mfu_for(eff))
    assert r["prompt_tokens"] == ex.inputs["prompt_tokens"]
    assert r["prefill_flops"] == approx(ex.expected["prefill_flops"], ex.rel_tol)
    assert r["prefill_napkin_s"] == approx(ex.expected["seconds_at_6p3_pflops"], ex.rel_tol)
    assert jf.prefill_seconds_at_mfu(ex.expected["prefill_flops"], n_gpus=8, dense_flops_per_s=H100_FP8,
                                     mfu=mfu_for(eff)) == approx(ex.expected["seconds_at_6p3_pflops"], ex.rel_tol)
    # beside it, the operator model's prefill: serve's, to the last digit; a 1,000-token fp8 prefill reaches
    # less than 40% of the peak there (fixed per-layer costs, the weight read, 252 all-reduces)
    s = calculate("serve", model="llama-3.1-405b", gpu="h100-sxm", gpus=8, precision="fp8", prompt=1000, output=300)
    assert r["prefill_s"] == s["prefill_s"] == r["ttft_s"]
    assert r["prefill_s"] > r["prefill_napkin_s"] and r["prefill_mfu"] < 0.40


@pytest.mark.parametrize("ex", worked("journey-405b-kv"), ids=str)
def test_kv_half_a_megabyte_per_token(ex):
    r = journey(kv_precision=ex.inputs["precision"])
    m = catalog.model("llama-3.1-405b")
    assert (m.n_layers, m.n_kv_heads, m.head_dim) == (ex.inputs["layers"], ex.inputs["kv_heads"], ex.inputs["head_dim"])
    assert r["kv_bytes_per_token"] == ex.expected["kv_bytes_per_token"]  # exact: 2 · 126 · 8 · 128 · 2
    assert r["prompt_tokens"] == 1000
    assert r["prompt_kv_bytes"] == approx(ex.expected["kv_bytes_1000_tokens"], ex.rel_tol)
    assert r["max_context_kv_bytes"] == approx(ex.expected["kv_bytes_128k_context"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("journey-405b-weight-read"), ids=str)
def test_weight_read_15_ms_over_8_gpus(ex):
    r = journey(params=405e9, precision="fp8", gpus=ex.inputs["gpus"])
    assert r["weights_bytes"] == ex.inputs["weights_bytes"]
    assert r["memory_bytes_per_s"] == ex.inputs["memory_bytes_per_s_per_gpu"]
    assert r["weight_read_one_gpu_s"] == approx(ex.expected["seconds_one_gpu"], ex.rel_tol)
    assert r["weight_read_s"] == approx(ex.expected["seconds_eight_gpus"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("journey-ridge-fp8"), ids=str)
def test_ridge_590_flop_per_byte(ex):
    r = journey(precision="fp8")
    assert r["dense_flops_per_s"] == ex.inputs["dense_peak_flops_per_s"]
    assert r["ridge_flops_per_byte"] == approx(ex.expected["ridge_flops_per_byte"], ex.rel_tol)
    # the seed: batch-1 decode uses ~2 FLOPs per weight byte, "0.3% of the bar"
    assert r["decode_intensity_flops_per_byte"] == 2.0
    assert r["decode_fraction_of_ridge"] == pytest.approx(0.003, abs=0.0005)


@pytest.mark.parametrize("ex", worked("journey-sigma-flops"), ids=str)
def test_sigma_1_053e15(ex):
    r = journey(params=ex.inputs["params"], system_tokens=ex.inputs["prompt_tokens"] - 12,
                output_tokens=ex.inputs["output_tokens"])
    assert r["meter_flops"] == approx(ex.expected["total_flops"], ex.rel_tol)
    assert r["meter_flops"] == sum(rung["flops"] for rung in r["rungs"])


@pytest.mark.parametrize("ex", worked("journey-bill"), ids=str)
def test_bill_three_quarters_of_a_cent(ex):
    r = journey(params=405e9, system_tokens=ex.inputs["input_tokens"] - 12, output_tokens=ex.inputs["output_tokens"],
                price_in=ex.inputs["usd_per_million_input"], price_out=ex.inputs["usd_per_million_output"])
    assert r["usd"] == approx(ex.expected["usd"], ex.rel_tol)
    assert r["flops_per_usd"] == approx(ex.expected["flops_per_usd"], ex.rel_tol)
    assert r["input_usd"] == approx(0.003, 1e-12) and r["output_usd"] == approx(0.0045, 1e-12)


@pytest.mark.parametrize("ex", worked("journey-bill"), ids=str)
def test_api_bill_formula(ex):
    i = ex.inputs
    assert jf.api_bill_usd(i["input_tokens"], output_tokens=i["output_tokens"],
                           usd_per_million_input=i["usd_per_million_input"],
                           usd_per_million_output=i["usd_per_million_output"]) == approx(ex.expected["usd"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("journey-405b-6nd"), ids=str)
def test_6nd_3_79e25(ex):
    r = journey(params=ex.inputs["params"], training_tokens=ex.inputs["tokens"])
    assert r["train_flops"] == approx(ex.expected["train_flops"], ex.rel_tol)
    # and from the catalog's published 15.6T tokens, without --training-tokens
    assert journey(params=ex.inputs["params"])["train_flops"] == approx(ex.expected["train_flops"], ex.rel_tol)
    # Llama 3 paper (Dubey et al. 2024): 3.8e25 FLOPs published; 6ND misses by under 1%
    assert r["train_flops"] == pytest.approx(3.8e25, rel=0.01)


@pytest.mark.parametrize("ex", worked("journey-training-over-request"), ids=str)
def test_36_billion_requests_per_training_run(ex):
    r = journey(params=405e9)
    assert r["meter_flops"] == approx(ex.inputs["request_flops"], 0.001)
    assert r["requests_per_training_run"] == approx(ex.expected["ratio"], ex.rel_tol)
    assert r["requests_per_training_run"] == pytest.approx(r["train_flops"] / r["meter_flops"], rel=1e-12)


@pytest.mark.parametrize("ex", worked("journey-long-prefill"), ids=str)
def test_100k_token_prompt_13_seconds(ex):
    r = journey(params=ex.inputs["params"], system_tokens=ex.inputs["prompt_tokens"] - 12,
                mfu=mfu_for(ex.inputs["effective_flops_per_s"]))
    assert r["prompt_tokens"] == ex.inputs["prompt_tokens"]
    assert r["effective_flops_per_s"] == approx(ex.inputs["effective_flops_per_s"], 1e-9)
    assert r["prefill_flops"] == approx(ex.expected["prefill_flops"], ex.rel_tol)
    assert r["prefill_napkin_s"] == approx(ex.expected["seconds"], ex.rel_tol)
    # the operator model times the 2 · L · T² · d_attn of attention too, which the 2N rule leaves out
    s = calculate("serve", model="llama-3.1-405b", gpu="h100-sxm", gpus=8, precision="fp8", prompt=100_000, output=300)
    assert r["prefill_s"] == s["prefill_s"] > r["prefill_napkin_s"]
    # the seed's "Where 2N bends": at 100K the attention term is no longer negligible, and is said
    assert r["prefill_attention_flops"] / r["prefill_flops"] > 0.4
    assert any(w.code == "attention-term" for w in r.warnings)


@pytest.mark.parametrize("ex", worked("journey-tokens-rule"), ids=str)
@pytest.mark.parametrize("encoding", ["rule", "o200k", "cl100k"])
def test_question_is_12_tokens(ex, encoding):
    r = journey(prompt=ex.inputs["text"], encoding=encoding)
    assert r["question_characters"] == ex.inputs["characters"]
    assert r["question_words"] == ex.inputs["words"]
    # Llama 3's tokenizer gives the seed's 12; so do o200k and cl100k, and ceil(46 / 4) = 12
    assert r["question_tokens"] == ex.expected["tokens_seed_tokenizer"]
    assert r["characters_per_token"] == approx(ex.expected["characters_per_token"], ex.rel_tol)
    whose = {"rule": "an estimate at 4 characters per token", "o200k": "o200k_base's", "cl100k": "cl100k_base's"}
    assert f"counts differ by tokenizer: these are {whose[encoding]};" in r.to_json()


def test_default_run_is_the_catalog_count():
    """Without --params, N is the architecture's 405.85B: Σ = 2 · N · 1,300, 0.2% above the worked example's."""
    n = catalog.model("llama-3.1-405b").params
    r = journey()
    assert r["params"] == n == pytest.approx(405.85e9, rel=1e-4)
    assert r["meter_flops"] == pytest.approx(2 * n * 1300, rel=1e-12)
    assert r["meter_flops"] == pytest.approx(1.053e15, rel=0.0025)
    # the napkin rules of the worked example: ~6.3 PFLOP/s effective, ~130 ms prefill at 40% MFU
    assert r["effective_flops_per_s"] == pytest.approx(6.33e15, rel=0.001)
    assert r["prefill_napkin_s"] == pytest.approx(0.128, rel=0.005)
    assert r["decode_floor_s_per_token"] == pytest.approx((n + 516_096 * 1300) / (8 * 3.35e12), rel=1e-12)
    assert r["free_bytes"] == pytest.approx(234.1e9, rel=0.001)  # "235 GB left over" at N = 405B
    assert r["load_s"] == pytest.approx(40.6, rel=0.01)  # "40+ seconds" at 10 GB/s
    assert math.isclose(r["node_usd_per_hour"], 24.0)  # "~$24 an hour"


def serve(**kw):
    return calculate("serve", model="llama-3.1-405b", gpu="h100-sxm", gpus=8, precision="fp8", prompt=1000,
                     output=300, **kw)


def test_one_user_is_serve_at_batch_1_to_the_last_digit():
    """One request alone on the node is a static batch of one: the same prefill, the same decode step at the
    answer's mean context, the same latency (issue 13: the journey runs the operator model serve runs)."""
    r, s = journey(), serve(batch=1, scheduling="static")
    assert r["ttft_s"] == s["ttft_s"]
    assert r["decode_s_per_token"] == s["tpot_s"] == s["decode_step_s"]
    assert r["answer_s"] == pytest.approx(s["request_latency_s"], rel=1e-12)
    assert r["answer_s"] == pytest.approx(r["ttft_s"] + 299 * r["decode_s_per_token"], rel=1e-12)
    # the napkin floor reads every byte once at the datasheet rate: the model's step is slower, never faster
    assert r["decode_floor_share"] == pytest.approx(r["decode_floor_s_per_token"] / r["decode_s_per_token"])
    assert 0 < r["decode_floor_share"] < 1


def test_the_batch_is_serves_continuous_batching_with_every_prefill_paid():
    """64 in flight: each finished sequence's slot takes a new 1,000-token prompt, which rides in a share of the
    steps (64 · 1,000 / 300 prompt tokens per step, in steps of one whole prompt): serve's tokens/s exactly."""
    r, s = journey(), serve(batch=64)
    assert r["batch_s_per_step"] == s["decode_step_s"]
    assert r["mixed_step_s"] == s["mixed_step_s"]
    assert r["prompt_step_share"] == pytest.approx(64 * 1000 / 300 / 1000, rel=1e-12) == s["prompt_step_share"]
    assert r["batch_cycle_s"] == pytest.approx(s["cycle_s"], rel=1e-12)
    assert r["batch_tokens_per_s"] == pytest.approx(s["tokens_per_s"], rel=1e-12)
    # the bill's node time per request is its share of that throughput, its prefill included
    assert r["shared_node_s"] == pytest.approx(300 / s["tokens_per_s"], rel=1e-12)
    assert r["gpu_usd_per_million_tokens_all_in"] == pytest.approx(
        calculate("serve", model="llama-3.1-405b", gpu="h100-sxm", gpus=8, precision="fp8", prompt=1000, output=300,
                  batch=64, price="3/h")["usd_per_million_tokens_all_in"], rel=1e-12)


def test_the_all_reduces_are_in_the_step_by_hand():
    """Megatron TP on 8 GPUs: 2 all-reduces a layer of d_model bf16 values (32 KiB for one sequence). The ring
    moves 2 · 7/8 of it per rank at the bus bandwidth the published 8 x H200 sweep measured at 32 KiB (1.44 GB/s:
    40 us); a one-shot kernel reads the 7 other buffers over one direction of NVLink 4 (450 GB/s) at its achieved
    fraction after one latency (13.6 us): the faster, the one-shot, is in the step."""
    r = journey()
    fam = eff.family("h100-sxm")
    latency = {a.name: a.value for a in r.assumptions}["allreduce_latency"]
    message = 16384 * 2
    per = 2 * 7 / 8 * message
    assert r["tp_allreduce_bytes_per_token"] == 126 * 2 * per == 14_450_688
    ring = per / 1.44e9
    one_shot = latency + 7 * message / (450e9 * fam.allreduce_bus)
    assert fam.allreduce_curve_busbw[0] == 1.44e9 and one_shot < ring
    assert ring == pytest.approx(39.8e-6, rel=1e-3) and one_shot == pytest.approx(13.62e-6, rel=1e-3)
    assert r["tp_allreduce_s_per_token"] == pytest.approx(126 * 2 * one_shot, rel=1e-12)
    assert r["tp_allreduce_share"] == pytest.approx(r["tp_allreduce_s_per_token"] / r["decode_s_per_token"])
    one = journey(model="llama-3.1-8b", gpus=1)  # one GPU: no all-reduce, and none printed
    assert "tp_allreduce_s_per_token" not in one.results


def test_a_sliding_window_model_counts_attention_within_its_window():
    """Mistral 7B: every layer attends to at most 4,096 tokens (arXiv:2310.06825), so a 10,988-token prompt's
    attention is 4 · L · d · (T·W − W²/2) (the continuous Σ min(i, W), as 2 · L · d · T² is for full attention),
    not 2 · L · d · T²."""
    r = journey(model="mistral-7b", gpus=1, gpu="h100", prompt="x" * 40_000, encoding="rule")
    t, w, layers, d = 10_000 + 988, 4096, 32, 4096
    assert r["prompt_tokens"] == t
    assert r["prefill_attention_flops"] == approx(4 * layers * d * (t * w - w * w / 2), 1e-12)
    assert r["prefill_attention_flops"] < 2 * layers * d * t * t  # full attention over the whole prompt
