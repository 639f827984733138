"""Golden values of seeds 003 and 004 on serving, each citing its worked example's id."""

from __future__ import annotations

import pytest

from napkin import calculate
from napkin.formulas import cost, roofline, serving as sv
from napkin.formulas import journey as jf
from tests.conftest import approx, worked


def serve(**kw):
    return calculate("serve", **kw)


# ------------------------------------------------------------------------ KV cache
@pytest.mark.parametrize("ex,model", [(worked("kv-per-token-llama31-70b")[0], "llama-3.1-70b"),
                                      (worked("kv-per-token-deepseek-v3-mla")[0], "deepseek-v3"),
                                      (worked("journey-405b-kv")[0], "llama-3.1-405b")], ids=str)
def test_kv_bytes_per_token(ex, model):
    r = serve(model=model, gpu="h200", gpus=8)
    assert r["kv_bytes_per_token"] == approx(ex.expected["kv_bytes_per_token"], ex.rel_tol)


def test_kv_405b_1000_tokens_and_128k():
    ex = worked("journey-405b-kv")[0]
    r = serve(model="llama-3.1-405b", gpu="h100", gpus=8, precision="fp8", prompt=999, output=1)
    assert r["kv_bytes_per_sequence"] == approx(ex.expected["kv_bytes_1000_tokens"], ex.rel_tol)
    r = serve(model="llama-3.1-405b", gpu="h100", gpus=8, precision="fp8", prompt=131071, output=1)
    assert r["kv_bytes_per_sequence"] == approx(ex.expected["kv_bytes_128k_context"], ex.rel_tol)


def test_kv_128k_one_sequence_70b():
    ex = worked("kv-128k-one-sequence-70b")[0]
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=8, prompt=131071, output=1)
    assert r["kv_total_bytes"] == approx(ex.expected["kv_total_bytes"], ex.rel_tol)


@pytest.mark.parametrize("gpus,fits", [(2, False), (4, True)])
def test_kv_total_and_fit_on_2_vs_4_h100(gpus, fits):
    """Seed 004: 70B, 8k context, 32 sequences = 80 GiB of KV; no room on 2 H100s, room on 4."""
    ex = worked("kv-total-70b-8k-32seq")[0]
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=gpus, prompt=8191, output=1, batch=32, usable=1.0)
    assert r["kv_total_bytes"] == approx(ex.expected["kv_total_bytes"], ex.rel_tol)
    assert r["fits"] is fits
    runtime = 85_061_827_297  # what an "80GB" H100 reports to the CUDA runtime, not 80e9
    if fits:
        assert r["free_bytes"] == pytest.approx(4 * runtime - 141.1e9 - 85.9e9, rel=2e-3)
    else:
        assert r["short_by_bytes"] == pytest.approx(141.1e9 + 85.9e9 - 2 * runtime, rel=2e-3)
        assert 0 < r["max_batch"] < 32


# ------------------------------------------------------------------------ decode
def test_decode_70b_batch1_calculator():
    """The napkin rule on the catalog's 70B (70.55B computed): every byte once at the datasheet rate, ~24 tokens/s;
    the operator model's step is slower (no kernel reaches the datasheet bandwidth; fixed costs add)."""
    ex = worked("decode-70b-bf16-batch1-h100")[0]
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=1, prompt=1, output=1, convention="2N")
    assert r["decode_floor_tokens_per_s"] == approx(ex.expected["tokens_per_s"], ex.rel_tol)
    assert r["tokens_per_s"] < r["decode_floor_tokens_per_s"]
    assert r["bound"] == "bandwidth"


def test_405b_bandwidth_floor_15ms_on_eight_h100():
    ex = worked("journey-405b-weight-read")[0]
    i = ex.inputs
    def read(n: int) -> float:  # the weights streamed once, sharded over n GPUs: the floor of a decode step
        return roofline.weight_read_seconds(i["weights_bytes"], memory_bytes_per_s=i["memory_bytes_per_s_per_gpu"],
                                            n_gpus=n)

    one, eight = read(1), read(i["gpus"])
    assert one == approx(ex.expected["seconds_one_gpu"], ex.rel_tol)
    assert eight == approx(ex.expected["seconds_eight_gpus"], ex.rel_tol)
    r = serve(model="llama-3.1-405b", gpu="h100", gpus=8, precision="fp8", prompt=1, output=1, convention="2N")
    assert r["decode_floor_s"] == approx(ex.expected["seconds_eight_gpus"], ex.rel_tol)


