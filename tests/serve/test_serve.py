"""Behaviour of `napkin serve` beyond the golden values: tensor and pipeline parallelism, KV layouts,
quantised weights, prefix caching, speculative decoding, calibration, and results that are not errors."""

from __future__ import annotations

import pytest

from napkin import calculate, catalog
from napkin.calculators.serve.heads import check_heads
from napkin.derivation import Report
from napkin.model import ModelSpec


def serve(**kw):
    return calculate("serve", **kw)


def codes(r):
    return [w.code for w in r.warnings]


def allreduce_row(r, step="decode"):
    return next(x for x in r["operators"] if x["step"] == step and x["operator"] == "allreduce")


def test_two_allreduces_per_layer_per_decode_step():
    """70B on 8 H100s: 160 all-reduces of batch · d · 2 bytes, each 2·7/8 of it over 450 GB/s at the ring's
    measured 82% (nccl-tests, catalog/efficiency.toml), plus 10 µs each."""
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=1, allreduce_latency="10us")
    per = 2 * 7 / 8 * 8192 * 2 / (450e9 * 0.82) + 10e-6
    assert allreduce_row(r)["seconds"] == pytest.approx(2 * 80 * per, rel=1e-12)
    one = serve(model="llama-3.1-70b", gpu="h100", gpus=1, batch=1)
    assert not any(x["operator"] == "allreduce" for x in one["operators"])  # one GPU: no collective


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
    # half a byte, never bits // 8, for the linear layers; the embedding and the LM head (2 · 128,256 · 8,192 in
    # config.json) stay at 2 bytes (vLLM's FP8 docs: every Linear module "except for the final lm_head")
    n_eh = 2 * 128_256 * 8_192
    assert r["weights_bytes"] == pytest.approx((70_553_706_496 - n_eh) * 0.5 + n_eh * 2, rel=1e-12)
    assert r["weights_bytes"] == pytest.approx(38.43e9, rel=1e-3)
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
    assert hit["prefill_s"] < base["prefill_s"] / 2.5  # 12 tokens to compute, not 1,000 (the weights still stream)
    assert hit["prefill_tokens_per_step"] == pytest.approx(base["prefill_tokens_per_step"] * 12 / 1000)
    kv_tok = base["kv_bytes_per_token"]
    assert hit["kv_total_bytes"] == pytest.approx(kv_tok * (988 + 32 * (1300 - 988)))
    assert hit["max_batch"] > base["max_batch"]
    assert hit["decode_step_s"] == pytest.approx(base["decode_step_s"])  # every sequence still reads its prefix


def test_moe_batched_step_reads_the_experts_some_token_picked():
    r = serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8", batch=64)
    one = serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8", batch=1)
    frac = 1 - (1 - 8 / 256) ** 64
    n_read = catalog.model("deepseek-v3").params * 1.0  # the floor's rule: every weight at fp8's byte
    assert r["weights_bytes"] == pytest.approx(n_read + 2 * 129_280 * 7_168, rel=1e-12)  # embedding and head at 2
    assert r["weights_read_bytes"] == pytest.approx(
        one["weights_read_bytes"] + (n_read - one["weights_read_bytes"]) / (1 - 8 / 256) * (frac - 8 / 256),
        rel=1e-6)
    assert one["weights_read_bytes"] == pytest.approx(37e9, rel=0.03)


def test_compute_bound_batch_is_past_the_ridge_for_a_dense_model():
    """At 100% of both peaks a weight GEMM turns compute-bound near the ridge, 989.5 / 3.35 = 295 tokens: the
    activations it reads and writes (M · (K + N) · 2 bytes) bring the crossing in, the efficiency curve
    η(M) = M / (M + 32) (gemm_half_tokens) pushes it out; 277 for Llama 3.1 70B's layers."""
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=1, precision="bf16", prompt=1, output=1, gemm_efficiency=1.0,
              bandwidth_efficiency=1.0, convention="2N")
    ridge = 989.5e12 / 3.35e12  # 295 FLOP/B; bf16 moves 2 bytes per 2 FLOPs of a weight
    assert 0.9 * ridge <= r["compute_bound_batch"] <= ridge + 40
    # MoE: each of 256 routed experts sees batch · 8 / 256 of the tokens, so its GEMM turns compute-bound only at a
    # batch about ten times the dense one (its grouped GEMMs' fitted fraction of a dense GEMM's rate brings it in a
    # little: a slower compute roof meets the weights' memory roof sooner)
    assert serve(model="deepseek-v3", gpu="h200", gpus=8, precision="fp8")["compute_bound_batch"] > 9 * 277


