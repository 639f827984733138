"""Goodput from failures and checkpoints: the reliability formulas and `napkin goodput`.

Published figures: the Llama 3 paper (Dubey et al. 2024), section 3.3.4, reports 419 unexpected
interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs (one about every 3 hours)
and more than 90% effective training time.
"""

from __future__ import annotations

import math
import random

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
    g = rel.goodput_first_order(1800.0, checkpoint_s=60.0, restart_s=600.0, mtbf_s=5 * HOUR)
    assert g == pytest.approx(1 - (60 / 1800 + 1500 / 18000))


def test_daly_interval_matches_daly_2006_figures():
    """Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3) 2006,
    figures 3-5 (δ = 5 min, R = 10 min): the model predicts τopt = 117 min at M = 24 h, 57 min at 6 h,
    9.1 min at 15 min."""
    for m, minutes in ((24 * HOUR, 117), (6 * HOUR, 57), (15 * 60.0, 9.1)):
        tau = rel.daly_interval_s(300.0, mtbf_s=m)
        assert tau / 60 == pytest.approx(minutes, abs=0.5 if minutes > 10 else 0.05)
    # δ ≥ 2M: checkpoint once per MTBF
    assert rel.daly_interval_s(1000.0, mtbf_s=400.0) == 400.0
    # it tends to Young's sqrt(2δM) as δ/M → 0
    assert rel.daly_interval_s(1.0, mtbf_s=1e7) == pytest.approx(rel.young_daly_interval_s(1.0, mtbf_s=1e7),
                                                                 rel=1e-3)


