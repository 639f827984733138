"""`napkin plan serve`: the vectorised grid, the objectives, the ranking and the Pareto front."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate
from napkin.errors import InputError
from napkin.plan.serve import pareto_front


def plan(**kw):
    kw.setdefault("model", "llama-3.1-70b")
    kw.setdefault("rate", "10/s")
    return calculate("plan-serve", **kw)


def test_ranking_meets_both_objectives_cheapest_first():
    r = plan(gpu="h100-sxm,h200,b200,mi300x", price="h100-sxm=2.50,h200=3.50,b200=5.00,mi300x=2.00",
             precision="bf16,fp8", ttft="500ms", tpot="50ms", top=50)
    rows = r["ranking"]
    assert rows and r["meeting_slo"] >= len(rows)
    assert all(x["ttft_s"] <= 0.5 and x["tpot_s"] <= 0.05 for x in rows)
    costs = [x["usd_per_million_tokens_all_in"] for x in rows]
    assert costs == sorted(costs)
    best = rows[0]
    # the fleet carries 10 requests/s x 300 tokens: $/M = fleet $/h / 3600 / 3000 x 1e6
    assert best["usd_per_million_tokens_all_in"] == pytest.approx(best["fleet_usd_per_hour"] / 3600 / 3000 * 1e6)
    assert best["fleet_usd_per_hour"] == pytest.approx(best["total_gpus"] * {"h100-sxm": 2.5, "h200": 3.5,
                                                                             "b200": 5.0, "mi300x": 2.0}[best["gpu"]])


def test_replicas_carry_the_rate_at_the_target_utilisation():
    r = plan(gpu="h100-sxm", price="h100-sxm=2.5", rate="25/s", top=100)
    for x in r["ranking"]:
        one = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=x["gpus"], tp=x["tp"], batch=x["batch"])
        lam = one["requests_per_s"]  # the replica's steady state at its batch, every prefill paid
        assert x["replicas"] == math.ceil(25 / (0.7 * lam) - 1e-9)


def test_impossible_objectives_say_what_is_possible():
    r = plan(gpu="h100-sxm", tpot="1ms")
    assert r["meeting_slo"] == 0 and r["ranking"] == []
    assert any(w.code == "no-config-meets-slo" and "fastest TPOT" in w.message for w in r.warnings)


def test_nothing_fits():
    r = plan(model="llama-3.1-405b", gpu="h100-sxm", max_gpus=2)
    assert any(w.code == "nothing-fits" for w in r.warnings)


def test_missing_price_falls_back_to_the_dated_catalog_price():
    r = plan(gpu="h100-sxm")
    a = {x.name: x for x in r.assumptions}
    assert a["price[h100-sxm]"].basis == "reference"  # a stand-in for the user's price: listed under assumed:
    assert r["ranking"][0]["usd_per_million_tokens_all_in"] is not None


def test_a_catalog_price_for_one_part_is_listed_beside_a_given_price_for_another():
    """Found in review: with --price for the H100 only, the H200 rows used the catalog's $4/h, shown only in --json."""
    r = plan(model="llama-3.1-8b", rate="5/s", gpu="h100-sxm,h200", price="h100-sxm=2.50")
    a = {x.name: x for x in r.assumptions}
    assert "price[h100-sxm]" not in a
    assert a["price[h200]"].basis == "reference"
    assert a["price[h200]"].value == 4.0  # catalog/prices.toml gpu_hour.h200
    assert "assumed: price[h200] = $4/h;" in r.text()


@pytest.mark.parametrize("price,message", [
    ("mi300=2", "price is for the Instinct MI300X, which is not among the GPUs searched (h100-sxm); got mi300=2 "
                "(add mi300x to --gpu or drop its price)"),
    ("h100-sxm=2.5,h100=3", "price has the H100 SXM twice (also as h100-sxm=2.5); got h100=3 "
                            "(give one price for h100-sxm)"),
])
def test_an_unused_or_repeated_price_is_an_error(price, message):
    """Found in review: a price for a GPU not searched was ignored, and one part priced twice via an alias
    took the last price, both silently."""
    with pytest.raises(InputError) as e:
        plan(model="llama-3.1-8b", rate="5/s", gpu="h100-sxm", price=price)
    assert str(e.value) == message


def test_an_unused_price_is_an_error_on_an_executor_too():
    with pytest.raises(InputError, match="price is for the Instinct MI300X"):
        plan(model="llama-3.1-8b", rate="5/s", gpu="h100-sxm", price="mi300=2", executor="local", workers=1)
    r = plan(model="llama-3.1-8b", rate="5/s", gpu="h100-sxm,h200", price="h200=3", executor="local", workers=1)
    assert {x.name: x.basis for x in r.assumptions}["price[h100-sxm]"] == "reference"
    assert {row["gpu"] for row in r["ranking"]} <= {"h100-sxm", "h200"}


