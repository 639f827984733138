"""The train calculator and its formulas: defaults and their labels, denominators, deadlines,
goodput from failure rates, calibration, FLOPs conventions, sensitivity and errors."""

from __future__ import annotations

import math

import pytest

from napkin import calculate, catalog
from napkin.errors import InputError, UnsupportedPrecision
from napkin.formulas import energy, training as T
from napkin.units import DAY, HOUR, WEEK

PRICED = {"params": "7B", "tokens": "2T", "price": "2.50/h"}
SEED_OVERHEAD = {"experiments": 0.6, "lost": 0.15, "eval": 0.05, "idle": 0.2}


def train(**kw):
    return calculate("train", {**PRICED, **kw})


def assumption(r, name):
    (a,) = [a for a in r.assumptions if a.name == name]
    return a


def codes(r):
    return [w.code for w in r.warnings]


# ------------------------------------------------------------------------------- formulas
def test_tokens_per_gpu_s_is_the_seed_formula():
    # seed 001: 989e12 · 0.40 · 0.90 / (6 · 7e9) = 8,477.1
    assert T.tokens_per_gpu_s(989e12, mfu=0.4, goodput=0.9, flops_per_token=42e9) == pytest.approx(8477.142857)


def test_gpus_for_deadline_rounds_up_but_not_past_a_whole_number():
    # exactly 16 GPUs' worth is 16, not 17; a little more is 17
    assert T.gpus_for_deadline(16 * 1000 * 3600, tokens_per_gpu_s=1000, deadline_s=3600) == 16
    assert T.gpus_for_deadline(16.01 * 1000 * 3600, tokens_per_gpu_s=1000, deadline_s=3600) == 17
    assert T.gpus_for_deadline(0.2, tokens_per_gpu_s=1, deadline_s=1) == 1
    # a deadline far beyond what one GPU needs is one GPU, not zero (found in review: --deadline 1e30
    # gave 0 GPUs and a division by zero)
    assert T.gpus_for_deadline(2e12, tokens_per_gpu_s=8481.0, deadline_s=1e30) == 1


def test_gpus_for_deadline_is_array_safe():
    import numpy as np
    got = T.gpus_for_deadline(np.array([16.0, 16.01, 0.2, 1e-20]) * 3600, tokens_per_gpu_s=1.0, deadline_s=3600)
    assert got.tolist() == [16.0, 17.0, 1.0, 1.0]
    tps = T.tokens_per_gpu_s(np.array([989e12, 2.25e15]), mfu=0.4, goodput=0.9, flops_per_token=42e9)
    assert tps.shape == (2,)


def test_loaded_usd_is_the_seed_sum():
    # seed 001: $163,840 · (1 + 1.0) + $60,000 = $387,680
    assert T.loaded_usd(163_840, overhead_multiplier=1.0, fixed_usd=60_000) == 387_680


def test_energy_is_gpu_hours_times_tdp_times_pue():
    # 65,536 GPU-hours at 700 W and PUE 1.2: 55,050 kWh
    assert energy.gpu_energy_kwh(65_536, tdp_watts=700, pue=1.2) == pytest.approx(65_536 * 0.7 * 1.2)


def test_delivered_flops_per_usd():
    # 989e12 · 0.4 FLOP/s for $2.50 an hour: 5.7e17 FLOP of model work per dollar
    assert T.delivered_flops_per_usd(989e12, mfu=0.4, usd_per_gpu_hour=2.5) == pytest.approx(989e12 * 0.4 * 3600 / 2.5)


# ------------------------------------------------------------------------ defaults, labels
def test_defaults_are_labelled_assumptions():
    r = calculate("train", {"params": "7B", "tokens": "2T"})
    assert assumption(r, "gpu").value == "h100-sxm"
    assert assumption(r, "mfu").basis == "assumed" and r["mfu"] == 0.4
    assert "short full-scale trial" in assumption(r, "mfu").note
    assert assumption(r, "goodput").basis == "assumed" and r["goodput"] == 0.9
    price = assumption(r, "price")
    ref = catalog.table("prices")["gpu_hour"]["h100-sxm"]
    assert price.basis == "reference" and r["price"] == ref["usd_per_gpu_hour"]
    assert ref["date"] in price.note and ref["date"] in r["price_basis"]
    assert "list-price" in codes(r)
    assert "assumed: gpu = h100-sxm; mfu = 40%; goodput = 90%" in r.text()


