"""The arithmetic against a hand calculation and an independent implementation of seed 001."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from napkin import calculate
from napkin.errors import InputError
from napkin.ledger.realised import RunningLedger, paid_gpu_seconds

from ledger_helpers import HAND, T0, write_csv


def test_hand_computed(tmp_path):
    """Seed 001, "Tracking the realised cost during a run", worked by hand on six records.

    Records (step, t s, GPUs): (0,0,8) (10,100,8) (20,200,8) then a restart that rolled back to
    step 15 on 4 GPUs: (15,500,4) (25,600,4) (30,650,4); 1,000 tokens per step; $3.60/GPU-hour.
    paid GPU-s = 100·8 + 100·8 + 300·8 + 100·4 + 50·4 = 4,600 -> 1.2778 GPU-h -> $4.60
    advanced   = (30 − 0) · 1,000 = 30,000 tokens -> $4.60 / 30,000 · 1e6 = $153.33/M
    processed  = 10 + 10 + 10 (one log interval after the rollback) + 10 + 5 = 45 steps = 45,000
    productive = 100 + 100 + 0 + 100 · 5/10 + 50 = 300 s of 650 s wall
    """
    log = write_csv(tmp_path / "hand.csv", HAND)
    r = calculate("ledger", {"logs": [log], "price": "3.60/h"})
    assert r["gpu_hours_allocated"] == pytest.approx(4600 / 3600, rel=1e-12)
    assert r["realised_usd"] == pytest.approx(4.60, rel=1e-12)
    assert r["advanced_tokens"] == 30_000
    assert r["processed_tokens"] == 45_000
    assert r["usd_per_million_advanced_tokens"] == pytest.approx(4.60 / 30_000 * 1e6, rel=1e-12)
    assert r["goodput"] == pytest.approx({"tokens": 30 / 45, "time": 300 / 650}, rel=1e-12)
    restarts = r["restarts"]
    assert (restarts["count"], restarts["rollbacks"], restarts["gaps"], restarts["steps_lost"]) == (1, 1, 0, 15)
    assert restarts["time_lost_s"] == pytest.approx(350, rel=1e-12)
    assert restarts["events"][0]["from_step"] == 20 and restarts["events"][0]["to_step"] == 15
    assert [d["date"] for d in r["per_day"]] == ["2024-05-01"]


def test_rollback_raises_cost_and_never_inflates_denominator(tmp_path):
    """The same 30 steps with and without the rollback: the rollback costs more per advanced token."""
    clean = [(s, T0 + 10 * s, 8, 1000) for s in range(0, 31, 5)]
    a = calculate("ledger", {"logs": [write_csv(tmp_path / "a.csv", clean)], "price": "3.60/h"})
    b = calculate("ledger", {"logs": [write_csv(tmp_path / "b.csv", HAND)], "price": "3.60/h"})
    assert a["advanced_tokens"] == b["advanced_tokens"] == 30_000
    assert b["usd_per_million_advanced_tokens"] > a["usd_per_million_advanced_tokens"]
    assert b["usd_per_million_processed_tokens"] < b["usd_per_million_advanced_tokens"]


def test_gap_is_paid_and_lost(tmp_path):
    """A stall of 1,000 s in the middle: paid at the GPUs allocated, counted as lost time, not a rollback."""
    rows = [(s, T0 + 10 * s, 2, 100) for s in range(0, 11)] + [(s, T0 + 1000 + 10 * s, 2, 100) for s in range(11, 21)]
    r = calculate("ledger", {"logs": [write_csv(tmp_path / "gap.csv", rows)], "price": "1/h"})
    assert r["gpu_hours_allocated"] == pytest.approx((1000 + 10 * 20) * 2 / 3600)
    assert r["restarts"]["gaps"] == 1 and r["restarts"]["rollbacks"] == 0
    # the gap pair should have taken one step (10 s); the other 1,000 s are lost
    assert r["restarts"]["time_lost_s"] == pytest.approx(1000)
    assert r["goodput"]["tokens"] == 1.0


def test_day_split_across_midnight(tmp_path):
    """One interval from 23:00 to 01:00 is split 1 h / 1 h; per-day figures add up to the totals."""
    rows = [(0, T0 + 22 * 3600, 1, 10), (1, T0 + 23 * 3600, 1, 10), (2, T0 + 25 * 3600, 1, 10),
            (3, T0 + 26 * 3600, 1, 10)]
    r = calculate("ledger", {"logs": [write_csv(tmp_path / "mid.csv", rows)], "price": "1/h"})
    days = r["per_day"]
    assert [d["date"] for d in days] == ["2024-05-01", "2024-05-02"]
    assert days[0]["gpu_hours"] == pytest.approx(2.0) and days[1]["gpu_hours"] == pytest.approx(2.0)
    assert days[0]["advanced_tokens"] == pytest.approx(15) and days[1]["advanced_tokens"] == pytest.approx(15)


# ------------------------------------------------------------------ independent calculation
def seed_reference(rows, price):
    """Seed 001's loop, written independently of napkin.ledger (plus the processed-token rule)."""
    seen, recs = set(), []
    for r in rows:  # exact duplicate lines dropped
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            recs.append(r)
    gpu_s = 0.0
    for prev, cur in zip(recs, recs[1:]):
        gpu_s += (cur[1] - prev[1]) * prev[2]
    usd = gpu_s / 3600 * price
    fwd = sorted(cur[0] - prev[0] for prev, cur in zip(recs, recs[1:]) if cur[0] > prev[0])
    n = len(fwd)
    stride = fwd[n // 2] if n % 2 else (fwd[n // 2 - 1] + fwd[n // 2]) / 2
    processed = sum((cur[0] - prev[0] if cur[0] > prev[0] else stride) * cur[3] for prev, cur in zip(recs, recs[1:]))
    tokens = recs[0][3]
    advanced = (recs[-1][0] - recs[0][0]) * tokens
    return {"usd": usd, "gpu_hours": gpu_s / 3600, "advanced": advanced, "processed": processed,
            "per_m": usd / advanced * 1e6}


@st.composite
def messy_logs(draw):
    """A run with restarts (rollbacks), GPU-count changes, gaps and duplicate lines."""
    tokens = draw(st.sampled_from([4096, 1_000_000, 4_194_304]))
    step, t, gpus = 0, T0 + draw(st.integers(0, 86_400)), draw(st.sampled_from([1, 8, 64]))
    rows = [(step, t, gpus, tokens)]
    for _ in range(draw(st.integers(2, 40))):
        kind = draw(st.sampled_from(["step", "step", "step", "rollback", "gap", "gpus", "dup"]))
        if kind == "dup":
            rows.append(rows[-1])
            continue
        if kind == "rollback" and step > 3:
            step -= draw(st.integers(1, 3))
            t += draw(st.integers(60, 7200))
        elif kind == "gpus":
            gpus = draw(st.sampled_from([4, 8, 16, 128]))
            step += 1
            t += draw(st.integers(1, 100))
        else:
            step += draw(st.integers(1, 5))
            t += draw(st.integers(1, 100)) + (draw(st.integers(3600, 50_000)) if kind == "gap" else 0)
        rows.append((step, t, gpus, tokens))
    step += 1
    rows.append((step, t + 10, gpus, tokens))
    return rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=messy_logs(), garbage=st.lists(st.sampled_from(["garbage", "1,2", ",,,", "x,y,z,w", "5,abc,8,1"]),
                                            max_size=4))
