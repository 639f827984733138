"""Invariants of the serving model (hypothesis, modest example counts)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate
from napkin import catalog
from napkin.formulas import operators as op
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
    shapes = catalog.model("llama-3.1-70b").layer_shapes(1, kv_bytes_per_value=2.0, bytes_per_weight=2.0)
    rates = op.Rates(*([1.0] * len(op.Rates._fields)))._replace(link_bytes_per_s=450e9, allreduce_latency_s=10e-6,
                                                                 allreduce_curve=None)
    arr = op.allreduce_time(B, shapes=shapes, rates=rates, tp=tp).seconds
    one = [op.allreduce_time(b, shapes=shapes, rates=rates, tp=t).seconds for b, t in zip(B, tp)]
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
    assert a["tpot_s"][cell] == pytest.approx(r["tpot_s"], rel=1e-9)
    assert a["tokens_per_s"][cell] == pytest.approx(r["tokens_per_s"], rel=1e-9)
    assert a["ttft_s"][cell] == pytest.approx(r["ttft_s"], rel=1e-9)
    assert bool(a["fits"][cell]) == r["fits"]


def test_tp_link_leaves_the_scale_up_domain_at_the_scale_out_bandwidth():
    """NVLink (450 GB/s each way) inside an 8-GPU HGX board; beyond it the 50 GB/s NIC per GPU binds the ring;
    a link slower than the NIC (PCIe, 32 GB/s each way) stays the bound. Scalars and arrays alike."""
    nic = catalog.default_value("scale_out_bytes_per_s_per_gpu")  # the default: one 400 Gb/s NIC per GPU
    assert nic == 50e9
    tp = np.array([1.0, 8.0, 16.0, 64.0])
    got = sv.tp_link_bytes_per_s(tp, scale_up_domain=8, link_bytes_per_s_per_direction=450e9,
                                 scale_out_bytes_per_s_per_gpu=nic)
    assert got.tolist() == [450e9, 450e9, 50e9, 50e9]
    assert [sv.tp_link_bytes_per_s(t, scale_up_domain=8, link_bytes_per_s_per_direction=450e9,
                                   scale_out_bytes_per_s_per_gpu=nic) for t in (8, 16)] == [450e9, 50e9]
    assert sv.tp_link_bytes_per_s(2, scale_up_domain=1, link_bytes_per_s_per_direction=32e9,
                                  scale_out_bytes_per_s_per_gpu=nic) == 32e9
    assert sv.tp_link_bytes_per_s(16, scale_up_domain=8, link_bytes_per_s_per_direction=450e9,
                                  scale_out_bytes_per_s_per_gpu=100e9) == 100e9


@settings(max_examples=60, deadline=None)
@given(L=st.integers(1, 128), lw_share=st.floats(0, 1), d=st.sampled_from([1024.0, 4096.0, 16384.0]),
       T=st.integers(1, 200_000), P=st.integers(0, 200_000), extra=st.integers(0, 100_000),
       causal=st.booleans(), n_active=st.floats(1e8, 1e12))
def test_a_window_at_least_the_context_gives_exactly_the_full_attention_figures(L, lw_share, d, T, P, extra, causal,
                                                                                  n_active):
    """W ≥ P + T (and W ≥ ctx): the sliding-window formulas return exactly (==) the full-attention ones,
    4 · L · d · T · (P + T/2) and 2N + 4 · L · d · ctx; and a smaller window never adds FLOPs."""
    Lw = round(L * lw_share)
    W = P + T + extra
    full = 4.0 * L * d * T * (P + (0.5 if causal else 1.0) * T)
    got = sv.prefill_attention_flops(L, d_attn=d, new_tokens=T, cached_tokens=P, causal=causal, window_tokens=W,
                                     window_layers=Lw)
    assert got == full
    assert sv.prefill_attention_flops(L, d_attn=d, new_tokens=T, cached_tokens=P, causal=causal) == full
    ctx = P + T
    assert sv.decode_flops_per_token(n_active, n_layers=L, d_attn=d, context_tokens=ctx, window_tokens=W,
                                     window_layers=Lw) == 2.0 * n_active + 4.0 * L * d * ctx
    small = max(W - extra - T // 2 - 1, 1)  # a window inside the context
    assert 0.0 <= sv.prefill_attention_flops(L, d_attn=d, new_tokens=T, cached_tokens=P, causal=causal,
                                             window_tokens=small, window_layers=Lw) <= full
    assert sv.decode_flops_per_token(n_active, n_layers=L, d_attn=d, context_tokens=ctx, window_tokens=small,
                                     window_layers=Lw) <= 2.0 * n_active + 4.0 * L * d * ctx


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 50_000), P=st.integers(0, 50_000), W=st.integers(1, 60_000))
def test_windowed_causal_prefill_is_the_sum_of_min_i_w(T, P, W):
    """Σ_{i=P+1..P+T} min(i, W) by brute force matches the closed form to within the T/2 of the continuous
    T · (P + T/2) convention (the sum counts each token's own key: +T/2 at most)."""
    i = np.arange(P + 1, P + T + 1, dtype=float)
    exact = float(np.minimum(i, W).sum())
    got = sv.prefill_attention_flops(1, d_attn=0.25, new_tokens=T, cached_tokens=P, window_tokens=W, window_layers=1)
    assert abs(got - exact) <= T / 2 + 1e-6 * exact


def test_windowed_attention_takes_arrays_and_scalars_alike():
    T = np.array([1000.0, 4096.0, 32000.0])
    W = np.array([4096.0, 4096.0, np.inf])
    arr = sv.prefill_attention_flops(32, d_attn=4096, new_tokens=T, window_tokens=W, window_layers=32)
    one = [sv.prefill_attention_flops(32, d_attn=4096, new_tokens=t, window_tokens=w, window_layers=32)
           for t, w in zip(T.tolist(), W.tolist())]
    assert arr.tolist() == one
    ctx = np.array([100.0, 40_000.0])
    arr = sv.decode_flops_per_token(7e9, n_layers=32, d_attn=4096, context_tokens=ctx, window_tokens=4096.0,
                                    window_layers=32)
    assert arr.tolist() == [sv.decode_flops_per_token(7e9, n_layers=32, d_attn=4096, context_tokens=c,
                                                      window_tokens=4096.0, window_layers=32) for c in ctx.tolist()]


@FAST
@given(model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"]), pp=st.sampled_from([2, 4, 8]),
       batch=st.sampled_from([1, 16, 64, 256]), prompt=st.sampled_from([128, 1000, 4000]))
def test_a_prompt_passes_the_pipeline_stages_in_turn(model, pp, batch, prompt):
    """Review: with pipeline stages the TTFT was one micro-batch's pass holding 1/pp of the prompt (Llama 3.1 8B on
    4 H100 as TP 1 x PP 4, batch 64, 1,000 in: 14.09 ms against 31.13 ms for the same prompt on an idle replica).
    A request's chunk rides whole in one micro-batch, and the stages hold the layers in turn, so the first token
    comes no sooner than the prompt's prefill on an idle replica, and no later than that prefill plus a step of
    the micro-batch's decoding share."""
    r = serve(model=model, gpu="h100", gpus=8 * pp if model != "llama-3.1-8b" else pp,
              tp=8 if model != "llama-3.1-8b" else 1, batch=batch, prompt=prompt, output=200)
    if not r["fits"]:
        return
    assert r["pp"] == pp
    assert r["ttft_s"] >= r["prefill_s"] * (1 - 1e-9)
    assert r["ttft_s"] <= r["prefill_s"] + r["tpot_s"]
