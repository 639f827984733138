"""`napkin check`: published claims against 6·N·D, golden and published figures, verdict rules."""

from __future__ import annotations

import pytest

from napkin import calculate, catalog
from napkin.calculators.check import MFU_PLAUSIBLE_MAX, OMITTED, lowest_price, reference_price
from napkin.errors import InputError, UnknownName
from napkin.units import HOUR
from tests.conftest import approx, worked

H100_BF16 = 989.5e12


def lowest_catalog_price() -> float:
    low = lowest_price()
    assert low is not None, "the prices catalog has no gpu_hour table"
    return float(low[1]["usd_per_gpu_hour"])


# ------------------------------------------------------------------------------ golden
@pytest.mark.parametrize("ex", worked("claim-70b-2t-500k"), ids=str)
def test_claim_70b_2t_500k(ex):
    r = calculate("check", params=ex.inputs["params"], tokens=ex.inputs["tokens"],
                  claimed_usd=ex.inputs["claimed_usd"])
    assert r["train_flops"] == approx(ex.expected["train_flops"], ex.rel_tol)
    # the sound response: never "the model cost that"; it omits failed runs, ablations, data, post-training, salaries
    assert r["verdict"] != "consistent"
    for item in ("failed", "ablations", "data", "post-training", "salaries"):
        assert any(item in o for o in r["omitted"])


@pytest.mark.parametrize("ex", worked("claim-70b-2t-500k"), ids=str)
def test_claim_70b_2t_500k_verdict_at_the_cheapest_catalog_hour(ex):
    """Without --price the verdict is judged at the cheapest catalog hour, the most generous reading."""
    r = calculate("check", params="70B", tokens="2T", claimed_usd="500k")
    low = lowest_catalog_price()
    mfu = ex.expected["train_flops"] / (500e3 / low * HOUR * H100_BF16)
    assert r["implied_mfu"] == pytest.approx(mfu, rel=1e-9)
    expected = "inconsistent" if mfu > 1 else "implausible" if mfu > MFU_PLAUSIBLE_MAX else \
        "plausible only as one final run's compute"
    assert r["verdict"] == expected
    # one run at the reference MFU and the H100's own catalog price
    ref = float(reference_price("h100-sxm")["usd_per_gpu_hour"])
    assert r["compute_usd"] == pytest.approx(8.4e23 / (H100_BF16 * 0.40 * HOUR) * ref, rel=1e-9)
    assert r["implied_usd_per_gpu_hour"] == pytest.approx(500e3 / (8.4e23 / (H100_BF16 * 0.40 * HOUR)), rel=1e-9)


@pytest.mark.parametrize("ex", worked("train-8b-15t"), ids=str)
def test_8b_15t_500k_accelerator_hours_imply_400_tflops(ex):
    """Seed 002: 7.2e23 FLOPs at 400 TFLOP/s sustained is 500,000 accelerator-hours; the check inverts it."""
    r = calculate("check", params=ex.inputs["params"], tokens=ex.inputs["tokens"],
                  claimed_gpu_hours=ex.expected["accelerator_hours"], gpu="h100")
    assert r["train_flops"] == approx(ex.expected["train_flops"], ex.rel_tol)
    assert r["implied_mfu"] * H100_BF16 == approx(ex.inputs["sustained_flops_per_s"], ex.rel_tol)
    assert r["verdict"] == "consistent"


# -------------------------------------------------------------------- published figures
def test_deepseek_v3_h800_gpu_hours():
    """DeepSeek-V3 technical report, table 1: 2.788M H800 GPU-hours, $5.576M at $2 per GPU-hour;
    37B activated parameters on 14.8T tokens."""
    r = calculate("check", params="37B", tokens="14.8T", gpu="h800", claimed_gpu_hours="2.788M", price="2/h")
    assert r["train_flops"] == pytest.approx(6 * 37e9 * 14.8e12)
    assert r["implied_usd"] == pytest.approx(5.576e6)
    assert r["implied_mfu"] == pytest.approx(6 * 37e9 * 14.8e12 / (2.788e6 * HOUR * 989.5e12), rel=1e-12)
    assert r["implied_mfu"] == pytest.approx(0.331, abs=0.001)
    assert r["verdict"] == "consistent"


