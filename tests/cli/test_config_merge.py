"""A plan file read with --config, then flags on the line: the line wins, and takes with it what
the plan had derived from the input it replaces (found in review: a B200 priced at the plan's
H100 reference rate; --deadline refused next to the plan's --gpus; --model ignored for the
plan's --params; compare refusing the plan's MFU for a part no longer compared)."""

from __future__ import annotations

import json

import pytest

from napkin import catalog


def _json(run_cli, *args):
    return json.loads(run_cli(*args, "--json").stdout)


def _price(doc):
    return {a["name"]: (a["value"], a["basis"]) for a in doc["assumptions"]}["price"]


def test_a_frozen_reference_price_follows_the_gpu_given_on_the_line(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    run_cli("train", "--params", "405B", "--tokens", "15.6T", "--gpus", "16384", "--save", plan)
    assert 'assumed = ["goodput", "gpu", "mfu", "price", "pue"]' in plan.read_text()
    same = _json(run_cli, "train", "--config", plan)
    assert _price(same) == (catalog.gpu_hour_price("h100-sxm").usd_per_gpu_hour, "reference")
    b200 = _json(run_cli, "train", "--config", plan, "--gpu", "b200")
    assert _price(b200) == (catalog.gpu_hour_price("b200").usd_per_gpu_hour, "reference")
    assert "list-price" in [w["code"] for w in b200["warnings"]]
    fresh = _json(run_cli, "train", "--params", "405B", "--tokens", "15.6T", "--gpus", "16384", "--gpu", "b200")
    assert b200["loaded_usd"] == pytest.approx(fresh["loaded_usd"], rel=1e-12)


def test_a_given_price_in_the_plan_stays_when_the_gpu_changes(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    run_cli("train", "--params", "7B", "--tokens", "2T", "--gpus", "64", "--price", "3.10/h", "--save", plan)
    assert _price(_json(run_cli, "train", "--config", plan, "--gpu", "b200")) == (3.10, "given")


@pytest.mark.parametrize("plan_args,line_args,key,expected", [
    (("--gpus", "64"), ("--deadline", "3w"), "deadline_s", 21 * 86400.0),
    (("--params", "7B"), ("--model", "llama-3.1-8b"), "params", 8_030_261_248),
    (("--model", "llama-3.1-8b"), ("--params", "7B"), "params", 7e9),
])
def test_a_flag_replaces_the_plans_alternative(run_cli, tmp_path, plan_args, line_args, key, expected):
    plan = tmp_path / "plan.toml"
    base = ("--tokens", "2T") + (() if "--gpus" in plan_args else ("--gpus", "64"))
    run_cli("train", *base, *plan_args, *(() if "--params" in plan_args or "--model" in plan_args
                                        else ("--params", "7B")), "--save", plan)
    out = _json(run_cli, "train", "--config", plan, *line_args)
    assert out[key] == pytest.approx(expected, rel=1e-9)
    assert not [w for w in out["warnings"] if "using --params" in w["message"]]


def test_compare_drops_the_plans_per_part_values_for_parts_no_longer_compared(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    run_cli("compare", "--gpu", "h100-sxm,b200", "--mfu", "b200=0.35", "--params", "7B", "--tokens", "2T",
            "--save", plan)
    out = _json(run_cli, "compare", "--config", plan, "--gpu", "h100-sxm,mi300x")
    assert sorted(r["gpu"] for r in out["ranking"]) == ["h100-sxm", "mi300x"]
    kept = _json(run_cli, "compare", "--config", plan, "--gpu", "h100,b200")  # an alias names the same part
    assert {r["gpu"]: r["mfu"] for r in kept["ranking"]}["b200"] == 0.35


@pytest.mark.parametrize("command,plan_args,line_args,key,expected", [
    # a failure rate given one way on the line replaces the plan's other way (found in review round 2)
    ("goodput", ("--gpus", "16384", "--interruptions", "419", "--period", "54d", "--checkpoint-time", "60s",
                 "--restart-time", "10min"), ("--mtbf-per-gpu", "50000h"), "mtbf_per_gpu_s", 50000 * 3600.0),
    ("amortise", ("--training-usd", "400k", "--per-day", "10B", "--years", "2"), ("--served", "1T"),
     "served_tokens", [1e12]),
    ("amortise", ("--params", "7B", "--tokens", "2T", "--price", "2.5", "--served", "1T"), ("--training-usd", "400k"),
     "training_usd", 400e3),
    ("optimal", ("--gpus", "1024", "--days", "30"), ("--flops", "1e25"), "train_flops", 1e25),
    # 1024 H100s (989.5 TFLOP/s dense bf16) × 30 days × MFU 0.40: 1.0505e24 FLOP
    ("optimal", ("--flops", "1e25"), ("--gpus", "1024", "--days", "30"), "train_flops",
     1024 * 30 * 86400 * 989.5e12 * 0.40),
])
def test_a_flag_replaces_the_plans_alternative_in_every_command(run_cli, tmp_path, command, plan_args, line_args,
                                                                key, expected):
    plan = tmp_path / "plan.toml"
    run_cli(command, *plan_args, "--save", plan)
    out = _json(run_cli, command, "--config", plan, *line_args)
    assert out[key] == pytest.approx(expected, rel=1e-9)
