"""Real logs as a new user brings them (the new-user review): a W&B export needs no --map, a trainer_state.json
brings its own clock, drift needs no plan, MFU is named for what it is, a busy count mapped as allocated warns,
and a big log shows progress on a terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from napkin import calculate
from napkin.units import DAY

from ledger_helpers import T0

DATA = Path(__file__).parent / "data"


def wandb_export(path: Path, *, slow_from_day: int | None = None, slower: float = 1.19) -> Path:
    """A W&B history export (``run.history()`` to CSV) of three days at 6 s a step, 4,096 tokens a step counted
    as tokens seen so far (``train/num_tokens``): columns as W&B and the Trainer name them. With
    ``slow_from_day``, each step from that day on takes ``slower`` times as long."""
    lines = ["_step,_runtime,_timestamp,train/global_step,train/loss,train/num_tokens,train/learning_rate"]
    t, step, k = T0, 0, 0
    i = 0
    while t < T0 + 3 * DAY:
        lines.append(f"{i},{t - T0:.3f},{t:.3f},{step},2.5,{k},0.0003")
        day = int((t - T0) // DAY) + 1
        pace = 6.0 * (slower if slow_from_day is not None and day >= slow_from_day else 1.0)
        t, step, k, i = t + 10 * pace, step + 10, k + 10 * 4096, i + 1
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_wandb_export_needs_no_map(tmp_path):
    """Step, _step, _timestamp, _runtime, train/global_step and train/num_tokens are found by name, case aside: the
    trainer's step before W&B's log counter, Unix time before time since the start, tokens seen as per step."""
    r = calculate("ledger", {"logs": [str(wandb_export(tmp_path / "wandb.csv"))], "price": "2/h", "gpus": 8})
    assert r["advanced_tokens"] == r["last_step"] * 4096
    assert r["gpu_hours_allocated"] == pytest.approx(3 * 24 * 8, rel=1e-3)
    assert r.absolute and [d["date"] for d in r["per_day"]] == ["2024-05-01", "2024-05-02", "2024-05-03"]
    assert ("columns read by name: train/global_step -> step; _timestamp -> t_wall; train/num_tokens -> tokens (a "
            "count of tokens seen so far: tokens per step is its change per step)") in r.notes
    upper = tmp_path / "upper.csv"
    upper.write_text("Step,T_Wall,GPUs_Allocated,Tokens\n0,1714521600,8,1000\n10,1714521700,8,1000\n")
    assert calculate("ledger", {"logs": [str(upper)], "price": "2/h"})["advanced_tokens"] == 10_000


def test_drift_without_a_plan_catches_a_19_percent_regression_on_day_3(tmp_path):
    """The review's case: steps 19% slower from day 3 of a W&B export raised nothing without a plan. Against the run's
    first day and the day before, day 3 costs 19% more per advanced token: two alerts."""
    path = wandb_export(tmp_path / "wandb.csv", slow_from_day=3)
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 8})
    days = r["per_day"]
    assert days[1]["baseline_ratio"] == pytest.approx(1.0, abs=1e-3)
    assert days[2]["baseline_ratio"] == pytest.approx(1.19, rel=2e-3)
    assert days[2]["day_over_day_ratio"] == pytest.approx(1.19, rel=2e-3)
    assert [(a["date"], a["kind"]) for a in r["drift_alerts"]] == [("2024-05-03", "baseline"),
                                                                  ("2024-05-03", "day-over-day")]
    assert r["baseline"]["dates"] == ["2024-05-01"]
    assert r["drift_alerts"][0]["reason"] == "19.0% above the run's first day (2024-05-01)"
    steady = calculate("ledger", {"logs": [str(wandb_export(tmp_path / "ok.csv"))], "price": "2/h", "gpus": 8})
    assert steady["drift_alerts"] == []


def test_no_per_day_figures_are_invented_for_a_log_without_a_clock(tmp_path):
    lines = ["epoch,step,train_loss"] + [f"0,{s},2.5" for s in range(49, 1000, 50)]
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(lines) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 8, "tokens_per_step": "1M",
                             "start": "2024-05-01T00:00:00Z", "end": "2024-05-03T00:00:00Z"})
    assert r["per_day"] == [] and r["drift_alerts"] == []
    assert ("no per-day figures: the log has no wall clock per record (its times are spread over the run), and drift "
            "needs one; log with napkin's callback (napkin.ledger.callbacks) for the time of each step") in r.notes


def test_trainer_state_uses_its_own_clock(tmp_path):
    """transformers 5 writes train_runtime on every entry: the report needs no --start/--end, and says so."""
    r = calculate("ledger", {"logs": [str(DATA / "trainer_state_tokens_seen.json")], "price": "3.6/h", "gpus": 1})
    assert r["format"] == "hf" and r["records"] == 13 and r["last_step"] == 20  # 12 entries, and step 0 at time 0
    assert r["wall_s"] == pytest.approx(0.086, rel=1e-9)  # the step-20 entry's train_runtime: from the start
    assert r["advanced_tokens"] == 20 * 64
    assert ("t_wall from each entry's train_runtime: the seconds since the Trainer started (its own clock: set-up and "
            "queueing before it are not in the paid time)") in r.notes
    state = json.loads((DATA / "trainer_state_tokens_seen.json").read_text())
    for e in state["log_history"][:-1]:
        e.pop("train_runtime")
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps(state))
    r = calculate("ledger", {"logs": [str(path)], "price": "3.6/h", "gpus": 1})
    assert r["wall_s"] == pytest.approx(0.0861)  # the summary's train_runtime, steps 0 to 20
    assert r["per_day"] == []


def test_mfu_over_busy_time_beside_mfu_times_goodput_over_paid_time(tmp_path):
    """100 steps of 10 s on 64 GPUs with a 1,000 s gap after step 50 (a stall): busy time is the 100 steps' 1,000 s
    (the gap counts one median step), paid time 1,990 s. 7B, 4Mi tokens a step, H100 dense bf16 989.5 TFLOP/s:
    mfu_busy = 6 · 7e9 · 100 · 4Mi / (1,000 s · 64 · 989.5e12) = 27.8%; mfu_realised = mfu_busy · 1,000 / 1,990."""
    rows = [(s, T0 + 10 * s + (990 if s > 50 else 0), 64, 4_194_304) for s in range(0, 101)]
    path = tmp_path / "m.csv"
    path.write_text("step,t_wall,gpus_allocated,tokens\n" + "".join(f"{s},{t},{g},{k}\n" for s, t, g, k in rows))
    r = calculate("ledger", {"logs": [str(path)], "price": "2.5/h", "params": "7B", "gpu": "h100"})
    busy = 6 * 7e9 * 100 * 4_194_304 / (1000 * 64 * 989.5e12)
    assert r["mfu_busy"] == pytest.approx(busy, rel=1e-9)
    assert r["mfu_realised"] == pytest.approx(busy * 1000 / 1990, rel=1e-9)
    assert r["mfu_realised"] == pytest.approx(r["mfu_busy"] * r["goodput"]["time"], rel=1e-12)


def test_busy_gpus_mapped_as_allocated_warn(tmp_path):
    path = tmp_path / "busy.csv"
    path.write_text("step,t_wall,gpus_busy,tokens\n0,1714521600,60,1000\n10,1714521700,60,1000\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "map": {"gpus_busy": "gpus_allocated"}})
    assert ("gpus-busy-mapped", "--map gpus_busy=gpus_allocated: paid time is allocated GPU time, and 'gpus_busy' "
            "reads as GPUs busy; GPUs allocated but idle (waiting on a straggler, a restart or the data loader) are "
            "paid for too, so a busy count understates the cost: map the GPUs allocated, or give --gpus K") in \
        [(w.code, w.message) for w in r.warnings]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_only():
    from napkin.ledger.progress import Progress, for_terminal

    assert for_terminal(_Terminal(), as_json=True) is None
    assert for_terminal(io.StringIO(), as_json=False) is None
    term = _Terminal()
    ticks = iter(range(100))
    p = Progress(term, clock=lambda: next(ticks))
    p.update("steps.csv", 0, 1_000_000)  # a small log: nothing
    assert term.getvalue() == ""
    for done in (0, 500_000_000, 1_000_000_000):
        p.update("steps.csv", done, 1_000_000_000)
    p.stage("working out the cost of 20,000,000 records")
    p.close()
    shown = term.getvalue().split("\r\x1b[2K")
    assert shown[1:] == ["reading steps.csv [..............................] 0% (0 B of 1 GB)",
                         "reading steps.csv [###############...............] 50% (500 MB of 1 GB)",
                         "reading steps.csv [##############################] 100% (1 GB of 1 GB)",
                         "working out the cost of 20,000,000 records", ""]


def test_piped_output_has_no_progress(tmp_path, run_cli):
    path = wandb_export(tmp_path / "wandb.csv")
    out = run_cli("ledger", "report", str(path), "--price", "2/h", "--gpus", "8", "--no-store")
    assert out.stderr == ""