# ------------------------------------------------------------------------ prefill
def test_prefill_405b_1000_tokens():
    ex = worked("journey-405b-prefill")[0]
    i = ex.inputs
    flops = 2 * i["params"] * i["prompt_tokens"]
    napkin_s = jf.prefill_seconds_at_mfu(flops, n_gpus=1, dense_flops_per_s=6.3e15, mfu=1.0)  # the node's 6.3 PFLOP/s
    assert napkin_s == approx(ex.expected["seconds_at_6p3_pflops"], ex.rel_tol)
    r = serve(model="llama-3.1-405b", gpu="h100", gpus=8, precision="fp8", prompt=1000, output=300, convention="2N")
    assert r["prefill_flops"] == approx(ex.expected["prefill_flops"], ex.rel_tol)
    # the napkin's 6.3 PFLOP/s is 40% of 8 x 1,979: the operator model predicts a 1,000-token fp8 prefill
    # reaches less (fixed costs, the weight read, all-reduces), so it takes longer than the 129 ms floor
    assert r["prefill_s"] > ex.expected["seconds_at_6p3_pflops"]


def test_prefill_100k_tokens_and_the_attention_term():
    ex = worked("journey-long-prefill")[0]
    i = ex.inputs
    flops = 2 * i["params"] * i["prompt_tokens"]
    assert flops == approx(ex.expected["prefill_flops"], ex.rel_tol)
    assert flops / i["effective_flops_per_s"] == approx(ex.expected["seconds"], ex.rel_tol)
    r = serve(model="llama-3.1-405b", gpu="h100", gpus=8, precision="fp8", prompt="100k", output=300,
              convention="2N")
    assert r["prefill_flops"] == approx(ex.expected["prefill_flops"], ex.rel_tol)
    assert any(w.code == "long-context" for w in r.warnings)  # 2N leaves attention out: said so
    causal = serve(model="llama-3.1-405b", gpu="h100", gpus=8, precision="fp8", prompt="100k", output=300)
    # 2 · L · T² · d = 2 · 126 · 1e10 · 16384 = 4.13e16 on top of 8.1e16 (seed 003: "dominant past ~100K")
    assert causal["prefill_attention_flops"] == pytest.approx(2 * 126 * 1e10 * 16384, rel=1e-9)
    assert any("undercounts" in w.message for w in causal.warnings)


def test_prefill_1000_tokens_no_long_context_warning():
    r = serve(model="llama-3.1-405b", gpu="h100", gpus=8, precision="fp8", prompt=1000, output=300)
    assert not any(w.code == "long-context" for w in r.warnings)


def test_prefill_70b_8k_floor():
    ex = worked("prefill-70b-8k")[0]
    flops = 2 * ex.inputs["params"] * ex.inputs["prompt_tokens"]
    assert flops == approx(ex.expected["prefill_flops"], ex.rel_tol)
    assert jf.prefill_seconds_at_mfu(flops, n_gpus=1, dense_flops_per_s=989e12, mfu=1.0) == approx(
        ex.expected["seconds_at_full_h100"], ex.rel_tol)
    # a floor: the operator model's 8k prefill on one H100 is compute-bound in its GEMMs and slower than it
    r = serve(model="llama-3.1-70b", gpu="h100", prompt=8192, output=1, scheduling="static")
    gemms = [row for row in r["operators"] if row["step"] == "batch_prefill" and row["operator"] in ("qkv", "mlp")]
    assert gemms and all(row["bound"] == "compute" for row in gemms)
    assert r["prefill_s"] > ex.expected["seconds_at_full_h100"]


def test_moe_compute_with_active_memory_with_total():
    ex = worked("moe-active-deepseek-v3")[0]
    assert sv.decode_flops_per_token(ex.inputs["active_params"], n_layers=61, d_attn=1.0, context_tokens=0.0,
                                     attention=False) == approx(ex.expected["flops_per_token"], ex.rel_tol)
    r = serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8", prompt=1000, output=300, convention="2N")
    assert r["weights_bytes"] == pytest.approx(671e9, rel=0.005)  # memory: every expert, 1 byte each
    assert r["decode_flops_per_token"] == pytest.approx(ex.expected["flops_per_token"], rel=0.02)  # compute: active
    assert r["decode_step_bytes"] < 0.1 * r["weights_bytes"]  # batch 1 reads ~37B of 671B


# ------------------------------------------------------------------------ money
@pytest.mark.parametrize("ex", worked("serve-cost-8xh100", "serve-cost-8xh100-40pct"), ids=str)
def test_usd_per_million_at_utilization(ex):
    i = ex.inputs
    got = cost.usd_per_million_tokens(i["gpus"] * i["usd_per_gpu_hour"], tokens_per_s=i["tokens_per_s"],
                                      utilization=i["utilization"])
    assert got == approx(ex.expected["usd_per_million_tokens"], ex.rel_tol)


@pytest.mark.parametrize("util", [1.0, 0.4])
def test_serve_prices_its_own_tokens_per_s(util):
    """The serve calculator's all-in $/M is the napkin formula on its own tokens/s: 40% costs 2.5x."""
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=64, price="2.50/h", utilization=util)
    expect = cost.usd_per_million_tokens(8 * 2.5, tokens_per_s=r["tokens_per_s"], utilization=util)
    assert r["usd_per_million_tokens_all_in"] == pytest.approx(expect, rel=1e-12)
    full = serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=64, price="2.50/h")
    assert r["usd_per_million_output_tokens"] == pytest.approx(full["usd_per_million_output_tokens"] / util)