def test_speculative_decoding_speedup():
    plain = serve(model="llama-3.1-70b", gpu="h100", gpus=4, batch=1)
    spec = serve(model="llama-3.1-70b", gpu="h100", gpus=4, batch=1, draft="llama-3.2-1b", draft_tokens=4,
                 acceptance=0.8)
    e = (1 - 0.8**5) / (1 - 0.8)
    assert spec["spec_tokens_per_pass"] == pytest.approx(e)
    assert spec["spec_speedup"] == pytest.approx(spec["decode_step_s"] / (spec["spec_pass_s"] / e))
    assert spec["tpot_s"] == pytest.approx(spec["tpot_without_draft_s"] / spec["spec_speedup"])
    assert plain["tpot_s"] == pytest.approx(spec["tpot_without_draft_s"])
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
    assert basis["gemm_efficiency"][:2] == ("measured", 0.75)
    assert "measured on NVIDIA H100 80GB HBM3" in basis["gemm_efficiency"][2]
    other = serve(model="llama-3.1-70b", gpu="h200", gpus=8, calibration=str(path))
    assert "calibration-device" in codes(other)


def test_long_context_decode_counts_attention():
    short = serve(model="llama-3.1-70b", gpu="h100", gpus=8, prompt=1000)
    long = serve(model="llama-3.1-70b", gpu="h100", gpus=8, prompt=120_000)
    # 4 · L · d · ctx = 4 · 80 · 8192 · 120k = 0.31 TFLOP per token on top of 2N = 0.14 TFLOP
    assert long["decode_flops_per_token"] > 3 * short["decode_flops_per_token"]


# ------------------------------------------------------------------ review fixes
def test_waterfall_keeps_every_step_in_the_order_given():
    """A knob may repeat: batch=32, precision=fp8, batch=128 is three steps, in that order (it was a dict,
    which kept one batch, the last, in the first batch's place)."""
    r = serve(model="llama-3.1-8b", gpu="h100", price="2.95/h", waterfall="batch=32,precision=fp8,batch=128")
    rows = r["waterfall"]
    assert [x["step"] for x in rows] == ["baseline", "batch=32", "precision=fp8", "batch=128"]
    assert [x["batch"] for x in rows] == [1, 32, 32, 128]
    # each row is the serve calculator on the request as it stands after that step
    for row, kw in zip(rows[1:], [dict(batch=32), dict(batch=32, precision="fp8"), dict(batch=128, precision="fp8")]):
        assert row["tokens_per_s"] == pytest.approx(serve(model="llama-3.1-8b", gpu="h100", **kw)["tokens_per_s"])
    assert rows[3]["speedup"] == pytest.approx(rows[3]["tokens_per_s"] / rows[2]["tokens_per_s"])
    # repeated values arrive as a list too (the CLI's repeated --waterfall, the web form, a TOML array)
    again = serve(model="llama-3.1-8b", gpu="h100", waterfall=["batch=64", "batch=64"])
    assert [x["step"] for x in again["waterfall"]] == ["baseline", "batch=64", "batch=64"]
    assert again["waterfall"][2]["speedup"] == pytest.approx(1.0)


def test_waterfall_value_with_a_thousands_comma_stays_one_step():
    r = serve(model="llama-3.1-8b", gpu="h100", gpus=8, prompt=100, output=100, waterfall="batch=1,024,precision=fp8")
    assert [x["step"] for x in r["waterfall"]] == ["baseline", "batch=1,024", "precision=fp8"]
    assert r["waterfall"][1]["batch"] == 1024


