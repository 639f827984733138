"""The sample log shipped for the README walk-through says what the README says it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from napkin import calculate

LOGS = Path(__file__).resolve().parents[2] / "examples" / "logs"


def test_sample_run_against_its_plan():
    r = calculate("ledger", {"logs": [str(LOGS / "sample-run.csv")], "plan": str(LOGS / "plan.toml")})
    # the plan file (napkin train --save) gives the price and the planned marginal $/M: seed 001's
    # 7B example, 6N · price / (3600 · 989.5T · 0.40 · 0.90) (worked example cost-7b-2t-marginal)
    assert r["planned_usd_per_million_tokens"] == pytest.approx(0.0819, rel=0.002)
    assert [a["date"] for a in r["drift_alerts"]] == ["2024-05-03"]
    assert r["restarts"]["rollbacks"] == 1 and r["restarts"]["steps_lost"] == 300
    assert r["skipped_lines"]["count"] == 1 and r["skipped_lines"]["first"][0]["line"] == 398
    assert r["duplicates"] == 1
    # day 1 runs at 7.0 s per step: 64 GPUs · 7.0 s / 3600 · $2.50 / 4Mi tokens
    assert r["per_day"][0]["usd_per_million_advanced_tokens"] == pytest.approx(64 * 7.0 / 3600 * 2.5 / 4 / 2**20 * 1e6)
