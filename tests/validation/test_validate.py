"""`napkin validate`: the serving predictions against published measurements, out of sample.

The stored baseline (src/napkin/validation/baseline.json) is what every serve answer cites as
its error bar; these tests hold the model to it (no median or max may grow past it, no point may
drop out) and check that every point missed by more than 20% says why in the dataset, or says it
is not explained and what the misses have in common.

The medians are held under 10% by the baseline tests below. No max is under 30%, and for throughput none
can be on this data: TensorRT-LLM's overviews measured some configurations twice, further apart than their
releases' documented settings explain (test_the_data_puts_a_floor_under_the_max_throughput_error).
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


def test_max_error_does_not_regress(run):
    """The max error of each figure may not grow past the stored baseline (issue 13 asks 30%; not met)."""
    now, stored = baseline_table(run["serving"]), baseline()
    for group in ("throughput", "tpot", "ttft"):
        assert now[group]["all"]["max"] <= stored[group]["all"]["max"] + 0.005, group


def test_the_medians_are_under_ten_percent(run):
    for group in ("throughput", "tpot", "ttft"):
        assert run[f"serving_{group}_median_error"] <= 0.10, group


def test_the_data_puts_a_floor_under_the_max_throughput_error(run):
    """Llama 3.1 70B on two H100 SXM at TP 2, 2,048/2,048 in FP16: 166.792 tokens/s in TensorRT-LLM v0.14.0's
    overview, 373.71 and 384.36 in v0.15.0's (LLaMA v3 and v3.1 70B), while napkin's model of the two releases'
    settings (KV fractions 0.90 and 0.95) moves its answer by a few percent: no answer is within 30% of all."""
    top = run["serving_replicates"][0]
    assert top["configuration"] == "Llama 3.1 70B, 2 x H100 SXM, TP 2, fp16, 2,048/2,048"
    assert top["measured_spread"] == pytest.approx(384.36 / 166.792)
    assert 0.35 < top["max_error_floor"] == run["serving_throughput_max_error_floor"] <= run[
        "serving_throughput_max_error"]
    assert run["serving_replicated_configurations"] >= 500
    assert any("the max throughput error has a floor of" in n for n in run.notes)


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
    # the most specific cell with three points or more: one GPU, H100, dense (v0.14.0's online table holds 18)
    assert bar.startswith("median error ") and "published single-GPU H100 dense-model points, out of sample" in bar


def test_plan_serve_cites_the_error_bar_of_its_best_gpu():
    """The planner's best row names the error bar `napkin serve` gives on the same GPU, replica size and kind of
    model: the family's dense-model points on that size where it has three or more (B200 on one GPU: TensorRT-LLM
    1.0's table)."""
    from napkin.catalog.efficiency import error_bars

    h100 = napkin.plan_serve(model="llama-3.1-8b", gpu=["h100"], prompt=1000, output=200)
    best = h100["ranking"][0]
    assert h100["best_error_bar"] == napkin.serve(model="llama-3.1-8b", gpu="h100", gpus=best["gpus"],
                                                  tp=best["tp"])["error_bar"]
    b200 = napkin.plan_serve(model="llama-3.1-8b", gpu=["b200"], prompt=1000, output=200)
    assert b200["ranking"][0]["gpus"] == 1
    cell = error_bars()["throughput"]["dense: b200, one GPU"]
    assert cell["n"] >= 3
    assert b200["best_error_bar"]["tokens_per_s"] == (f"median error {cell['median']:.0%} (max {cell['max']:.0%}) "
                                                      f"on {cell['n']} published single-GPU B200 dense-model points, "
                                                      "out of sample")


