"""`napkin train` and `napkin compare` from the shell: exact plain-text output, --vary,
--sensitivity, --chart, plan files, and one-line errors (exit 1)."""

from __future__ import annotations

import json
import tomllib

import pytest

SEED = ("--params", "7B", "--tokens", "2T", "--mfu", "0.4", "--goodput", "0.9", "--price", "2.50/h",
        "--overhead", "experiments=0.6,lost=0.15,eval=0.05,idle=0.2", "--fixed-usd", "60k")


def test_train_exact(run_cli):
    out = run_cli("train", *SEED, "--gpu", "h100", "--gpus", "1024").stdout
    assert out == (
        "Training: 7B params on 2T tokens, H100 SXM bf16\n"
        "  params                  7B\n"
        "  flops_convention        6N\n"
        "  flops_per_token         42 GFLOP\n"
        "  advanced_tokens         2T\n"
        "  train_flops             8.4e22 FLOP\n"
        "  gpu                     h100-sxm\n"
        "  precision               bf16\n"
        "  dense_flops_per_s       989.5 TFLOP/s\n"
        "  mfu                     40%\n"
        "  goodput                 90%\n"
        "  tokens_per_gpu_s        8481/s\n"
        "  gpu_hours               65.5k\n"
        "  gpus                    1,024\n"
        "  wall_s                  2.665 d\n"
        "  price                   $2.50/h\n"
        "  price_basis             given\n"
        "  marginal_usd            $163,756\n"
        "  overhead                experiments: 0.6, lost: 0.15, eval: 0.05, idle: 0.2\n"
        "  overhead_multiplier     2\n"
        "  fixed_usd               $60,000\n"
        "  loaded_usd              $387,513\n"
        "  loaded_over_marginal    2.366\n"
        "  usd_per_million_tokens  marginal: $0.08188/M advanced, loaded: $0.1938/M advanced\n"
        "  cost_breakdown_usd      final run: $163,756, experiments: $98,254, lost: $24,563, eval: $8,188, "
        "idle: $32,751, fixed: $60,000\n"
        "  energy_kwh              45.85 MWh\n"
        "  cluster_power_w         716.8 kW\n"
        "  energy_household_years  4.279\n"
        "  training_static_bytes   112 GB\n"
        "  min_gpus_for_state      2\n"
        "assumed: pue = 1\n"
        "note: energy counts the GPUs at TDP (an upper bound on board power) times PUE; host CPUs, network and "
        "storage are not in it\n"
        "note: min_gpus_for_state is fully sharded (ZeRO-3/FSDP) static state only; activations are extra\n"
    )


def test_train_deadline_json(run_cli):
    out = json.loads(run_cli("train", *SEED, "--gpu", "h100", "--deadline", "3w", "--json").stdout)
    assert (out["gpus_for_deadline"], out["gpus_needed"], out["nodes"]) == (130, 136, 17)  # whole HGX boards
    assert out["wall_s"] <= 3 * 7 * 86400
    assert "gpus" not in out
    for key in ("train_flops", "flops_per_token", "tokens_per_gpu_s", "gpu_hours", "marginal_usd", "loaded_usd",
                "usd_per_million_tokens", "energy_kwh", "training_static_bytes", "min_gpus_for_state",
                "derivation", "assumptions", "warnings"):
        assert key in out
    assert set(out["usd_per_million_tokens"]) == {"marginal", "loaded"}
    assert [s["name"] for s in out["derivation"]][:3] == ["flops_per_token", "train_flops", "tokens_per_gpu_s"]


def test_vary_exact(run_cli):
    out = run_cli("train", *SEED, "--peak", "989T", "--vary", "mfu=0.3,0.4,0.5").stdout
    assert out == (
        "Training: 7B params on 2T tokens, 989 TFLOP/s by hand bf16, as mfu varies\n"
        "  mfu  tokens/GPU-s  GPU-hours  marginal  loaded    $/M marginal  $/M loaded\n"
        "  0.3  6358/s        87.38k     $218,452  $496,905  $0.1092/M     $0.2485/M\n"
        "  0.4  8477/s        65.54k     $163,839  $387,679  $0.08192/M    $0.1938/M\n"
        "  0.5  10596/s       52.43k     $131,071  $322,143  $0.06554/M    $0.1611/M\n"
    )


