"""Defects a reviewer found (rev2): multi-rank torchtitan logs, a watched log overwritten by a
restart, Python logging timestamps, and the messages for logs napkin cannot read."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from napkin import calculate
from napkin.errors import InputError
from napkin.ledger.calculator import LedgerRequest
from napkin.request import parse_request

from ledger_helpers import HAND, T0, iso, write_csv

DATA = Path(__file__).parent / "data"
HAND_USD = 4.60  # test_realised.test_hand_computed: the same six records at $3.60/GPU-hour


def _report(path, **kw):
    return calculate("ledger", {"logs": [str(path)], "price": "3.60/h", **kw})


# --- 1. torchtitan prints its step line on every rank -------------------------------------------------------

def test_torchtitan_two_ranks_keeps_rank_0():
    """The reviewer's log: steps 1, 10, ..., 1000 printed by [rank0]: and [rank1]: 3 ms apart. Read as records
    the copies were 101 fake rollbacks and 263.3M processed tokens; the run advanced 999 steps of 131,072."""
    r = _report(DATA / "titan_2ranks.log", gpus=8, tokens_per_step="131072", price="2.5/h")
    assert r["records"] == 101
    assert r["first_step"] == 1 and r["last_step"] == 1000
    assert r["advanced_tokens"] == 999 * 131072
    assert r["processed_tokens"] == 999 * 131072
    assert r["restarts"]["rollbacks"] == 0 and r["restarts"]["count"] == 0
    assert r["goodput"] == {"tokens": 1.0, "time": 1.0}
    assert ("the log has the step lines of 2 ranks ([rankN]: prefixes): rank 0's are the records "
            "(101 lines of the other ranks are copies, not read)") in r.notes


def test_torchtitan_one_copy_per_node_without_prefix(tmp_path):
    """A multi-node log without rank prefixes: each step line once per node, a few ms apart; read once. A step
    line repeated minutes later (a restart from a checkpoint) is a record, not a copy."""
    lines = []
    for i, step in enumerate((10, 20, 30, 20, 30, 40)):
        for node in range(3):
            lines.append(f"[titan] 2024-05-01 00:{i:02d}:00,{node * 4:03d} - root - INFO - step: {step:2}  "
                         "loss:  7.1234  tps: 6,827  tflops: 250.12  mfu: 25.30%")
    path = tmp_path / "titan.log"
    path.write_text("\n".join(lines) + "\n")
    r = _report(path, gpus=8, tokens_per_step="1000")
    assert r["records"] == 6
    assert r["restarts"]["rollbacks"] == 1
    assert r["advanced_tokens"] == 30 * 1000
    assert "12 step line(s) repeat the step of the line before within 1 s (one copy per node or rank): " \
           "read once" in r.notes


# --- 2. watch: a restart that overwrites the log -------------------------------------------------------------

def _jsonl(path, steps, toff, mode="w"):
    """As /work/review/rev2-56/trunc.py writes: 8 GPUs, 1M tokens a step, 3 s a step."""
    with open(path, mode) as fh:
        for s in steps:
            fh.write(json.dumps({"step": s, "t_wall": T0 + toff + s * 3.0, "gpus_allocated": 8,
                                 "tokens": 1000000}) + "\n")


def test_watch_keeps_the_cost_of_a_log_overwritten_by_a_restart(tmp_path):
    """Steps 0..290 (870 s at 8 GPUs: 1.933 GPU-h, $4.833 at $2.50/h), then `python train.py > log` restarts:
    steps 200..390 at T0+1600..T0+2170. The cost so far must not drop to the new file's alone (570 s: $3.167):
    the first part is kept, and the 730 s between the parts are paid too (2170 s at 8 GPUs = $12.06)."""
    from napkin.ledger.watch import Watcher

    path = tmp_path / "trunc.jsonl"
    _jsonl(path, range(0, 300, 10), 0)
    w = Watcher(str(path), parse_request(LedgerRequest, {"logs": [str(path)], "price": "2.5/h"}))
    up = w.poll()
    assert up.report["last_step"] == 290 and up.report["realised_usd"] == pytest.approx(870 * 8 / 3600 * 2.5)
    size = os.path.getsize(path)
    _jsonl(path, range(200, 400, 10), 1000)  # truncated and rewritten, smaller than before
    assert os.path.getsize(path) < size
    up = w.poll()
    assert up.lines[0] == (f"restart: {path} was overwritten (it shrank from {size:,} to {os.path.getsize(path):,} "
                           "bytes): the 30 records read before (steps 0 to 290; $4.833 so far) are kept as part 1 "
                           "of the run")
    r = up.report
    assert r["realised_usd"] == pytest.approx((1000 + 390 * 3.0) * 8 / 3600 * 2.5)
    assert r["records"] == 50 and r["last_step"] == 390
    assert r["restarts"]["rollbacks"] == 1
    assert any(n.startswith(f"{path} was overwritten by 1 restart(s)") for n in r.notes)
    assert re.search(r"step 390 .* \$12\.06 so far$", up.lines[1])
    _jsonl(path, [400, 410], 1000, mode="a")  # the new part grows: still joined, no new restart line
    up = w.poll()
    assert not any(ln.startswith("restart:") for ln in up.lines)
    assert up.report["last_step"] == 410 and up.report["records"] == 52


def test_watch_sees_a_replaced_log_that_grew_past_the_old_size(tmp_path):
    """Rewritten between two polls with more bytes than before: its first record changed, so it is a restart."""
    from napkin.ledger.watch import Watcher

    path = tmp_path / "steps.jsonl"
    _jsonl(path, range(0, 50, 10), 0)
    w = Watcher(str(path), parse_request(LedgerRequest, {"logs": [str(path)], "price": "2.5/h"}))
    assert w.poll().report["last_step"] == 40
    _jsonl(path, range(30, 300, 10), 500)
    up = w.poll()
    assert up.lines[0].startswith(f"restart: {path} was overwritten (its first lines changed): the 5 records")
    assert up.report["records"] == 5 + 27
    assert up.report["realised_usd"] == pytest.approx((500 + 290 * 3.0) * 8 / 3600 * 2.5)


# --- 3. Python logging timestamps in generic logs ------------------------------------------------------------

def test_python_logging_timestamps_with_a_comma(tmp_path):
    """logging's asctime: '2024-05-01 00:00:00,123'. The hand-computed log, each time at ,123 ms."""
    lines = [json.dumps({"step": s, "t_wall": iso(t).replace("T", " ").rstrip("Z") + ",123", "gpus_allocated": g,
                         "tokens": k}) for s, t, g, k in HAND]
    path = tmp_path / "comma.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = _report(path)
    assert r["realised_usd"] == pytest.approx(HAND_USD)
    assert r["skipped_lines"]["count"] == 0
    rows = [(s, '"' + iso(t).replace("T", " ").rstrip("Z") + ',5"', g, k) for s, t, g, k in HAND]
    assert _report(write_csv(tmp_path / "comma.csv", rows))["realised_usd"] == pytest.approx(HAND_USD)


