"""The serving model of issue 13: per-operator steps, the scheduler in the throughput, reported memory.

Golden values are derived by hand in the test from the published architecture (Llama 2 7B:
32 layers, d 4096, 32 heads of 128, MLP 11008, vocabulary 32000) and the catalog's A100 80GB
figures, so a change to the physics shows up as a changed number here.
"""

from __future__ import annotations

import pytest

import napkin
from napkin.catalog import efficiency as eff
from napkin.formulas import operators as op
from napkin.formulas import scheduling as sch

A100 = dict(model="llama-2-7b", gpu="a100-sxm-80gb", precision="fp16", kv_precision="fp16")


def serve(**kw):
    return napkin.serve({**A100, **kw})


def ops_of(r, step: str) -> dict[str, dict]:
    return {row["operator"]: row for row in r["operators"] if row["step"] == step}


# ------------------------------------------------------------------ the batch's own prefills
def test_static_batch_latency_includes_all_32_prefills():
    """Issue 13: batch 32, 2,048 in / 128 out, static: TTFT is the prefill of 32 x 2,048 tokens."""
    r = serve(batch=32, prompt=2048, output=128, scheduling="static")
    one = serve(batch=1, prompt=2048, output=1, scheduling="static")
    assert r["ttft_s"] == r["batch_prefill_step_s"]
    # 32 prompts cost about 32 single prefills (compute-bound: the same FLOPs, weights read once)
    assert 28 * one["ttft_s"] < r["ttft_s"] < 33 * one["ttft_s"]
    assert r["request_latency_s"] == pytest.approx(r["ttft_s"] + 127 * r["tpot_s"], rel=1e-12)
    assert r["tokens_per_s"] == pytest.approx(32 * 128 / r["request_latency_s"], rel=1e-12)
    # the old batch / TPOT leaves the prefills out and is about twice too fast here
    assert r["tokens_per_s"] < 0.6 * 32 / r["tpot_s"]


def test_continuous_throughput_pays_for_the_prefills():
    """Steady state at 32 in flight: 32 x 2,048 / 128 = 512 prompt tokens per step on average, so one step in
    four carries a whole 2,048-token prompt beside the 32 decode tokens and the others decode only."""
    r = serve(batch=32, prompt=2048, output=128)
    assert r["scheduling"] == "continuous"
    assert r["decode_sequences"] == 32  # 32 x (1 + 2048/128) = 544 tokens, inside the 8,192 budget
    assert r["prefill_tokens_per_step"] == pytest.approx(32 * 2048 / 128)
    assert r["prompt_step_tokens"] == 2048
    assert r["prompt_step_share"] == pytest.approx(0.25)
    assert r["cycle_s"] == pytest.approx(0.25 * r["mixed_step_s"] + 0.75 * r["decode_step_s"], rel=1e-12)
    assert r["tokens_per_s"] == pytest.approx(32 / r["cycle_s"], rel=1e-12)
    assert r["tpot_s"] == r["cycle_s"] > r["decode_step_s"]
    assert r["tokens_per_s"] < 32 / r["decode_step_s"]
    mixed = ops_of(r, "mixed")
    assert mixed["lm_head"]["flops"] == pytest.approx(2 * (32 + 1) * 4096 * 32000)


def test_a_lone_sequence_pays_its_prefill_once():
    """Batch 1, 1,000 in / 300 out: one step in 300 carries the prompt, so TPOT is the decode step plus a
    three-hundredth of the prefill step's extra, not a prefill step's fixed costs on every token."""
    r = serve(batch=1, prompt=1000, output=300)
    assert r["prompt_step_share"] == pytest.approx(1 / 300)
    extra = r["mixed_step_s"] - r["decode_step_s"]
    assert r["tpot_s"] == pytest.approx(r["decode_step_s"] + extra / 300, rel=1e-12)
    assert r["tpot_s"] < 1.05 * r["decode_step_s"]


def test_the_token_budget_caps_the_decode_batch():
    """min(B, C · O / (O + P)): at 2,048 in / 128 out a budget of 8,192 lets 482 of 512 decode."""
    r = serve(batch=512, prompt=2048, output=128, model="llama-3.1-8b", gpu="h100", precision="bf16",
              kv_precision="fp8")
    assert r["decode_sequences"] == pytest.approx(8192 * 128 / (128 + 2048))
    assert any("budget" in n for n in r.notes)


def test_prefill_first_pauses_decoding():
    cont = serve(batch=32, prompt=2048, output=128)
    first = serve(batch=32, prompt=2048, output=128, scheduling="prefill-first")
    assert first["tpot_s"] == first["cycle_s"] > first["decode_step_s"]
    assert first["tokens_per_s"] < cont["tokens_per_s"]  # the weights are read for prompts and decodes apart


