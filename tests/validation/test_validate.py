"""`napkin validate`: the serving predictions against published measurements, out of sample.

The stored baseline (src/napkin/validation/baseline.json) is what every serve answer cites as
its error bar; these tests hold the model to it and to issue 13's median bar (|error| at most
10% on throughput and TPOT), and check that every point missed by more than 20% says why in
the dataset.
"""

from __future__ import annotations

import pytest

import napkin
from napkin.validation import baseline
from napkin.validation.runner import EXPLAIN_ABOVE, baseline_table


@pytest.fixture(scope="module")
def run():
    return napkin.calculate("validate", group="serving")


def test_errors_do_not_regress_past_the_stored_baseline(run):
    now, stored = baseline_table(run["serving"]), baseline()
    for group in ("throughput", "tpot", "ttft"):
        assert now[group]["all"]["median"] <= stored[group]["all"]["median"] + 0.005, group
        assert now[group]["all"]["n"] >= stored[group]["all"]["n"], f"{group}: points dropped out of validation"


def test_the_stored_baseline_is_the_current_one(run):
    """serve's error bars must describe this model: re-save with `python -m napkin.validation --save-baseline`."""
    assert baseline_table(run["serving"]) == baseline()


def test_median_error_on_throughput_and_tpot_is_at_most_10_percent_out_of_sample(run):
    for group in ("throughput", "tpot"):
        assert run[f"serving_{group}_median_error"] <= 0.10, group


def test_max_error_does_not_regress(run):
    """Issue 13 also asks a max of 30%; the points beyond it are explained in the dataset (see the README)."""
    now, stored = baseline_table(run["serving"]), baseline()
    for group in ("throughput", "tpot", "ttft"):
        assert now[group]["all"]["max"] <= stored[group]["all"]["max"] + 0.005, group


def test_every_point_missed_by_more_than_20_percent_says_why(run):
    bad = [p["id"] for p in run["serving"] if abs(p["error"]) > EXPLAIN_ABOVE and not p["explanation"]]
    assert not bad


def test_at_least_40_serving_points_are_predicted(run):
    assert run["serving_points"] >= 40
    assert {p["family"] for p in run["serving"]} >= {"a100", "h100", "h200", "mi300x"}


def test_not_modelled_points_say_why(run):
    for p in run["serving_skipped"]:
        assert p["reason"]


def test_serve_cites_its_error_bar():
    r = napkin.serve(model="llama-3.1-8b", gpu="h100", batch=16)
    bar = r["error_bar"]["tpot_s"]
    assert bar.startswith("median error ") and "published H100 points, out of sample" in bar


def test_plan_serve_cites_the_error_bar_of_its_best_gpu():
    """The planner's best row names the error bar `napkin serve` gives on the same GPU: its family's where it
    has three points or more (H100), all points otherwise (B200)."""
    from napkin.catalog.efficiency import error_bars

    h100 = napkin.plan_serve(model="llama-3.1-8b", gpu=["h100"], prompt=1000, output=200)
    assert h100["best_error_bar"] == napkin.serve(model="llama-3.1-8b", gpu="h100")["error_bar"]
    b200 = napkin.plan_serve(model="llama-3.1-8b", gpu=["b200"], prompt=1000, output=200)
    cell = error_bars()["throughput"]["all"]
    assert b200["best_error_bar"]["tokens_per_s"] == (f"median error {cell['median']:.0%} (max {cell['max']:.0%}) "
                                                      f"on {cell['n']} published points, out of sample")
    assert error_bars()["throughput"].get("b200", {}).get("n", 0) < 3


def test_efficiencies_by_hand_drop_the_error_bar():
    """The error bar is the validated model's: with its efficiencies or fixed costs replaced it covers nothing, and
    the answer says so (review: it was printed unchanged)."""
    r = napkin.serve(model="llama-3.1-8b", gpu="h100", batch=8, gemm_efficiency=0.6, layer_overhead="50us")
    assert "error_bar" not in r.results
    assert "no error bar: --gemm-efficiency, --layer-overhead replace what `napkin validate` measured the model " \
           "with, so its published errors do not cover these figures" in r.notes
    p = napkin.plan_serve(model="llama-3.1-8b", gpu=["h100"], prompt=1000, output=200, bandwidth_efficiency=0.7)
    assert "best_error_bar" not in p.results