# --- 4. messages ---------------------------------------------------------------------------------------------

def test_empty_log_says_it_is_empty(tmp_path):
    for name, text in (("empty.csv", ""), ("blank.jsonl", "\n\n")):
        path = tmp_path / name
        path.write_text(text)
        for fmt in ("auto", "csv"):
            with pytest.raises(InputError) as e:
                _report(path, format=fmt)
            assert str(e.value) == (f"log is empty{' (blank lines only)' if text else ''}; got {path} (give a log "
                                    "with step records; `napkin ledger watch` waits for a run still starting)")


def test_end_before_start_shows_the_times_as_given(tmp_path):
    with pytest.raises(InputError) as e:
        _report(write_csv(tmp_path / "a.csv", HAND), start="2025-06-01T12:00:00Z", end="2025-06-01T10:00:00Z")
    assert str(e.value) == ("end must be after --start (2025-06-01T12:00:00Z); got 2025-06-01T10:00:00Z "
                            "(give the run's end time after its start)")


def test_wrong_format_on_a_tensorboard_folder(tmp_path):
    folder = tmp_path / "tb"
    folder.mkdir()
    (folder / "events.out.tfevents.1.host").write_bytes(b"")
    with pytest.raises(InputError) as e:
        _report(folder, format="csv")
    assert str(e.value) == (f"format cannot read {folder}, a folder of TensorBoard event files; got csv "
                            "(give --format tensorboard, or auto)")