# ------------------------------------------------------------------ per-operator steps
def test_decode_qkv_bytes_and_flops_by_hand():
    """qkv of Llama 2 7B at batch 32: K = 4096, N = (32 + 2·32)·128 = 12,288, 32 layers, fp16.

    bytes = 32 · (K·N·2 + M·(K + N)·2) = 32 · (100,663,296 + 32 · 16,384 · 2) = 3,254,779,904
    FLOPs = 32 · 2 · M · K · N = 32 · 2 · 32 · 4096 · 12288 = 103,079,215,104
    """
    d = ops_of(serve(batch=32, prompt=2048, output=128), "decode")
    assert d["qkv"]["bytes"] == 3_254_779_904
    assert d["qkv"]["flops"] == 103_079_215_104
    assert d["qkv"]["bound"] == "bandwidth"  # 32 rows: far below the ridge


def test_each_operator_takes_its_larger_roof_and_the_step_is_their_sum():
    r = serve(batch=256, prompt=1024, output=256, tp=2, gpus=2)
    for step in ("mixed", "decode"):
        rows = ops_of(r, step)
        for name, row in rows.items():
            if name == "attention":  # decode: max(KV read, its FLOPs); the prompt chunk's FLOPs add to it
                assert max(row["memory_s"], row["compute_s"]) <= row["seconds"] * (1 + 1e-12)
                assert row["seconds"] <= (row["memory_s"] + row["compute_s"]) * (1 + 1e-12)
            elif row["bound"] in ("bandwidth", "compute"):
                assert row["seconds"] == pytest.approx(max(row["memory_s"], row["compute_s"]), rel=1e-12), name
            if row["bound"] == "link":  # bytes over the link plus a latency per all-reduce
                assert row["seconds"] > row["memory_s"]
        total = sum(row["seconds"] for row in rows.values())
        assert total == pytest.approx(r[f"{step}_step_s"], rel=1e-9)
    # at a large batch the step is the sum, well above one max() over the step's bytes and FLOPs
    d = ops_of(r, "decode")
    one_max = max(sum(x["memory_s"] for x in d.values()), sum(x["compute_s"] for x in d.values()))
    assert r["decode_step_s"] > 1.1 * one_max


def test_gemm_efficiency_curve():
    """η(M) = η_max · M / (M + M½): half of η_max at M½, near η_max for a long prompt."""
    assert op.gemm_efficiency(32.0, max_efficiency=0.8, half_tokens=32.0) == pytest.approx(0.4)
    assert op.gemm_efficiency(8192.0, max_efficiency=0.8, half_tokens=32.0) == pytest.approx(0.8 * 8192 / 8224)


def test_prefill_mfu_is_predicted_not_assumed():
    short = serve(batch=1, prompt=128, output=1)
    long = serve(batch=1, prompt=2048, output=1)
    # measured (TensorRT-LLM 0.5, A100): 16 ms for 128 tokens is 35% of peak, 133 ms for 2,048 is 69%
    assert short["prefill_mfu"] < 0.7 * long["prefill_mfu"]  # fixed costs and the weight read weigh on 128 tokens
    assert 0.4 < long["prefill_mfu"] < 0.87  # below the A100's measured best GEMM


