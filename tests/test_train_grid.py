"""`napkin train --vary` as arrays (calculators/train/grid.py) gives the rows of one plan per combination.

The reference is ``plan_rows`` (the train calculator run for every combination); the grid must
give the same rows, bit for bit (compared as JSON text, which writes every float exactly), with
the same Python types, and fall back to the reference wherever it cannot (then raising the
reference's own errors). The size of a sweep is bounded by memory, not by a count.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import napkin
from napkin.calculators.train import grid, vary
from napkin.calculators.train.vary import parse_vary, plan_rows, specs_of, vary_rows
from napkin.errors import InputError

SEED = {"params": 7e9, "tokens": 2e12, "mfu": 0.4, "goodput": "0.9", "price": 2.5,
        "overhead": {"experiments": 0.6, "lost": 0.15, "eval": 0.05, "idle": 0.2}, "fixed_usd": 60000.0}
FAILURES = {"mtbf_per_gpu": 50000 * 3600.0, "checkpoint_time": 60.0, "restart_time": 600.0}

CASES = [
    ({"params": 7e9, "tokens": 2e12, "peak": 989e12}, ["mfu=0.3,0.4,0.5"]),
    ({**SEED, "gpu": "h100"}, ["goodput=0.8,0.9", "overhead.experiments=0.3,0.6"]),
    ({"params": 7e9, "tokens": 2e12, "gpu": "h100"}, ["mfu=30%,0.4", "price=3/h,2.5", "deadline=3w"]),
    ({"params": 70e9, "tokens": 15e12, "price": 2.5}, ["deadline=1d,30d"]),  # an infeasible row
    ({"params": 7e9, "tokens": 2e12, "gpu": "h100"}, ["deadline=3w", "max_gpus=129,130,131"]),  # needs 130
    ({"params": 7e9, "tokens": 2e12, "price": 2.5, "deadline": 21 * 86400.0}, ["gpus=64,128"]),
    ({"params": 7e9, "tokens": 2e12}, ["gpu=h100,b200,mi300x", "mfu=0.3,0.5", "gpus=8,1024"]),
    ({"model": "llama-3.1-8b", "price": 2.0},
     ["tokens=1T,15T", "data_usd=0,1M", "fixed_usd=0,5k", "max_gpus=10,100000", "deadline=1w,10w"]),
    ({"tokens": 1e12, "price": 2.0, "gpu": "h100", "gpus": 64}, ["params=1B,7B,70B", "precision=bf16,fp8",
                                                                 "peak=500T,1P"]),
    ({"params": 7e9, "tokens": 2e12, "unique_tokens": 5e11}, ["data_usd=1k,2k", "mfu=0.3,0.4"]),
    ({**SEED, "overhead": {"a": 0.1, "b": 0.2}}, ["overhead.c=0.3,0.7", "overhead.a=0.1,0.4"]),  # sums in order
    ({"model": "llama-3.1-70b", "tokens": 15e12, "flops_convention": "causal", "seq_len": 8192.0},
     ["mfu=0.35,0.45", "overhead.idle=0,0.2", "gpu=h100,h200"]),
    # a deadline's cluster in whole nodes: 8 on an HGX board, 72 in a GB200 NVL72 rack, 1 with a bare peak
    ({"params": 70e9, "tokens": 15e12, "price": 2.5}, ["gpu=h100,gb200,tpu-v5e", "deadline=30d,90d", "mfu=0.3,0.4"]),
]


def _same(got, ref) -> None:
    assert json.dumps(list(got)) == json.dumps(ref)  # every float written exactly
    assert [[type(v) for v in r.values()] for r in got] == [[type(v) for v in r.values()] for r in ref]


@pytest.mark.parametrize("base, vary", CASES, ids=lambda c: " ".join(c) if isinstance(c, list) else "")
def test_the_grid_gives_the_rows_of_one_plan_each(base, vary):
    axes = parse_vary(specs_of(vary))
    got = grid.grid_rows(base, axes)
    assert got is not None  # evaluated as arrays, not plan by plan
    _same(got, plan_rows(base, axes))


@pytest.mark.parametrize("base, vary", [
    ({**SEED, "goodput": "auto", **FAILURES}, ["gpus=1000,16384"]),  # goodput follows the cluster size
    ({**SEED, "goodput": "auto", **FAILURES}, ["deadline=60d,90d", "mfu=0.3,0.4"]),
    ({**SEED, "gpus": 64}, ["goodput=0.9,auto"]),
    ({**SEED, "unique_tokens": 1e12}, ["tokens=2T,3T"]),  # checked against unique tokens
    ({**SEED, "model": "llama-3.1-8b"}, ["params=8B,9B"]),
    ({**SEED}, ["mfu=0.3,1.5"]),  # a value the request refuses: the reference says which
    ({"flops": 3.8e25, "gpu": "h100", "price": 2.0}, ["mfu=0.3,0.4", "gpus=1024,2048"]),  # a FLOP budget alone
    ({"flops": 3.8e25, "price": 2.0}, ["params=7B,70B", "mfu=0.3,0.4"]),  # its tokens follow the parameters
])
def test_where_arrays_could_differ_the_reference_runs(base, vary):
    axes = parse_vary(specs_of(vary))
    assert grid.grid_rows(base, axes) is None
    try:
        ref = plan_rows(base, axes)
    except InputError as exc:
        with pytest.raises(InputError, match=f"^{__import__('re').escape(str(exc))}$"):
            vary_rows(base, axes)
    else:
        assert vary_rows(base, axes) == ref


def test_varying_gpus_and_deadline_together_is_the_reference_error():
    axes = parse_vary(["gpus=8,16", "deadline=1w"])
    with pytest.raises(InputError, match="deadline cannot be given with --gpus"):
        vary_rows(dict(SEED), axes)


LABELS = {
    "mfu": st.sampled_from(["0.2", "0.35", "45%", "0.6", "0.8"]),
    "goodput": st.sampled_from(["0.7", "0.9", "95%", "1"]),
    "price": st.sampled_from(["1", "2.5/h", "$4.10", "0.35"]),
    "gpus": st.sampled_from(["1", "8", "1000", "16384"]),
    "deadline": st.sampled_from(["1d", "3w", "90d", "2h"]),
    "max_gpus": st.sampled_from(["10", "5000", "100000"]),
    "tokens": st.sampled_from(["1B", "2T", "15T"]),
    "params": st.sampled_from(["125M", "7B", "405B"]),
    "fixed_usd": st.sampled_from(["0", "60k", "$1.5M"]),
    "data_usd": st.sampled_from(["0", "10k"]),
    "overhead.experiments": st.sampled_from(["0", "0.6", "1.25"]),
    "overhead.idle": st.sampled_from(["0.2", "0"]),
    "peak": st.sampled_from(["989T", "2P"]),
    "gpu": st.sampled_from(["h100", "a100", "mi300x", "b200"]),
    "precision": st.sampled_from(["bf16", "fp8"]),
}


@st.composite
def sweeps(draw):
    names = draw(st.lists(st.sampled_from(sorted(LABELS)), min_size=1, max_size=3, unique=True))
    axes = [(n, draw(st.lists(LABELS[n], min_size=1, max_size=3, unique=True))) for n in names]
    base = dict(draw(st.sampled_from([SEED, {"params": 7e9, "tokens": 2e12, "gpu": "h100"},
                                      {"params": 70e9, "tokens": 15e12, "price": 2.5, "gpus": 512},
                                      {"params": 7e9, "tokens": 2e12, "price": 3.0, "deadline": 30 * 86400.0}])))
    return base, axes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sweeps())
def test_any_sweep_is_the_reference_or_its_error(sweep):
    base, axes = sweep
    try:
        ref = plan_rows(base, axes)
    except InputError as exc:
        with pytest.raises(InputError) as got:
            vary_rows(base, axes)
        assert str(got.value) == str(exc)
        return
    _same(vary_rows(base, axes), ref)


def test_the_rows_are_a_sequence_made_when_read():
    rows = napkin.train(**SEED, gpu="h100", vary=["mfu=0.3,0.4", "price=2,3,4"])["vary"]["rows"]
    assert isinstance(rows, grid.GridRows)
    ref = plan_rows({**SEED, "gpu": "h100"}, parse_vary(["mfu=0.3,0.4", "price=2,3,4"]))
    assert len(rows) == 6
    assert rows[-1] == ref[-1] and rows[4] == ref[4]
    assert rows[1:5] == ref[1:5] and rows[::2] == ref[::2]
    assert list(rows) == ref and rows == ref
    with pytest.raises(IndexError):
        rows[6]


def test_more_than_a_thousand_combinations(monkeypatch):
    """The old cap of 1,000 rows is gone; rows far into the grid are still each their own plan."""
    monkeypatch.setattr(grid.GridRows, "BATCH", 7)  # batches that do not divide the grid
    mfu = ",".join(f"{0.2 + i / 100:.2f}" for i in range(40))
    price = ",".join(f"{1 + i / 10:.1f}" for i in range(30))
    r = napkin.train(**SEED, gpu="h100", gpus=64, vary=[f"mfu={mfu}", f"price={price}", "deadline=1w,4w"])
    rows = r["vary"]["rows"]
    assert len(rows) == 40 * 30 * 2  # the base's gpus is dropped for the varied deadline
    for i in (0, 1, 1033, 2399):
        one = napkin.train(**{**SEED, "mfu": rows[i]["mfu"], "price": rows[i]["price"]}, gpu="h100",
                           deadline=rows[i]["deadline"])
        assert rows[i]["loaded_usd"] == one["loaded_usd"] and rows[i]["gpus_needed"] == one["gpus_needed"]
    assert list(rows)[1033] == rows[1033]


def test_a_sweep_too_large_for_memory_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(vary, "available_memory_bytes", lambda: 8e9)
    values = ",".join(str(i) for i in range(1, 1001))
    with pytest.raises(InputError) as err:
        napkin.train(**SEED, vary=[f"gpus={values}", f"fixed_usd={values}"])
    assert str(err.value) == ("vary needs about 4.352 GB of memory for its rows, more than half the 8 GB free; "
                              "got 1,000,000 combinations (vary fewer values at once)")


def test_available_memory_is_a_positive_figure():
    assert vary.available_memory_bytes() > 0


def test_a_small_sweep_without_numpy_loaded_is_one_plan_each():
    """Importing numpy for a few combinations would cost more than it saves: the CLI's small sweep stays
    without it (checked in a fresh interpreter), and gives the reference's rows."""
    import subprocess
    import sys

    code = ("import sys, napkin\n"
            "r = napkin.train(params='7B', tokens='2T', price=2.5, vary=['mfu=0.3,0.4', 'gpus=8,16'])\n"
            "print(type(r['vary']['rows']).__name__, 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["list", "False"]


def test_a_vary_of_models_needs_no_base_model():
    """Review: `train --tokens 2T --vary model=a,b` said 'model is required'; the base plan takes the first."""
    swept = napkin.train(tokens="2T", price="2.5/h", vary=["model=llama-3.1-8b,mistral-7b"])
    given = napkin.train(tokens="2T", price="2.5/h", model="llama-3.1-8b", vary=["model=llama-3.1-8b,mistral-7b"])
    assert swept["vary"] == given["vary"] and [r["model"] for r in swept["vary"]["rows"]] == ["llama-3.1-8b",
                                                                                              "mistral-7b"]
    sizes = napkin.train(tokens="2T", price="2.5/h", vary=["params=7B,70B"])  # and a vary of sizes
    assert [r["params"] for r in sizes["vary"]["rows"]] == [7e9, 70e9]