def test_vary_a_grid_and_an_overhead(run_cli):
    out = json.loads(run_cli("train", *SEED, "--gpu", "h100", "--vary", "goodput=0.8,0.9",
                             "--vary", "overhead.experiments=0.3,0.6", "--json").stdout)
    rows = out["vary"]["rows"]
    assert out["vary"]["inputs"] == ["goodput", "overhead.experiments"]
    assert [(r["goodput"], r["overhead.experiments"]) for r in rows] == [(0.8, 0.3), (0.8, 0.6), (0.9, 0.3),
                                                                         (0.9, 0.6)]
    assert rows[3]["loaded_usd"] == pytest.approx(out["loaded_usd"])
    assert rows[2]["loaded_usd"] == pytest.approx(out["loaded_usd"] - 0.3 * out["marginal_usd"])


def test_vary_json_rows_carry_base_units_and_text_keeps_what_was_typed(run_cli):
    args = (*SEED, "--gpu", "h100", "--vary", "mfu=30%,0.4", "--vary", "price=3/h,2.5", "--vary", "deadline=3w")
    rows = json.loads(run_cli("train", *args, "--json").stdout)["vary"]["rows"]
    assert [(r["mfu"], r["price"], r["deadline"]) for r in rows] == [
        (0.3, 3.0, 21 * 86400.0), (0.3, 2.5, 21 * 86400.0), (0.4, 3.0, 21 * 86400.0), (0.4, 2.5, 21 * 86400.0)]
    text = run_cli("train", *args).stdout.splitlines()
    assert text[2].split()[:3] == ["30%", "3/h", "3w"]


def test_vary_marks_an_infeasible_deadline(run_cli):
    out = run_cli("train", "--params", "70B", "--tokens", "15T", "--price", "2.5", "--vary", "deadline=1d,30d").stdout
    lines = out.splitlines()
    assert lines[2].split() == ["1d", "infeasible", "-", "-", "-", "-", "-", "-", "-"]
    assert lines[3].split()[:4] == ["30d", "848.1/s", "4.913M", "6,824"]
    assert "note: deadline is infeasible: it needs 204,696 GPUs" in out


def test_sensitivity_and_its_chart(run_cli, tmp_path):
    svg = tmp_path / "tornado.svg"
    out = run_cli("train", *SEED, "--peak", "989T", "--sensitivity", "--chart", str(svg)).stdout
    assert "sensitivity of loaded cost per million tokens ($0.1938/M) to ±20% in each input:" in out
    table = out.split("to ±20% in each input:\n")[1].splitlines()
    assert table[0].split() == ["input", "-20%", "..", "+20%", "loaded", "$/M", "swing"]
    assert [line.split()[0] for line in table[1:6]] == ["peak", "mfu", "price", "params", "goodput"]
    assert "  mfu                   32% .. 48%                      $0.2348/M .. $0.1665/M  $0.06827/M" in table
    assert svg.read_text().startswith("<svg")
    assert f"note: chart 'sensitivity' written to {svg}" in out


