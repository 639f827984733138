"""Invariants of the economics commands: claims invert 6·N·D, amortisation falls with served tokens,
goodput falls with the failure rate and the cluster size, the compute-optimal split returns its budget."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings, strategies as st

from napkin import calculate
from napkin.formulas import economics as econ
from napkin.formulas import reliability as rel
from napkin.formulas import scaling as sc
from napkin.units import HOUR

FAST = settings(max_examples=40, deadline=None)

params = st.floats(1e8, 1e12)
tokens = st.floats(1e9, 1e14)
hours = st.floats(1e3, 1e8)
peak = st.floats(1e13, 5e15)
fraction = st.floats(0.05, 1.0)
seconds = st.floats(1.0, 3600.0)
mtbf = st.floats(HOUR, 1e9)


@FAST
@given(n=params, d=tokens, gh=hours, p=peak, g=fraction)
def test_implied_mfu_times_gpu_hours_gives_back_the_flops(n, d, gh, p, g):
    c = 6 * n * d
    mfu = econ.implied_mfu(c, gpu_hours=gh, dense_flops_per_s=p, goodput=g)
    assert mfu * gh * HOUR * p * g == pytest.approx(c, rel=1e-9)
    # and the GPU-hours at that MFU are the ones claimed
    assert econ.gpu_hours_for_flops(c, dense_flops_per_s=p, mfu=mfu, goodput=g) == pytest.approx(gh, rel=1e-9)


@FAST
@given(n=params, d=tokens, gh=hours)
def test_check_implied_mfu_round_trips_through_the_calculator(n, d, gh):
    r = calculate("check", params=n, tokens=d, claimed_gpu_hours=gh, gpu="h100")
    assert r["implied_mfu"] * gh * HOUR * 989.5e12 == pytest.approx(r["train_flops"], rel=1e-9)


@FAST
@given(n=params, d=tokens, usd=st.floats(1e3, 1e10), price=st.floats(0.5, 10.0))
def test_implied_price_buys_the_run_at_the_stated_mfu(n, d, usd, price):
    r = calculate("check", params=n, tokens=d, claimed_usd=usd, price=price, gpu="h100", mfu=0.4)
    assert r["implied_usd_per_gpu_hour"] * r["gpu_hours_at_mfu"] == pytest.approx(usd, rel=1e-9)
    # implied MFU at the verdict price gives back the FLOPs from the hours the claim buys
    assert r["implied_mfu"] * (usd / price) * HOUR * 989.5e12 == pytest.approx(r["train_flops"], rel=1e-9)


@FAST
@given(usd=st.floats(1e3, 1e10), s=st.floats(1e9, 1e15), k=st.floats(1.01, 100.0))
def test_amortised_cost_falls_with_served_tokens(usd, s, k):
    r = calculate("amortise", training_usd=usd, served=[s, s * k])
    a, b = r["amortised_usd_per_million"]
    assert b < a
    assert a / b == pytest.approx(k, rel=1e-9)


@FAST
@given(m=mtbf, k=st.floats(1.01, 100.0), d=seconds, r=seconds)
def test_goodput_falls_as_mtbf_falls(m, k, d, r):
    def best(mt: float) -> float:
        return rel.goodput_at_interval(rel.young_daly_interval_s(d, mtbf_s=mt), checkpoint_s=d, restart_s=r,
                                       mtbf_s=mt)

    hi, lo = best(m), best(m / k)
    assert lo <= hi
    assume(hi > 0)
    assert lo < hi or lo == 0.0


@FAST
@given(per_gpu=st.floats(1e3 * HOUR, 1e6 * HOUR), n=st.integers(1, 100000), k=st.integers(2, 64),
       d=seconds, r=seconds)
def test_goodput_falls_as_the_cluster_grows(per_gpu, n, k, d, r):
    def at(size: int) -> float:
        m = rel.cluster_mtbf_s(per_gpu, n_gpus=size)
        return rel.goodput_at_interval(rel.young_daly_interval_s(d, mtbf_s=m), checkpoint_s=d, restart_s=r,
                                       mtbf_s=m)

    assert at(n * k) <= at(n)


@FAST
@given(m=mtbf, d=seconds, r=seconds, f=st.floats(0.1, 10.0))
def test_young_daly_interval_is_the_best_interval(m, d, r, f):
    tau = rel.young_daly_interval_s(d, mtbf_s=m)
    lost = rel.lost_fraction(tau, checkpoint_s=d, restart_s=r, mtbf_s=m)
    assert rel.lost_fraction(tau * f, checkpoint_s=d, restart_s=r, mtbf_s=m) >= lost * (1 - 1e-12)


@FAST
@given(c=st.floats(1e18, 1e28), ratio=st.floats(1.0, 10000.0))
def test_compute_optimal_split_gives_back_its_budget(c, ratio):
    n = sc.compute_optimal_params(c, tokens_per_param=ratio)
    d = sc.compute_optimal_tokens(c, tokens_per_param=ratio)
    assert 6 * n * d == pytest.approx(c, rel=1e-9)
    assert d / n == pytest.approx(ratio, rel=1e-9)
    assert sc.overtraining_factor(d, n_params=n, target_tokens_per_param=ratio) == pytest.approx(1.0, rel=1e-9)


@FAST
@given(c=st.floats(1e18, 1e28))
def test_optimal_calculator_gives_back_its_budget(c):
    r = calculate("optimal", flops=c)
    assert 6 * r["optimal_params"] * r["optimal_tokens"] == pytest.approx(c, rel=1e-9)


@FAST
@given(capex=st.floats(1e3, 1e6), util=st.floats(0.05, 1.0), k=st.floats(1.01, 10.0))
def test_loaded_hour_falls_as_utilisation_rises(capex, util, k):
    lo = calculate("gpu-hour", capex=capex, watts=700, utilization=util)
    hi = calculate("gpu-hour", capex=capex, watts=700, utilization=min(1.0, util * k))
    assert hi["usd_per_gpu_hour"] <= lo["usd_per_gpu_hour"]
    assert lo["usd_per_gpu_hour"] * util == pytest.approx(lo["usd_per_calendar_hour"], rel=1e-9)