def test_waterfall_step_that_does_not_fit_shows_no_gain():
    """batch=100000 on one H100 holds at most 355 sequences of 1,300 tokens (8B, bf16, 85.06 GB reported by the
    runtime, 90% usable): the step is marked as not fitting, with no tokens/s, $/M or speed-up, and the next step
    that fits is compared with the last one that did."""
    r = serve(model="llama-3.1-8b", gpu="h100", price="2.95/h", waterfall="batch=100000,precision=fp8,batch=256")
    base, huge, fp8, b256 = r["waterfall"]
    assert huge["fits"] is False and huge["max_batch"] == 355 and huge["binds"] == "memory capacity"
    assert huge["tokens_per_s"] is None and huge["usd_per_million_output_tokens"] is None
    assert "speedup" not in huge and huge["why"] == ("at most 355 sequences of 1,300 tokens fit on 1 x H100 SXM, "
                                                     "not 100,000")
    assert fp8["fits"] is False and fp8["max_batch"] > 355  # fp8 weights leave room for more, still not 100,000
    assert b256["fits"] is True
    assert b256["speedup"] == pytest.approx(b256["tokens_per_s"] / base["tokens_per_s"])
    msgs = [w.message for w in r.warnings if w.code == "waterfall-does-not-fit"]
    assert len(msgs) == 2 and "step batch=100000 does not fit" in msgs[0]
    assert msgs[0].endswith("the next step that fits is compared with baseline")


def test_waterfall_bad_step_is_one_line():
    from napkin.errors import InputError

    with pytest.raises(InputError, match=r"waterfall must be NAME=VALUE; got fp8 \(e\.g\."):
        serve(model="llama-3.1-8b", gpu="h100", waterfall="batch=64,fp8")
    with pytest.raises(InputError, match="waterfall has no value; got batch="):
        serve(model="llama-3.1-8b", gpu="h100", waterfall="batch=")


def test_tp_beyond_the_scale_up_domain_runs_at_the_scale_out_bandwidth():
    """An HGX H100 board joins 8 GPUs over NVLink (450 GB/s each way); TP 16 spans two boards, and a ring
    all-reduce runs at its slowest hop: one 400 Gb/s NIC per GPU, 50 GB/s (NVIDIA DGX H100 User Guide)."""
    r = serve(model="llama-3.1-405b", gpu="h100", tp=16, batch=8, allreduce_latency="10us")
    assert r["tp_link_bytes_per_s"] == 50e9
    per = 2 * 15 / 16 * 8 * 16384 * 2 / (50e9 * 0.82) + 10e-6  # d_model 16384, batch 8, bf16 activations
    assert allreduce_row(r)["seconds"] == pytest.approx(2 * 126 * per, rel=1e-12)
    w = next(w.message for w in r.warnings if w.code == "beyond-scale-up-domain")
    assert "TP 16 spans 2 scale-up domains of 8 H100 SXM" in w and "50 GB/s per GPU, not 450 GB/s" in w
    a = {x.name: x for x in r.assumptions}
    assert a["scale_out_bandwidth"].value == 50e9 and a["scale_out_bandwidth"].basis == "assumed"
    given = serve(model="llama-3.1-405b", gpu="h100", tp=16, batch=8, scale_out_bandwidth="100GB/s")
    assert given["tp_link_bytes_per_s"] == 100e9
    assert {x.name: x.basis for x in given.assumptions}["scale_out_bandwidth"] == "given"
    inside = serve(model="llama-3.1-405b", gpu="h100", tp=8, batch=8)
    assert "tp_link_bytes_per_s" not in inside.results and "beyond-scale-up-domain" not in codes(inside)
    # a bridged A100 PCIe pair is a domain of 2: TP 4 leaves the bridge (300 GB/s each way) for the server's PCIe
    # Gen4 (32 GB/s each way), slower than the NIC; TP 16 leaves the 8-card server too
    pcie = serve(model="llama-3.1-70b", gpu="a100-pcie-80gb", tp=4)
    assert pcie["tp_link_bytes_per_s"] == 32e9 and "beyond-scale-up-domain" in codes(pcie)
    # an NVL72 rack is one domain of 72: TP 16 stays on NVLink
    assert "beyond-scale-up-domain" not in codes(serve(model="llama-3.1-405b", gpu="gb200", tp=16))


