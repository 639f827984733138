"""One decode step and one prefill step: the formulas of formulas.serving are the ones serve, its speculative
draft and verification, plan serve and journey run; scalars and arrays agree; the capacity formulas."""

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
    """Every call of the operator model's step, with the tokens and shapes each was given."""
    seen: list[tuple] = []
    real = op.step_operators

    def spy(tokens, **kw):
        seen.append((tokens, kw))
        return real(tokens, **kw)

    monkeypatch.setattr(op, "step_operators", spy)
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


def test_decode_step_by_hand_70b_on_8_h100():
    """Llama 3.1 70B, bf16, 8 x H100, batch 16, 1,150 tokens of context: the parts written out."""
    m = catalog.model("llama-3.1-70b")
    kv = m.kv_bytes_per_token(2.0) * 1150
    p = sv.decode_step_parts(16, tp=8, pp=1, n_layers=80, d_model=8192, shared_weight_bytes=m.params * 2,
                             kv_read_bytes_per_sequence=kv, kv_shards=8, flops_per_token=1e11,
                             memory_bytes_per_s=3.35e12, dense_flops_per_s=989.5e12, bandwidth_efficiency=0.8,
                             compute_efficiency=0.4, link_bytes_per_s_per_direction=450e9, allreduce_latency_s=10e-6)
    assert p.memory_s == pytest.approx((m.params * 2 / 8 + 16 * kv / 8) / (3.35e12 * 0.8), rel=1e-12)
    assert p.compute_s == pytest.approx(16 * 1e11 / 8 / (989.5e12 * 0.4), rel=1e-12)
    assert p.comm_s == pytest.approx(80 * 2 * (2 * 7 / 8 * 16 * 8192 * 2 / 450e9 + 10e-6), rel=1e-12)
    assert sv.step_seconds(p) == pytest.approx(p.memory_s + p.comm_s, rel=1e-12)  # bandwidth-bound
    assert sv.step_seconds(p, pp=4) == pytest.approx(4 * (p.memory_s + p.comm_s), rel=1e-12)


def test_a_prefill_is_the_whole_pass_on_the_tp_group():
    """8k tokens of Llama 3.1 70B on 2 H100s at 40% MFU: compute-bound, one all-reduce pair per layer."""
    pf = 2 * 70.55e9 * 8192
    p = sv.prefill_step_parts(pf, weights_bytes=141.1e9, tp=2, n_layers=80, d_model=8192, new_tokens=8192,
                              memory_bytes_per_s=3.35e12, dense_flops_per_s=989.5e12, bandwidth_efficiency=0.8,
                              compute_efficiency=0.4, link_bytes_per_s_per_direction=450e9, allreduce_latency_s=0.0)
    assert p.compute_s == pytest.approx(pf / 2 / (989.5e12 * 0.4), rel=1e-12)  # 1.46 s
    assert p.memory_s == pytest.approx(141.1e9 / 2 / (3.35e12 * 0.8), rel=1e-12)
    assert p.comm_s == pytest.approx(80 * 2 * (2 * 1 / 2 * 8192 * 8192 * 2 / 450e9), rel=1e-12)
    assert sv.step_seconds(p) == pytest.approx(p.compute_s + p.comm_s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(batch=st.lists(st.integers(1, 2048), min_size=1, max_size=6), tp=st.sampled_from([1, 2, 4, 8, 16]),
       pp=st.sampled_from([1, 2, 4]), routed=st.floats(0, 1e12), kv=st.floats(0, 1e9), t=st.sampled_from([1.0, 5.0]))
def test_decode_step_on_arrays_is_the_step_on_each_scalar(batch, tp, pp, routed, kv, t):
    kw = dict(tp=tp, pp=pp, n_layers=61, d_model=7168, shared_weight_bytes=4e10, routed_weight_bytes=routed,
              n_experts=256, n_active_experts=8, kv_read_bytes_per_sequence=kv, kv_shards=min(tp, 8),
              flops_per_token=7.4e10, memory_bytes_per_s=4.8e12, dense_flops_per_s=1979e12, bandwidth_efficiency=0.8,
              compute_efficiency=0.4, link_bytes_per_s_per_direction=450e9, allreduce_latency_s=1e-5,
              tokens_per_sequence=t)
    arr = sv.decode_step_parts(np.array(batch, dtype=float), **kw)
    tot = sv.step_seconds(arr, pp=pp)
    for i, b in enumerate(batch):
        one = sv.decode_step_parts(float(b), **kw)
        assert [float(x[i]) for x in arr] == pytest.approx(list(one), rel=1e-12)
        assert float(tot[i]) == pytest.approx(sv.step_seconds(one, pp=pp), rel=1e-12)


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