def test_a_mixture_of_experts_answer_cites_its_own_kinds_points():
    """Dense and MoE models miss differently (TensorRT-LLM 1.0's MoE runs in FP4 by +9% to +345%, its dense runs
    within 17%): an answer cites its own kind's cell, and every kind's where its own has fewer than 3 points."""
    from napkin.catalog.efficiency import error_bars

    table = error_bars()
    moe = napkin.serve(model="qwen3-30b-a3b", gpu="b200", precision="fp4", batch=8)["error_bar"]
    cell = table["throughput"]["moe: b200, one GPU"]
    assert moe["tokens_per_s"].startswith(f"median error {cell['median']:.0%} (max {cell['max']:.0%}) on {cell['n']} "
                                          "published single-GPU B200 MoE points")
    assert table["tpot"].get("moe: all", {}).get("n", 0) < 3  # no MoE TPOT measured: every kind's cell
    every = table["tpot"]["all, one GPU"]
    assert moe["tpot_s"] == (f"median error {every['median']:.0%} (max {every['max']:.0%}) on {every['n']} "
                             "published single-GPU points, out of sample")
    dense = napkin.serve(model="llama-3.1-8b", gpu="b200", batch=8)["error_bar"]["tokens_per_s"]
    assert "dense-model points" in dense and dense != moe["tokens_per_s"]


def test_efficiencies_by_hand_drop_the_error_bar():
    """The error bar is the validated model's: with its efficiencies or fixed costs replaced it covers nothing, and
    the answer says so (review: it was printed unchanged; this test was dropped with the per-size error bars)."""
    r = napkin.serve(model="llama-3.1-8b", gpu="h100", batch=8, gemm_efficiency=0.6, layer_overhead="50us")
    assert "error_bar" not in r.results
    assert "no error bar: --gemm-efficiency, --layer-overhead replace what `napkin validate` measured the model " \
           "with, so its published errors do not cover these figures" in r.notes
    p = napkin.plan_serve(model="llama-3.1-8b", gpu=["h100"], prompt=1000, output=200, bandwidth_efficiency=0.7)
    assert "best_error_bar" not in p.results

def test_the_error_bar_follows_the_replica_size():
    """A single-GPU answer cites the single-GPU points of its family, a tensor-parallel one the multi-GPU points:
    each cites its own cell's median, max and count (on H100 their maxima differ by a factor of two)."""
    from napkin.catalog.efficiency import error_bars

    one = napkin.serve(model="llama-3.1-8b", gpu="h100", batch=16)["error_bar"]["tokens_per_s"]
    eight = napkin.serve(model="llama-3.1-70b", gpu="h100", gpus=8, batch=16)["error_bar"]["tokens_per_s"]
    t = error_bars()["throughput"]
    assert one.endswith(f"on {t['dense: h100, one GPU']['n']} published single-GPU H100 dense-model points, out of "
                        "sample")
    assert eight.endswith(f"on {t['dense: h100, several GPUs']['n']} published multi-GPU H100 dense-model points, "
                          "out of sample")
    for text, cell in ((one, t["dense: h100, one GPU"]), (eight, t["dense: h100, several GPUs"])):
        assert text.startswith(f"median error {cell['median']:.0%} (max {cell['max']:.0%}) on {cell['n']} ")
    assert t["dense: h100, several GPUs"]["max"] > 1.5 * t["dense: h100, one GPU"]["max"]



def test_the_error_bar_names_the_part_up_to_its_model_number():
    """The cell is named by the part's name up to its model number: "RTX PRO 6000", "Instinct MI300X" (they read
    "RTX" and "Instinct", the first word, which names a line of parts, not this one), and still "A100" and "H100"."""
    from napkin.catalog.efficiency import error_bars

    t = error_bars()["throughput"]
    rtx = napkin.serve(model="llama-3.1-70b", gpu="rtx-pro-6000", precision="fp4", batch=64)["error_bar"]
    cell = t["dense: rtx-pro-6000, one GPU"]
    assert rtx["tokens_per_s"] == (f"median error {cell['median']:.0%} (max {cell['max']:.0%}) on {cell['n']} "
                                   "published single-GPU RTX PRO 6000 dense-model points, out of sample")
    mi = napkin.serve(model="llama-3.1-405b", gpu="mi300x", gpus=8, precision="fp8")["error_bar"]["tokens_per_s"]
    assert "published multi-GPU Instinct MI300X dense-model points" in mi
    a100 = napkin.serve(model="llama-3.1-8b", gpu="a100-pcie-80gb", batch=8)["error_bar"]["tokens_per_s"]
    assert "published single-GPU A100 dense-model points" in a100