@pytest.mark.parametrize("sep,said,shown,tr", [(";", "';'", "step;t_wall;gpus_allocated;tokens", "';' ','"),
                                               ("\t", "a tab", "step\\tt_wall\\tgpus_allocated\\ttokens",
                                                "'\\t' ','")])
def test_a_csv_not_separated_by_commas(tmp_path, sep, said, shown, tr):
    path = tmp_path / "steps.csv"
    path.write_text("\n".join(sep.join(str(v) for v in row) for row in
                              [("step", "t_wall", "gpus_allocated", "tokens"), *HAND]) + "\n")
    for fmt in ("auto", "csv"):
        with pytest.raises(InputError) as e:
            _report(path, format=fmt)
        assert str(e.value) == (f"delimiter is {said} in {path}, not a comma; got {shown} (write the log "
                                f"comma-separated: tr {tr} < {path} > steps.csv)")


MEGATRON = (" [{ts}] iteration {it:8d}/  500000 |{cs} elapsed time per iteration (ms): 2000.0 | "
            "learning rate: 3.000000E-04 | lm loss: 2.345678E+00 | loss scale: 1.0 |")


def _megatron(tmp_path, consumed=True):
    lines = ["using world size: 64"]
    for it in range(100, 600, 100):
        cs = f" consumed samples: {it * 512:12d} |" if consumed else ""
        lines.append(MEGATRON.format(ts=iso(T0 + 2.0 * it).replace("T", " ").rstrip("Z"), it=it, cs=cs))
    path = tmp_path / "megatron.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_megatron_without_global_batch_size_uses_consumed_samples(tmp_path):
    """No 'global batch size' field: consumed samples rise 51,200 per 100 iterations = 512 a step; 400
    iterations of 512 · 4096 tokens (as test_formats.test_megatron_with_timestamps)."""
    r = calculate("ledger", {"logs": [str(_megatron(tmp_path))], "price": "2/h", "gpus": 64, "seq_len": 4096})
    assert r["advanced_tokens"] == 400 * 512 * 4096
    assert "tokens-from-consumed-samples" in [w.code for w in r.warnings]


def test_megatron_without_batch_size_or_consumed_samples_names_the_field(tmp_path):
    path = _megatron(tmp_path, consumed=False)
    with pytest.raises(InputError) as e:
        calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64, "seq_len": 4096})
    assert str(e.value) == (f"global_batch_size is not in the Megatron-LM iteration lines (nor 'consumed samples'), "
                            f"so tokens per step are unknown; got {path} (give --tokens-per-step T, the global "
                            "batch × the sequence length)")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64, "tokens_per_step": "2Mi"})
    assert r["advanced_tokens"] == 400 * 2 * 1024 ** 2


def test_start_and_end_on_a_csv_without_a_clock_say_where_they_apply(tmp_path):
    """Review: --start/--end on a CSV with no t_wall got the plain 'map a column' fix, as if they were not given."""
    from napkin import calculate
    from napkin.errors import InputError

    path = tmp_path / "steps.csv"
    path.write_text("step,gpus_allocated,tokens\n" + "".join(f"{s},8,4096\n" for s in range(1, 50)))
    with pytest.raises(InputError) as e:
        calculate("ledger", logs=[str(path)], price="2.5/h", start="2024-05-01T00:00:00Z", end="2024-05-02T00:00:00Z")
    assert e.value.fix == ("--start/--end spread the steps over the run only in the formats that log no clock "
                           "(--format lightning or hf); map a column of seconds or ISO timestamps with --map NAME=t_wall")
    done = calculate("ledger", logs=[str(path)], price="2.5/h", format="lightning", start="2024-05-01T00:00:00Z",
                     end="2024-05-02T00:00:00Z")
    assert done["wall_s"] == pytest.approx(86400.0)  # the fix it names reads the log


