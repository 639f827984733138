"""Latency under load: the seeded discrete-event simulation of continuous batching (serve --rate)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import napkin
from napkin.errors import InputError
from napkin.formulas import simulation as sim

BASE = dict(model="llama-3.1-8b", gpu="h100", precision="bf16", prompt=512, output=128, batch=64)


def flat_cost(step_s: float = 0.01, size: int = 20000) -> sim.StepCost:
    """A step that takes 10 ms whatever it carries: the scheduler alone decides the latencies."""
    return sim.StepCost(np.full(size + 1, step_s), np.zeros(size + 1), 0.0, 0.0)


def test_one_request_alone_by_hand():
    """One 100-token prompt, 10 output tokens, 10 ms steps, chunk 8192: prefill in one step, 9 decode steps."""
    out = sim.simulate_continuous(np.array([0.0]), prompt_tokens=100, output_tokens=10, cost=flat_cost(),
                                  max_sequences=8, chunk_tokens=8192)
    assert out["first_token_s"][0] == pytest.approx(0.01)
    assert out["finish_s"][0] == pytest.approx(0.10)


def test_a_long_prompt_takes_whole_chunks():
    """20,000 tokens at a budget of 8,192 per step: three steps to the first token."""
    out = sim.simulate_continuous(np.array([0.0]), prompt_tokens=20000, output_tokens=2, cost=flat_cost(),
                                  max_sequences=8, chunk_tokens=8192)
    assert out["first_token_s"][0] == pytest.approx(0.03)


def test_a_full_replica_makes_the_next_request_wait_for_a_slot():
    arr = np.array([0.0, 0.0])
    out = sim.simulate_continuous(arr, prompt_tokens=100, output_tokens=5, cost=flat_cost(), max_sequences=1,
                                  chunk_tokens=8192)
    assert out["admitted_s"][1] == pytest.approx(out["finish_s"][0])
    assert out["first_token_s"][1] > out["finish_s"][0]


def test_prefill_first_runs_prompts_apart():
    """Two requests at t = 0, prefill-first: both prompts in one 200-token step, then decodes."""
    out = sim.simulate_continuous(np.array([0.0, 0.0]), prompt_tokens=100, output_tokens=3, cost=flat_cost(),
                                  max_sequences=8, chunk_tokens=8192, mixed=False)
    assert list(out["first_token_s"]) == pytest.approx([0.01, 0.01])
    assert list(out["finish_s"]) == pytest.approx([0.03, 0.03])


@settings(max_examples=30, deadline=None)
@given(rate=st.floats(0.5, 200), n=st.integers(5, 200), cap=st.integers(1, 64), mixed=st.booleans(),
       prompt=st.integers(1, 5000), output=st.integers(1, 300))
def test_every_request_is_served_in_order_of_events(rate, n, cap, mixed, prompt, output):
    arr = sim.poisson_arrivals(rate, n_requests=n, seed=1)
    out = sim.simulate_continuous(arr, prompt_tokens=prompt, output_tokens=output, cost=flat_cost(0.002),
                                  max_sequences=cap, chunk_tokens=4096, mixed=mixed)
    assert not np.isnan(out["finish_s"]).any()
    assert (out["admitted_s"] >= arr - 1e-12).all()
    assert (out["first_token_s"] > out["admitted_s"]).all()
    assert (out["finish_s"] >= out["first_token_s"]).all()
    # a sequence needs at least output − 1 decode steps after its first token
    assert (out["finish_s"] - out["first_token_s"] >= (output - 1) * 0.002 - 1e-9).all()


@settings(max_examples=50, deadline=None)
@given(rate=st.floats(0.01, 1e4), n=st.integers(2, 5000), seed=st.integers(0, 2**32 - 1))
def test_the_arrivals_come_at_the_rate_asked_for(rate, n, seed):
    """n arrivals, the first at 0, whose n − 1 gaps average exactly 1/λ (an unpinned draw realises λ(1 ± 1/√n))."""
    arr = sim.poisson_arrivals(rate, n_requests=n, seed=seed)
    assert arr[0] == 0.0 and (np.diff(arr) >= 0).all()
    assert (n - 1) / arr[-1] == pytest.approx(rate, rel=1e-9)


def test_pinned_arrivals_still_clump_like_poisson():
    """Between the first and the last arrival the others are uniform order statistics (Ross, Introduction to
    Probability Models, Thm 5.2): gaps exponential, coefficient of variation 1; counts per 1/λ window have
    variance ≈ mean (Poisson), where evenly spaced arrivals would give CV 0 and variance 0."""
    arr = sim.poisson_arrivals(32.0, n_requests=200_000, seed=3)
    gaps = np.diff(arr)
    assert gaps.mean() == pytest.approx(1 / 32.0, rel=1e-9)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.01)
    counts = np.bincount((arr * 32.0).astype(int))[:-1]
    assert counts.var() / counts.mean() == pytest.approx(1.0, abs=0.06)
    # the interior arrivals, scaled to (0, 1), against the uniform CDF: Kolmogorov–Smirnov distance
    u = arr[1:-1] / arr[-1]
    ks = np.max(np.abs(u - np.arange(1, len(u) + 1) / len(u)))
    assert ks < 1.63 / np.sqrt(len(u))  # the 1% critical value


def test_the_load_report_offers_the_rate_asked_for():
    """500 requests at 32/s: the report's offered rate is 32/s (unpinned, seed=0 drew 29.2/s)."""
    r = napkin.serve(BASE, rate=32, requests=500)
    assert r["offered_requests_per_s"] == pytest.approx(32.0, rel=1e-9)