def test_reference_price_of_another_part():
    r = calculate("train", {"params": "7B", "tokens": "2T", "gpu": "h200"})
    ref = catalog.table("prices")["gpu_hour"]["h200"]
    assert r["price"] == ref["usd_per_gpu_hour"]
    assert r["price_basis"] == f"reference list price, {ref['date']}"


def test_no_gpu_and_no_price_with_a_hand_peak_uses_the_seed_illustrative_price():
    r = calculate("train", {"params": "7B", "tokens": "2T", "peak": "989T"})
    assert r["price"] == 2.5
    assert r["price_basis"] == "illustrative figure"
    assert assumption(r, "price").basis == "reference"
    assert "illustrative-price" in codes(r)
    assert "gpu" not in r.results and "energy_kwh" not in r.results  # no part, no TDP


def test_a_given_price_is_not_a_warning():
    r = train(gpu="h100")
    assert r["price_basis"] == "given" and not codes(r)


def test_the_output_names_the_flops_convention():
    assert train()["flops_convention"] == "6N"
    assert "flops_convention        6N" in train().text()


# -------------------------------------------------------------------------- denominators
def test_tokens_and_unique_give_epochs():
    r = train(unique_tokens="500B")
    assert r["epochs"] == 4 and r["unique_tokens"] == 500e9 and r["advanced_tokens"] == 2e12


def test_tokens_and_epochs_give_unique():
    r = train(epochs=4)
    assert r["unique_tokens"] == 500e9


def test_unique_alone_is_one_epoch_assumed():
    r = calculate("train", {"params": "7B", "unique_tokens": "1T", "price": "2.5"})
    assert r["advanced_tokens"] == 1e12 and assumption(r, "epochs").value == 1


def test_inconsistent_token_counts_are_an_error():
    with pytest.raises(InputError, match="epochs does not match"):
        train(unique_tokens="500B", epochs=3)
    with pytest.raises(InputError, match="unique_tokens exceeds the advanced tokens"):
        train(unique_tokens="3T")
    with pytest.raises(InputError, match="epochs needs --unique-tokens"):
        calculate("train", {"params": "7B", "epochs": 2})


def test_data_cost_is_spread_over_unique_tokens_and_is_in_loaded():
    r = train(unique_tokens="500B", data_usd="1M", fixed_usd="60k", overhead=SEED_OVERHEAD)
    per_m = r["usd_per_million_tokens"]
    assert per_m["data_per_unique"] == pytest.approx(1e6 / 500e9 * 1e6)  # $2 per million unique tokens
    assert r["loaded_usd"] == pytest.approx(r["marginal_usd"] * 2 + 60e3 + 1e6)
    assert per_m["loaded"] == pytest.approx(r["loaded_usd"] / 2e12 * 1e6)
    assert r["cost_breakdown_usd"]["data"] == 1e6


def test_data_without_unique_tokens_assumes_one_epoch():
    r = train(data_usd="200k")
    assert r["usd_per_million_tokens"]["data_per_unique"] == pytest.approx(0.1)
    assert assumption(r, "unique_tokens").value == 2e12


def test_the_models_published_tokens_are_the_default():
    r = calculate("train", {"model": "llama-3.1-70b", "price": "2.5"})
    assert r["advanced_tokens"] == 15e12 and assumption(r, "tokens").basis == "catalog"


# ------------------------------------------------------------------------ gpus / deadline
def test_deadline_gives_gpus_and_the_wall_time_they_give():
    r = train(deadline="3w")
    n = r["gpus_for_deadline"]
    assert isinstance(n, int)
    assert r["wall_s"] <= 3 * WEEK
    assert train(gpus=n)["wall_s"] <= 3 * WEEK < train(gpus=n - 1)["wall_s"]  # one fewer GPU misses it
    # the cluster is whole 8-GPU HGX boards, and runs on all of them
    assert r["gpus_needed"] == 8 * math.ceil(n / 8) and r["nodes"] == r["gpus_needed"] // 8
    assert train(gpus=r["gpus_needed"])["wall_s"] == pytest.approx(r["wall_s"])


