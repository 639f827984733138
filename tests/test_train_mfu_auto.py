"""`napkin train --mfu auto` (issue 14): the MFU of `napkin plan train`'s fastest layout, said so."""

from __future__ import annotations

import json

import pytest

from napkin import calculate
from napkin.errors import InputError

BASE = dict(model="llama-3.1-8b", gpu="h100-sxm", gpus=64, tokens="1T")


def _planned(**extra):
    return calculate("plan-train", model="llama-3.1-8b", gpu="h100-sxm", gpus=64, top=1, **extra)


def test_auto_takes_the_planners_best_mfu_and_says_so():
    r = calculate("train", **BASE, mfu="auto")
    p = _planned()
    assert r["mfu"] == p["best_mfu"]
    a = next(a for a in r.assumptions if a.name == "mfu")
    assert a.basis == "planned" and p["best_config"] in a.note and "napkin plan train" in a.note
    # the rest of the plan runs on it: tokens/GPU/s = peak · MFU · goodput / 6N
    assert r["flops_per_token"] == 6 * r["params"]
    assert r["tokens_per_gpu_s"] == pytest.approx(989.5e12 * p["best_mfu"] * 0.9 / r["flops_per_token"], rel=1e-12)


def test_auto_plans_at_the_trains_sequence_and_convention():
    r = calculate("train", **BASE, mfu="auto", seq_len=8192, flops_convention="causal")
    p = _planned(seq_len=8192, flops_convention="causal")
    assert r["mfu"] == p["best_mfu"]
    assert r["mfu"] != calculate("train", **BASE, mfu="auto")["mfu"]


def test_auto_in_the_terminal_is_a_planned_line(run_cli):
    out = run_cli("train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T",
                  "--mfu", "AUTO")
    line = next(x for x in out.stdout.splitlines() if x.startswith("planned: "))
    p = _planned()
    assert line.startswith(f"planned: mfu = {p['best_mfu']:.1%} (the fastest layout napkin plan train finds, "
                           f"{p['best_config']}; sequences of 4,096, global batch 4,194,304 tokens, 6N FLOPs)")


@pytest.mark.parametrize("extra,field,words", [
    (dict(model=None, params="8B"), "mfu", "needs the model's shape"),
    (dict(gpus=None, deadline="30d"), "mfu", "needs the cluster size"),
    (dict(precision="fp32"), "mfu", "plans bf16 or fp8 training"),
    (dict(mfu_convention="causal"), "mfu_convention", "--mfu auto is planned"),
    (dict(model="llama-3.1-70b", gpus=1), "mfu", "nothing fits"),
])
def test_auto_without_what_it_needs_is_one_clear_line(extra, field, words):
    raw = {**BASE, "mfu": "auto", **extra}
    with pytest.raises(InputError) as e:
        calculate("train", **{k: v for k, v in raw.items() if v is not None})
    assert e.value.field == field and words in str(e.value)


def test_other_words_are_still_refused():
    with pytest.raises(InputError) as e:
        calculate("train", **BASE, mfu="best")
    assert e.value.field == "mfu"


def test_a_sweep_plans_each_cluster_on_its_own(run_cli):
    """--vary gpus with --mfu auto: each row's MFU is planned at its own size (not the first row's)."""
    args = ("train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "1T", "--mfu", "auto",
            "--vary", "gpus=8,4096", "--price", "2.50/h")
    rows = json.loads(run_cli(*args, "--json").stdout)["vary"]["rows"]
    alone = {n: calculate("train", **{**BASE, "gpus": n}, mfu="auto", price=2.5) for n in (8, 4096)}
    for row in rows:
        assert row["mfu"] == alone[row["gpus"]]["mfu"]
        assert row["tokens_per_gpu_s"] == alone[row["gpus"]]["tokens_per_gpu_s"]
    assert alone[8]["mfu"] > alone[4096]["mfu"] * 1.2
    table = run_cli(*args).stdout.splitlines()
    assert table[1].split() == ["gpus", "MFU", "tokens/GPU-s", "GPU-hours", "wall", "marginal", "loaded", "$/M",
                                "marginal", "$/M", "loaded"]
    assert table[2].split()[:2] == ["8", f"{alone[8]['mfu']:.1%}"]
    assert table[3].split()[:2] == ["4096", f"{alone[4096]['mfu']:.1%}"]


def test_the_api_lists_the_word_the_field_takes():
    """The web page and the API's field list say that --mfu takes 'auto' beside a fraction."""
    from napkin.calculators.train.request import TrainRequest
    from napkin.request import fields

    mfu = next(f for f in fields(TrainRequest) if f.name == "mfu").to_dict()
    assert mfu["kind"] == "fraction" and mfu["words"] == ["auto"]