def test_matches_independent_calculation(tmp_path, rows, garbage):
    path = write_csv(tmp_path / "messy.csv", rows, extra_lines=[(i * 3 % (len(rows) + 1), g)
                                                                for i, g in enumerate(garbage)])
    ref = seed_reference(rows, 2.5)
    r = calculate("ledger", {"logs": [path], "price": "2.50/h"})
    assert r["realised_usd"] == pytest.approx(ref["usd"], rel=1e-9)
    assert r["gpu_hours_allocated"] == pytest.approx(ref["gpu_hours"], rel=1e-9)
    assert r["advanced_tokens"] == pytest.approx(ref["advanced"], rel=1e-12)
    assert r["processed_tokens"] == pytest.approx(ref["processed"], rel=1e-12)
    assert r["usd_per_million_advanced_tokens"] == pytest.approx(ref["per_m"], rel=1e-9)
    assert r["skipped_lines"]["count"] == len(garbage)
    # per-day figures add up to the totals, and goodput is a fraction
    assert sum(d["gpu_hours"] for d in r["per_day"]) == pytest.approx(ref["gpu_hours"], rel=1e-9)
    assert sum(d["advanced_tokens"] for d in r["per_day"]) == pytest.approx(ref["advanced"], rel=1e-9)
    assert 0 < r["goodput"]["tokens"] <= 1 and 0 <= r["goodput"]["time"] <= 1 + 1e-12


@settings(max_examples=30, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(1, 5), st.floats(0.1, 100), st.integers(1, 64)), min_size=2, max_size=30))
def test_running_ledger_matches_batch(steps):
    """The callbacks' running figures equal the report's on the same forward-only records."""
    import numpy as np

    from napkin.ledger.realised import analyse
    from napkin.ledger.records import Records

    s, t, g = [0], [T0], [steps[0][2]]
    for ds, dt_, gpus in steps:
        s.append(s[-1] + ds)
        t.append(t[-1] + dt_)
        g.append(gpus)
    run = RunningLedger(2.5)
    for si, ti, gi in zip(s, t, g):
        run.add(si, ti, gi, 4096)
    n = len(s)
    rec = Records.of(step=np.array(s), t_wall=np.array(t), gpus=np.array(g, dtype=float),
                     tokens=np.full(n, 4096.0), line=np.arange(n), source=np.zeros(n, dtype=int), sources=["x"])
    led = analyse(rec, usd_per_gpu_hour=2.5)
    assert run.usd == pytest.approx(led.usd, rel=1e-12)
    assert run.usd_per_million == pytest.approx(led.usd_per_million_advanced, rel=1e-12)
    assert run.gpu_seconds == pytest.approx(paid_gpu_seconds(t, gpus_allocated=g), rel=1e-12)


