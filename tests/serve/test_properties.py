"""Invariants of the serving model (hypothesis, modest example counts)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate
from napkin.formulas import serving as sv

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"]
GPUS = ["h100", "h200", "b200"]
FAST = settings(max_examples=25, deadline=None)


def serve(**kw):
    return calculate("serve", **kw)


@FAST
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), tp=st.sampled_from([1, 2, 4, 8]),
       b1=st.integers(1, 512), b2=st.integers(1, 512), prompt=st.integers(1, 200_000))
def test_decode_step_non_decreasing_in_batch_and_tokens_per_sequence_non_increasing(model, gpu, tp, b1, b2, prompt):
    lo, hi = sorted((b1, b2))
    a = serve(model=model, gpu=gpu, tp=tp, batch=lo, prompt=prompt, precision="fp8")
    b = serve(model=model, gpu=gpu, tp=tp, batch=hi, prompt=prompt, precision="fp8")
    assert b["decode_step_s"] >= a["decode_step_s"] * (1 - 1e-12)
    assert b["tokens_per_s_per_sequence"] <= a["tokens_per_s_per_sequence"] * (1 + 1e-12)


@FAST
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), tp=st.sampled_from([1, 2, 8]),
       batch=st.integers(1, 256), p1=st.integers(1, 100_000), p2=st.integers(1, 100_000))
def test_decode_step_non_decreasing_in_context(model, gpu, tp, batch, p1, p2):
    lo, hi = sorted((p1, p2))
    a = serve(model=model, gpu=gpu, tp=tp, batch=batch, prompt=lo)
    b = serve(model=model, gpu=gpu, tp=tp, batch=batch, prompt=hi)
    assert b["decode_step_s"] >= a["decode_step_s"] * (1 - 1e-12)


@FAST
@given(model=st.sampled_from(MODELS), t1=st.sampled_from([1, 2, 4, 8, 16, 32]), t2=st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_more_tensor_parallelism_never_raises_weights_per_gpu(model, t1, t2):
    lo, hi = sorted((t1, t2))
    a = serve(model=model, gpu="h100", tp=lo)
    b = serve(model=model, gpu="h100", tp=hi)
    assert b["weights_bytes_per_gpu"] <= a["weights_bytes_per_gpu"]
    assert b["kv_bytes_per_gpu"] <= a["kv_bytes_per_gpu"]


@FAST
@given(model=st.sampled_from(MODELS + ["llama-3.1-405b"]), batch=st.integers(1, 2048),
       prompt=st.integers(1, 130_000), precision=st.sampled_from(["bf16", "fp8", "int4"]))
def test_fits_is_monotone_in_gpus(model, batch, prompt, precision):
    fits = [serve(model=model, gpu="h100", gpus=n, batch=batch, prompt=prompt, precision=precision)["fits"]
            for n in (1, 2, 4, 8, 16)]
    first = fits.index(True) if True in fits else len(fits)
    assert all(fits[first:])


@FAST
@given(model=st.sampled_from(MODELS), tp=st.sampled_from([1, 2, 8]), prompt=st.integers(1, 60_000),
       prefix=st.integers(0, 50_000))
def test_max_batch_is_the_edge_of_fitting(model, tp, prompt, prefix):
    prefix = min(prefix, prompt - 1)
    mb = serve(model=model, gpu="h100", tp=tp, prompt=prompt, cached_prefix=prefix)["max_batch"]
    if mb >= 1:
        assert serve(model=model, gpu="h100", tp=tp, prompt=prompt, cached_prefix=prefix, batch=mb)["fits"]
    assert not serve(model=model, gpu="h100", tp=tp, prompt=prompt, cached_prefix=prefix, batch=mb + 1)["fits"]


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0, 1), k=st.integers(1, 16))
def test_speculative_tokens_per_pass_between_1_and_k_plus_1(a, k):
    e = sv.speculative_tokens_per_pass(a, draft_tokens=k)
    assert 1.0 <= e <= k + 1 + 1e-9
    if a < 1:
        assert e == pytest.approx((1 - a ** (k + 1)) / (1 - a))
    assert sv.speculative_tokens_per_pass(min(a + 0.01, 1.0), draft_tokens=k) >= e


@settings(max_examples=60, deadline=None)
@given(b=st.floats(1, 4096), e=st.sampled_from([8, 64, 256]), k=st.sampled_from([1, 2, 8]))
def test_moe_reads_between_active_and_total(b, e, k):
    shared, routed = 10.0, 1000.0
    got = sv.moe_weights_read_bytes(b, shared_bytes=shared, routed_bytes=routed, n_experts=e, n_active_experts=k)
    assert shared + routed * k / e - 1e-9 <= got <= shared + routed + 1e-9


def test_formulas_take_arrays_and_scalars_alike():
    B = np.array([1.0, 8.0, 64.0])
    tp = np.array([1.0, 2.0, 8.0])
    arr = sv.tp_comm_seconds(80, message_bytes=B * 8192 * 2, tp=tp, link_bytes_per_s_per_direction=450e9,
                             latency_s=10e-6)
    one = [sv.tp_comm_seconds(80, message_bytes=b * 8192 * 2, tp=t, link_bytes_per_s_per_direction=450e9,
                              latency_s=10e-6) for b, t in zip(B, tp)]
    assert arr == pytest.approx(one)
    assert arr[0] == 0.0  # one GPU: no all-reduce
    assert sv.kv_shards(np.array([1, 8, 16]), n_kv_heads=8).tolist() == [1.0, 8.0, 8.0]


@FAST
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), n=st.sampled_from([1, 2, 4, 8]),
       t=st.sampled_from([1, 2, 4, 8]), batch=st.sampled_from([1, 16, 96, 512]))
def test_planner_grid_agrees_with_the_serve_calculator(model, gpu, n, t, batch):
    """The vectorised grid and `napkin serve` are one model: the same cell gives the same figures."""
    from napkin.plan.serve import PlanServeRequest, evaluate_grid
    from napkin.request import parse_request

    if t > n or n % t:
        return
    req = parse_request(PlanServeRequest, {"model": model, "rate": "1/s", "gpu": gpu, "batch": str(batch),
                                           "max_gpus": 8})
    g = evaluate_grid(req)
    a = g["arrays"]
    sizes = [1, 2, 4, 8]
    cell = (0, sizes.index(n), sizes.index(t), 0)
    if not a["valid"][cell]:
        return
    r = serve(model=model, gpu=gpu, gpus=n, tp=t, batch=batch)
    assert a["tpot_s"][cell] == pytest.approx(r["decode_step_s"], rel=1e-9)
    assert a["ttft_s"][cell] == pytest.approx(r["ttft_s"], rel=1e-9)
    assert bool(a["fits"][cell]) == r["fits"]


def test_tp_link_leaves_the_scale_up_domain_at_the_scale_out_bandwidth():
    """NVLink (450 GB/s each way) inside an 8-GPU HGX board; beyond it the 50 GB/s NIC per GPU binds the ring;
    a link slower than the NIC (PCIe, 32 GB/s each way) stays the bound. Scalars and arrays alike."""
    tp = np.array([1.0, 8.0, 16.0, 64.0])
    got = sv.tp_link_bytes_per_s(tp, scale_up_domain=8, link_bytes_per_s_per_direction=450e9)
    assert got.tolist() == [450e9, 450e9, 50e9, 50e9]
    assert [sv.tp_link_bytes_per_s(t, scale_up_domain=8, link_bytes_per_s_per_direction=450e9) for t in (8, 16)] == [
        450e9, 50e9]
    assert sv.tp_link_bytes_per_s(2, scale_up_domain=1, link_bytes_per_s_per_direction=32e9) == 32e9
    assert sv.tp_link_bytes_per_s(16, scale_up_domain=8, link_bytes_per_s_per_direction=450e9,
                                  scale_out_bytes_per_s_per_gpu=100e9) == 100e9
