"""Golden values of seed 003 (the journey of one prompt), each citing its worked example.

The seed rounds Llama 3.1 405B to N = 405B; the worked examples give params = 405e9, so
these runs pass it (``params=``) and reproduce the seed's figures. The catalog's
architecture gives 405.85B; test_default_run_is_the_catalog_count covers that run.
"""

from __future__ import annotations

import math

import pytest

from napkin import calculate, catalog
from napkin.formulas import journey as jf
from tests.conftest import approx, worked

H100_FP8 = catalog.gpu("h100-sxm").peak("fp8")


def journey(**kw):
    return calculate("journey", **kw)


def mfu_for(effective_flops_per_s: float, gpus: int = 8) -> float:
    """The MFU that makes the seed's ~6.3 PFLOP/s node: 6.3e15 / (8 × 1979 TFLOP/s) = 0.398."""
    return effective_flops_per_s / (gpus * H100_FP8)


@pytest.mark.parametrize("ex", worked("journey-405b-prefill"), ids=str)
def test_prefill_810_tflop_in_129_ms(ex):
    eff = 6.3e15  # the example's "seconds_at_6p3_pflops"
    assert mfu_for(eff) == pytest.approx(0.40, abs=0.005)  # the seed's 40% MFU of FP8 peak
    r = journey(params=ex.inputs["params"], system_tokens=ex.inputs["prompt_tokens"] - 12, mfu=mfu_for(eff))
    assert r["prompt_tokens"] == ex.inputs["prompt_tokens"]
    assert r["prefill_flops"] == approx(ex.expected["prefill_flops"], ex.rel_tol)
    assert r["prefill_s"] == approx(ex.expected["seconds_at_6p3_pflops"], ex.rel_tol)


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
    assert r["prefill_s"] == approx(ex.expected["seconds"], ex.rel_tol)
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
    """Without --params, N is the architecture's 405.85B: Σ = 2 · N · 1,300, 0.2% above the seed's."""
    n = catalog.model("llama-3.1-405b").params
    r = journey()
    assert r["params"] == n == pytest.approx(405.85e9, rel=1e-4)
    assert r["meter_flops"] == pytest.approx(2 * n * 1300, rel=1e-12)
    assert r["meter_flops"] == pytest.approx(1.053e15, rel=0.0025)
    # the seed's node: ~6.3 PFLOP/s effective, ~130 ms prefill, ~33 tok/s, ~9.2 s for the answer
    assert r["effective_flops_per_s"] == pytest.approx(6.33e15, rel=0.001)
    assert r["decode_tokens_per_s"] == pytest.approx(33, rel=0.01)
    assert r["answer_s"] == pytest.approx(9.2, rel=0.01)
    assert r["free_bytes"] == pytest.approx(234.1e9, rel=0.001)  # the seed: "235 GB left over"
    assert r["load_s"] == pytest.approx(40.6, rel=0.01)  # the seed: "40+ seconds"
    assert math.isclose(r["node_usd_per_hour"], 24.0)  # the seed: "~$24 an hour"


def test_a_sliding_window_model_counts_attention_within_its_window():
    """Mistral 7B: every layer attends to at most 4,096 tokens (arXiv:2310.06825), so a 10,988-token prompt's
    attention is 4 · L · d · (T·W − W²/2) (the continuous Σ min(i, W), as 2 · L · d · T² is for full attention),
    not 2 · L · d · T²."""
    r = journey(model="mistral-7b", gpus=1, gpu="h100", prompt="x" * 40_000, encoding="rule")
    t, w, layers, d = 10_000 + 988, 4096, 32, 4096
    assert r["prompt_tokens"] == t
    assert r["prefill_attention_flops"] == approx(4 * layers * d * (t * w - w * w / 2), 1e-12)
    assert r["prefill_attention_flops"] < 2 * layers * d * t * t  # full attention over the whole prompt