def test_the_simulation_is_seeded():
    a = napkin.serve(BASE, rate=5, requests=300)
    b = napkin.serve(BASE, rate=5, requests=300)
    assert a["ttft_p99_s"] == b["ttft_p99_s"] and a["tpot_p50_s"] == b["tpot_p50_s"]
    c = napkin.serve(BASE, rate=5, requests=300, seed=7)
    assert c["ttft_p99_s"] != a["ttft_p99_s"]


def test_at_light_load_latency_is_the_idle_replica():
    """Alone, a request's prompt rides in one step of its own size and it decodes alone: the simulation's median
    TTFT is the closed form's prefill of one prompt, its median TPOT the decode step of one sequence. (They were
    12% and 4% short: the simulated steps left out the LM head, and priced a step with prompt tokens at a decode
    step's fixed costs.)"""
    r = napkin.serve(BASE, rate=0.2, requests=300)
    assert r["ttft_p50_s"] == pytest.approx(r["prefill_s"], rel=1e-9)
    one = napkin.serve(BASE, batch=1)
    assert r["tpot_p50_s"] == pytest.approx(one["decode_step_s"], rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 3000), kv=st.floats(0, 5e5), prompt=st.booleans(), n=st.integers(1, 200),
       model=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "gemma-3-27b"]), tp=st.sampled_from([1, 2]))
def test_the_simulated_step_is_the_operator_models_step(m, kv, prompt, n, model, tp):
    """The simulation's separable step G(M) + a·C + b·Π + H(n) + P·[Π > 0] is the operator model's step (every
    command's), for decode steps and steps with prompt tokens alike."""
    from napkin import catalog
    from napkin.calculators import replica as rep

    g = catalog.gpu("h100")
    e = rep.efficiencies(g, "bf16")
    r = rep.replica(catalog.model(model), g, tp=tp, bytes_per_weight=2.0, kv_bytes_per_value=2.0, e=e,
                    compute_precision="bf16", link_bytes_per_s_per_direction=g.link_bytes_per_s_per_direction)
    n = min(n, m)
    pairs = 0.5 * m * m if prompt else 0.0
    cost = r.step_cost(m)
    assert cost.seconds(m, kv, pairs, n) == pytest.approx(
        float(r.step(float(m), kv_tokens=kv, prefill_pairs=pairs, logits=float(n))), rel=1e-9)


