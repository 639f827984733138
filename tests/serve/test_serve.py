"""Behaviour of `napkin serve` beyond the golden values: tensor and pipeline parallelism, KV layouts,
quantised weights, prefix caching, speculative decoding, calibration, and results that are not errors."""

from __future__ import annotations

import pytest

from napkin import calculate
from napkin.calculators.serve import check_heads
from napkin.derivation import Report
from napkin.model import ModelSpec


def serve(**kw):
    return calculate("serve", **kw)


def codes(r):
    return [w.code for w in r.warnings]


def test_two_allreduces_per_layer_per_decode_step():
    """70B on 8 H100s (the seed's question): 160 all-reduces of batch · d · 2 bytes, each 2·7/8 of it over 450 GB/s."""
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=1, allreduce_latency="10us")
    per = 2 * 7 / 8 * 8192 * 2 / 450e9 + 10e-6
    assert r["decode_comm_s"] == pytest.approx(2 * 80 * per, rel=1e-12)
    assert r["decode_step_s"] == pytest.approx(max(r["decode_memory_s"], r["decode_compute_s"]) + r["decode_comm_s"])
    one = serve(model="llama-3.1-70b", gpu="h100", gpus=1, batch=1)
    assert "decode_comm_s" not in one.results  # one GPU: no collective


def test_more_tp_than_kv_heads_replicates_them_and_says_what_it_costs():
    r = serve(model="llama-3.1-70b", gpu="h100", tp=16, batch=8)
    assert r["kv_replication"] == 2.0
    assert r["kv_replicated_bytes"] == pytest.approx(r["kv_total_bytes"])
    msg = next(w.message for w in r.warnings if w.code == "kv-replicated")
    assert "8 KV heads" in msg and "GB of KV memory" in msg
    assert r["kv_bytes_per_gpu"] == pytest.approx(r["kv_total_bytes"] / 8)  # 8 shards, not 16
    assert "kv-replicated" not in codes(serve(model="llama-3.1-70b", gpu="h100", tp=8))


def test_mla_latent_is_replicated_under_tp():
    r = serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8", batch=4)
    assert r["kv_bytes_per_gpu"] == pytest.approx(r["kv_total_bytes"])
    assert "kv-replicated" in codes(r)


def test_gqa_confusion_is_flagged():
    spec = ModelSpec(name="confused", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=64, head_dim=128,
                     d_ff=28672, vocab_size=128256, attention="gqa")
    r = Report("t")
    check_heads(r, spec)
    assert [w.code for w in r.warnings] == ["kv-heads"]
    fine = Report("t")
    check_heads(fine, ModelSpec(name="ok", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, head_dim=128,
                                d_ff=28672, vocab_size=128256, attention="gqa"))
    assert not fine.warnings


def test_quantised_weights_and_compute_fallback():
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=1, precision="int4")
    assert r["weights_bytes"] == pytest.approx(70.55e9 * 0.5, rel=1e-3)  # half a byte, never bits // 8
    assert any("int4 weights are dequantised and multiplied at bf16" in n for n in r.notes)
    assert r["dense_flops_per_s"] == 989.5e12
    a100 = serve(model="llama-3.1-8b", gpu="a100-sxm-80gb", precision="fp8")
    assert any("fp8" in n and "bf16" in n for n in a100.notes)


def test_batch_that_does_not_fit_is_a_result():
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=2, batch=4096, prompt=8000)
    assert r["fits"] is False and r["short_by_bytes"] > 0
    assert 0 < r["max_batch"] < 4096
    assert "does-not-fit" in codes(r)
    assert r["tokens_per_s"] > 0


def test_no_price_no_dollars_and_a_note():
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=8)
    assert not any(k.startswith("usd") for k in r.results)
    assert any("no price given" in n and "--price" in n for n in r.notes)


def test_pipeline_stages_add_memory_not_speed():
    tp4 = serve(model="llama-3.1-70b", gpu="h100", gpus=4, batch=1)
    pp2 = serve(model="llama-3.1-70b", gpu="h100", gpus=8, tp=4, batch=1)
    assert pp2["pp"] == 2
    assert pp2["weights_bytes_per_gpu"] == pytest.approx(tp4["weights_bytes_per_gpu"] / 2)
    assert pp2["decode_step_s"] >= tp4["decode_step_s"] * 0.999  # one token still crosses every layer
    assert pp2["max_batch"] > tp4["max_batch"]


