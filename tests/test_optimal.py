"""`napkin optimal`: the compute-optimal split of a budget, over-training, lifetime serving compute."""

from __future__ import annotations

import math

import pytest

from napkin import calculate
from napkin.errors import InputError
from napkin.formulas import scaling as sc
from tests.conftest import approx, worked


@pytest.mark.parametrize("ex", worked("journey-405b-6nd"), ids=str)
def test_llama_405b_budget_and_its_over_training(ex):
    """Seed 003: 405B on 15.6T tokens is 3.79e25 FLOPs; at 20 tokens per parameter 405B wants 8.1T,
    and Meta fed it nearly double."""
    r = calculate("optimal", params=ex.inputs["params"], tokens=ex.inputs["tokens"])
    assert r["train_flops"] == approx(ex.expected["train_flops"], ex.rel_tol)
    assert r["tokens_at_ratio"] == pytest.approx(8.1e12)
    assert r["tokens_per_param"] == pytest.approx(15.6e12 / 405e9)
    assert r["overtraining_factor"] == pytest.approx(15.6 / 8.1)
    assert r["optimal_params"] == pytest.approx(math.sqrt(6 * 405e9 * 15.6e12 / 120))
    assert r["optimal_params"] > 405e9


def test_budget_from_flops():
    """Llama 3 405B's published 3.8e25 FLOPs: at 20:1 the optimum is ~563B on ~11.3T tokens."""
    r = calculate("optimal", flops="3.8e25")
    assert r["optimal_params"] == pytest.approx(math.sqrt(3.8e25 / 120))
    assert r["optimal_tokens"] == pytest.approx(20 * r["optimal_params"])
    assert 6 * r["optimal_params"] * r["optimal_tokens"] == pytest.approx(3.8e25)


@pytest.mark.parametrize("ex", worked("train-8b-15t"), ids=str)
def test_budget_from_gpus_times_days(ex):
    """Seed 002: 1,000 accelerators at 400 TFLOP/s sustained for 20.8 days deliver the 8B/15T run's 7.2e23."""
    days = ex.expected["days_on_1000"]
    r = calculate("optimal", gpus=ex.inputs["accelerators"], days=days, mfu=400e12 / 989.5e12, gpu="h100")
    assert r["train_flops"] == approx(ex.expected["train_flops"], ex.rel_tol)


def test_any_ratio():
    r = calculate("optimal", flops="7.2e23", ratio=100)
    assert r["optimal_params"] == pytest.approx(math.sqrt(7.2e23 / 600))
    assert r["optimal_tokens"] / r["optimal_params"] == pytest.approx(100)


@pytest.mark.parametrize("ex", worked("train-8b-15t"), ids=str)
def test_over_training_buys_a_model_cheaper_to_serve(ex):
    """8B on 15T (seed 002) against the same budget's compute-optimal model, serving 10B tokens a day
    for two years: the over-trained model's lifetime compute is smaller."""
    r = calculate("optimal", params=ex.inputs["params"], tokens=ex.inputs["tokens"], per_day="10B", years=2)
    served = 10e9 * 365 * 2
    assert r["served_tokens"] == pytest.approx(served)
    assert r["serving_flops"] == pytest.approx(2 * 8e9 * served)
    assert r["optimal_serving_flops"] == pytest.approx(2 * r["optimal_params"] * served)
    assert r["lifetime_flops"] == pytest.approx(7.2e23 + 2 * 8e9 * served)
    assert r["optimal_lifetime_flops"] == pytest.approx(7.2e23 + 2 * r["optimal_params"] * served)
    assert r["lifetime_saving_flops"] > 0
    assert r["overtraining_factor"] == pytest.approx(15e12 / 8e9 / 20)


def test_default_serving_life_is_an_assumption():
    r = calculate("optimal", params="8B", tokens="15T", per_day="10B")
    assert {a.name: a.basis for a in r.assumptions}["years"] == "assumed"
    assert r["served_tokens"] == pytest.approx(10e9 * 365 * 2)


def test_under_trained_run_is_named():
    r = calculate("optimal", params="175B", tokens="300B")  # GPT-3: 1.7 tokens per parameter
    assert r["overtraining_factor"] < 1
    assert any("under-trained" in n for n in r.notes)


def test_crossover_formula():
    assert sc.crossover_tokens(15e12) == pytest.approx(45e12)
    assert sc.crossover_tokens(15e12) / (10e9 * 365) == pytest.approx(12.33, abs=0.01)


@pytest.mark.parametrize("raw, field, words", [
    ({}, "flops", "give a compute budget"),
    ({"gpus": 1000}, "days", "is required with --gpus"),
    ({"flops": "1e24", "gpus": 1000, "days": 10}, "gpus", "conflicts with --flops"),
    ({"params": "8B"}, "tokens", "is required"),
    ({"flops": "1e24", "per_day": "10B"}, "per_day", "needs a planned run"),
    ({"flops": "1e24", "mfu": 0.4}, "mfu", "only applies"),
    ({"flops": "1e24", "ratio": 0}, "ratio", "must be > 0"),
    ({"flops": "989 TFLOP/s"}, "flops", "is a rate"),
])
def test_bad_input_names_the_field(raw, field, words):
    with pytest.raises(InputError) as e:
        calculate("optimal", raw)
    assert e.value.field == field
    assert words in str(e.value)


def test_chinchilla_itself_is_at_the_ratio_not_under_trained():
    """Review: Chinchilla 70B on 1.4T tokens (19.98 tokens a parameter) was called under-trained against 20."""
    from napkin import calculate

    r = calculate("optimal", model="chinchilla-70b", tokens="1.4T")
    assert any(n.startswith("at the compute-optimal ratio") for n in r.notes)
    assert not any(n.startswith(("under-trained", "over-trained")) for n in r.notes)
