"""The planner's grid as arrays: chunking changes nothing, the array ranking and front are the brute-force
ones, prompt and output lengths are axes whose cells are `napkin serve`'s figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate
from napkin.errors import InputError
from napkin.plan.serve import PlanServeRequest, evaluate_compact, evaluate_grid, grid, pareto_front, select
from napkin.plan.serve.request import grid_size, objectives
from napkin.request import parse_request


def request(**kw):
    kw.setdefault("model", "llama-3.1-70b")
    return parse_request(PlanServeRequest, kw)


@pytest.mark.parametrize("cells", [1, 7, 60])
def test_chunks_change_nothing(monkeypatch, cells):
    """Smaller chunks (down to one hardware row of one TP degree) give the same cells, picks and front."""
    req = request(rate="10/s", gpu="h100-sxm,h200", precision="bf16,fp8", prompt="1000,3000", batch="8,64,256")
    one = evaluate_compact(req, objectives=objectives(req), keep=5)
    monkeypatch.setattr(grid, "CHUNK_CELLS", cells)
    many = evaluate_compact(req, objectives=objectives(req), keep=5)
    assert many.chunks > one.chunks
    for name in ("tpot", "ttft", "tps", "status"):
        assert np.array_equal(getattr(many, name), getattr(one, name))
    assert np.array_equal(many.front.flat, one.front.flat)
    top = lambda g: calculate_ranking(req, g)  # noqa: E731
    assert top(many) == top(one)


def calculate_ranking(req, g):
    from napkin.plan.serve.report import ranked

    c, order = ranked(req, g, g.picks, 5)
    return c["flat"][order].tolist()


def brute_ranking(a, top):
    """The ranking as a Python sort over every cell that meets the objectives, ties in grid order."""
    rows = []
    for i in zip(*np.nonzero(a["ok"])):
        usd = float(a["usd_per_million_tokens_all_in"][i])
        rows.append(((math.isnan(usd), 0.0 if math.isnan(usd) else usd, float(a["replicas"][i] * a["gpus"][i]),
                      float(a["tpot_s"][i])), (int(a["hw"][i]), int(a["gpus"][i]), int(a["tp"][i]),
                                               int(a["batch"][i]))))
    rows.sort(key=lambda x: x[0])
    return [r[1] for r in rows[:top]]


@settings(max_examples=15, deadline=None)
@given(gpus=st.lists(st.sampled_from(["h100-sxm", "h200", "b200", "mi300x", "a100-sxm-80gb", "l40s"]), min_size=1,
                     max_size=3, unique=True),
       batches=st.lists(st.sampled_from([1, 4, 16, 48, 64, 128, 512]), min_size=1, max_size=4, unique=True),
       rate=st.sampled_from(["0.5/s", "3/s", "40/s"]), top=st.integers(1, 12),
       price=st.booleans())
def test_the_array_ranking_is_the_sorted_one(gpus, batches, rate, top, price):
    """argpartition per chunk, lexsort of the picks: the same rows, in the same order, as sorting every cell
    that meets the objectives by ($/M, total GPUs, TPOT), ties in grid order (unpriced parts last)."""
    kw = dict(model="llama-3.1-8b", rate=rate, gpu=",".join(gpus), batch=",".join(map(str, batches)), top=top,
              max_gpus=4)
    if price:
        kw["price"] = f"{gpus[0]}=2.5"
    a = evaluate_grid(request(**kw))["arrays"]
    hw = evaluate_grid(request(**kw))["hardware"]
    r = calculate("plan-serve", **kw)
    got = [(next(i for i, h in enumerate(hw) if h["key"] == x["gpu"] and h["precision"] == x["precision"]),
            x["gpus"], x["tp"], x["batch"]) for x in r["ranking"]]
    assert got == brute_ranking(a, top)


def test_the_front_is_the_brute_force_front():
    """The front kept chunk by chunk (cells under a staircase dropped first) is pareto_front over every cell
    that fits, in its order."""
    req = request(rate="10/s", gpu="h100-sxm,h200,b200,mi300x", precision="bf16,fp8", max_gpus=16)
    a = evaluate_grid(req)["arrays"]
    fit = np.argwhere(a["valid"] & a["fits"])
    x = 1.0 / a["tpot_s"][tuple(fit.T)]
    y = a["tokens_per_s_per_gpu"][tuple(fit.T)]
    want = [(int(a["gpus"][tuple(i)]), int(a["tp"][tuple(i)]), int(a["batch"][tuple(i)]), float(a["tpot_s"][tuple(i)]))
            for i in fit[pareto_front(x, y)]]
    r = calculate("plan-serve", model="llama-3.1-70b", rate="10/s", gpu="h100-sxm,h200,b200,mi300x",
                  precision="bf16,fp8", max_gpus=16)
    assert [(p["gpus"], p["tp"], p["batch"], p["tpot_s"]) for p in r["pareto_front"]] == want
    points = r["pareto_points"]
    assert len(points) == len(fit) == r["fitting_configurations"]
    assert points[0] == {"gpu": "h100-sxm", "tokens_per_s_per_user": float(x[0]), "tokens_per_s_per_gpu": float(y[0])}
    assert r.to_dict()["pareto_points"] == list(points)


def test_prompt_and_output_are_axes_whose_cells_are_serves_figures():
    """A cell of a grid over prompts and outputs is the single-workload grid's cell and `napkin serve`'s figure."""
    req = request(rate="5/s", model="llama-3.1-8b", gpu="h100-sxm", prompt="500,4000", output="100,500",
                  batch="8,64", max_gpus=2)
    a = evaluate_grid(req)["arrays"]
    assert a["tpot_s"].shape == (1, 2, 2, 2, 2, 2)  # hardware, GPUs, TP, prompt, output, batch
    for p_i, prompt in enumerate((500, 4000)):
        for o_i, output in enumerate((100, 500)):
            single = evaluate_grid(request(rate="5/s", model="llama-3.1-8b", gpu="h100-sxm", prompt=str(prompt),
                                           output=str(output), batch="8,64", max_gpus=2))["arrays"]
            assert single["tpot_s"].shape == (1, 2, 2, 2)
            for n_i, t_i, b_i in [(0, 0, 0), (1, 1, 1), (1, 0, 1)]:
                cell = (0, n_i, t_i, p_i, o_i, b_i)
                assert a["tpot_s"][cell] == single["tpot_s"][0, n_i, t_i, b_i]
                assert a["ttft_s"][cell] == single["ttft_s"][0, n_i, t_i, b_i]
                one = calculate("serve", model="llama-3.1-8b", gpu="h100", gpus=[1, 2][n_i], tp=[1, 2][t_i],
                                batch=[8, 64][b_i], prompt=prompt, output=output)
                assert a["tpot_s"][cell] == pytest.approx(one["tpot_s"], rel=1e-9)
                assert a["ttft_s"][cell] == pytest.approx(one["ttft_s"], rel=1e-9)
                assert a["tokens_per_s"][cell] == pytest.approx(one["tokens_per_s"], rel=1e-9)


def test_best_per_workload_is_the_cheapest_row_of_each():
    r = calculate("plan-serve", model="llama-3.1-8b", rate="5/s", gpu="h100-sxm", prompt="500,4000",
                  output="100,500", batch="8,64", max_gpus=2, top=50)
    best = r["best_per_workload"]
    assert [(x["prompt"], x["output"]) for x in best] == [(500, 100), (500, 500), (4000, 100), (4000, 500)]
    for x in best:
        same = [y for y in r["ranking"] if (y["prompt"], y["output"]) == (x["prompt"], x["output"])]
        assert x == same[0]


def test_a_vanishing_rate_still_needs_one_replica():
    """Found by the fuzz (1e-30 requests/s gave zero replicas and -inf tokens/s per GPU): the smallest rate
    napkin.limits lets through needs one replica; below it the rate is refused in one line."""
    r = calculate("plan-serve", model="llama-3.1-70b", rate=1e-9, gpu="h100-sxm")
    assert all(x["replicas"] == 1 and x["tokens_per_s_per_gpu"] >= 0 for x in r["ranking"])
    with pytest.raises(InputError) as e:
        calculate("plan-serve", model="llama-3.1-70b", rate=1e-30, gpu="h100-sxm")
    assert e.value.field == "rate" and "at least" in e.value.problem


def test_the_grid_counts_every_configuration_it_was_asked():
    req = request(rate="1/s", gpu="h100-sxm,h200", precision="bf16,fp8", prompt="1000,2000", output="300")
    g = evaluate_compact(req, objectives=objectives(req), keep=1)
    assert g.axes.configurations == 4 * 4 * 4 * 2 * 1 * 17  # hardware x GPUs x TP x prompt x output x batch


def test_the_web_cap_counts_with_the_planners_own_count():
    """One count (request.grid_size) for the plan and the web page's cap: prompt and output lengths are axes,
    repeated values count once; before the catalog is read every (GPU, precision) asked is a row."""
    from napkin.plan.serve import PLAN_SERVE

    req = request(rate="1/s", gpu="h100-sxm,h200", precision="bf16,fp8", prompt="1000,2000,1000",
                  output="100,300,500", batch="8,64", max_gpus=16)
    g = evaluate_compact(req, objectives=objectives(req), keep=1)
    assert g.axes.configurations == 4 * 5 * 5 * 2 * 3 * 2 == grid_size(req) == PLAN_SERVE.grid_size(req)
    assert grid_size(req, hardware_rows=3) == 3 * 5 * 5 * 2 * 3 * 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-3, 10.0), st.floats(1.0, 1e4), st.booleans()), min_size=2, max_size=200),
       st.sampled_from([math.nan, math.inf, 1e-3]), st.integers(1, 199))
def test_the_front_keeps_its_cells_beside_undefined_ones(cells, bad, cut):
    """Found by the web fuzz: cells that do not fit may have an undefined TPOT (NaN) or an infinite one; the
    staircase must neither index outside itself nor drop a cell that fits. The front over two chunks is the
    brute-force front of the cells that fit."""
    import warnings

    tpot = np.array([c[0] for c in cells])
    tps = np.array([c[1] for c in cells])
    fit = np.array([c[2] for c in cells])
    tpot[~fit & (np.arange(len(cells)) % 3 == 0)] = bad
    front = select.Front()
    cut = min(cut, len(cells) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for part in (slice(0, cut), slice(cut, len(cells))):
            front.add_chunk({"tpot": tpot[part], "tps": tps[part]}, fit[part], 1.0, lambda i, o=part.start: i + o)
    x = 1.0 / tpot[fit]
    want = np.flatnonzero(fit)[pareto_front(x, tps[fit])] if fit.any() else np.empty(0, dtype=np.int64)
    assert sorted(front.flat.tolist()) == sorted(want.tolist())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0, math.inf]), st.integers(1, 3), st.integers(1, 3)),
                min_size=1, max_size=120), st.integers(1, 12))
def test_first_is_the_lexicographic_order(rows, keep):
    """The chunk's ``keep`` first cells by ($/M, total GPUs, TPOT, position), with ties as heavy as a grid's
    ($/M repeats across batches), are the lexsort's; the key left out is the smallest not chosen."""
    key = np.array([r[0] for r in rows])
    gpus = np.array([r[1] for r in rows], dtype=float)
    tpot = np.array([r[2] for r in rows], dtype=float)
    keep = min(keep, len(rows))
    chosen, rest = select.first(key, (lambda: gpus, lambda: tpot), keep)
    order = np.lexsort((np.arange(len(rows)), tpot, gpus, key))
    assert chosen.tolist() == sorted(order[:keep].tolist())
    assert rest == (float(key[order[keep]]) if keep < len(rows) else math.inf)