def test_an_infeasible_deadline_is_an_error_not_a_number():
    with pytest.raises(InputError) as exc:
        calculate("train", {"params": "70B", "tokens": "15T", "deadline": "1d", "price": "2.5"})
    msg = str(exc.value)
    assert msg.startswith("deadline is infeasible: it needs 204,696 GPUs, more than --max-gpus 100,000")
    assert "allow 2.047 d or more" in msg
    r = calculate("train", {"params": "70B", "tokens": "15T", "deadline": "1d", "price": "2.5", "max_gpus": 300_000})
    assert r["gpus_needed"] == 204_696


def test_gpus_and_deadline_together_are_an_error():
    with pytest.raises(InputError, match="deadline cannot be given with --gpus"):
        train(gpus=8, deadline="1w")


def test_too_few_gpus_for_the_state_is_warned():
    r = calculate("train", {"params": "70B", "tokens": "1T", "gpus": 8, "gpu": "h100", "price": "2.5"})
    assert "state-does-not-fit" in codes(r)
    assert r["min_gpus_for_state"] == 18


# --------------------------------------------------------------------- goodput auto (issue 4)
FAILURES = {"mtbf_per_gpu": f"{50_000}h", "checkpoint_time": "60s", "restart_time": "10min"}


def _daly(m: float, delta: float = 60.0, restart: float = 600.0, tau: float | None = None) -> tuple[float, float]:
    """Daly 2006 by hand: (τ*, goodput at τ) for Poisson failures every m seconds."""
    if tau is None:
        x = delta / (2 * m)
        tau = math.sqrt(2 * delta * m) * (1 + math.sqrt(x) / 3 + x / 9) - delta
    return tau, tau * math.exp(-restart / m) / (m * math.expm1((tau + delta) / m))


def test_goodput_auto_from_failure_rates():
    r = calculate("train", {"params": "70B", "tokens": "15T", "gpus": 16384, "goodput": "auto", "price": "2.5",
                            **FAILURES})
    m = 50_000 * HOUR / 16384  # the cluster is interrupted every ~3 hours
    tau, expect = _daly(m)
    assert r["cluster_mtbf_s"] == pytest.approx(m)
    assert r["checkpoint_interval_s"] == pytest.approx(tau)
    assert r["goodput"] == pytest.approx(expect)
    assert 0.84 < r["goodput"] < 0.86


def test_goodput_auto_with_a_given_interval():
    r = calculate("train", {**PRICED, "gpus": 1024, "goodput": "auto", "checkpoint_interval": "30min", **FAILURES})
    m = 50_000 * HOUR / 1024
    assert r["goodput"] == pytest.approx(_daly(m, tau=1800.0)[1])


def test_goodput_auto_with_a_deadline_finds_a_consistent_cluster():
    r = calculate("train", {"params": "70B", "tokens": "15T", "deadline": "60d", "goodput": "auto", "price": "2.5",
                            **FAILURES})
    n = r["gpus_for_deadline"]
    # the goodput is the one of the cluster found (whole nodes add fewer than 8 GPUs), and it meets the deadline
    assert r["goodput"] == pytest.approx(_daly(50_000 * HOUR / n)[1])
    assert r["wall_s"] <= 60 * DAY


def test_goodput_auto_needs_the_failure_model_and_a_cluster():
    with pytest.raises(InputError, match="give an interruption rate .*--checkpoint-time, --restart-time"):
        train(goodput="auto", gpus=8)
    with pytest.raises(InputError, match="needs the cluster size"):
        train(goodput="auto", **FAILURES)


def test_failure_model_without_goodput_auto_is_not_silently_dropped():
    r = calculate("train", {**PRICED, "gpus": 1024, **FAILURES})
    assert "failure-model-unused" in codes(r)
    assert r["goodput"] == 0.90


@pytest.mark.parametrize("bad,fix", [("0", None), ("90", "did you mean 0.90?"), ("1.5", None)])
def test_goodput_out_of_range(bad, fix):
    with pytest.raises(InputError) as exc:
        train(goodput=bad)
    assert str(exc.value).startswith(f"goodput must be in (0, 1]; got {bad}")
    if fix:
        assert fix in str(exc.value)