def test_the_replica_size_of_a_point_is_its_replica_not_its_system(monkeypatch):
    """Review: the error-bar cells cut the points by the system's GPUs, but serve cites them by its replica's TP x
    PP GPUs. An 8-GPU system of one-GPU replicas (MLPerf's H200 and MI300X Llama 2 70B submissions are TP 1 on 8
    GPUs; not scored today, their mean input length is unpublished) would have been counted as multi-GPU. A scored
    TP 1 point recorded as 8 replicas of it is a one-GPU point; a TP 4 x PP 2 one is multi-GPU."""
    from napkin.validation import runner
    from napkin.validation import serving as sv

    one = next(p for p in sv.points() if p["id"] == "trtllm-0.5-llama2-7b-a100-tp1-b32-2048-128-tput")
    fleet = dict(one, id="eight-replicas", gpus=8, value=8 * one["value"])
    staged = dict(one, id="staged", gpus=8, tp=4, pp=2)
    monkeypatch.setattr(sv, "points", lambda: [fleet, staged])
    rows = {r["id"]: r for r in runner.evaluate_serving()[0]}
    assert (rows["eight-replicas"]["replica_gpus"], rows["staged"]["replica_gpus"]) == (1, 8)
    cells = runner.baseline_table(list(rows.values()))["throughput"]
    assert cells["a100, one GPU"]["n"] == cells["a100, several GPUs"]["n"] == 1


def test_the_fit_prints_the_tables_that_are_stored():
    """`napkin validate --fit` prints [fitted] tables to paste into catalog/efficiency.toml: given the stored
    parameters, it prints the stored tables (method, each fold's sources and values), so a paste changes
    only what the fit changed."""
    import tomllib

    from napkin.catalog import efficiency as eff
    from napkin.catalog.compiled import load_toml
    from napkin.validation import fit
    from napkin.validation import serving as sv

    stored = eff.fitted()
    sources = sorted({p["source"] for p in sv.points()})
    folds = {name: eff.Fitted(**{k: v for k, v in f.items() if k != "sources"}) for name, f in stored.folds.items()}
    printed = tomllib.loads(fit.toml(stored, folds, sources))["fitted"]
    assert printed == load_toml(eff.FILE)["fitted"]


def test_the_fit_weighs_each_source_alike_and_each_kind_within_it():
    """The fit's objective is the mean over sources of the mean over the kinds of figure each publishes of their
    mean |log error|: a source with one point weighs as much as one with many, and within a source a kind with a
    few points as much as one with hundreds. By hand: source a's throughput mean is (0.1 + 0.3) / 2 = 0.2 and its
    TPOT 0.6, so a's is (0.2 + 0.6) / 2 = 0.4; b's is 0.5; the loss is (0.4 + 0.5) / 2 = 0.45 (by point it would
    be 0.375). 500 throughput points of 0.1 beside one TPOT point of 0.5 make their source's 0.3, not 0.1008."""
    from napkin.validation import fit

    assert fit.source_mean({"a": {"throughput": [0.1, 0.3], "tpot": [0.6]}, "b": {"ttft": [0.5]}}) == \
        pytest.approx(0.45)
    assert fit.source_mean({"a": {"throughput": [0.1] * 500, "tpot": [0.5]}}) == pytest.approx(0.3)
    assert fit.source_mean({"a": {"throughput": [0.2]}, "empty": {}, "b": {"tpot": []}}) == pytest.approx(0.2)
    assert fit.source_mean({}) == 0.0