def test_prompt_beyond_the_context_window_warns():
    """Llama 3.1 70B reads 131,072 tokens (model card: 128k); GPT-2 1,024 (n_positions)."""
    r = serve(model="llama-3.1-70b", gpu="h100", gpus=8, prompt=300_000)
    msg = next(w.message for w in r.warnings if w.code == "context-too-long")
    assert msg.startswith("300,000 prompt + 300 output tokens exceed Llama 3.1 70B's 131,072-token context window")
    gpt2 = serve(model="gpt2", gpu="h100", prompt=5000)
    assert "1,024-token context window" in next(w.message for w in gpt2.warnings if w.code == "context-too-long")
    edge = serve(model="gpt2", gpu="h100", prompt=724, output=300)  # 1,024 exactly: fits the window
    assert "context-too-long" not in codes(edge)


def _config(tmp_path, **over):
    import json

    cfg = {"model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64, "num_hidden_layers": 80,
           "intermediate_size": 28672, "vocab_size": 128256, "max_position_embeddings": 131072}
    cfg.update(over)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_config_without_kv_heads_is_a_warning_and_keeps_the_loaders_note(tmp_path):
    """Llama 3.1 70B's shape with num_key_value_heads left out: read as MHA (64 KV heads, the transformers
    default), 8x the real cache; serve warns and keeps the loader's note."""
    r = serve(model=_config(tmp_path), gpu="h100", gpus=8)
    msg = next(w.message for w in r.warnings if w.code == "kv-heads")
    assert "has no num_key_value_heads, so it is read as MHA with 64 KV heads" in msg and "(8x with 8 KV heads)" in msg
    assert any(n.startswith("num_key_value_heads is absent: read as MHA") for n in r.notes)
    assert r["kv_bytes_per_token"] == 2 * 80 * 64 * 128 * 2  # 2.6 MB: 8x the 327.7 kB of the real 70B


def test_config_listing_one_kv_head_per_query_head_is_a_warning(tmp_path):
    r = serve(model=_config(tmp_path, num_key_value_heads=64), gpu="h100", gpus=8)
    msg = next(w.message for w in r.warnings if w.code == "kv-heads")
    assert "lists as many KV heads as query heads (64) at d_model 8,192" in msg
    ok = serve(model=_config(tmp_path, num_key_value_heads=8), gpu="h100", gpus=8)
    assert "kv-heads" not in codes(ok)
    # a catalog MHA entry is checked against its published count: a note, not a warning (GPT-3: 96 heads)
    gpt3 = serve(model="gpt-3-175b", gpu="h100", gpus=8)
    assert "kv-heads" not in codes(gpt3) and any("caches K and V for all 96 heads" in n for n in gpt3.notes)


def test_gpus_beyond_the_scale_up_domain_default_to_pipeline_stages():
    """Review: --gpus 16 on H100 made one TP group of 16 across two boards, and then warned to keep TP within 8."""
    import napkin

    r = napkin.serve(model="llama-3.1-70b", gpu="h100", gpus=16, batch=16)
    assert (r["tp"], r["gpus"]) == (8, 16) and "beyond-scale-up-domain" not in [w.code for w in r.warnings]
    assert ("--gpus 16 spans more than one scale-up domain of 8: TP 8 within it and 2 pipeline stages (give --tp "
            "for another split)") in r.notes
    asked = napkin.serve(model="llama-3.1-70b", gpu="h100", gpus=16, tp=16, batch=16)  # asked for: kept, warned
    assert asked["tp"] == 16 and "beyond-scale-up-domain" in [w.code for w in asked.warnings]
    assert napkin.serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=16)["tp"] == 8  # within a board: one group


def test_the_default_split_keeps_stages_within_the_layers():
    """Review: --gpus 32 on a 16-layer model split into TP 1 x 32 stages and refused; it takes the split whose
    stages fit, or one TP group as before."""
    import napkin
    from napkin import catalog

    r = napkin.serve(model="llama-3.2-1b", gpu="h100", gpus=32)
    assert r["gpus"] == 32 and 32 // r["tp"] <= catalog.model("llama-3.2-1b").n_layers