# ----------------------------------------------------------------------------- calibration
def _calibration(tmp_path, mfu="training_mfu = 0.41\ntraining_mfu_params = 7e9\n", key="h100-sxm"):
    p = tmp_path / "cal.toml"
    p.write_text(f'device = "NVIDIA H100 80GB HBM3"\ncatalog_key = "{key}"\ndate = "2026-05-01"\n'
                 f"memory_bytes_per_s = 2.9e12\n{mfu}")
    return str(p)


def test_calibration_supplies_a_measured_mfu(tmp_path):
    r = train(gpu="h100", calibration=_calibration(tmp_path))
    assert r["mfu"] == 0.41
    a = assumption(r, "mfu")
    assert a.basis == "measured" and a.note == "measured on NVIDIA H100 80GB HBM3, 2026-05-01"
    assert not codes(r)


def test_an_explicit_mfu_overrides_the_calibration(tmp_path):
    r = train(gpu="h100", mfu=0.35, calibration=_calibration(tmp_path))
    assert r["mfu"] == 0.35 and assumption(r, "mfu").basis == "given"


def test_calibration_from_another_part_or_model_size_is_warned(tmp_path):
    r = train(gpu="b200", calibration=_calibration(tmp_path, "training_mfu = 0.3\ntraining_mfu_params = 124e6\n"))
    assert codes(r) == ["calibration-device", "mfu-model-size"]


def test_calibration_without_a_training_mfu_is_an_error(tmp_path):
    with pytest.raises(InputError, match="calibration has no training MFU"):
        train(calibration=_calibration(tmp_path, ""))


# ------------------------------------------------------------------------ FLOPs conventions
def test_causal_and_full_add_the_attention_term():
    m = catalog.model("llama-3.1-8b")
    base = {"model": "llama-3.1-8b", "tokens": "1T", "price": "2.5", "seq_len": 8192}
    six = calculate("train", base)["flops_per_token"]
    causal = calculate("train", {**base, "flops_convention": "causal"})
    full = calculate("train", {**base, "flops_convention": "full"})
    attn = 6 * m.n_layers * m.n_heads * m.head_dim * 8192
    assert six == pytest.approx(6 * m.params)
    assert causal["attention_flops_per_token"] == pytest.approx(attn)
    assert causal["flops_per_token"] == pytest.approx(six + attn)
    assert full["flops_per_token"] == pytest.approx(six + 2 * attn)
    assert causal["flops_convention"] == "causal"


def test_6n_at_long_context_warns_that_attention_is_left_out():
    r = calculate("train", {"model": "llama-3.1-8b", "tokens": "1T", "price": "2.5", "seq_len": "32k"})
    assert "attention-ignored" in codes(r)
    r = calculate("train", {"model": "llama-3.1-70b", "tokens": "1T", "price": "2.5", "seq_len": 2048})
    assert "attention-ignored" not in codes(r)


def test_causal_needs_a_model_and_a_sequence_length():
    with pytest.raises(InputError, match="flops_convention needs the model's layers"):
        train(flops_convention="causal", seq_len=8192)
    with pytest.raises(InputError, match="seq_len is required with --flops-convention full"):
        calculate("train", {"model": "llama-3.1-8b", "flops_convention": "full", "price": "2.5"})


def test_moe_flops_use_active_params_and_state_uses_total():
    m = catalog.model("deepseek-v3")
    r = calculate("train", {"model": "deepseek-v3", "tokens": "14.8T", "gpu": "h800", "price": "2"})
    assert r["flops_per_token"] == pytest.approx(6 * m.active_params)
    assert r["training_static_bytes"] == pytest.approx(16 * m.params)


# ------------------------------------------------------------------------------------ errors
def test_mfu_out_of_range_suggests_the_fraction():
    with pytest.raises(InputError) as exc:
        train(mfu=40)
    assert str(exc.value) == "mfu must be in (0, 1]; got 40 (did you mean 0.40?)"


def test_a_precision_the_part_lacks():
    with pytest.raises(UnsupportedPrecision, match="not supported by the A100"):
        train(gpu="a100-sxm-80gb", precision="fp8")


def test_an_overhead_without_a_value():
    with pytest.raises(InputError, match="overhead must be NAME=VALUE; got experiments"):
        train(overhead="experiments")


