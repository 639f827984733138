"""One decode step and one prefill step: the operator model (formulas.operators) is the one serve, its speculative
draft and verification, plan serve, journey and bill --self-hosted run; by hand; scalars and arrays agree; the
capacity formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate, catalog
from napkin.formulas import capacity as cap
from napkin.formulas import operators as op
from napkin.formulas import serving as sv


@pytest.fixture
def calls(monkeypatch):
    """Every call of the operator model's step (its operators, as step_operators' table and step_seconds' time
    alone both take them), with the tokens and shapes each was given."""
    seen: list[tuple] = []
    real = op._operators

    def spy(tokens, **kw):
        seen.append((tokens, kw))
        return real(tokens, **kw)

    monkeypatch.setattr(op, "_operators", spy)
    return seen


def test_serve_times_its_steps_with_the_operator_model(calls):
    r = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=16, tp=8, batch=32, draft="llama-3.2-1b",
                  draft_tokens=4)
    tokens = [t for t, _ in calls]
    assert 16 * 5 in tokens  # the verification pass: k + 1 tokens for each sequence of a 16-sequence micro-batch
    assert any(kw["shapes"].n_layers == 16 for _, kw in calls)  # the 1B draft, on the target's TP group
    assert any(kw["shapes"].n_layers == 80 and kw["tp"] == 8 for _, kw in calls)
    # decode_step_s is the operator table's sum, nothing added
    dec = [x["seconds"] for x in r["operators"] if x["step"] == "decode"]
    assert r["decode_step_s"] == pytest.approx(sum(dec), rel=1e-12)


def test_the_draft_rides_its_targets_ring_over_pcie(calls):
    """On four L40S (no NVLink) the draft model's all-reduces cross the same PCIe ring as the target's: the same
    fitted fraction of PCIe's rate and the same 2(n − 1) steps of fixed time."""
    calculate("serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", tp=4, batch=8, draft="llama-3.2-1b",
              draft_tokens=4)
    target = next(kw["rates"] for _, kw in calls if kw["shapes"].n_layers == 80)
    draft = next(kw["rates"] for _, kw in calls if kw["shapes"].n_layers == 16)
    assert draft.link_bytes_per_s == target.link_bytes_per_s < 32e9
    assert draft.allreduce_latency_s == target.allreduce_latency_s == pytest.approx(2 * 3 * 3.2e-6)


def test_plan_serve_times_its_grid_with_the_same_operator_model(calls):
    calculate("plan-serve", model="llama-3.1-70b", rate="10/s", gpu="h100", batch="16,64", max_gpus=8)
    arrays = [t for t, _ in calls if isinstance(t, np.ndarray)]
    assert arrays and arrays[0].shape[-1] == 2  # the grid's batch axis, in one call
    assert any(isinstance(kw["tp"], np.ndarray) for _, kw in calls)  # every TP degree at once


def test_a_changed_combination_changes_every_command(monkeypatch):
    """Were a step the max of its operators instead of their sum, serve and plan serve would both say so:
    nothing sums a step on its own."""
    monkeypatch.setattr(op, "total_seconds", lambda ops: np.maximum.reduce([o.seconds for o in ops.values()]))
    r = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=8, batch=64)
    dec = [x["seconds"] for x in r["operators"] if x["step"] == "decode"]
    assert r["decode_step_s"] == pytest.approx(max(dec))
    p = calculate("plan-serve", model="llama-3.1-70b", rate="10/s", gpu="h100", batch="64", max_gpus=8)
    same = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=p["ranking"][0]["gpus"],
                     tp=p["ranking"][0]["tp"], batch=64)
    assert p["ranking"][0]["ttft_s"] == pytest.approx(same["ttft_s"], rel=1e-9)
    j = calculate("journey", model="llama-3.1-70b", gpu="h100", gpus=8, precision="bf16")
    one = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=8, batch=1, scheduling="static")
    assert j["decode_s_per_token"] == pytest.approx(one["decode_step_s"], rel=1e-12)
    assert j["decode_s_per_token"] == pytest.approx(max(x["seconds"] for x in one["operators"]
                                                        if x["step"] == "decode"), rel=1e-12)


def test_journey_and_bill_time_their_steps_with_the_operator_model(calls):
    calculate("journey", model="llama-3.1-70b", gpu="h100", gpus=4, precision="bf16", batch=32)
    assert any(kw["tp"] == 4 and kw["shapes"].n_layers == 80 for _, kw in calls)
    assert {1.0, 32.0} <= {t for t, _ in calls}  # one user's decode step, and the batch's
    calls.clear()
    calculate("bill", model="claude-sonnet-4", serve_model="llama-3.1-70b", self_hosted=True, gpu="h100", gpus=4,
              price="2.50/h", as_of="2025-10-01")
    assert any(kw["tp"] == 4 and kw["shapes"].n_layers == 80 for _, kw in calls)