def test_no_config_meets_slo_formats_its_durations():
    """Found in review: "fastest TTFT 1.85e+03 ms"."""
    r = plan(model="llama-3.1-70b", rate="1/s", gpu="h100-sxm", prompt="100k", ttft="100ms")
    w = next(w for w in r.warnings if w.code == "no-config-meets-slo")
    assert re.fullmatch(r"nothing meets TTFT <= 100 ms and TPOT <= 50 ms; the fastest TPOT that fits is "
                        r"[0-9.]+ ms and the fastest TTFT [0-9.]+ s", w.message), w.message


def test_simplifications_are_stated():
    notes = " ".join(plan(gpu="h100-sxm").notes)
    assert "no queueing beyond the utilisation target" in notes and "continuous batching" in notes


def test_grid_size():
    from napkin.plan.serve import PlanServeRequest, evaluate_grid
    from napkin.request import parse_request

    req = parse_request(PlanServeRequest, {"model": "llama-3.1-70b", "rate": "1/s", "gpu": "h100-sxm,h200",
                                           "precision": "bf16,fp8"})
    g = evaluate_grid(req)
    assert g["configurations"] == 4 * 4 * 4 * 17  # hardware x gpus x tp x batch
    assert g["arrays"]["tpot_s"].shape == (4, 4, 4, 17)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 100), st.floats(0.1, 100)), min_size=1, max_size=40))
def test_pareto_front_is_exactly_the_undominated_points(points):
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    front = set(pareto_front(x, y).tolist())
    for i in range(len(points)):
        dominated = any((x[j] >= x[i] and y[j] >= y[i]) and (x[j] > x[i] or y[j] > y[i]) for j in range(len(points)))
        duplicate_kept = any(j in front and x[j] == x[i] and y[j] == y[i] for j in range(len(points)) if j != i)
        if dominated:
            assert i not in front
        elif not duplicate_kept:
            assert i in front


def test_pareto_front_in_the_report_is_monotone():
    r = plan(gpu="h100-sxm,h200")
    front = r["pareto_front"]
    users = [p["tokens_per_s_per_user"] for p in front]
    per_gpu = [p["tokens_per_s_per_gpu"] for p in front]
    assert users == sorted(users, reverse=True)
    assert per_gpu == sorted(per_gpu)


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_executors_give_the_same_plan(executor):
    kw = dict(gpu="h100-sxm,h200,b200", price="h100-sxm=2.5,h200=3.5,b200=5", precision="bf16,fp8", top=20)
    one = plan(**kw)
    split = plan(executor=executor, workers=2, **kw)
    assert split["ranking"] == one["ranking"]
    assert split["pareto_front"] == one["pareto_front"]
    assert split["configurations"] == one["configurations"]
    assert any(f"{executor} executor" in n for n in split.notes)


def test_ranking_columns_describe_one_operating_point():
    """Each ranking row is at the target load: tok/s/GPU is what a GPU delivers (rate · output / total GPUs, so
    $/M = price / 3600 / tok/s/GPU · 1e6) and TPOT is at that load; it was decode capacity beside a loaded TPOT.
    Each Pareto row is at capacity: tok/s/GPU = batch / TPOT / GPUs."""
    r = plan(gpu="h100-sxm", price="h100-sxm=2.50", rate="10/s", top=20)
    for x in r["ranking"]:
        assert x["operating_point"] == "target load"
        assert x["tokens_per_s_per_gpu"] * x["total_gpus"] == pytest.approx(10 * 300)
        assert x["usd_per_million_tokens_all_in"] == pytest.approx(2.5 / 3600 / x["tokens_per_s_per_gpu"] * 1e6)
        assert x["tokens_per_s_per_user"] == pytest.approx(1 / x["tpot_s"])
    for x in r["pareto_front"]:
        assert x["operating_point"] == "capacity"
        assert x["tokens_per_s_per_gpu"] == pytest.approx(x["batch"] / x["tpot_s"] / x["gpus"])
        assert x["tokens_per_s_per_user"] == pytest.approx(1 / x["tpot_s"])
    assert any(n.startswith("ranking: each row at the target load") for n in r.notes)


