"""Invariants of training cost: linear in N and D, inverse in MFU and goodput, loaded >= marginal,
and --deadline inverts --gpus."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate

FAST = settings(max_examples=40, deadline=None)

params = st.floats(1e8, 1e12)
tokens = st.floats(1e9, 1e14)
fractions = st.floats(0.05, 1.0)
factor = st.floats(0.1, 10.0)
price = st.floats(0.1, 20.0)
# 0, or a size napkin.limits takes (a subnormal 2e-313 is no physical input)
overheads = st.dictionaries(st.sampled_from(["experiments", "lost", "eval", "idle", "people"]),
                            st.one_of(st.just(0.0), st.floats(1e-6, 3.0)), max_size=5)


def run(**kw):
    base = {"params": 7e9, "tokens": 2e12, "gpu": "h100-sxm", "mfu": 0.4, "goodput": 0.9, "price": 2.5}
    return calculate("train", {**base, **kw})


@FAST
@given(n=params, k=factor)
def test_cost_is_linear_in_parameters(n, k):
    a, b = run(params=n), run(params=n * k)
    assert b["marginal_usd"] == pytest.approx(k * a["marginal_usd"], rel=1e-9)
    assert b["gpu_hours"] == pytest.approx(k * a["gpu_hours"], rel=1e-9)


@FAST
@given(d=tokens, k=factor)
def test_cost_is_linear_in_tokens_and_per_token_cost_is_not(d, k):
    a, b = run(tokens=d), run(tokens=d * k)
    assert b["marginal_usd"] == pytest.approx(k * a["marginal_usd"], rel=1e-9)
    assert b["usd_per_million_tokens"]["marginal"] == pytest.approx(a["usd_per_million_tokens"]["marginal"],
                                                                    rel=1e-9)


@FAST
@given(m=fractions, g=fractions, k=st.floats(0.05, 1.0))
def test_cost_is_inverse_in_mfu_and_goodput(m, g, k):
    a = run(mfu=m, goodput=g)
    assert run(mfu=m * k, goodput=g)["marginal_usd"] == pytest.approx(a["marginal_usd"] / k, rel=1e-9)
    assert run(mfu=m, goodput=g * k)["marginal_usd"] == pytest.approx(a["marginal_usd"] / k, rel=1e-9)


@FAST
@given(oh=overheads, fixed=st.one_of(st.just(0.0), st.floats(1e-6, 1e7)), p=price, d=tokens)
def test_loaded_is_at_least_marginal(oh, fixed, p, d):
    r = run(overhead=oh, fixed_usd=fixed, price=p, tokens=d)
    assert r["loaded_usd"] >= r["marginal_usd"]
    assert r["usd_per_million_tokens"]["loaded"] >= r["usd_per_million_tokens"]["marginal"]
    assert r["loaded_usd"] == pytest.approx(r["marginal_usd"] * (1 + sum(oh.values())) + fixed, rel=1e-9)


@FAST
@given(n=params, d=tokens, days=st.floats(1.0, 400.0), m=fractions)
def test_deadline_inverts_gpus(n, d, days, m):
    deadline = days * 86400
    r = run(params=n, tokens=d, mfu=m, deadline=deadline, max_gpus=10**8)  # napkin.limits' most GPUs
    k = r["gpus_for_deadline"]  # the least that meets it; gpus_needed rounds it up to whole nodes
    assert r["wall_s"] <= deadline * (1 + 1e-9)
    assert r["gpus_needed"] >= k
    with_k = run(params=n, tokens=d, mfu=m, gpus=r["gpus_needed"])
    assert with_k["wall_s"] == pytest.approx(r["wall_s"], rel=1e-12)
    if k > 1:  # one GPU fewer misses the deadline
        assert run(params=n, tokens=d, mfu=m, gpus=k - 1)["wall_s"] > deadline * (1 - 1e-9)