def test_a_hand_peak_equal_to_a_sparse_figure_is_warned():
    r = train(peak="1979T")
    assert "sparse-peak" in codes(r)
    assert "sparse-peak" not in codes(train(peak="989T"))


def test_an_implausible_mfu_is_warned():
    assert "mfu-high" in codes(train(mfu=0.75))
    assert "mfu-high" not in codes(train(mfu=0.5))


def test_params_or_model_is_required():
    with pytest.raises(InputError, match="model is required"):
        calculate("train", {"tokens": "2T"})


# ------------------------------------------------------------------------------- overheads
def test_loaded_is_marginal_times_overheads_plus_fixed():
    r = train(overhead=SEED_OVERHEAD, fixed_usd="60k", gpu="h100")
    assert r["loaded_usd"] == pytest.approx(r["marginal_usd"] * 2.0 + 60_000)
    assert r["overhead_multiplier"] == pytest.approx(2.0)
    parts = r["cost_breakdown_usd"]
    assert sum(parts.values()) == pytest.approx(r["loaded_usd"])
    assert parts["experiments"] == pytest.approx(0.6 * r["marginal_usd"])


def test_no_overheads_says_loaded_is_not_yet_loaded():
    r = train()
    assert r["loaded_usd"] == r["marginal_usd"]
    assert any("no --overhead given" in n for n in r.notes)


def test_pue_scales_energy():
    a, b = train(gpu="h100"), train(gpu="h100", pue=1.3)
    assert b["energy_kwh"] == pytest.approx(1.3 * a["energy_kwh"])
    assert a["energy_kwh"] == pytest.approx(a["gpu_hours"] * 0.7)


# ----------------------------------------------------------------------------- sensitivity
def test_sensitivity_ranks_inputs_by_swing():
    r = train(peak="989T", mfu=0.4, goodput=0.9, overhead=SEED_OVERHEAD, fixed_usd="60k", sensitivity=True)
    rows = r["sensitivity"]
    swings = [row["swing_usd_per_million"] for row in rows]
    assert swings == sorted(swings, reverse=True)
    by = {row["input"]: row for row in rows}
    base = r["usd_per_million_tokens"]["loaded"]
    assert all(row["base_usd_per_million"] == pytest.approx(base) for row in rows)
    # MFU ±20%: compute scales by 1/0.8 and 1/1.2
    compute = base - 60e3 / 2e12 * 1e6
    assert by["mfu"]["low_usd_per_million"] == pytest.approx(compute / 0.8 + 0.03)
    assert by["mfu"]["high_usd_per_million"] == pytest.approx(compute / 1.2 + 0.03)
    assert by["goodput"]["high_value"] == 1.0  # capped: goodput cannot pass 1
    assert {"params", "tokens", "peak", "price", "fixed_usd", "overhead.experiments"} <= set(by)
    assert rows[0]["input"] in ("peak", "mfu")
    assert "sensitivity of loaded cost per million tokens" in r.text()


def test_sensitivity_moves_seq_len_through_the_attention_term():
    r = calculate("train", {"model": "llama-3.1-8b", "tokens": "1T", "price": "2.5", "seq_len": 8192,
                            "flops_convention": "causal", "sensitivity": True})
    by = {row["input"]: row for row in r["sensitivity"]}
    assert by["seq_len"]["low_value"] == pytest.approx(8192 * 0.8)
    assert by["seq_len"]["swing_usd_per_million"] < by["params"]["swing_usd_per_million"]


def test_charts_from_the_report():
    from napkin.calculators.train import TRAIN

    r = train(overhead=SEED_OVERHEAD, fixed_usd="60k", sensitivity=True)
    charts = TRAIN.charts(r)
    assert set(charts) == {"cost", "sensitivity"}
    cost = charts["cost"]["data"]["values"]
    assert {row["bar"] for row in cost} == {"marginal", "loaded"}
    assert sum(row["usd"] for row in cost if row["bar"] == "loaded") == pytest.approx(r["loaded_usd"])
    tornado = charts["sensitivity"]["layer"][0]
    assert len(charts["sensitivity"]["data"]["values"]) == 2 * len(r["sensitivity"])
    assert tornado["encoding"]["x2"] == {"field": "to"}
    assert set(TRAIN.charts(train())) == {"cost"}