# ------------------------------------------------------------------ memory as reported
def test_usable_memory_is_the_runtime_capacity_not_the_datasheet_round_number():
    """A100 80GB: the CUDA runtime reports 79.15 GiB = 84,986,665,370 bytes; 90% usable."""
    r = serve(batch=1, prompt=1000, output=300)
    assert r["usable_bytes_per_gpu"] == pytest.approx(84_986_665_370 * 0.9)
    # max batch: (76.49 GB − 13.48 GB of weights) / (1,300 tokens x 524,288 B) = 92
    weights = 6_738_415_616 * 2
    kv_per_seq = 1300 * 2 * 32 * 32 * 128 * 2
    assert r["max_batch"] == int((84_986_665_370 * 0.9 - weights) // kv_per_seq) == 92
    # against 80e9 x 0.9 the same replica would hold 85 sequences: 8% fewer
    assert int((80e9 * 0.9 - weights) // kv_per_seq) == 85


# ------------------------------------------------------------------ scheduling formulas
def test_decode_sequences_formula():
    assert sch.decode_sequences(64, prompt_tokens=1000, output_tokens=300, chunk_tokens=8192) == 64
    assert sch.decode_sequences(4096, prompt_tokens=1000, output_tokens=300, chunk_tokens=8192) == pytest.approx(
        8192 * 300 / 1300)
    assert sch.decode_sequences(4096, prompt_tokens=1000, output_tokens=300, chunk_tokens=8192, mixed=False) == 4096


def test_a_prompt_is_cut_into_equal_chunks_of_at_most_the_room_left():
    """20,000 prompt tokens beside 32 decodes at a budget of 8,192: ⌈20000 / 8160⌉ = 3 chunks of 6,666.7."""
    n, tokens, pairs = sch.prefill_chunk_plan(20000.0, room=8192 - 32)
    assert (n, tokens) == (3, pytest.approx(20000 / 3))
    assert n * pairs == pytest.approx(20000**2 / 2)  # the causal square, shared by the chunks
    assert sch.continuous_ttft_seconds(0.01, n_chunks=n) == pytest.approx(0.03)


def test_a_long_prompt_under_load_takes_several_steps():
    r = serve(batch=8, prompt=32000, output=768, model="mistral-7b-v0.3", gpu="h100", precision="bf16",
              kv_precision="bf16")
    assert r["ttft_s"] > r["prefill_s"]  # four chunk steps, each also carrying the 8 decodes
    assert any(s.name == "ttft_s" and s.values["chunks"] == 4 for s in r.steps)  # ⌈32000 / 8184⌉


# ------------------------------------------------------------------ the new keys
def test_json_keys_kept_and_added():
    r = serve(batch=8, price="2/h").to_dict()
    for key in ("ttft_s", "tpot_s", "tokens_per_s", "request_latency_s", "max_batch", "fits", "scheduling",
                "requests_per_s", "operators"):
        assert key in r, key
    assert r["requests_per_s"] == pytest.approx(r["tokens_per_s"] / 300)
    # a request's cost splits between its prompt and its output tokens
    assert 1000 * r["usd_per_million_input_tokens"] / 1e6 + 300 * r["usd_per_million_output_tokens"] / 1e6 == \
        pytest.approx(r["usd_per_request"], rel=1e-9)


def test_fitted_parameters_are_recorded_as_fitted():
    r = serve(batch=8)
    fitted = {a.name: a for a in r.assumptions if a.basis == "fitted"}
    assert set(fitted) == {"per_layer_overhead", "per_layer_decode_overhead"}
    assert fitted["per_layer_overhead"].value == eff.fitted().per_layer_s


# ------------------------------------------------------------------ a part's own measurement
def test_a_part_with_its_own_measurement_replaces_its_familys_figure():
    """Bekman's MAMF table: A100 PCIe 252.9 of 312 TFLOPS bf16 (81.1%) against the SXM module's 271.2
    (86.9%); GB200 1822.0 of 2500 (72.9%) and 3615.6 of 5000 fp8 (72.3%) against the B200's 77.6% / 76.3%."""
    pcie, sxm = eff.family("a100-pcie-80gb"), eff.family("a100-sxm-80gb")
    assert (pcie.key, pcie.gemm_at("fp16"), pcie.attention, pcie.own) == ("a100", 0.81, 0.68, ["attention", "attention_source", "gemm", "gemm_source"])
    assert (sxm.gemm_at("fp16"), sxm.attention, sxm.own) == (0.87, 0.73, [])
    assert "252.9" in pcie.gemm_source and "252.9" not in sxm.gemm_source
    # what the part did not measure stays the family's
    assert (pcie.bandwidth, pcie.allreduce_curve_busbw) == (sxm.bandwidth, sxm.allreduce_curve_busbw)
    gb, b = eff.family("gb200"), eff.family("b200")
    assert (gb.key, gb.gemm_at("bf16"), gb.gemm_at("fp8")) == ("b200", 0.73, 0.72)
    assert (b.gemm_at("bf16"), b.gemm_at("fp8")) == (0.78, 0.76)


def test_the_b200s_fp4_fraction_is_a_published_fp4_measurement():
    """DeepGEMM pull request #348: dense FP4 x FP4 GEMMs on a B200 reach 5702 TFLOPS at 8192^3, 63.4% of its 9 PFLOPS
    dense FP4 peak; before it napkin took FP8's 76.3% for FP4. The GB200 takes it times its own FP8 fraction over
    the B200's: 0.634 x 0.723 / 0.763 = 0.60."""
    b, gb = eff.family("b200"), eff.family("gb200")
    assert b.gemm_at("fp4") == 0.63 == round(5702 / 9000, 2)
    assert gb.gemm_at("fp4") == 0.60 == round(5702 / 9000 * 0.723 / 0.763, 2)
    assert "5702" in b.gemm_source and "pull request #348" in gb.gemm_source


def test_a_compute_bound_gemm_on_the_pcie_card_runs_at_its_own_fraction():
    """Same 312 TFLOPS peak, same shapes: a prompt's GEMMs take 0.87 / 0.81 as long on the PCIe card."""
    kw = dict(batch=1, prompt=4096, output=1)
    p, s = ops_of(serve(gpu="a100-pcie-80gb", **kw), "mixed"), ops_of(serve(**kw), "mixed")
    for name in ("qkv", "attention_out", "mlp"):
        assert p[name]["flops"] == s[name]["flops"]
        assert p[name]["compute_s"] / s[name]["compute_s"] == pytest.approx(0.87 / 0.81, rel=1e-12), name
    a = {x.name: x.note for x in serve(gpu="a100-pcie-80gb", **kw).assumptions}
    assert "measured on the A100 PCIe 80GB" in a["gemm_efficiency"]
    assert "on the a100 family" in a["bandwidth_efficiency"]


@pytest.mark.parametrize("parts, problem", [
    ({"h100-sxm": {"gemm": {"bf16": 0.5}}}, "not one of this family's gpus"),
    ({"a100-pcie-80gb": {"gemn": {"bf16": 0.5}}}, "unknown field(s) gemn"),
])
def test_a_part_the_family_does_not_hold_or_an_unknown_field_is_refused(parts, problem):
    import msgspec

    entry = {**msgspec.structs.asdict(eff.families()["a100"]), "parts": parts}
    with pytest.raises(msgspec.ValidationError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        msgspec.convert(entry, eff.Family)