def test_mfu_realised_is_6n_over_paid_time(tmp_path):
    """7B on 64 H100s (989.5 TFLOP/s dense bf16): 6 · N · advanced / (GPU-seconds · peak)."""
    rows = [(s, T0 + 10 * s, 64, 4_194_304) for s in range(0, 101)]
    r = calculate("ledger", {"logs": [write_csv(tmp_path / "m.csv", rows)], "price": "2.50/h", "params": "7B",
                             "gpu": "h100"})
    peak = r.assumptions[[a.name for a in r.assumptions].index("dense_flops_per_s")].value
    expected = 6 * 7e9 * 100 * 4_194_304 / (1000 * 64 * peak)
    assert r["mfu_realised"] == pytest.approx(expected, rel=1e-12)
    assert math.isclose(r["mfu_realised"], 0.2782, rel_tol=2e-3)


def test_plan_drift_alerts(tmp_path):
    """Day 1 on plan, day 2 twice as slow: only day 2 alerts at 10%."""
    rows = [(s, T0 + 36 * s, 1, 1_000_000) for s in range(0, 2401)]  # 24 h of 36 s steps
    t = rows[-1][1]
    rows += [(2400 + i, t + 72 * i, 1, 1_000_000) for i in range(1, 1200)]
    per_m = 36 / 3600 * 1.0 / 1.0  # $ per step per M tokens at $1/h: 0.01
    r = calculate("ledger", {"logs": [write_csv(tmp_path / "d.csv", rows)], "price": "1/h",
                             "plan_usd_per_million": str(per_m)})
    days = r["per_day"]
    assert days[0]["drift_ratio"] == pytest.approx(1.0, rel=1e-9)
    assert days[1]["drift_ratio"] == pytest.approx(2.0, rel=1e-9)
    assert [a["date"] for a in r["drift_alerts"]] == ["2024-05-02"]
    assert r["drift_alerts"][0]["reason"] == "100.0% above plan"


def test_errors_name_what_is_missing(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="log is empty; got "):
        calculate("ledger", {"logs": [str(empty)], "price": "1/h", "format": "csv"})
    header = tmp_path / "header.csv"
    header.write_text("step,t_wall,gpus_allocated,tokens\n")
    with pytest.raises(InputError, match="has no step records"):
        calculate("ledger", {"logs": [str(header)], "price": "1/h"})
    one = write_csv(tmp_path / "one.csv", [(5, T0, 8, 10)])
    with pytest.raises(InputError, match=r"has one step record \(step 5 at line 2\)"):
        calculate("ledger", {"logs": [one], "price": "1/h"})
    back = write_csv(tmp_path / "back.csv", [(1, T0 + 10, 8, 10), (2, T0 + 5, 8, 10)])
    with pytest.raises(InputError, match=r"^t_wall must not go backwards \(it was 2024-05-01 00:00:10 UTC at "
                                         r".*back.csv:line 2; 1 place\(s\) in all\); got 2024-05-01 00:00:05 UTC "
                                         r"at .*back.csv:line 3 \(a step log must be in time order"):
        calculate("ledger", {"logs": [back], "price": "1/h"})
    nogpu = write_csv(tmp_path / "nogpu.csv", [(1, T0, 10), (2, T0 + 1, 10)], header="step,t_wall,tokens")
    with pytest.raises(InputError, match=r"^gpus_allocated is missing from the csv log \(columns: step, t_wall, "
                                         r"tokens\); got .*nogpu.csv \(give --gpus K"):
        calculate("ledger", {"logs": [nogpu], "price": "1/h"})
    with pytest.raises(InputError, match="price is required"):
        calculate("ledger", {"logs": [nogpu], "gpus": 8})
    with pytest.raises(InputError, match=r"^map does not name a column of the log; got iter=step \(columns are: step, t_wall, tokens\)"):
        calculate("ledger", {"logs": [nogpu], "gpus": 8, "price": "1/h", "map": {"iter": "step"}})
    stuck = write_csv(tmp_path / "stuck.csv", [(3, T0, 1, 1), (3, T0 + 5, 1, 1)])
    with pytest.raises(InputError, match=r"has one step record \(step 3 at line 2; 1 more line logs the same step again, "
                                         r"which does not advance\)"):
        calculate("ledger", {"logs": [stuck], "price": "1/h"})


def test_map_and_options(tmp_path):
    """--map renames columns; --gpus and --tokens-per-step fill fields the log lacks."""
    rows = [(s, 10.0 * s) for s in range(0, 11)]
    path = write_csv(tmp_path / "m.csv", rows, header="iter,seconds")
    r = calculate("ledger", {"logs": [path], "price": "3.6/h", "map": {"iter": "step", "seconds": "t_wall"},
                             "gpus": 2, "tokens_per_step": "1k"})
    assert r["realised_usd"] == pytest.approx(100 * 2 / 3600 * 3.6)
    assert r["advanced_tokens"] == 10_000
    assert r["per_day"][0]["date"] == "day 1"
    assert any("seconds from an arbitrary start" in n for n in r.notes)