# ------------------------------------------------- goodput auto and cluster size (review, round 3)
LLAMA3_RATE = {"interruptions": 419, "period": "54d", "observed_gpus": 16384, "checkpoint_time": "60s",
               "restart_time": "10min"}  # Llama 3 paper section 3.3.4: 419 interruptions, 54 days, 16,384 GPUs
BIG = {"params": "405B", "tokens": "15.6T", "goodput": "auto", "price": "2.5"}


def _llama3_goodput(n: float) -> float:
    from napkin.formulas import reliability as rel

    return rel.optimal_goodput(60.0, restart_s=600.0, mtbf_s=54 * DAY / 419 * 16384 / n)


def _tps_at_1() -> float:  # 405B at 989.5 TFLOP/s dense bf16 (H100 SXM), MFU 0.40
    return 989.5e12 * 0.40 / (6 * 405e9)


def test_gpus_given_beyond_max_gpus_with_goodput_auto():
    """Found in review: --gpus 100001 with --goodput auto was an internal error (TypeError): --max-gpus
    limits what a --deadline may ask for, not a cluster given."""
    r = calculate("train", {**BIG, "gpus": 100_001, **FAILURES})
    assert r["gpus"] == 100_001
    assert r["goodput"] == pytest.approx(_daly(50_000 * HOUR / 100_001)[1])
    assert r["wall_s"] == pytest.approx(15.6e12 / (_tps_at_1() * r["goodput"] * 100_001))


def test_throughput_peak_is_the_largest_gpus_times_goodput():
    """GPUs × goodput rises, peaks and falls as failures grow with the cluster: at Llama 3's rate with 60 s
    checkpoints and 10 min restarts it peaks near 235,500 GPUs (goodput 30.2%)."""
    from napkin.calculators.train import TrainRequest, peak_cluster
    from napkin.request import parse_request

    req = parse_request(TrainRequest, {**BIG, "gpus": 1, **LLAMA3_RATE})
    top = peak_cluster(req)
    x = lambda n: n * _llama3_goodput(n)  # noqa: E731
    assert x(top) >= x(top - 1) and x(top) >= x(top + 1)
    assert all(x(top) >= x(n) for n in (1, 1000, 16384, 100_000, 200_000, 300_000, 1_000_000, 10**8))
    assert 235_000 < top < 236_000 and _llama3_goodput(top) == pytest.approx(0.302, abs=0.001)


def test_a_deadline_no_cluster_can_meet_says_the_fastest():
    """Found in review: 405B on 15.6T tokens in 15 days at Llama 3's failure rate said it needed 1e21 GPUs
    and to allow 1.3e20 s. No size meets it: the fastest is 15.56 days, on ~235,500 GPUs."""
    with pytest.raises(InputError) as e:
        calculate("train", {**BIG, "deadline": "15d", "max_gpus": 10_000_000, **LLAMA3_RATE})
    msg = str(e.value)
    top = 235_541
    fastest = 15.6e12 / (_tps_at_1() * _llama3_goodput(top) * top)
    assert fastest / DAY == pytest.approx(15.5608, abs=1e-4)
    assert msg.startswith(f"deadline is infeasible: no cluster size meets it at these failure rates; GPUs × goodput "
                          f"peaks at {top:,} GPUs (goodput 30.2%), which take 15.56 d")
    assert msg.endswith("(allow 15.57 d or more, or checkpoint and restart faster)")
    r = calculate("train", {**BIG, "deadline": "15.57d", "max_gpus": 10_000_000, **LLAMA3_RATE})
    assert r["wall_s"] <= 15.57 * DAY and r["gpus_needed"] < top
    # within the default cap, the fastest is at the cap
    with pytest.raises(InputError) as e:
        calculate("train", {**BIG, "deadline": "15d", **LLAMA3_RATE})
    assert f"the fastest within --max-gpus 100,000; or raise --max-gpus to {top:,} and allow 15.57 d" in str(e.value)