def test_deepseek_v3_from_the_catalog_uses_active_params():
    r = calculate("check", model="deepseek-v3", gpu="h800", claimed_gpu_hours="2.788M")
    m = catalog.model("deepseek-v3")
    assert r["params"] == m.active_params
    assert r["tokens"] == 14.8e12
    assert any("active" in n for n in r.notes)


def test_llama3_gpus_times_days_against_claimed_gpu_hours():
    """Llama 3 paper section 3.3.4: 16,384 H100s over a 54-day snapshot; model card: 30.84M GPU-hours for 405B.
    The snapshot cannot hold the whole claim: 16,384 × 54 × 24 = 21.23M."""
    r = calculate("check", gpus=16384, days=54, claimed_gpu_hours="30.84M")
    assert r["gpu_hours_from_span"] == 16384 * 54 * 24
    assert r["claimed_over_span"] == pytest.approx(30.84e6 / 21233664)
    assert r["gpu_hours_agree"] is False
    assert r["verdict"] == "inconsistent"
    assert "cannot describe the same span" in r["verdict_reason"]
    assert "16,384 GPUs allocated for all 54 days" in r["verdict_assumptions"]


def test_gpus_times_days_agree_within_ten_percent():
    r = calculate("check", gpus=16384, days=54, claimed_gpu_hours="21M")
    assert r["gpu_hours_agree"] is True
    assert r["verdict"] == "consistent"


def test_llama3_405b_compute_from_its_gpu_hours():
    """3.8e25 FLOPs (Llama 3 paper) over 30.84M H100-hours: an MFU averaged over every paid hour of 0.35,
    below the 38-43% the paper reports while running, as goodput under 1 requires."""
    r = calculate("check", params="405B", tokens="15.6T", claimed_gpu_hours="30.84M", gpu="h100")
    assert r["implied_mfu"] == pytest.approx(6 * 405e9 * 15.6e12 / (30.84e6 * HOUR * 989.5e12))
    assert 0.33 < r["implied_mfu"] < 0.38
    assert r["verdict"] == "consistent"


# ------------------------------------------------------------------------- verdict rules
def test_needs_more_than_peak_at_the_cheapest_catalog_price_is_inconsistent():
    low = lowest_catalog_price()
    c = 6 * 70e9 * 2e12
    usd = c / (H100_BF16 * HOUR) * low * 0.9  # 0.9 of the hours even MFU 1 would need
    r = calculate("check", params="70B", tokens="2T", claimed_usd=usd)
    assert r["implied_mfu"] == pytest.approx(1 / 0.9)
    assert r["verdict"] == "inconsistent"
    assert "cheapest hour in the catalog" in r["verdict_reason"]


def test_needs_mfu_between_06_and_1_is_implausible_and_says_why():
    low = lowest_catalog_price()
    c = 6 * 70e9 * 2e12
    usd = c / (H100_BF16 * HOUR * 0.8) * low
    r = calculate("check", params="70B", tokens="2T", claimed_usd=usd)
    assert r["implied_mfu"] == pytest.approx(0.8)
    assert r["verdict"] == "implausible"
    assert "no large dense run has published above" in r["verdict_reason"]
    assert "0.80" in r["verdict_reason"]


def test_never_overstates_impossible_at_list_price_but_not_at_the_cheapest():
    """A claim that needs MFU above 1 at the H100's own price but not at the cheapest catalog hour is
    not called inconsistent."""
    ref = float(reference_price("h100-sxm")["usd_per_gpu_hour"])
    low = lowest_catalog_price()
    assert low < ref
    c = 6 * 70e9 * 2e12
    usd = c / (H100_BF16 * HOUR * 0.5) * low  # MFU 0.5 at the cheapest hour
    r = calculate("check", params="70B", tokens="2T", claimed_usd=usd)
    assert r["implied_mfu_at_price"] == pytest.approx(0.5 * ref / low)
    assert r["verdict"] != "inconsistent"