def test_an_empty_tokens_seen_cell_is_no_step_and_the_next_count_covers_it(tmp_path):
    """Review (a W&B export by hand): two eval rows with no train/num_tokens took the rate of the interval before
    them: 110M advanced tokens came out where the counter rose by 100M ($0.0404/M for $0.04444/M at $2/h)."""
    rows = ["_step,_timestamp,train/num_tokens,eval/loss"]
    t = 1714521600.25
    for s in range(13):
        rows.append(f"{s},{t + 100 * s},{10_000_000 * (s + 1)},")
        if s in (4, 8):  # an eval row: the same step a little later, no tokens count
            rows.append(f"{s},{t + 100 * s + 20.25},,2.5")
    path = tmp_path / "wandb.csv"
    path.write_text("\n".join(rows) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 8})
    assert r["advanced_tokens"] == 120e6 and r["restarts"]["count"] == 0  # 10M -> 130M over steps 0..12
    assert r["usd_per_million_advanced_tokens"] == pytest.approx(8 * 1200 / 3600 * 2 / 120, rel=1e-12)
    assert r["skipped_lines"]["count"] == 2
    assert {x["reason"] for x in r["skipped_lines"]["first"]} == {"has no tokens-seen count (a row of other metrics)"}


def test_a_step_logged_again_a_moment_later_is_a_duplicate_not_a_rollback(tmp_path):
    """Review: another rank's line for step 30, half a second later, counted as a rollback with 10 steps lost."""
    rows = [(s, T0 + 10.0 * s, 8, 1_000_000) for s in range(0, 101, 10)]
    rows[4:4] = [(30, T0 + 300.5, 8, 1_000_000)]
    path = write_csv(tmp_path / "ranks.csv", rows)
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h"})
    assert r["duplicates"] == 1 and r["restarts"]["count"] == 0 and r["goodput"]["tokens"] == 1.0


def test_a_change_that_rounds_to_zero_reads_plus_zero():
    """Review: two days at the same $/M read 'vs prior -0.0%' (a ratio of 0.9999999)."""
    from napkin.ledger.report import _signed

    assert (_signed(0.9999999 - 1), _signed(0.25), _signed(-0.05)) == ("+0.0%", "+25.0%", "-5.0%")


def test_a_tokens_seen_count_that_falls_is_read_as_a_restart_and_said(tmp_path):
    """Review (fuzz): a cumulative count 0..40k, then 5k at step 50, then 60k..100k gave 145,000 advanced tokens
    with no word. It is read as a counter that started over: steps 40..50 at the rate before (1,000/step: 10,000),
    steps 50..60 as the rise from 5,000 to 60,000 (55,000), the rest at 1,000/step: 40,000 + 10,000 + 55,000 +
    40,000 = 145,000, and a warning names the line and the values."""
    counts = {s: (5000 if s == 50 else 1000 * s) for s in range(0, 101, 10)}
    path = tmp_path / "c.csv"
    path.write_text("step,t_wall,gpus_allocated,tokens\n"
                    + "".join(f"{s},{1714521600 + 10 * s},8,{k}\n" for s, k in counts.items()))
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "tokens_cumulative": True})
    assert r["advanced_tokens"] == 145_000
    falls = [w for w in r.warnings if w.code == "tokens-count-falls"]
    assert [w.message for w in falls] == [
        "the tokens-seen count falls 1 time(s) while the step goes on, first at line 7 (40,000 to 5,000): read as "
        "a counter that started over (a restart): that record's steps are counted at the rate before it and the "
        "rise after it as new tokens; if the value is a glitch, fix or drop that line"]
    steady = tmp_path / "s.csv"
    steady.write_text("step,t_wall,gpus_allocated,tokens\n"
                      + "".join(f"{s},{1714521600 + 10 * s},8,{1000 * s}\n" for s in range(0, 101, 10)))
    r = calculate("ledger", {"logs": [str(steady)], "price": "2/h", "tokens_cumulative": True})
    assert r["advanced_tokens"] == 100_000 and not [w for w in r.warnings if w.code == "tokens-count-falls"]