def test_gpus_needed_with_goodput_auto_is_self_consistent():
    """Found in review: 20 days at the default cap said 100,670 GPUs, the count at the cap's goodput. The
    smallest cluster that meets 20 days at its own goodput is 101,270."""
    need = lambda n: math.ceil(15.6e12 / (_tps_at_1() * _llama3_goodput(n) * 20 * DAY))  # noqa: E731
    assert need(100_000) == 100_670 and need(101_270) == 101_270 and need(101_269) > 101_269
    with pytest.raises(InputError) as e:
        calculate("train", {**BIG, "deadline": "20d", **LLAMA3_RATE})
    assert str(e.value).startswith("deadline is infeasible: it needs 101,270 GPUs (at their goodput 54.7%), more "
                                   "than --max-gpus 100,000")
    r = calculate("train", {**BIG, "deadline": "20d", "max_gpus": 200_000, **LLAMA3_RATE})
    assert (r["gpus_for_deadline"], r["gpus_needed"]) == (101_270, 101_272)  # then whole 8-GPU nodes
    assert r["goodput"] == pytest.approx(_llama3_goodput(101_270), rel=1e-12)
    assert r["wall_s"] <= 20 * DAY


def test_gpus_past_the_throughput_peak_are_warned():
    r = calculate("train", {**BIG, "gpus": 300_000, **LLAMA3_RATE})
    (w,) = [w for w in r.warnings if w.code == "past-throughput-peak"]
    assert w.message.startswith("300,000 GPUs are past the size where GPUs × goodput peaks (235,541 GPUs")
    assert "past-throughput-peak" not in codes(calculate("train", {**BIG, "gpus": 200_000, **LLAMA3_RATE}))


# ------------------------------------------------------------- a plan's frozen defaults (review)
def _plan(**kw):
    """What `napkin train --save` writes for these inputs, read back as `--config` does."""
    from napkin.calculators.train import TrainRequest, plan_values, run_train
    from napkin.request import parse_request

    req = parse_request(TrainRequest, kw)
    first = run_train(req)
    values, _ = plan_values(req, first)
    return first, values


@pytest.mark.parametrize("inputs", [
    {"params": "7B", "tokens": "2T", "deadline": "3w"},                 # H100 SXM at its dated list price
    {"params": "7B", "tokens": "2T", "deadline": "3w", "peak": "989T"},  # seed 001's illustrative $2.50
])
def test_a_plans_frozen_defaults_keep_their_labels(inputs):
    """Found in review: after --save and --config the reference price became "given", its date, source and
    warning were lost, and the gpu assumption was dropped. A plan's default that is still today's default
    resolves as that default again: the same report."""
    first, values = _plan(**inputs)
    again = calculate("train", values)
    a, b = first.to_dict(), again.to_dict()
    assert b["price_basis"] == a["price_basis"] != "given"
    assert b["assumptions"] == a["assumptions"] and b["warnings"] == a["warnings"]
    assert {k: v for k, v in b.items() if k != "derivation"} == {k: v for k, v in a.items() if k != "derivation"}


def test_a_plans_default_that_is_no_longer_todays_stays_a_default():
    first, values = _plan(params="7B", tokens="2T", deadline="3w")
    values["price"] = 3.5  # the catalog's reference price when this plan was saved (it has moved since)
    r = calculate("train", values)
    price = assumption(r, "price")
    assert (price.value, price.basis) == (3.5, "reference")
    ref = catalog.table("prices")["gpu_hour"]["h100-sxm"]["usd_per_gpu_hour"]
    assert price.note == (f"the reference price when the plan was saved; today's default is ${ref:.2f}/h; "
                          "not a loaded price")
    assert r["price_basis"] == "reference price, as saved in the plan"
    assert "list-price" in codes(r)
    assert assumption(r, "gpu").basis == "assumed" and assumption(r, "mfu").basis == "assumed"


@pytest.mark.parametrize("gpu, per_host", [("tpu-v6e", 8), ("tpu-v5p", 4)])
def test_a_tpu_deadline_rounds_to_whole_hosts(gpu, per_host):
    """Review: only v5e knew its chips per host; v6e (8, Google's v6e page) and v5p (4, its topology table) round
    a --deadline's chips up to whole hosts too."""
    from napkin import calculate, catalog

    assert catalog.gpu(gpu).gpus_per_node == per_host
    r = calculate("train", gpu=gpu, params="70B", tokens="2T", deadline="10d", price="2.7/h")
    assert r["gpus_needed"] % per_host == 0 and r["nodes"] == r["gpus_needed"] // per_host
    assert r["gpus_needed"] - r["gpus_for_deadline"] < per_host