def test_over_capacity_is_said():
    r = napkin.serve(BASE, batch=8, rate=200, requests=400)
    assert any(w.code == "over-capacity" for w in r.warnings)
    assert r["queue_p99_s"] > 1.0


def test_percentiles_are_ordered():
    r = napkin.serve(BASE, rate=20, requests=600)
    for name in ("ttft", "tpot", "latency", "queue"):
        assert r[f"{name}_p50_s"] <= r[f"{name}_p90_s"] <= r[f"{name}_p99_s"]


def test_a_trace_of_requests(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival,prompt,output\n0,100,20\n0.5,2000,50\n1.0,300,10\n")
    r = napkin.serve({**BASE, "trace": str(trace)})
    assert r["simulated_requests"] == 3 - 3 // 10
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt,output\n100,oops\n")
    with pytest.raises(InputError, match=r"trace has an output length 'oops', not a number; got .*bad.csv:1"):
        napkin.serve({**BASE, "trace": str(bad), "rate": 1})


def test_static_batches_take_no_rate():
    with pytest.raises(InputError, match="rate needs a continuous or prefill-first scheduler"):
        napkin.serve(BASE, rate=1, scheduling="static")


def test_the_price_under_load_is_paid_at_the_simulated_busy_share():
    """With --rate and no --utilization the replica is busy achieved / capacity of its hours, so the all-in
    $/M is the hour over the tokens it served (review: it priced every hour busy, 30% under plan serve's
    figure at the same rate)."""
    r = napkin.serve(BASE, rate=5, requests=300, price="2.50/h")
    busy = r["achieved_tokens_per_s"] / r["tokens_per_s"]
    assert 0.05 < busy < 1 and r["utilization"] == pytest.approx(busy, rel=1e-12)
    assert r["usd_per_million_tokens_all_in"] == pytest.approx(2.5 / 3600 / r["achieved_tokens_per_s"] * 1e6,
                                                                 rel=1e-12)
    assert "every-hour-busy" not in [w.code for w in r.warnings]
    given = napkin.serve(BASE, rate=5, requests=300, price="2.50/h", utilization=0.5)  # a given share wins
    assert given["usd_per_million_tokens_all_in"] == pytest.approx(2.5 / 3600 / (0.5 * given["tokens_per_s"]) * 1e6)
    over = napkin.serve(BASE, rate=500, requests=300, price="2.50/h")  # past capacity: every hour busy
    assert "over-capacity" in [w.code for w in over.warnings]
    assert next(a for a in over.assumptions if a.name == "utilization").value == 1.0
    assert over["usd_per_million_tokens_all_in"] == pytest.approx(2.5 / 3600 / over["tokens_per_s"] * 1e6, rel=1e-12)


def test_the_busy_share_comes_from_the_simulation_only_where_it_ran_the_steady_state(tmp_path):
    """Review: a trace of other lengths than --prompt/--output gave 6.93% busy on a growing queue, and pipeline
    stages (which the simulation does not run) gave 53.8%; a growing queue is every hour busy."""
    trace = tmp_path / "t.csv"
    trace.write_text("prompt,output\n" + "4000,20\n" * 400)
    t = napkin.serve(BASE, batch=32, trace=str(trace), rate=20, price="2.50/h")
    codes = [w.code for w in t.warnings]
    assert "over-capacity" in codes and next(a for a in t.assumptions if a.name == "utilization").value == 1.0
    staged = napkin.serve(model="llama-3.1-70b", gpu="h100", gpus=16, batch=32, rate=3, price="2.50/h")
    assert "stages-not-simulated" in [w.code for w in staged.warnings] and "utilization" not in staged.results
    assert "every-hour-busy" in [w.code for w in staged.warnings]