def test_a_given_price_is_the_verdicts_price_and_is_listed():
    r = calculate("check", params="70B", tokens="2T", claimed_usd="500k", price="2/h")
    assert r["implied_gpu_hours"] == 250e3
    assert r["implied_mfu"] == pytest.approx(8.4e23 / (250e3 * HOUR * H100_BF16))
    assert r["verdict"] == "implausible"
    assert "price $2/h (given)" in r["verdict_assumptions"]
    # the cheaper catalog reading is said beside it
    assert "cheapest hour" in r["verdict_reason"]


def test_plausible_only_as_one_run():
    r = calculate("check", params="70B", tokens="2T", claimed_usd="1.5M", price="2/h")
    assert r["verdict"] == "plausible only as one final run's compute"
    assert r["claimed_over_compute"] == pytest.approx(1.5e6 / (8.4e23 / (H100_BF16 * 0.4 * HOUR) * 2))


def test_consistent_when_the_claim_leaves_room_for_a_production_cost():
    r = calculate("check", params="70B", tokens="2T", claimed_usd="5M", price="2/h")
    assert r["verdict"] == "consistent"
    assert r["claimed_over_compute"] > 2


@pytest.mark.parametrize("raw", [
    {"params": "70B", "tokens": "2T", "claimed_usd": "500k"},
    {"params": "70B", "tokens": "2T", "claimed_usd": "50k", "price": "2/h"},
    {"params": "37B", "tokens": "14.8T", "claimed_gpu_hours": "2.788M", "gpu": "h800"},
    {"gpus": 16384, "days": 54, "claimed_gpu_hours": "30.84M"},
])
def test_every_verdict_lists_its_assumptions(raw):
    r = calculate("check", raw)
    assert r["verdict"] in ("consistent", "plausible only as one final run's compute", "implausible",
                            "inconsistent")
    assert r["verdict_assumptions"], "a verdict without its assumptions"
    assert r["verdict_reason"]
    assert r["omitted"] == OMITTED


def test_default_gpu_and_mfu_are_labelled_assumptions():
    r = calculate("check", params="70B", tokens="2T", claimed_usd="500k")
    basis = {a.name: a.basis for a in r.assumptions}
    assert basis["gpu"] == "assumed"
    assert basis["mfu"] == "reference"
    assert {a.name: a.value for a in r.assumptions}["mfu"] == 0.40


# -------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("raw, field, words", [
    ({"params": "70B", "claimed_usd": "500k"}, "tokens", "is required"),
    ({"tokens": "2T", "claimed_usd": "500k"}, "params", "is required"),
    ({"gpus": 16384, "claimed_gpu_hours": "30M"}, "days", "is required with --gpus"),
    ({"days": 54, "claimed_gpu_hours": "30M"}, "gpus", "is required with --days"),
    ({"params": "70B", "tokens": "2T"}, "claimed_usd", "there is no claim to check"),
    ({"claimed_usd": "500k"}, "params", "is required"),
    ({"params": "70B", "tokens": "2T", "claimed_usd": "500k", "mfu": 40}, "mfu", "did you mean 0.40?"),
    ({"params": "70B", "tokens": "2T", "claimed_usd": "-5"}, "claimed_usd", "must be > 0"),
])
def test_bad_input_names_the_field(raw, field, words):
    with pytest.raises(InputError) as e:
        calculate("check", raw)
    assert e.value.field == field
    assert words in str(e.value)


def test_unknown_gpu():
    with pytest.raises(UnknownName):
        calculate("check", params="70B", tokens="2T", claimed_usd="500k", gpu="h1000")