def test_cost_chart_png(run_cli, tmp_path):
    png = tmp_path / "cost.png"
    run_cli("train", *SEED, "--gpu", "h100", "--chart", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_explain_prints_the_working(run_cli):
    out = run_cli("train", *SEED, "--gpu", "h100", "--explain").stdout
    assert "derivation:\n  flops_per_token = 6 · N  (no attention term)   [N = 7B]   = 42 GFLOP\n" in out
    assert "  loaded_usd = marginal · (1 + Σ overheads) + fixed" in out


def test_plan_round_trip(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    first = json.loads(run_cli("train", "--params", "7B", "--tokens", "2T", "--save", str(plan), "--json").stdout)
    saved = tomllib.loads(plan.read_text())["request"]
    # every input, with the defaults frozen at the values used, and listed as defaults
    assert saved["gpu"] == "h100-sxm" and saved["mfu"] == 0.4 and saved["goodput"] == 0.9
    assert saved["price"] == first["price"]
    assert saved["assumed"] == ["goodput", "gpu", "mfu", "price", "pue"]
    again = json.loads(run_cli("train", "--config", str(plan), "--json").stdout)
    for k in ("marginal_usd", "loaded_usd", "usd_per_million_tokens", "tokens_per_gpu_s", "flops_per_token"):
        assert again[k] == first[k]
    # still labelled as assumptions after the round trip
    basis = {a["name"]: a["basis"] for a in again["assumptions"]}
    assert basis["mfu"] == "assumed" and basis["price"] == "reference"
    # a flag overrides the plan and is then given
    over = json.loads(run_cli("train", "--config", str(plan), "--mfu", "0.5", "--json").stdout)
    assert over["mfu"] == 0.5
    assert {a["name"]: a["basis"] for a in over["assumptions"]}["mfu"] == "given"
    assert over["marginal_usd"] == pytest.approx(first["marginal_usd"] * 0.4 / 0.5)


def test_a_plan_is_what_the_ledger_reads(run_cli, tmp_path):
    from napkin import calculate
    from napkin.cli.common import read_config

    plan = tmp_path / "plan.toml"
    run_cli("train", *SEED, "--gpu", "h100", "--save", str(plan))
    r = calculate("train", read_config(str(plan)))
    assert r["usd_per_million_tokens"]["loaded"] == pytest.approx(0.1938, rel=0.002)
    assert r["price"] == 2.5 and r["tokens_per_gpu_s"] > 0 and r["flops_per_token"] == 42e9


def test_compare_exact(run_cli):
    out = run_cli("compare", "--gpu", "h100,next-gen", "--peak", "next-gen=2.2P", "--mfu", "h100=0.40",
                  "--price", "h100=2.50,next-gen=4.50", "--params", "7B", "--tokens", "2T").stdout
    assert out == (
        "Compare: 7B params on 2T tokens, bf16, 6N FLOPs per token\n"
        "  rank  gpu       dense peak     mfu          $/GPU-h  tokens/GPU-s  GPU-hours  $/M tokens  FLOP per $   "
        "value  vs h100-sxm\n"
        "  1     next-gen  2.2 PFLOP/s    40% (guess)  $4.50/h  18857/s       29.46k     $0.06629/M  633.6 PFLOP  "
        "0.494  -19.0%\n"
        "  2     h100-sxm  989.5 TFLOP/s  40%          $2.50/h  8481/s        65.5k      $0.08188/M  513 PFLOP    "
        "0.400  baseline\n"
        "warning [mfu-guessed]: no MFU given for next-gen: 0.40 is a guess; a short measured trial on each "
        "candidate should replace it\n"
        "assumed: next-gen: mfu = 40%; goodput = 90%\n"
        "note: rank with MFU measured in a short full-scale trial on each candidate, never with peaks alone: the "
        "MFU gap between a mature and an immature software stack is often larger than the price gap\n"
    )


def test_compare_issue_example_json_and_chart(run_cli, tmp_path):
    svg = tmp_path / "compare.svg"
    out = json.loads(run_cli("compare", "--gpu", "h100-sxm,h200,b200,mi300x", "--mfu", "h100-sxm=0.40,b200=0.35",
                             "--price", "h100-sxm=2.50,b200=4.50", "--params", "7B", "--tokens", "2T", "--json",
                             "--chart", str(svg)).stdout)
    assert sorted(r["gpu"] for r in out["ranking"]) == ["b200", "h100-sxm", "h200", "mi300x"]
    assert {r["gpu"]: r["mfu_basis"] for r in out["ranking"]}["h200"] == "guess"
    assert svg.read_text().startswith("<svg")


@pytest.mark.parametrize("args,message", [
    (("--mfu", "40"), "error: mfu must be in (0, 1]; got 40 (did you mean 0.40?)\n"),
    (("--goodput", "0"), "error: goodput must be in (0, 1]; got 0 (give a positive number)\n"),
    (("--goodput", "90"), "error: goodput must be in (0, 1]; got 90 (did you mean 0.90?)\n"),
    (("--goodput", "most"), "error: goodput must be a fraction or auto; got most (e.g. 0.9, 90% or auto)\n"),
    (("--gpu", "a100-sxm-80gb", "--precision", "fp8"),
     "error: precision is not supported by the A100 SXM 80GB; got fp8 (its dense peaks are at fp32, tf32, bf16, "
     "fp16, int8)\n"),
    (("--overhead", "experiments"), "error: overhead must be NAME=VALUE; got experiments (e.g. experiments=0.6)\n"),
    (("--gpus", "8", "--deadline", "1w"),
     "error: deadline cannot be given with --gpus; got 7 d (give --gpus K for the wall time, or --deadline for "
     "the GPUs needed)\n"),
    (("--vary", "mfx=0.3"), "error: vary does not name an input of train ('mfx'); got mfx=0.3 (did you mean mfu?)\n"),
    (("--vary", "mfu"), "error: vary must be NAME=V1,V2,...; got mfu (e.g. --vary mfu=0.3,0.4,0.5)\n"),
    (("--chart", "out.pdf"), "error: chart must end in .svg or .png; got out.pdf\n"),
    (("--vary", "mfu=0.3,0.4", "--vary", "mfu=0.5"),
     "error: vary has mfu twice; got mfu=0.5 (give all the values of mfu in one --vary mfu=V1,V2,...)\n"),
    (("--vary", "mfu=0.3,0.4", "--sensitivity"),
     "error: vary cannot be combined with --sensitivity; got mfu=0.3,0.4 (give --vary for the answer at each "
     "value, or --sensitivity for the tornado)\n"),
])
def test_train_errors(run_cli, args, message):
    r = run_cli("train", "--params", "7B", "--tokens", "2T", "--price", "2.5", *args, code=1)
    assert r.stderr == message
    assert r.stdout == ""


def test_infeasible_deadline_is_an_error(run_cli):
    r = run_cli("train", "--params", "70B", "--tokens", "15T", "--deadline", "1d", "--price", "2.5", code=1)
    assert r.stderr == ("error: deadline is infeasible: it needs 204,696 GPUs, more than --max-gpus 100,000; got "
                        "24 h (allow 2.047 d or more, or raise --max-gpus)\n")
    ok = json.loads(run_cli("train", "--params", "70B", "--tokens", "15T", "--deadline", "1d", "--price", "2.5",
                            "--max-gpus", "250000", "--json").stdout)
    assert ok["gpus_needed"] == 204_696


def test_sparse_peak_is_warned(run_cli):
    out = run_cli("train", "--params", "7B", "--tokens", "2T", "--price", "2.5", "--peak", "1979T").stdout
    assert ("warning [sparse-peak]: the peak given (1.979 PFLOP/s) equals the H100 SXM's bf16 figure with 2:4 "
            "sparsity; its dense peak is 989.5 TFLOP/s") in out


def test_compare_errors(run_cli):
    r = run_cli("compare", "--gpu", "h100,h200", "--mfu", "b200=0.3", "--params", "7B", "--tokens", "2T", code=1)
    assert r.stderr == "error: mfu must name a part in --gpu; got b200=0.3 (use one of h100-sxm, h200)\n"
    r = run_cli("compare", "--params", "7B", "--tokens", "2T", code=1)
    assert r.stderr == "error: gpu is required; got nothing (give --gpu)\n"


# ------------------------------------------------------------------------ review, round 3
FAILURE_FLAGS = ("--mtbf-per-gpu", "50000h", "--checkpoint-time", "1min", "--restart-time", "10min")


def test_gpus_above_max_gpus_with_goodput_auto_is_a_plan_not_an_internal_error(run_cli):
    """Found in review: this was `error: internal error (TypeError ...)`."""
    out = json.loads(run_cli("train", "--params", "405B", "--tokens", "15.6T", "--goodput", "auto", "--gpus",
                             "100001", *FAILURE_FLAGS, "--json").stdout)
    assert out["gpus"] == 100_001 and 0.54 < out["goodput"] < 0.55


def test_a_deadline_no_cluster_meets_is_one_line(run_cli):
    r = run_cli("train", "--params", "405B", "--tokens", "15.6T", "--goodput", "auto", "--interruptions", "419",
                "--period", "54d", "--observed-gpus", "16384", "--checkpoint-time", "60s", "--restart-time", "10min",
                "--deadline", "15d", "--max-gpus", "10000000", code=1)
    assert r.stderr == ("error: deadline is infeasible: no cluster size meets it at these failure rates; GPUs × "
                        "goodput peaks at 235,541 GPUs (goodput 30.2%), which take 15.56 d; more GPUs fail more often "
                        "and finish later; got 15 d (allow 15.57 d or more, or checkpoint and restart faster)\n")



def test_a_goodput_auto_that_underflows_is_refused_not_printed_as_inf(run_cli):
    """Fuzz repro: a checkpoint interval of a year against a 3-hour cluster MTBF gave goodput 2.72e-301, then
    gpu_hours inf, loaded_usd inf and loaded_over_marginal nan, exit 0; an MTBF of 1 s (goodput exactly 0) was
    already this one line."""
    args = ("train", "--params", "7B", "--tokens", "2T", "--gpus", "1024", "--goodput", "auto", "--checkpoint-time",
            "1min", "--restart-time", "10min")
    r = run_cli(*args, "--cluster-mtbf", "3h", "--checkpoint-interval", "1y", code=1)
    assert r.stdout == "" and r.stderr == (
        "error: goodput is 2.72e-301, below 1e-12: on 1,024 GPUs failures arrive faster than the job can make progress "
        "between them; got auto (checkpoint and restart faster, or use fewer GPUs)\n")
    assert run_cli(*args, "--mtbf-per-gpu", "1s", code=1).stderr == (
        "error: goodput is 0: on 1,024 GPUs failures arrive faster than the job can make progress between them; got "
        "auto (checkpoint and restart faster, or use fewer GPUs)\n")

@pytest.mark.parametrize("args", [("--deadline", "3w"), ("--deadline", "3w", "--peak", "989T"),
                                  ("--gpus", "64", "--gpu", "b200")])
def test_a_plan_read_back_keeps_its_defaults_labelled(run_cli, tmp_path, args):
    """Found in review: after --save and --config the reference price was "given", the list-price warning and
    the price's date and source were gone, seed 001's illustrative $2.50 was relabelled given and the gpu
    assumption dropped. Nothing changed, so the report is the same."""
    plan = tmp_path / "p.toml"
    first = json.loads(run_cli("train", "--params", "7B", "--tokens", "2T", *args, "--save", str(plan),
                               "--json").stdout)
    again = json.loads(run_cli("train", "--config", str(plan), "--json").stdout)
    assert again["price_basis"] == first["price_basis"] != "given"
    assert again["assumptions"] == first["assumptions"]
    assert again["warnings"] == first["warnings"] and again["warnings"]
    assert again == first


def test_vary_gives_goodput_auto_its_cluster_size(run_cli):
    """Found in review: --vary gpus=... with --goodput auto failed with "goodput needs the cluster size"
    unless the base run had --gpus: the rows supply it. Each row's goodput follows its cluster size."""
    args = ("--params", "405B", "--tokens", "15.6T", "--price", "2.5", "--goodput", "auto", *FAILURE_FLAGS)
    out = json.loads(run_cli("train", *args, "--vary", "gpus=1000,16384", "--json").stdout)
    rows = out["vary"]["rows"]
    assert [r["gpus"] for r in rows] == [1000, 16384]
    assert rows[0]["goodput"] > rows[1]["goodput"] > 0.8
    text = run_cli("train", *args, "--vary", "gpus=1000,16384").stdout.splitlines()
    assert text[1].split()[:2] == ["gpus", "goodput"]
    assert text[2].split()[0] == "1000" and text[3].split()[0] == "16384"
    dl = json.loads(run_cli("train", *args, "--vary", "deadline=60d,90d", "--json").stdout)["vary"]["rows"]
    assert dl[0]["gpus_needed"] > dl[1]["gpus_needed"]


def test_a_varied_gpus_replaces_the_base_deadline(run_cli):
    rows = json.loads(run_cli("train", "--params", "7B", "--tokens", "2T", "--price", "2.5", "--deadline", "3w",
                              "--vary", "gpus=64,128", "--json").stdout)["vary"]["rows"]
    assert [r["gpus"] for r in rows] == [64, 128] and all("gpus_needed" not in r for r in rows)


def test_a_flag_equal_to_the_plans_default_is_given(run_cli, tmp_path):
    """--price on the line over a plan that froze the reference price: given, whatever its value."""
    plan = tmp_path / "p.toml"
    first = json.loads(run_cli("train", "--params", "7B", "--tokens", "2T", "--gpus", "64", "--save", str(plan),
                               "--json").stdout)
    out = json.loads(run_cli("train", "--config", str(plan), "--price", f"{first['price']}/h", "--json").stdout)
    assert out["price_basis"] == "given" and "list-price" not in [w["code"] for w in out["warnings"]]
    assert {a["name"]: a["basis"] for a in out["assumptions"]}["price"] == "given"


@pytest.mark.parametrize("args,head", [
    (("--vary", "model=llama-3.1-8b", "--params", "7B"),
     ["Training: Llama 3.1 8B on 1T tokens, H100 SXM bf16, as model varies",
      "  model         tokens/GPU-s  GPU-hours  marginal  loaded   $/M marginal  $/M loaded",
      "  llama-3.1-8b  7393/s        37.57k     $93,929   $93,929  $0.09393/M    $0.09393/M"]),
    (("--vary", "params=7B,70B", "--model", "llama-3.1-8b"),
     ["Training: 7B params on 1T tokens, H100 SXM bf16, as params varies",
      "  params  tokens/GPU-s  GPU-hours  marginal  loaded    $/M marginal  $/M loaded",
      "  7B      8481/s        32.75k     $81,878   $81,878   $0.08188/M    $0.08188/M",
      "  70B     848.1/s       327.5k     $818,782  $818,782  $0.8188/M     $0.8188/M"]),
])
def test_a_vary_of_models_titles_the_model_its_rows_run(run_cli, args, head):
    """Fuzz repro: `train --vary model=llama-3.1-8b --params 7B` was titled "7B params" over a row of Llama 3.1 8B's
    8.03B (7,393 tokens/GPU-s), and `--vary params=7B,70B --model llama-3.1-8b` "Llama 3.1 8B" over rows of bare
    sizes: each row drops the other input, and the base plan now does too."""
    out = run_cli("train", *args, "--tokens", "1T", "--price", "2.5").stdout.splitlines()
    assert out[:len(head)] == head