def test_exact_goodput_by_hand_where_first_order_fails():
    """262,144 GPUs at Llama 3's 50,677 h per GPU: M = 695.9 s (11.6 min); δ = 60 s, R = 10 min.
    By hand, Daly 2006 eq. 9: τ* = sqrt(2·60·695.94)·(1 + ⅓·sqrt(60/1391.9) + (60/1391.9)/9) − 60 = 250.37 s;
    goodput = 250.37 · e^(−600/695.94) / (695.94 · (e^(310.37/695.94) − 1)) = 0.2703. The first-order model
    gives 1 − (60/288.99 + (144.49 + 600)/695.94) = −0.277 at Young's τ."""
    m = 50677 * HOUR / 262144
    assert m == pytest.approx(695.94, abs=0.01)
    tau = rel.daly_interval_s(60.0, mtbf_s=m)
    assert tau == pytest.approx(250.37, abs=0.01)
    g = rel.goodput_at_interval(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
    assert g == pytest.approx(tau * math.exp(-600 / m) / (m * math.expm1((tau + 60) / m)))
    assert g == pytest.approx(0.2703, abs=1e-4)
    young = rel.young_daly_interval_s(60.0, mtbf_s=m)
    assert rel.goodput_first_order(young, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m) == pytest.approx(-0.2774,
                                                                                                      abs=1e-4)


def _simulate(tau: float, delta: float, restart: float, m: float, work: float, seed: int) -> float:
    """Useful time / wall time of a job that checkpoints every τ of work, under Poisson failures (rate 1/M):
    a failure in a segment (work or write) loses it; a restart takes R and can itself be cut short."""
    rnd = random.Random(seed)
    t = done = 0.0
    nxt = rnd.expovariate(1 / m)
    seg = tau + delta
    while done < work:
        if nxt >= seg:
            t, nxt, done = t + seg, nxt - seg, done + tau
            continue
        t += nxt
        nxt = rnd.expovariate(1 / m)
        while nxt < restart:  # the restart is interrupted and begins again
            t += nxt
            nxt = rnd.expovariate(1 / m)
        t, nxt = t + restart, nxt - restart
    return done / t


def test_exact_goodput_agrees_with_a_simulation():
    """The closed form against a seeded Monte Carlo of the same failure process (about 40,000 failures)."""
    m = 50677 * HOUR / 262144
    tau = rel.daly_interval_s(60.0, mtbf_s=m)
    sim = _simulate(tau, 60.0, 600.0, m, work=1e7, seed=7)
    assert sim == pytest.approx(rel.goodput_at_interval(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m),
                                rel=0.03)


def test_exact_goodput_tends_to_first_order_when_failures_are_rare():
    m, d, r = 30 * DAY, 30.0, 300.0
    tau = rel.young_daly_interval_s(d, mtbf_s=m)
    exact = rel.goodput_at_interval(tau, checkpoint_s=d, restart_s=r, mtbf_s=m)
    assert exact == pytest.approx(rel.goodput_first_order(tau, checkpoint_s=d, restart_s=r, mtbf_s=m), abs=1e-4)


def test_lost_fractions_account_for_all_the_time():
    for m in (600.0, 3 * HOUR, 30 * DAY):
        tau = rel.daly_interval_s(60.0, mtbf_s=m)
        g = rel.goodput_at_interval(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
        lost = rel.lost_fractions(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
        assert g + sum(lost.values()) == pytest.approx(1.0, rel=1e-12)
        assert all(v > 0 for v in lost.values())
    # to first order: δ/τ, τ/(2M), R/M
    m = 30 * DAY
    tau = rel.young_daly_interval_s(60.0, mtbf_s=m)
    lost = rel.lost_fractions(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
    assert lost["checkpoint_writes"] == pytest.approx(60 / tau, rel=0.01)
    assert lost["rework"] == pytest.approx(tau / 2 / m, rel=0.01)
    assert lost["restarts"] == pytest.approx(600 / m, rel=0.01)


def test_daly_interval_maximises_exact_goodput():
    m, d, r = 3 * HOUR, 60.0, 600.0
    best = rel.daly_interval_s(d, mtbf_s=m)
    g_best = rel.goodput_at_interval(best, checkpoint_s=d, restart_s=r, mtbf_s=m)
    for f in (0.5, 0.8, 0.95, 1.05, 1.25, 2.0):
        assert rel.goodput_at_interval(best * f, checkpoint_s=d, restart_s=r, mtbf_s=m) < g_best
    assert rel.optimal_goodput(d, restart_s=r, mtbf_s=m) == pytest.approx(g_best)
    # Young's first-order interval still minimises the first-order loss
    young = rel.young_daly_interval_s(d, mtbf_s=m)
    for f in (0.5, 2.0):
        assert rel.lost_fraction(young * f, checkpoint_s=d, restart_s=r, mtbf_s=m) > \
            rel.lost_fraction(young, checkpoint_s=d, restart_s=r, mtbf_s=m)


def test_goodput_stays_positive_and_is_array_safe():
    # τ = 10 s of work per 60 s write: first order says 1 − (6 + 605/3600) < 0; exactly, 10 s in every ~84 s
    g = rel.goodput_at_interval(10.0, checkpoint_s=60.0, restart_s=600.0, mtbf_s=HOUR)
    assert g == pytest.approx(10 * math.exp(-600 / HOUR) / (HOUR * math.expm1(70 / HOUR)))
    assert rel.goodput_first_order(10.0, checkpoint_s=60.0, restart_s=600.0, mtbf_s=HOUR) < 0 < g < 10 / 70
    assert rel.goodput_at_interval(1e6, checkpoint_s=60.0, restart_s=600.0, mtbf_s=1.0) >= 0.0  # no overflow
    arr = rel.goodput_at_interval(np.array([10.0, 1000.0]), checkpoint_s=60.0, restart_s=600.0, mtbf_s=HOUR)
    assert 0 < arr[0] < arr[1] < 1
    sizes = np.array([1024.0, 16384.0, 262144.0])
    m = rel.cluster_mtbf_s(50_000 * HOUR, n_gpus=sizes)
    tau = rel.daly_interval_s(60.0, mtbf_s=m)
    g = rel.goodput_at_interval(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
    assert g.shape == (3,) and g[0] > g[1] > g[2] > 0
    assert g[1] == pytest.approx(rel.optimal_goodput(60.0, restart_s=600.0, mtbf_s=50_000 * HOUR / 16384))
    both = rel.daly_interval_s(np.array([300.0, 1000.0]), mtbf_s=np.array([900.0, 400.0]))
    assert both[1] == 400.0 and both[0] == pytest.approx(rel.daly_interval_s(300.0, mtbf_s=900.0))


# -------------------------------------------------------------------------- calculator
def test_llama3_goodput_from_its_interruption_count():
    r = calculate("goodput", gpus=LLAMA3_GPUS, interruptions=LLAMA3_INTERRUPTIONS, period="54d",
                  checkpoint_time="60s", restart_time="10min", checkpoint_interval="1h")
    m = LLAMA3_PERIOD_S / LLAMA3_INTERRUPTIONS
    assert r["mtbf_s"] == pytest.approx(m)
    assert r["interruptions_per_day"] == pytest.approx(419 / 54)
    assert r["young_daly_interval_s"] == pytest.approx(math.sqrt(2 * 60 * m))
    x = 60 / (2 * m)
    tau = math.sqrt(2 * 60 * m) * (1 + math.sqrt(x) / 3 + x / 9) - 60
    assert r["optimal_interval_s"] == pytest.approx(tau)
    assert r["goodput"] == pytest.approx(tau * math.exp(-600 / m) / (m * math.expm1((tau + 60) / m)))
    assert r["goodput"] == pytest.approx(0.8525, abs=1e-4)
    assert r["checkpoint_interval_s"] == 3600
    assert r["goodput_at_interval"] == pytest.approx(3600 * math.exp(-600 / m) / (m * math.expm1(3660 / m)))
    assert r["goodput"] > r["goodput_at_interval"]
    lost = r["lost_fraction"]
    assert sum(lost.values()) == pytest.approx(1 - r["goodput"])
    # close to Young's first order here (within 1.1 points), and said so
    assert any("first-order" in n and "84.2%" in n for n in r.notes)
    assert not any(w.code == "frequent-failures" for w in r.warnings)


def test_llama3_over_90_percent_needs_fast_checkpoints_and_restarts():
    """The paper reports >90% effective training time at this interruption rate: the model reaches it with
    ~30 s checkpoints and ~5 min restarts, not with 60 s and 10 min."""
    fast = calculate("goodput", gpus=LLAMA3_GPUS, interruptions=419, period="54d", checkpoint_time="30s",
                     restart_time="5min")
    slow = calculate("goodput", gpus=LLAMA3_GPUS, interruptions=419, period="54d", checkpoint_time="60s",
                     restart_time="10min")
    assert fast["goodput"] > 0.90
    assert slow["goodput"] < 0.90


def test_frequent_failures_give_the_exact_goodput_and_say_why():
    """The reviewer's case: 262,144 GPUs at 50,677 h per GPU, 60 s checkpoints and 10 min restarts. The old
    first-order model clamped goodput at 0%; Daly's exact model gives 27.0% (see the by-hand test above)."""
    r = calculate("goodput", gpus=262144, mtbf_per_gpu="50677h", checkpoint_time="60s", restart_time="10min")
    assert r["goodput"] == pytest.approx(0.2703, abs=1e-4)
    assert r["goodput_by_cluster"][r["cluster_gpus"].index(262144)] == pytest.approx(r["goodput"])
    (w,) = [w for w in r.warnings if w.code == "frequent-failures"]
    assert "failures arrive faster than the job can make progress" in w.message
    assert "27.0%" in w.message
    assert "optimistic" not in w.message and "restarts faster" not in w.message
    assert any("-27.7%" in n for n in r.notes), "the first-order figure is shown beside the exact one"


def test_per_gpu_mtbf_and_cluster_mtbf_agree():
    a = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min")
    b = calculate("goodput", gpus=16384, cluster_mtbf=50000 * HOUR / 16384, checkpoint_time="60s",
                  restart_time="10min")
    assert a["mtbf_s"] == pytest.approx(50000 * HOUR / 16384)
    assert a["goodput"] == pytest.approx(b["goodput"])


def test_count_observed_on_another_cluster_is_scaled():
    """419 interruptions on 16,384 GPUs predicts a quarter as many on 4,096."""
    r = calculate("goodput", gpus=4096, interruptions=419, period="54d", observed_gpus=16384,
                  checkpoint_time="60s", restart_time="10min")
    assert r["mtbf_s"] == pytest.approx(4 * LLAMA3_PERIOD_S / 419)
    c = calculate("goodput", gpus=4096, cluster_mtbf=LLAMA3_PERIOD_S / 419, observed_gpus=16384,
                  checkpoint_time="60s", restart_time="10min")
    assert c["mtbf_s"] == pytest.approx(r["mtbf_s"])


def test_goodput_falls_as_the_cluster_grows():
    r = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min")
    assert r["cluster_gpus"] == [256, 1024, 4096, 16384, 65536, 262144]
    g = r["goodput_by_cluster"]
    assert all(a >= b for a, b in zip(g, g[1:]))
    assert g[3] == pytest.approx(r["goodput"])
    custom = calculate("goodput", gpus=1000, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min",
                       sizes=[8, 100000])
    assert custom["cluster_gpus"] == [8, 1000, 100000]


def test_goodput_chart():
    r = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min")
    spec = calculators.get("goodput").charts(r)["goodput-vs-cluster"]
    rows = spec["data"]["values"]
    assert [x["gpus"] for x in rows] == r["cluster_gpus"]
    assert [x["this_job"] for x in rows].count(True) == 1


def test_frequent_failures_warning_only_when_they_outpace_a_cycle():
    r = calculate("goodput", gpus=100000, mtbf_per_gpu="50000h", checkpoint_time="5min", restart_time="30min")
    assert any(w.code == "frequent-failures" for w in r.warnings)
    assert r["mtbf_s"] < r["optimal_interval_s"] + 300 + 1800
    calm = calculate("goodput", gpus=1024, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min")
    assert not calm.warnings


@pytest.mark.parametrize("raw, field, words", [
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min"}, "mtbf_per_gpu", "give one interruption rate"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min", "mtbf_per_gpu": "50000h", "cluster_mtbf": "3h"},
     "cluster_mtbf", "conflicts with --mtbf-per-gpu"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min", "interruptions": 419}, "period", "is required"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10min", "mtbf_per_gpu": "50000h", "observed_gpus": 16},
     "observed_gpus", "needs --interruptions"),
    ({"gpus": 8, "restart_time": "10min", "mtbf_per_gpu": "50000h"}, "checkpoint_time", "is required"),
    ({"gpus": 0, "checkpoint": "60s", "restart": "10min", "mtbf_per_gpu": "50000h"}, "gpus", "must be > 0"),
    ({"gpus": 8, "checkpoint": "60GB", "restart": "10min", "mtbf_per_gpu": "50000h"}, "checkpoint_time",
     "expected a duration"),
    ({"gpus": 8, "checkpoint": "60s", "restart": "10m", "mtbf_per_gpu": "50000h"}, "restart_time", "ambiguous"),
    ({"gpus": 8, "checkpoint": "60s", "checkpoint_time": "90s", "restart": "10min", "mtbf_per_gpu": "50000h"},
     "checkpoint_time", "is given twice (as checkpoint and as checkpoint_time)"),
    ({"gpus": 8, "checkpoint_time": "60s", "restart_time": "10min", "period": "54d"}, "interruptions",
     "is required with --period"),
])
def test_bad_input_names_the_field(raw, field, words):
    with pytest.raises(InputError) as e:
        calculate("goodput", raw)
    assert e.value.field == field
    assert words in str(e.value)


def test_napkin_train_goodput_auto_uses_the_same_derivation():
    """`napkin train --goodput auto` imports these formulas: the same inputs give the same goodput."""
    g = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min")
    t = calculate("train", params="405B", tokens="15.6T", gpus=16384, goodput="auto", mtbf_per_gpu="50000h",
                  checkpoint_time="60s", restart_time="10min")
    assert t["goodput"] == pytest.approx(g["goodput"], rel=1e-12)


FAILURE_FIELDS = {"mtbf_per_gpu", "cluster_mtbf", "interruptions", "period", "observed_gpus", "checkpoint_time",
                  "restart_time", "checkpoint_interval"}


def test_goodput_and_train_take_the_failure_model_under_the_same_names():
    """One spelling in both commands (the flags come from the field names), goodput's first spellings kept
    as aliases in both."""
    from napkin.request import fields

    by_cmd = {}
    for cmd in ("goodput", "train"):
        infos = {f.name: f for f in fields(calculators.get(cmd).request)}
        assert FAILURE_FIELDS <= set(infos), cmd
        by_cmd[cmd] = {n: (infos[n].option, tuple(infos[n].alias_options)) for n in FAILURE_FIELDS}
    assert by_cmd["goodput"] == by_cmd["train"]
    assert by_cmd["goodput"]["checkpoint_time"] == ("--checkpoint-time", ("--checkpoint",))
    assert by_cmd["goodput"]["restart_time"] == ("--restart-time", ("--restart",))
    assert by_cmd["goodput"]["checkpoint_interval"] == ("--checkpoint-interval", ("--interval",))


def test_old_spellings_are_aliases():
    new = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min",
                    checkpoint_interval="1h")
    old = calculate("goodput", gpus=16384, mtbf_per_gpu="50000h", checkpoint="60s", restart="10min", interval="1h")
    assert old.to_dict() == new.to_dict()


def test_train_takes_the_seeds_cluster_rate():
    """Seed 003 / Llama 3 paper 3.3.4: 419 interruptions in 54 days on 16,384 GPUs, given to train directly."""
    g = calculate("goodput", gpus=LLAMA3_GPUS, interruptions=419, period="54d", checkpoint_time="60s",
                  restart_time="10min")
    t = calculate("train", params="405B", tokens="15.6T", gpus=LLAMA3_GPUS, goodput="auto", interruptions=419,
                  period="54d", checkpoint_time="60s", restart_time="10min")
    assert t["goodput"] == pytest.approx(g["goodput"], rel=1e-12)
    assert t["cluster_mtbf_s"] == pytest.approx(LLAMA3_PERIOD_S / 419)
    # on a quarter of the cluster, the count observed on 16,384 GPUs means a quarter as many interruptions
    q = calculate("train", params="405B", tokens="15.6T", gpus=4096, goodput="auto", interruptions=419,
                  period="54d", observed_gpus=LLAMA3_GPUS, checkpoint="60s", restart="10min")
    assert q["cluster_mtbf_s"] == pytest.approx(4 * LLAMA3_PERIOD_S / 419)
    assert q["goodput"] == pytest.approx(calculate("goodput", gpus=4096, interruptions=419, period="54d",
                                                   observed_gpus=LLAMA3_GPUS, checkpoint_time="60s",
                                                   restart_time="10min")["goodput"], rel=1e-12)


def test_train_with_a_deadline_needs_the_cluster_a_count_was_seen_on():
    with pytest.raises(InputError) as e:
        calculate("train", params="70B", tokens="15T", deadline="60d", goodput="auto", interruptions=419,
                  period="54d", checkpoint_time="60s", restart_time="10min")
    assert e.value.field == "observed_gpus"
    r = calculate("train", params="70B", tokens="15T", deadline="60d", goodput="auto", interruptions=419,
                  period="54d", observed_gpus=LLAMA3_GPUS, checkpoint_time="60s", restart_time="10min")
    per_gpu = LLAMA3_PERIOD_S / 419 * LLAMA3_GPUS
    assert r["cluster_mtbf_s"] == pytest.approx(per_gpu / r["gpus_for_deadline"])


# --------------------------------------------------------------- found in review, round 3
def test_lost_fractions_stay_finite_where_the_exponents_overflow():
    """Found in review: 1e9 GPUs at 50,000 h each (M = 0.18 s) printed `restarts: nan` (inf/inf once
    e^((τ+δ)/M) and e^(R/M) were clipped). The split is finite, sums to 1 − goodput, and all of the time
    goes to restarts when the job never finishes a segment."""
    for m in (0.18, 1e-3, 11.6 * 60, 3 * HOUR):
        tau = rel.daly_interval_s(60.0, mtbf_s=m)
        g = rel.goodput_at_interval(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
        lost = rel.lost_fractions(tau, checkpoint_s=60.0, restart_s=600.0, mtbf_s=m)
        assert all(math.isfinite(v) and 0 <= v <= 1 for v in lost.values()), (m, lost)
        assert g + sum(lost.values()) == pytest.approx(1.0, rel=1e-12)
    assert rel.lost_fractions(0.18, checkpoint_s=60.0, restart_s=600.0, mtbf_s=0.18)["restarts"] == 1.0
    arr = rel.lost_fractions(np.array([100.0, 0.18]), checkpoint_s=60.0, restart_s=600.0,
                             mtbf_s=np.array([3 * HOUR, 0.18]))
    assert np.isfinite(arr["restarts"]).all() and arr["restarts"][1] == 1.0
    out = calculate("goodput", gpus=100_000_000, mtbf_per_gpu="5000h", checkpoint_time="60s",  # M = 0.18 s again,
                    restart_time="10min")                                                      # within napkin.limits
    assert not any(math.isnan(v) for v in out["lost_fraction"].values())


def _feed_note(r):
    (note,) = [n for n in r.notes if "napkin train" in n]
    return note


@pytest.mark.parametrize("mtbf, flag", [("30min", "--mtbf-per-gpu 30min"), ("50000", "--mtbf-per-gpu 50000s"),
                                        ("50000h", "--mtbf-per-gpu 50000h"), ("1.5h", "--mtbf-per-gpu 90min"),
                                        ("50000.5s", "--mtbf-per-gpu 50000.5s")])
def test_the_note_for_train_repeats_the_rate_exactly(mtbf, flag):
    """Found in review: the note rounded the per-GPU MTBF to whole hours (30min became 0h, 50000 s became
    14h) and the goodput to three decimals (0.000): the flags it prints give train the same inputs."""
    from napkin import units

    r = calculate("goodput", gpus=16, mtbf_per_gpu=mtbf, checkpoint_time="60s", restart_time="10min")
    note = _feed_note(r)
    assert flag + " --checkpoint-time 1min --restart-time 10min" in note
    assert units.parse(flag.split()[1], "seconds") == units.parse(mtbf, "seconds")
    fed = note.split("--goodput ")[1].split("`")[0]
    assert float(fed) == pytest.approx(r["goodput"], rel=1e-3) and float(fed) > 0


def test_no_goodput_to_feed_when_it_is_zero():
    r = calculate("goodput", gpus=100_000_000, mtbf_per_gpu="5000h", checkpoint_time="60s", restart_time="10min")
    assert r["goodput"] == 0.0
    assert "--goodput 0" not in _feed_note(r)
    assert _feed_note(r).startswith("goodput is 0 at this size (no measurable progress)")


@pytest.mark.parametrize("raw, words", [
    ({"mtbf_per_gpu": "50000"}, "--mtbf-per-gpu is 13.89 h: write --mtbf-per-gpu 50000h if hours were meant"),
    ({"interruptions": 419, "period": "54"}, "--period is 54 s: write --period 54d if days were meant"),
    ({"cluster_mtbf": "3"}, "--cluster-mtbf is 3 s: write --cluster-mtbf 3h if hours were meant"),
])
def test_a_per_gpu_mtbf_under_a_day_says_a_bare_number_is_seconds(raw, words):
    """Found in review: --mtbf-per-gpu 50000 was read as 50,000 s (13.9 h) without a word. Llama 3's cluster
    (paper section 3.3.4) saw ~50,700 h per GPU; under a day per GPU is most likely a unit left off."""
    r = calculate("goodput", gpus=LLAMA3_GPUS, checkpoint_time="60s", restart_time="10min", **raw)
    (w,) = [w for w in r.warnings if w.code == "short-mtbf"]
    assert "a number without a unit is read as seconds" in w.message and words in w.message
    t = calculate("train", params="7B", tokens="2T", gpus=64, goodput="auto", checkpoint_time="60s",
                  restart_time="10min", observed_gpus=None if "mtbf_per_gpu" in raw else LLAMA3_GPUS, **raw)
    assert "short-mtbf" in [w.code for w in t.warnings]
    ok = calculate("goodput", gpus=LLAMA3_GPUS, mtbf_per_gpu="50000h", checkpoint_time="60s", restart_time="10min")
    assert "short-mtbf" not in [w.code for w in ok.warnings]


def test_goodput_from_failure_rates_is_said_to_be_planned_not_given():
    """Review: `--goodput auto` was listed as 'goodput = 85.1% (given)': napkin derived it, the user gave 'auto'."""
    from napkin import calculate

    r = calculate("train", params="70B", tokens="15T", gpus=16384, goodput="auto", mtbf_per_gpu="50000h",
                  checkpoint_time="60s", restart_time="10min", price="2.50/h")
    a = next(x for x in r.assumptions if x.name == "goodput")
    assert a.basis == "planned" and a.value == pytest.approx(r["goodput"])
    assert any(line.startswith("planned: goodput = 85.1%") for line in r.text().splitlines())