def test_tp_beyond_the_scale_up_domain_is_priced_at_the_scale_out_bandwidth():
    """405B on up to 64 H100s: TP 16/32/64 crosses HGX boards (8 GPUs over NVLink), so its all-reduces run at
    50 GB/s per GPU (one 400 Gb/s NIC, DGX H100 User Guide), not 450 GB/s; the grid agrees with `napkin serve`."""
    from napkin.plan.serve import PlanServeRequest, evaluate_grid
    from napkin.request import parse_request

    req = parse_request(PlanServeRequest, {"model": "llama-3.1-405b", "rate": "10/s", "gpu": "h100-sxm",
                                           "max_gpus": 64, "batch": "8,64"})
    a = evaluate_grid(req)["arrays"]
    sizes = [1, 2, 4, 8, 16, 32, 64]
    for n, t, bi, b in [(16, 16, 0, 8), (16, 16, 1, 64), (64, 64, 1, 64), (16, 8, 1, 64)]:
        cell = (0, sizes.index(n), sizes.index(t), bi)
        one = calculate("serve", model="llama-3.1-405b", gpu="h100", gpus=n, tp=t, batch=b)
        assert a["tpot_s"][cell] == pytest.approx(one["tpot_s"], rel=1e-9)
        assert a["ttft_s"][cell] == pytest.approx(one["ttft_s"], rel=1e-9)
        assert bool(a["beyond_scale_up"][cell]) == (t > 8)
    # the prefill all-reduces of TP 16 at 50 GB/s (82% of it, a ring's measured share): 126 layers x 2 x
    # (2 · 15/16 · 1000 · 16384 · 2 B / 41 GB/s + 13 µs)
    one = calculate("serve", model="llama-3.1-405b", gpu="h100", tp=16, batch=1, scheduling="static", output=1)
    ar = next(x for x in one["operators"] if x["step"] == "batch_prefill" and x["operator"] == "allreduce")
    assert ar["seconds"] == pytest.approx(126 * 2 * (2 * 15 / 16 * 1000 * 16384 * 2 / (50e9 * 0.82) + 13e-6))
    r = plan(model="llama-3.1-405b", gpu="h100-sxm", max_gpus=64)
    a = {x.name: x for x in r.assumptions}
    assert a["scale_out_bandwidth"].value == 50e9 and "h100-sxm 8 GPUs" in a["scale_out_bandwidth"].note
    best = r["ranking"][0]
    assert best["tp_beyond_scale_up"] == (best["tp"] > 8)
    if best["tp"] > 8:
        assert any("spans more than the 8 GPUs of one scale-up domain" in n for n in r.notes)
    # within the domain nothing changes, and nothing is assumed
    assert "scale_out_bandwidth" not in {x.name for x in plan(gpu="h100-sxm").assumptions}


def test_prompt_beyond_the_context_window_warns():
    r = plan(model="gpt2", gpu="h100-sxm", prompt=5000)
    assert any(w.code == "context-too-long" and "1,024-token context window" in w.message for w in r.warnings)


def test_a_lone_price_prices_every_gpu_searched_as_compare_takes_it():
    """--price 2.50/h on one GPU is that GPU's price; on several it prices each alike, with a warning; a GPU
    with a price of its own keeps it (review: a lone price was refused as 'must be NAME=VALUE')."""
    one = plan(gpu="h100-sxm", price="2.50/h", precision="bf16", ttft="2s", tpot="100ms")
    named = plan(gpu="h100-sxm", price="h100-sxm=2.50", precision="bf16", ttft="2s", tpot="100ms")
    assert one["ranking"] == named["ranking"] and "one-price-for-all" not in [w.code for w in one.warnings]
    both = plan(gpu="h100-sxm,h200", price="2.50/h", precision="bf16", ttft="2s", tpot="100ms")
    assert {x["fleet_usd_per_hour"] / x["total_gpus"] for x in both["ranking"]} == {2.5}
    said = [w.message for w in both.warnings if w.code == "one-price-for-all"]
    assert said == ["--price $2.50/h is applied to h100-sxm, h200: they rent at different prices; give --price "
                    "NAME=$/H for each, or none for each GPU's catalog price"]
    mixed = plan(gpu="h100-sxm,h200", price="all=3,h200=4", precision="bf16", ttft="2s", tpot="100ms", top=50)
    per_gpu = {x["gpu"]: x["fleet_usd_per_hour"] / x["total_gpus"] for x in mixed["ranking"]}
    assert per_gpu == {"h100-sxm": pytest.approx(3.0), "h200": pytest.approx(4.0)}


def test_every_row_says_what_binds_as_serve_says_it():
    """The planner classes each configuration's decode step as `napkin serve` classes the same one (review: the
    docs' best row said compute where serve said bandwidth, and 'communication' where serve said fixed costs)."""
    import napkin

    r = plan(gpu="h100-sxm,b200", precision="bf16,fp8", rate=None, ttft="2s", tpot="100ms", prompt=1000,
             output=300, top=25)
    rows = r["ranking"] + r["pareto_front"]
    assert len({x["bound"] for x in rows}) >= 2  # the grid spans more than one class
    for x in rows:
        s = napkin.serve(model="llama-3.1-70b", gpu=x["gpu"], gpus=x["gpus"], tp=x["tp"], batch=x["batch"],
                         precision=x["precision"], prompt=1000, output=300)
        assert x["bound"] == s["bound"], x