def test_cached_prefix_shortens_prefill_and_is_stored_once():
    base = serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=32, prompt=1000, output=300)
    hit = serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=32, prompt=1000, output=300, cached_prefix=988)
    assert hit["ttft_s"] < base["ttft_s"] / 5
    kv_tok = base["kv_bytes_per_token"]
    assert hit["kv_total_bytes"] == pytest.approx(kv_tok * (988 + 32 * (1300 - 988)))
    assert hit["max_batch"] > base["max_batch"]
    assert hit["decode_step_s"] == pytest.approx(base["decode_step_s"])  # every sequence still reads its prefix


def test_moe_batched_step_reads_the_experts_some_token_picked():
    r = serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8", batch=64)
    one = serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8", batch=1)
    frac = 1 - (1 - 8 / 256) ** 64
    assert r["weights_read_bytes"] == pytest.approx(
        one["weights_read_bytes"] + (r["weights_bytes"] - one["weights_read_bytes"]) / (1 - 8 / 256) * (frac - 8 / 256),
        rel=1e-6)
    assert one["weights_read_bytes"] == pytest.approx(37e9, rel=0.03)


def test_compute_bound_batch_is_about_the_ridge_for_a_dense_model():
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=1, precision="bf16", prompt=1, output=1, mfu=1.0,
              bandwidth_efficiency=1.0, convention="2N")
    ridge = 989.5e12 / 3.35e12  # 295 FLOP/B; bf16 moves 2 bytes per 2 FLOPs of a weight
    assert ridge <= r["compute_bound_batch"] <= ridge * 1.02
    assert serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8")["compute_bound_batch"] is None


def test_speculative_decoding_speedup():
    plain = serve(model="llama-3.1-70b", gpu="h100", gpus=4, batch=1)
    spec = serve(model="llama-3.1-70b", gpu="h100", gpus=4, batch=1, draft="llama-3.2-1b", draft_tokens=4,
                 acceptance=0.8)
    e = (1 - 0.8**5) / (1 - 0.8)
    assert spec["spec_tokens_per_pass"] == pytest.approx(e)
    assert spec["tpot_s"] == pytest.approx(spec["spec_pass_s"] / e)
    assert spec["spec_speedup"] == pytest.approx(plain["tpot_s"] / spec["tpot_s"])
    assert 1.5 < spec["spec_speedup"] < 4  # seed 003: "2-3x faster"
    assert any("exactly the tokens" in n for n in spec.notes)
    hopeless = serve(model="llama-3.1-70b", gpu="h100", gpus=4, batch=1, draft="llama-3.2-1b", acceptance=0.0)
    assert "draft-slower" in codes(hopeless)


def test_calibration_replaces_assumed_efficiencies(tmp_path):
    from napkin.calibration import Calibration, save

    cal = Calibration(device="NVIDIA H100 80GB HBM3", date="2026-05-01", memory_bytes_per_s=2.9e12,
                      bandwidth_fraction=0.866, matmul_fraction_of_peak={"bf16": 0.75}, catalog_key="h100-sxm")
    path = tmp_path / "cal.toml"
    save(cal, path)
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=8, calibration=str(path))
    basis = {a.name: (a.basis, a.value, a.note) for a in r.assumptions}
    assert basis["bandwidth_efficiency"][:2] == ("measured", 0.866)
    assert basis["mfu"][:2] == ("measured", 0.75)
    assert "measured on NVIDIA H100 80GB HBM3" in basis["mfu"][2]
    other = serve(model="llama-3.1-70b", gpu="h200", gpus=8, calibration=str(path))
    assert "calibration-device" in codes(other)


def test_long_context_decode_counts_attention():
    short = serve(model="llama-3.1-70b", gpu="h100", gpus=8, prompt=1000)
    long = serve(model="llama-3.1-70b", gpu="h100", gpus=8, prompt=120_000)
    # 4 · L · d · ctx = 4 · 80 · 8192 · 120k = 0.31 TFLOP per token on top of 2N = 0.14 TFLOP
    assert long["decode_flops_per_token"] > 3 * short["decode_flops_per_token"]
