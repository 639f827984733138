"""Goodput from failures and checkpoints: the reliability formulas and `napkin goodput`.

Published figures: the Llama 3 paper (Dubey et al. 2024), section 3.3.4, reports 419 unexpected
interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs (one about every 3 hours)
and more than 90% effective training time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from napkin import calculate, calculators
from napkin.errors import InputError
from napkin.formulas import reliability as rel
from napkin.units import DAY, HOUR

LLAMA3_PERIOD_S = 54 * DAY
LLAMA3_INTERRUPTIONS = 419
LLAMA3_GPUS = 16384


# ---------------------------------------------------------------------------- formulas
def test_llama3_cluster_mtbf_and_per_gpu_rate():
    m = rel.mtbf_from_count_s(LLAMA3_PERIOD_S, n_interruptions=LLAMA3_INTERRUPTIONS)
    assert m / HOUR == pytest.approx(3.093, abs=0.001)          # "one every three hours"
    per_gpu = rel.mtbf_per_gpu_s(m, n_gpus=LLAMA3_GPUS)
    assert per_gpu / HOUR == pytest.approx(50_677, rel=1e-4)     # ~50,000 GPU-hours between failures
    assert rel.cluster_mtbf_s(per_gpu, n_gpus=LLAMA3_GPUS) == pytest.approx(m)


def test_young_daly_interval():
    """Young 1974: τ* = sqrt(2 δ M); 60 s checkpoints against a 3.09 h MTBF: about 19 minutes."""
    m = LLAMA3_PERIOD_S / LLAMA3_INTERRUPTIONS
    tau = rel.young_daly_interval_s(60.0, mtbf_s=m)
    assert tau == pytest.approx(math.sqrt(2 * 60 * m))
    assert tau / 60 == pytest.approx(19.27, abs=0.01)


def test_goodput_first_order_model_by_hand():
    # δ = 60 s, τ = 30 min, R = 10 min, M = 5 h: lost = 60/1800 + (900 + 600)/18000
    g = rel.goodput_at_interval(1800.0, checkpoint_s=60.0, restart_s=600.0, mtbf_s=5 * HOUR)
    assert g == pytest.approx(1 - (60 / 1800 + 1500 / 18000))


def test_young_daly_interval_maximises_goodput():
    m, d, r = 3 * HOUR, 60.0, 600.0
    best = rel.young_daly_interval_s(d, mtbf_s=m)
    g_best = rel.goodput_at_interval(best, checkpoint_s=d, restart_s=r, mtbf_s=m)
    for f in (0.5, 0.8, 1.25, 2.0):
        assert rel.goodput_at_interval(best * f, checkpoint_s=d, restart_s=r, mtbf_s=m) < g_best
    assert rel.optimal_goodput(d, restart_s=r, mtbf_s=m) == pytest.approx(g_best)


def test_goodput_clipped_at_zero_and_array_safe():
    assert rel.goodput_at_interval(10.0, checkpoint_s=60.0, restart_s=600.0, mtbf_s=HOUR) == 0.0
    arr = rel.goodput_at_interval(np.array([10.0, 1000.0]), checkpoint_s=60.0, restart_s=600.0, mtbf_s=HOUR)
    assert arr[0] == 0.0 and 0 < arr[1] < 1
    sizes = np.array([1024.0, 16384.0])
    m = rel.cluster_mtbf_s(50_000 * HOUR, n_gpus=sizes)
    tau = rel.young_daly_interval_s(60.0, mtbf_s=m)
    g = rel.goodput_at_interval(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
    assert g.shape == (2,) and g[0] > g[1]


# -------------------------------------------------------------------------- calculator
def test_llama3_goodput_from_its_interruption_count():
    r = calculate("goodput", gpus=LLAMA3_GPUS, interruptions=LLAMA3_INTERRUPTIONS, period="54d",
                  checkpoint="60s", restart="10min", interval="1h")
    m = LLAMA3_PERIOD_S / LLAMA3_INTERRUPTIONS
    assert r["mtbf_s"] == pytest.approx(m)
    assert r["interruptions_per_day"] == pytest.approx(419 / 54)
    tau = math.sqrt(2 * 60 * m)
    assert r["young_daly_interval_s"] == pytest.approx(tau)
    assert r["goodput"] == pytest.approx(1 - (60 / tau + (tau / 2 + 600) / m))
    assert r["goodput_at_interval"] == pytest.approx(1 - (60 / 3600 + (1800 + 600) / m))
    assert r["goodput"] > r["goodput_at_interval"]
    lost = r["lost_fraction"]
    assert sum(lost.values()) == pytest.approx(1 - r["goodput"])


def test_llama3_over_90_percent_needs_fast_checkpoints_and_restarts():
    """The paper reports >90% effective training time at this interruption rate: the first-order
    model reaches it with ~30 s checkpoints and ~5 min restarts, not with 60 s and 10 min."""
    fast = calculate("goodput", gpus=LLAMA3_GPUS, interruptions=419, period="54d", checkpoint="30s",
                     restart="5min")
    slow = calculate("goodput", gpus=LLAMA3_GPUS, interruptions=419, period="54d", checkpoint="60s",
                     restart="10min")
    assert fast["goodput"] > 0.89
    assert slow["goodput"] < 0.90


def test_per_gpu_mtbf_and_cluster_mtbf_agree():
    a = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint="60s", restart="10min")
    b = calculate("goodput", gpus=16384, cluster_mtbf=50000 * HOUR / 16384, checkpoint="60s", restart="10min")
    assert a["mtbf_s"] == pytest.approx(50000 * HOUR / 16384)
    assert a["goodput"] == pytest.approx(b["goodput"])


def test_count_observed_on_another_cluster_is_scaled():
    """419 interruptions on 16,384 GPUs predicts a quarter as many on 4,096."""
    r = calculate("goodput", gpus=4096, interruptions=419, period="54d", observed_gpus=16384,
                  checkpoint="60s", restart="10min")
    assert r["mtbf_s"] == pytest.approx(4 * LLAMA3_PERIOD_S / 419)


def test_goodput_falls_as_the_cluster_grows():
    r = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint="60s", restart="10min")
    assert r["cluster_gpus"] == [256, 1024, 4096, 16384, 65536, 262144]
    g = r["goodput_by_cluster"]
    assert all(a >= b for a, b in zip(g, g[1:]))
    assert g[3] == pytest.approx(r["goodput"])
    custom = calculate("goodput", gpus=1000, mtbf_per_gpu="50000h", checkpoint="60s", restart="10min",
                       sizes=[8, 100000])
    assert custom["cluster_gpus"] == [8, 1000, 100000]


def test_goodput_chart():
    r = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint="60s", restart="10min")
    spec = calculators.get("goodput").charts(r)["goodput-vs-cluster"]
    rows = spec["data"]["values"]
    assert [x["gpus"] for x in rows] == r["cluster_gpus"]
    assert [x["this_job"] for x in rows].count(True) == 1


def test_first_order_warning_when_failures_are_frequent():
    r = calculate("goodput", gpus=100000, mtbf_per_gpu="50000h", checkpoint="5min", restart="30min")
    assert any(w.code == "first-order" for w in r.warnings)


@pytest.mark.parametrize("raw, field, words", [
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min"}, "mtbf_per_gpu", "give one interruption rate"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min", "mtbf_per_gpu": "50000h", "cluster_mtbf": "3h"},
     "cluster_mtbf", "conflicts with --mtbf-per-gpu"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min", "interruptions": 419}, "period", "is required"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min", "mtbf_per_gpu": "50000h", "observed_gpus": 16},
     "observed_gpus", "needs --interruptions"),
    ({"gpus": 8, "restart": "10min", "mtbf_per_gpu": "50000h"}, "checkpoint", "is required"),
    ({"gpus": 0, "checkpoint": "60s", "restart": "10min", "mtbf_per_gpu": "50000h"}, "gpus", "must be > 0"),
    ({"gpus": 8, "checkpoint": "60GB", "restart": "10min", "mtbf_per_gpu": "50000h"}, "checkpoint",
     "expected a duration"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10m", "mtbf_per_gpu": "50000h"}, "restart", "ambiguous"),
])
def test_bad_input_names_the_field(raw, field, words):
    with pytest.raises(InputError) as e:
        calculate("goodput", raw)
    assert e.value.field == field
    assert words in str(e.value)


def test_napkin_train_goodput_auto_uses_the_same_derivation():
    """`napkin train --goodput auto` imports these formulas: the same inputs give the same goodput."""
    g = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint="60s", restart="10min")
    t = calculate("train", params="405B", tokens="15.6T", gpus=16384, goodput="auto", mtbf_per_gpu="50000h",
                  checkpoint_time="60s", restart_time="10min")
    assert t["goodput"] == pytest.approx(g["goodput"], rel=1e-12)
