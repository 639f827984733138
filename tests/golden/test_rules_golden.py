"""Every worked example of seed 004 (the napkin rules), through the Python API and the CLI.

Each test cites the example's id in tests/golden/worked-examples.json and uses its tolerance.
"""

from __future__ import annotations

import json

import pytest

import napkin
from napkin.formulas import cost, flops, memory, roofline
from tests.conftest import approx, worked


@pytest.mark.parametrize("ex", worked("weights-70b-bf16", "weights-70b-int4", "weights-7b-fp16-trap"), ids=str)
def test_weights(ex):
    r = napkin.memory(params=ex.inputs["params"], precision=ex.inputs["precision"])
    assert r["weights_bytes"] == approx(ex.expected["weights_bytes"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("weights-70b-bf16", "weights-70b-int4"), ids=str)
def test_weights_cli(ex, run_cli):
    out = json.loads(run_cli("memory", "--params", "70.6B", "--precision", ex.inputs["precision"], "--json").stdout)
    assert out["weights_bytes"] == approx(ex.expected["weights_bytes"], ex.rel_tol)


def test_kv_per_token_gqa():
    ex, = worked("kv-per-token-llama31-70b")
    i = ex.inputs
    assert memory.kv_bytes_per_token(i["layers"], n_kv_heads=i["kv_heads"], head_dim=i["head_dim"],
                                     bytes_per_value=2.0) == ex.expected["kv_bytes_per_token"]
    assert napkin.architecture("llama-3.1-70b")["kv_bytes_per_token"] == ex.expected["kv_bytes_per_token"]


def test_kv_per_token_gqa_cli(run_cli):
    ex, = worked("kv-per-token-llama31-70b")
    i = ex.inputs
    out = json.loads(run_cli("memory", "--params", "70.6B", "--layers", i["layers"], "--kv-heads", i["kv_heads"],
                             "--head-dim", i["head_dim"], "--json").stdout)
    assert out["kv_bytes_per_token"] == ex.expected["kv_bytes_per_token"]
    # the trap: 64 query heads instead of 8 KV heads is 8x too high (2.6 MB)
    trap = json.loads(run_cli("memory", "--params", "70.6B", "--layers", 80, "--kv-heads", 64,
                              "--head-dim", 128, "--json").stdout)
    assert trap["kv_bytes_per_token"] == 8 * ex.expected["kv_bytes_per_token"]


def test_kv_per_token_mla():
    ex, = worked("kv-per-token-deepseek-v3-mla")
    i = ex.inputs
    assert memory.kv_bytes_per_token_mla(i["layers"], kv_lora_rank=i["kv_lora_rank"],
                                         qk_rope_head_dim=i["qk_rope_head_dim"],
                                         bytes_per_value=2.0) == ex.expected["kv_bytes_per_token"]
    assert napkin.architecture("deepseek-v3")["kv_bytes_per_token"] == ex.expected["kv_bytes_per_token"]


@pytest.mark.parametrize("ex", worked("kv-128k-one-sequence-70b", "kv-total-70b-8k-32seq"), ids=str)
def test_kv_total(ex):
    i = ex.inputs
    assert memory.kv_total_bytes(i["kv_bytes_per_token"], context_tokens=i["context"],
                                 n_sequences=i["sequences"]) == approx(ex.expected["kv_total_bytes"], ex.rel_tol)
    r = napkin.memory(model="llama-3.1-70b", context=i["context"], sequences=i["sequences"])
    assert r["kv_total_bytes"] == approx(ex.expected["kv_total_bytes"], ex.rel_tol)


def test_kv_total_fits_on_4_not_2_h100(run_cli):
    """kv-total-70b-8k-32seq: no room on 2 x H100 after 141 GB of weights; fits on 4."""
    ex, = worked("kv-total-70b-8k-32seq")
    args = ["memory", "--model", "llama-3.1-70b", "--context", "8192", "--sequences", "32", "--gpu", "h100-sxm"]
    two = json.loads(run_cli(*args, "--gpus", 2, "--json").stdout)
    four = json.loads(run_cli(*args, "--gpus", 4, "--json").stdout)
    assert two["kv_total_bytes"] == ex.expected["kv_total_bytes"]
    assert two["fits"] is False and two["short_by_bytes"] > 0
    assert four["fits"] is True and four["free_bytes"] > 0


def test_train_flops():
    ex, = worked("train-flops-70b-15t")
    got = flops.train_flops(ex.inputs["params"], n_tokens=ex.inputs["tokens"])
    assert got == approx(ex.expected["train_flops"], ex.rel_tol)


def test_train_time():
    """t = C / (gpus · peak · MFU): `napkin train` at goodput 1 (the rule counts no lost time)."""
    ex, = worked("train-time-70b-16k-h100")
    i = ex.inputs
    r = napkin.train(params="70B", tokens="15T", gpus=i["gpus"], peak=i["dense_peak_flops_per_s"], mfu=i["mfu"],
                     goodput=1, price=2.5)
    assert r["train_flops"] == approx(i["train_flops"], 1e-12)
    assert r["wall_s"] == approx(ex.expected["seconds"], ex.rel_tol)
    assert r["wall_s"] / 86400 == approx(ex.expected["days"], ex.rel_tol)
    # the trap: the 1,979 TFLOP/s sparse figure halves the answer, and napkin says so
    sparse = napkin.train(params="70B", tokens="15T", gpus=i["gpus"], peak=2 * i["dense_peak_flops_per_s"],
                          mfu=i["mfu"], goodput=1, price=2.5)
    assert sparse["wall_s"] == approx(ex.expected["seconds"] / 2, ex.rel_tol)
    assert "sparse-peak" in [w.code for w in sparse.warnings]


def test_mfu():
    ex, = worked("mfu-70b-4m-step")
    i = ex.inputs
    r = napkin.mfu(params=i["params"], tokens_per_step=i["tokens_per_step"], step_time=i["step_seconds"],
                   gpus=i["gpus"], peak=i["dense_peak_flops_per_s"])
    assert r["mfu"] == approx(ex.expected["mfu"], ex.rel_tol)
    # the tool says which reading of "4M" it used, and what 4Mi would give (42%)
    assert any("4Mi" in n and "MFU would be 42%" in n for n in r.notes)


def test_mfu_cli_4m_is_decimal(run_cli):
    ex, = worked("mfu-70b-4m-step")
    out = json.loads(run_cli("mfu", "--params", "70B", "--tokens-per-step", "4M", "--step-time", "2.07s",
                             "--gpus", "2048", "--peak", "989T", "--json").stdout)
    assert out["mfu"] == approx(ex.expected["mfu"], ex.rel_tol)
    binary = json.loads(run_cli("mfu", "--params", "70B", "--tokens-per-step", "4Mi", "--step-time", "2.07s",
                                "--gpus", "2048", "--peak", "989T", "--json").stdout)
    assert binary["mfu"] == pytest.approx(0.420, abs=0.0005)


def test_hfu_beside_mfu():
    r = napkin.mfu(params="70B", tokens_per_step="4M", step_time="2.07s", gpus=2048, gpu="h100-sxm", recompute=True)
    assert r["hfu"] == pytest.approx(r["mfu"] * 8 / 6)
    assert [w.code for w in r.warnings] == ["hfu-not-mfu"]


def test_static_training_memory(run_cli):
    ex, = worked("static-train-memory-70b")
    r = napkin.memory(params=ex.inputs["params"], training=True, memory="80GB")
    assert r["training_static_bytes"] == approx(ex.expected["static_bytes"], ex.rel_tol)
    assert r["min_gpus_for_state"] == ex.expected["gpus_80gb_at_80pct_usable"]
    out = json.loads(run_cli("memory", "--params", "70B", "--training", "--gpu", "h100", "--json").stdout)
    assert out["min_gpus_for_state"] == ex.expected["gpus_80gb_at_80pct_usable"]


def test_ridge(run_cli):
    ex, = worked("ridge-h100")
    i = ex.inputs
    r = napkin.roofline(peak=i["dense_peak_flops_per_s"], bandwidth=i["memory_bytes_per_s"])
    assert r["ridge_flops_per_byte"] == approx(ex.expected["ridge_flops_per_byte"], ex.rel_tol)
    out = json.loads(run_cli("roofline", "--peak", "989T", "--bandwidth", "3.35TB/s", "--json").stdout)
    assert out["ridge_flops_per_byte"] == approx(ex.expected["ridge_flops_per_byte"], ex.rel_tol)


def test_decode_batch1_attainable():
    ex, = worked("decode-batch1-attainable-h100")
    i = ex.inputs
    r = napkin.roofline(peak=i["dense_peak_flops_per_s"], bandwidth=i["memory_bytes_per_s"],
                        intensity=i["intensity_flops_per_byte"])
    assert r["attainable_flops_per_s"] == approx(ex.expected["attainable_flops_per_s"], ex.rel_tol)
    assert r["fraction_of_peak"] == approx(ex.expected["fraction_of_peak"], ex.rel_tol)
    assert r["bound"] == "memory"


def test_decode_70b_batch1():
    ex, = worked("decode-70b-bf16-batch1-h100")
    i = ex.inputs
    tps = roofline.decode_tokens_per_s(i["batch"], memory_bytes_per_s=i["memory_bytes_per_s"],
                                       weights_bytes=i["weights_bytes"],
                                       kv_bytes_per_sequence=i["kv_bytes_per_sequence"])
    assert tps == approx(ex.expected["tokens_per_s"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("serve-cost-8xh100", "serve-cost-8xh100-40pct"), ids=str)
def test_serving_cost(ex):
    i = ex.inputs
    got = cost.usd_per_million_tokens(i["gpus"] * i["usd_per_gpu_hour"], tokens_per_s=i["tokens_per_s"],
                                      utilization=i["utilization"])
    assert got == approx(ex.expected["usd_per_million_tokens"], ex.rel_tol)


def test_allreduce(run_cli):
    ex, = worked("allreduce-70b-grads-8-ranks")
    i = ex.inputs
    r = napkin.allreduce(size=i["buffer_bytes"], ranks=i["ranks"],
                         link_bandwidth=i["link_bytes_per_s_bidirectional"], bidirectional=True)
    assert r["bytes_per_rank"] == approx(ex.expected["bytes_per_rank"], ex.rel_tol)
    assert r["seconds"] == approx(ex.expected["seconds"], ex.rel_tol)
    out = json.loads(run_cli("allreduce", "--size", "141GB", "--ranks", "8", "--link", "h100-sxm", "--json").stdout)
    assert out["seconds"] == approx(ex.expected["seconds"], ex.rel_tol)


def test_allreduce_trap_bidirectional_rating_as_one_way(run_cli):
    """allreduce-70b-grads-8-ranks: one-way bytes over the 900 GB/s rating halves the answer."""
    ex, = worked("allreduce-70b-grads-8-ranks")
    out = json.loads(run_cli("allreduce", "--size", "141GB", "--ranks", "8", "--link-bandwidth", "900GB/s",
                             "--unidirectional", "--json").stdout)
    assert out["seconds"] == approx(ex.expected["seconds"] / 2, ex.rel_tol)


def test_prefill():
    ex, = worked("prefill-70b-8k")
    i = ex.inputs
    f = flops.prefill_flops(i["params"], prompt_tokens=i["prompt_tokens"])
    assert f == approx(ex.expected["prefill_flops"], ex.rel_tol)
    assert f / 989e12 == approx(ex.expected["seconds_at_full_h100"], ex.rel_tol)


def test_moe_active():
    ex, = worked("moe-active-deepseek-v3")
    got = flops.forward_flops_per_token(ex.inputs["active_params"])
    assert got == approx(ex.expected["flops_per_token"], ex.rel_tol)
    # and not with the total: the trap is 18x
    assert flops.forward_flops_per_token(ex.inputs["total_params"]) / got == pytest.approx(671 / 37)
