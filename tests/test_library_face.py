"""What the CLI does, the library does: the --vary sweep, plan files with values given on top,
calibration merging and the cited working are library functions the Python API (and the web
page) reach without napkin.cli (issue 12, "the sweep, plan-file and calibration logic moves out
of cli/")."""

from __future__ import annotations

import json

import pytest

import napkin
from napkin import calibration, catalog
from napkin.plan_files import merge
from napkin.request import read_config

SEED = {"params": "7B", "tokens": "2T", "mfu": 0.4, "goodput": 0.9, "price": "2.50/h",
        "overhead": "experiments=0.6,lost=0.15,eval=0.05,idle=0.2", "fixed_usd": "60k"}


def test_the_api_sweeps_as_the_cli_does(run_cli):
    """napkin.train(vary=...) returns the base plan with the sweep's rows, equal to `--vary --json`."""
    r = napkin.train(**SEED, gpu="h100", vary=["goodput=0.8,0.9", "overhead.experiments=0.3,0.6"])
    cli = json.loads(run_cli("train", "--params", "7B", "--tokens", "2T", "--mfu", "0.4", "--goodput", "0.9",
                             "--price", "2.50/h", "--overhead", "experiments=0.6,lost=0.15,eval=0.05,idle=0.2",
                             "--fixed-usd", "60k", "--gpu", "h100", "--vary", "goodput=0.8,0.9",
                             "--vary", "overhead.experiments=0.3,0.6", "--json").stdout)
    assert json.loads(r.to_json()) == cli
    rows = r["vary"]["rows"]
    assert [(x["goodput"], x["overhead.experiments"]) for x in rows] == [(0.8, 0.3), (0.8, 0.6), (0.9, 0.3),
                                                                        (0.9, 0.6)]
    # each row is its own plan: the last is the base plan itself
    assert rows[3]["loaded_usd"] == r["loaded_usd"]
    assert rows[0]["loaded_usd"] == napkin.train(**{**SEED, "goodput": 0.8, "overhead": "experiments=0.3,lost=0.15,"
                                                    "eval=0.05,idle=0.2"}, gpu="h100")["loaded_usd"]
    # the text is the sweep's table, values as typed
    assert r.text().splitlines()[0] == "Training: 7B params on 2T tokens, H100 SXM bf16, as goodput and " \
                                       "overhead.experiments vary"


def test_a_sweep_that_names_no_input_says_which_it_could_mean():
    with pytest.raises(napkin.InputError, match=r"vary does not name an input of train \('mfx'\); got mfx=0\.3"):
        napkin.train(params="7B", tokens="2T", vary=["mfx=0.3"])


def test_goodput_auto_sweeps_from_the_fewest_gpus():
    """The base run of a sweep over GPUs with --goodput auto takes the fewest (most likely feasible)."""
    r = napkin.train(params="70B", tokens="15T", price=2.5, goodput="auto", mtbf_per_gpu="50000h",
                     checkpoint_time="60s", restart_time="10min", vary=["gpus=16384,1000"])
    assert r["gpus"] == 1000
    assert [x["gpus"] for x in r["vary"]["rows"]] == [16384, 1000]
    assert r["vary"]["rows"][0]["goodput"] < r["vary"]["rows"][1]["goodput"]  # bigger clusters fail more often


def test_a_plan_file_merges_with_values_given_on_top(tmp_path):
    """plan_files.merge: a given --deadline replaces the plan's --gpus; a given GPU re-derives a frozen
    reference price; a plan's default that the given value replaces is no longer listed as a default."""
    from napkin.calculators.train import TrainRequest, save_plan
    from napkin.request import parse_request

    req = parse_request(TrainRequest, {"params": "7B", "tokens": "2T", "gpus": 64})
    path = tmp_path / "plan.toml"
    save_plan(str(path), req, napkin.train(params="7B", tokens="2T", gpus=64))
    plan = read_config(str(path))
    assert plan["gpus"] == 64 and plan["price"] == catalog.gpu_hour_price("h100-sxm").usd_per_gpu_hour
    assert plan["assumed"] == ["goodput", "gpu", "mfu", "price", "pue"]
    raw = merge(TrainRequest, plan, {"deadline": "3w", "gpu": "b200", "not_a_field": 1})
    assert "gpus" not in raw and raw["deadline"] == "3w" and "price" not in raw and "not_a_field" not in raw
    assert raw["assumed"] == ["goodput", "mfu", "pue"]
    again = napkin.train(raw)
    fresh = napkin.train(params="7B", tokens="2T", deadline="3w", gpu="b200")
    assert again["gpus_needed"] == fresh["gpus_needed"] and again["price"] == fresh["price"]
    assert merge(TrainRequest, {}, {"params": "7B"}) == {"params": "7B"}