RATES = op.Rates(dense_flops_per_s=989.5e12, attention_flops_per_s=989.5e12, memory_bytes_per_s=3.35e12,
                 bandwidth_efficiency=0.8, gemm_efficiency=0.6, gemm_half_tokens=32.0, attention_efficiency=0.5,
                 link_bytes_per_s=450e9, allreduce_latency_s=10e-6, per_layer_s=200e-6, per_layer_decode_s=50e-6,
                 per_step_s=1e-3, elementwise_passes=4.0, mlp_flops_per_s=989.5e12, mlp_gemm_efficiency=0.6)
BW = 3.35e12 * 0.8


def test_decode_step_by_hand_70b_on_8_h100():
    """Llama 3.1 70B (80 layers, d 8192, 64 heads and 8 KV heads of 128, MLP 28672, vocabulary 128,256), bf16,
    TP 8, batch 16 at 1,150 tokens of context: every operator written out, each bandwidth-bound at 16 rows."""
    m = catalog.model("llama-3.1-70b")
    shapes = m.layer_shapes(8, kv_bytes_per_value=2.0, bytes_per_weight=2.0)
    ops = op.step_operators(16.0, kv_tokens=16 * 1150.0, prefill_pairs=0.0, logits=16.0, shapes=shapes, rates=RATES,
                            tp=8)

    def gemm(k, n):  # the weight once, the activations in and out, over the achieved bandwidth
        return (k * n * 2 + 16 * (k + n) * 2) / BW

    assert ops["qkv"].seconds == pytest.approx(80 * gemm(8192, (64 + 2 * 8) * 128 / 8), rel=1e-12)
    assert ops["attention_out"].seconds == pytest.approx(80 * gemm(64 * 128 / 8, 8192), rel=1e-12)
    assert ops["mlp"].seconds == pytest.approx(80 * (gemm(8192, 2 * 28672 / 8) + gemm(28672 / 8, 8192)), rel=1e-12)
    # each GPU holds one of the 8 KV heads: 2 · 128 · 2 bytes per token per layer, read by the batch's 16 · 1,150
    assert ops["attention"].seconds == pytest.approx(80 * 16 * 1150 * 2 * 128 * 2 / BW, rel=1e-12)
    assert ops["elementwise"].seconds == pytest.approx(80 * 16 * (4 * 8192 + 2 * 28672 / 8 + 28672 / 8) * 2 / BW,
                                                       rel=1e-12)
    assert ops["allreduce"].seconds == pytest.approx(80 * 2 * (2 * 7 / 8 * 16 * 8192 * 2 / 450e9 + 10e-6), rel=1e-12)
    assert ops["layer_overhead"].seconds == pytest.approx(80 * 50e-6)  # a decode-only step: the replayed graph's
    assert ops["lm_head"].seconds == pytest.approx(gemm(8192, 128256 / 8), rel=1e-12)
    assert ops["step_overhead"].seconds == 1e-3
    assert op.total_seconds(ops) == pytest.approx(sum(o.seconds for o in ops.values()), rel=1e-12)
    for name in ("qkv", "attention_out", "mlp", "lm_head"):  # 16 rows: far below the ridge
        assert ops[name].memory_s > ops[name].compute_s, name


def test_a_prefill_is_the_whole_pass_on_the_tp_group():
    """8k tokens of Llama 3.1 70B on 2 H100s: the GEMMs compute-bound at η(8192) of the GEMM peak, and one pair
    of all-reduces of 8,192 · 8,192 bf16 values per layer."""
    m = catalog.model("llama-3.1-70b")
    shapes = m.layer_shapes(2, kv_bytes_per_value=2.0, bytes_per_weight=2.0)
    T = 8192.0
    ops = op.step_operators(T, kv_tokens=0.0, prefill_pairs=T * T / 2, logits=1.0, shapes=shapes, rates=RATES, tp=2)
    eta = 0.6 * T / (T + 32)
    mlp_flops = 80 * 2 * T * (8192 * 2 * 28672 / 2 + 28672 / 2 * 8192)
    assert ops["mlp"].flops == pytest.approx(mlp_flops, rel=1e-12)
    assert ops["mlp"].seconds == ops["mlp"].compute_s == pytest.approx(mlp_flops / (989.5e12 * eta), rel=1e-12)
    # causal attention: T²/2 query-key pairs, 4 · d_attn / tp FLOPs each, at the attention kernel's efficiency
    assert ops["attention"].seconds == pytest.approx(80 * T * T / 2 * 4 * 8192 / 2 / (989.5e12 * 0.5), rel=1e-12)
    assert ops["allreduce"].seconds == pytest.approx(80 * 2 * (2 * 1 / 2 * T * 8192 * 2 / 450e9 + 10e-6), rel=1e-12)
    assert ops["layer_overhead"].seconds == pytest.approx(80 * 200e-6)  # prompt tokens: kernels launched one by one


@settings(max_examples=40, deadline=None)
@given(tokens=st.lists(st.integers(0, 8192), min_size=1, max_size=6), tp=st.sampled_from([1, 2, 4, 8, 16]),
       ctx=st.floats(0, 1e5), model=st.sampled_from(["llama-3.1-70b", "deepseek-v3", "mistral-7b"]))