def test_the_receipt():
    ex = worked("journey-bill")[0]
    r = calculate("bill", model="claude-sonnet-4", input=1000, output=300)
    assert r["usd"] == approx(ex.expected["usd"], ex.rel_tol)
    i = ex.inputs
    r = calculate("bill", input=i["input_tokens"], output=i["output_tokens"],
                  input_price=i["usd_per_million_input"], output_price=i["usd_per_million_output"])
    assert r["usd"] == approx(ex.expected["usd"], ex.rel_tol)


# ------------------------------------------------------------------ sliding-window attention
def test_mistral_7b_sliding_window_attention_flops():
    """Mistral 7B v0.1: every one of its 32 layers attends to at most the last W = 4096 tokens (Jiang et al. 2023,
    Mistral 7B, arXiv:2310.06825, section 2 "Sliding Window Attention"), d_attn = 32 heads x 128 = 4096.

    By hand (the reviewer's figures): prefill attention = 4 · L_w · d · Σ_{i≤T} min(i, W)
    = 4 · 32 · 4096 · (32000 · 4096 − 4096²/2) = 64.32 TFLOP (the full causal square gave 268.4);
    decode FLOPs/token at ctx = 32000 + 768/2 = 32384: 2N + 4 · 32 · 4096 · 4096 = 16.63 GFLOP (was 31.46);
    attention adds 64.32 / 463.5 = 14% to the 2N prefill (was 58%).
    """
    r = serve(model="mistral-7b", gpu="h100-sxm", prompt=32000, output=768, batch=8)
    assert r["prefill_attention_flops"] == pytest.approx(4 * 32 * 4096 * (32000 * 4096 - 4096**2 / 2), rel=1e-12)
    assert r["prefill_attention_flops"] == pytest.approx(64.32e12, rel=1e-3)
    full = serve(model="mistral-7b-v0.3", gpu="h100-sxm", prompt=32000, output=768, batch=8)
    assert r["prefill_s"] < 0.8 * full["prefill_s"]  # the window cuts three quarters of the attention
    assert r["decode_flops_per_token"] == pytest.approx(2 * 7_241_732_096 + 4 * 32 * 4096 * 4096, rel=1e-12)
    assert r["decode_flops_per_token"] == pytest.approx(16.63e9, rel=1e-3)
    share = next(w.message for w in r.warnings if w.code == "long-context")
    assert "attention adds 14% to the 2N prefill" in share
    step = next(s for s in r.steps if s.name == "prefill_attention_flops")
    assert "L_w · Σ min(i, W)" in step.formula


def test_gemma_2_window_caps_only_its_sliding_layers():
    """Gemma 2 9B: 21 of its 42 layers are local (W = 4096), the other 21 global (Gemma Team 2024, Gemma 2,
    arXiv:2408.00118, section 2), d_attn = 16 heads x 256 = 4096. At T = 8192:
    global 21 · 8192²/2 + local 21 · (8192 · 4096 − 4096²/2) pairs, each 4 · 4096 FLOPs."""
    r = serve(model="gemma-2-9b", gpu="h100-sxm", prompt=8192, output=1)
    pairs = 21 * 8192**2 / 2 + 21 * (8192 * 4096 - 4096**2 / 2)
    assert r["prefill_attention_flops"] == pytest.approx(4 * 4096 * pairs, rel=1e-12)
    ctx = 8192 + 0.5
    assert r["decode_flops_per_token"] == pytest.approx(
        2 * r["prefill_linear_flops"] / (2 * 8192) + 4 * 4096 * (21 * ctx + 21 * 4096), rel=1e-12)


def test_plan_serve_counts_the_window_as_serve_does():
    """The planner's grid uses the same windowed attention: its TTFT for a Mistral cell is serve's."""
    from napkin.plan.serve import PlanServeRequest, evaluate_grid
    from napkin.request import parse_request

    req = parse_request(PlanServeRequest, {"model": "mistral-7b", "rate": "1/s", "gpu": "h100-sxm", "batch": "8",
                                           "prompt": "32000", "output": "768", "max_gpus": 1})
    a = evaluate_grid(req)["arrays"]
    r = serve(model="mistral-7b", gpu="h100-sxm", prompt=32000, output=768, batch=8)
    assert a["ttft_s"][0, 0, 0, 0] == pytest.approx(r["ttft_s"], rel=1e-12)
    assert a["tpot_s"][0, 0, 0, 0] == pytest.approx(r["tpot_s"], rel=1e-12)
    full = serve(model="mistral-7b-v0.3", gpu="h100-sxm", prompt=32000, output=768, batch=8)
    assert r["ttft_s"] < 0.8 * full["ttft_s"]  # the window cuts three quarters of the attention