def test_saving_a_calibration_keeps_the_collective_figures_of_the_same_device(tmp_path):
    path = tmp_path / "cal.toml"
    old = calibration.Calibration(device="NVIDIA H100 80GB HBM3", date="2026-05-01", memory_bytes_per_s=2.9e12,
                                  allreduce_bus_bytes_per_s={"64MB": 3.6e11}, allreduce_ranks=8,
                                  allreduce_backend="nccl")
    calibration.save(old, path)
    new = calibration.Calibration(device="NVIDIA H100 80GB HBM3", date="2026-06-01", memory_bytes_per_s=3.0e12)
    written = calibration.save_merged(new, path)
    back = calibration.load(path)
    assert back.date == "2026-06-01" and back.memory_bytes_per_s == 3.0e12
    assert back.allreduce_bus_bytes_per_s == {"64MB": 3.6e11} and back.allreduce_ranks == 8
    assert written.allreduce_backend == back.allreduce_backend == "nccl"
    other = calibration.Calibration(device="AMD EPYC", date="2026-06-02", memory_bytes_per_s=1e11)
    calibration.save_merged(other, path)  # another device: its figures are not this one's
    assert calibration.load(path).allreduce_bus_bytes_per_s == {}


def test_a_save_path_in_a_missing_folder_is_refused_before_measuring(tmp_path):
    with pytest.raises(napkin.InputError, match="is in a folder that does not exist"):
        calibration.check_writable(tmp_path / "no-such-folder" / "cal.toml")
    calibration.check_writable(tmp_path / "cal.toml")


def test_the_working_cites_its_formulas_and_defaults_their_sources():
    """Every training step computed by a formula names it (with its trap and source) under --cite, and
    each default assumption carries its source from catalog/assumptions.toml."""
    d = napkin.train(params="7B", tokens="2T", gpus=64).to_dict(cite=True)
    cites = {s["name"]: s["cites"]["function"] for s in d["derivation"] if "cites" in s}
    assert cites == {"flops_per_token": "flops.train_flops_per_token", "tokens_per_gpu_s": "training.tokens_per_gpu_s",
                     "gpu_hours": "training.gpu_hours", "wall_s": "training.wall_seconds",
                     "marginal_usd": "training.marginal_usd", "loaded_usd": "training.loaded_usd",
                     "usd_per_million_tokens.marginal": "training.usd_per_million_tokens",
                     "usd_per_million_tokens.loaded": "training.usd_per_million_tokens",
                     "energy_kwh": "energy.gpu_energy_kwh", "cluster_power_w": "energy.cluster_power_watts",
                     "energy_household_years": "energy.household_years",
                     "training_static_bytes": "memory.training_static_bytes",
                     "min_gpus_for_state": "memory.min_gpus_for_state"}
    sources = {a["name"]: a.get("source") for a in d["assumptions"]}
    for name, key in (("gpu", "default_gpu"), ("mfu", "training_mfu"), ("goodput", "training_goodput"),
                      ("pue", "energy_pue")):
        assert sources[name] == catalog.default(key).source
    assert "source" not in napkin.train(params="7B", tokens="2T").to_dict()["assumptions"][0]  # plain: unchanged


@pytest.mark.parametrize("args", [
    ("mfu", "--params", "70B", "--tokens-per-step", "4M", "--step-time", "2.07s", "--gpus", "2048", "--gpu", "h100",
     "--recompute"),
    ("check", "--params", "70B", "--tokens", "2T", "--claimed-usd", "500k"),
    ("goodput", "--gpus", "16384", "--interruptions", "419", "--period", "54d", "--checkpoint-time", "60s",
     "--restart-time", "10min"),
    ("optimal", "--gpus", "1024", "--days", "30", "--params", "8B", "--tokens", "15T", "--per-day", "10B"),
    ("gpu-hour", "--capex", "30000", "--gpu", "h100", "--spot", "1.2/h", "--goodput", "0.7"),
    ("amortise", "--params", "8B", "--tokens", "15T", "--per-day", "10B"),
])
def test_cited_steps_name_formulas_that_exist_and_the_plain_working_is_unchanged(run_cli, args):
    from napkin.formulas import citation

    cited = json.loads(run_cli(*args, "--json", "--cite").stdout)
    plain = json.loads(run_cli(*args, "--json").stdout)
    named = [s["cites"] for s in cited["derivation"] if "cites" in s]
    assert named, "no step cites its formula"
    for c in named:
        assert c == citation("napkin.formulas." + c["function"]) and c["trap"] and c["source"]
    for s in cited["derivation"]:
        s.pop("cites", None)
    for a in cited["assumptions"]:
        a.pop("source", None), a.pop("replaced_by", None)
    assert cited == plain