def test_a_step_on_arrays_is_the_step_on_each_scalar(tokens, tp, ctx, model):
    """The planner sweeps batches and TP degrees in one call: each element is the scalar step, operator by operator."""
    m = catalog.model(model)
    arr = np.array(tokens, dtype=float)
    tps = np.full_like(arr, float(tp))
    shapes = m.layer_shapes(tps, kv_bytes_per_value=2.0, bytes_per_weight=1.0)
    got = op.step_operators(arr, kv_tokens=arr * ctx, prefill_pairs=0.0, logits=arr, shapes=shapes, rates=RATES,
                            tp=tps)
    for i, t in enumerate(tokens):
        one = op.step_operators(float(t), kv_tokens=t * ctx, prefill_pairs=0.0, logits=float(t),
                                shapes=m.layer_shapes(float(tp), kv_bytes_per_value=2.0, bytes_per_weight=1.0),
                                rates=RATES, tp=float(tp))
        for name in op.OPERATORS:
            assert float(np.broadcast_to(got[name].seconds, arr.shape)[i]) == pytest.approx(
                float(one[name].seconds), rel=1e-12, abs=1e-18), name


@settings(max_examples=60, deadline=None)
@given(tokens=st.lists(st.integers(0, 8192), min_size=1, max_size=6), tp=st.sampled_from([1, 2, 8]),
       ctx=st.floats(0, 1e5), prefill=st.sampled_from([0.0, 1.0, 5e6]), mlp_fp8=st.booleans(),
       model=st.sampled_from(["llama-3.1-70b", "deepseek-v3", "mistral-7b"]), scalar=st.booleans())
def test_the_time_alone_is_the_operator_tables_sum(tokens, tp, ctx, prefill, mlp_fp8, model, scalar):
    """step_seconds (the planner's time alone: each GEMM gated at its end, a gate skipped where every cell has
    tokens, the MLP sharing the projections' rate when it is the same, no prefill term in a decode-only step)
    gives the sum of step_operators' table: cells with no tokens, decode-only and mixed steps, an MoE model, an
    MLP at its own (fp8) rate, arrays and scalars."""
    m = catalog.model(model)
    rates = RATES._replace(mlp_flops_per_s=2 * 989.5e12, mlp_gemm_efficiency=0.55) if mlp_fp8 else RATES
    arr = float(tokens[0]) if scalar else np.array(tokens, dtype=float)
    kw = dict(kv_tokens=arr * ctx, prefill_pairs=prefill * (arr > 0), logits=arr,
              shapes=m.layer_shapes(float(tp), kv_bytes_per_value=2.0, bytes_per_weight=1.0), rates=rates,
              tp=float(tp))
    alone = op.step_seconds(arr, **kw)
    table = op.total_seconds(op.step_operators(arr, **kw))
    assert np.allclose(alone, table, rtol=1e-12, atol=0.0)
    mlp = op.step_operators(arr, **kw)["mlp"].seconds  # the MLP at its own rate, however the table shares it
    own = op.mlp_time(arr, shapes=kw["shapes"], rates=rates).seconds
    assert np.allclose(mlp, kw["shapes"].n_layers * own, rtol=1e-12)
    if not scalar:
        assert np.all(np.asarray(alone)[np.array(tokens) == 0] == 0.0)  # no tokens, no step


# --------------------------------------------------------------------------- capacity
def test_replicas_for_a_rate():
    # 10 requests/s on replicas that sustain 3/s each, loaded to 70%: 10 / 2.1 = 4.76 -> 5
    assert cap.replicas_for_rate(10.0, requests_per_s_per_replica=3.0, utilization=0.7) == 5.0
    # 2.1 / 0.3 is 7.000000000000001 in floating point: 7 replicas, not 8
    assert 2.1 / 0.3 > 7 and cap.replicas_for_rate(2.1, requests_per_s_per_replica=0.3, utilization=1.0) == 7.0
    got = cap.replicas_for_rate(np.array([1.0, 10.0]), requests_per_s_per_replica=3.0, utilization=0.7)
    assert got.tolist() == [1.0, 5.0]


def test_input_tokens_pay_for_the_prefill_time():
    # a $20/h replica spends 180 ms on a 1,000-token prompt: 20 / 3600 · 0.18 / 1000 · 1e6 = $1.00 per million
    assert sv.usd_per_million_input_tokens(20.0, prefill_s=0.18, prompt_tokens=1000) == pytest.approx(1.0, rel=1e-12)
    assert sv.usd_per_million_input_tokens(20.0, prefill_s=0.18, prompt_tokens=1000, utilization=0.5) == (
        pytest.approx(2.0, rel=1e-12))
    assert math.isfinite(sv.usd_per_million_input_tokens(1.0, prefill_s=1.0, prompt_tokens=1.0))


def test_output_tokens_pay_for_the_rest():
    # 300 tokens at 1,000 tokens/s hold the replica 0.3 s, 0.18 s of it the prompt's: 0.12 s / 300 tokens on $20/h
    got = sv.usd_per_million_output_tokens(20.0, tokens_per_s=1000.0, prefill_s=0.18, output_tokens=300)
    assert got == pytest.approx(20 / 3600 * 0.12 / 300 * 1e6, rel=1e-12)
