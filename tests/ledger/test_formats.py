"""Each reader on a log in its real format; auto says what it chose."""

from __future__ import annotations

import json
import math

import pytest

from napkin import calculate
from napkin.errors import InputError

from ledger_helpers import HAND, T0, iso, write_csv

HAND_USD = 4.60  # test_realised.test_hand_computed: the same six records at $3.60/GPU-hour


def _report(path, **kw):
    return calculate("ledger", {"logs": [str(path)], "price": "3.60/h", **kw})


def test_csv_iso_timestamps_and_auto(tmp_path):
    rows = [(s, iso(t), g, k) for s, t, g, k in HAND]
    r = _report(write_csv(tmp_path / "iso.csv", rows))
    assert r["realised_usd"] == pytest.approx(HAND_USD)
    assert "format: csv (auto: a comma-separated header)" in r.notes


def test_jsonl_with_garbage_lines(tmp_path):
    lines = [json.dumps({"step": s, "t_wall": t, "gpus_allocated": g, "tokens": k, "loss": 2.0}) for s, t, g, k in HAND]
    lines.insert(2, '{"step": 11, "t_wall": ')  # a line cut short
    lines.insert(4, "not json at all")
    lines.insert(5, json.dumps({"step": "x", "t_wall": T0 + 150, "gpus_allocated": 8, "tokens": 1000}))
    path = tmp_path / "steps.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = _report(path)
    assert r["realised_usd"] == pytest.approx(HAND_USD)
    assert r["skipped_lines"]["count"] == 3
    assert [x["line"] for x in r["skipped_lines"]["first"]] == [3, 5, 6]


def test_jsonl_numbers_read_exactly_as_written(tmp_path):
    """Unix-time floats that polars' JSON path matcher returns an ulp off (found when CI's real
    Trainer run disagreed with its own callback in the 7th figure) come back bit for bit; a nested
    key of the same name does not displace the top-level value."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from napkin.ledger.readers import read_log

    known_bad = [1704954350.8709195, 1704494910.6478875, 1707622800.8245795]
    rows = [{"step": i, "meta": {"t_wall": 5.0}, "t_wall": t, "gpus_allocated": 8, "tokens": 1000}
            for i, t in enumerate(known_bad)]
    path = tmp_path / "steps.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert read_log(str(path)).frame["t_wall"].to_list() == known_bad

    @settings(max_examples=25, deadline=None)
    @given(st.lists(st.floats(1.5e9, 2.5e9), min_size=2, max_size=50))
    def exact(ts):
        p = tmp_path / "h.jsonl"
        p.write_text("".join(json.dumps({"step": i, "t_wall": t, "gpus_allocated": 1, "tokens": 1}) + "\n"
                             for i, t in enumerate(ts)))
        assert read_log(str(p)).frame["t_wall"].to_list() == ts

    exact()


def test_jsonl_fast_and_line_by_line_paths_agree(monkeypatch):
    """A clean file goes through polars' whole-file reader; any odd line sends it line by line.
    Both give the same records, columns and skipped lines, on logs with strings, nulls, booleans,
    missing and extra keys."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from napkin.ledger.readers import ReadOptions, Source, jsonl

    value = st.one_of(st.integers(0, 10**6), st.floats(0, 2e9), st.none(), st.booleans(), st.sampled_from(["x", ""]))
    row = st.fixed_dictionaries(
        {"step": st.integers(0, 100), "t_wall": st.floats(1.6e9, 1.8e9), "gpus_allocated": st.integers(1, 64),
         "tokens": st.integers(1, 10**6)},
        optional={"loss": st.floats(0, 10), "note": value, "step ": value})
    odd = st.dictionaries(st.sampled_from(["step", "t_wall", "gpus_allocated", "tokens"]), value, max_size=2)

    def frames(data: bytes, fast: bool):
        if not fast:
            monkeypatch.setattr(jsonl, "_read_clean_jsonl", lambda d, line0: None)
        try:
            r = jsonl.read(Source("log", "log", data), ReadOptions(), "log")
            return r.frame.to_dicts(), dict(r.frame.schema), r.skipped_count, r.skipped
        except InputError as exc:
            return str(exc)
        finally:
            monkeypatch.undo()

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(row, odd).map(lambda p: {**p[0], **p[1]}), min_size=2, max_size=30))
    def same(rows):
        data = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
        assert frames(data, True) == frames(data, False)

    same()
    clean = b'{"step": 1, "t_wall": 1.7e9, "gpus_allocated": 8, "tokens": 10}\n'
    assert jsonl._read_clean_jsonl(clean * 3) is not None  # the fast path is taken when it can be
    assert jsonl._read_clean_jsonl(clean + b"\n" + clean) is None  # a blank line: line by line


def test_parquet_with_datetime_column(tmp_path):
    import datetime as dt

    import polars as pl

    df = pl.DataFrame({"iteration": [s for s, *_ in HAND],
                       "time": [dt.datetime.fromtimestamp(t, dt.UTC) for _, t, *_ in HAND],
                       "world": [g for _, _, g, _ in HAND]})
    df.write_parquet(tmp_path / "log.parquet")
    r = _report(tmp_path / "log.parquet", map={"iteration": "step", "time": "t_wall", "world": "gpus_allocated"},
                tokens_per_step="1000")
    assert r["realised_usd"] == pytest.approx(HAND_USD)
    assert r["format"] == "parquet"


MEGATRON = (" [{ts}] iteration {it:>8d}/  500000 | consumed samples: {cs:>12d} | elapsed time per iteration (ms): "
            "{ms:.1f} | learning rate: 3.000E-04 | global batch size:   512 | lm loss: 2.345678E+00 | loss scale: 1.0 | "
            "grad norm: 0.321 | number of skipped iterations:   0 | number of nan iterations:   0 |")


def _megatron_lines(stamps=True):
    out = ["using world size: 64", " > building GPT model ..."]
    t, it = T0, 0
    for _ in range(5):
        it += 100
        t += 100 * 2.0
        line = MEGATRON.format(ts=iso(t).replace("T", " ").rstrip("Z"), it=it, cs=it * 512, ms=2000.0)
        out.append(line if stamps else line.replace(line[:line.index("]") + 1], ""))
    out.append(" [2024-05-01 10:00:00] iteration  garbled | consumed")
    return out


def test_megatron_with_timestamps(tmp_path):
    path = tmp_path / "megatron.log"
    path.write_text("\n".join(_megatron_lines()) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64, "seq_len": 4096})
    # 400 iterations of 512 · 4096 tokens over 800 s on 64 GPUs
    assert r["advanced_tokens"] == 400 * 512 * 4096
    assert r["gpu_hours_allocated"] == pytest.approx(800 * 64 / 3600)
    assert r["skipped_lines"] == {"count": 1, "location": "line", "first": [
        {"source": "megatron.log", "line": 8, "reason": "an 'iteration' line that does not parse"}]}
    assert "format: megatron (auto: lines match 'iteration N/ M |' (Megatron-LM))" in r.notes


def test_megatron_without_timestamps_accumulates_elapsed(tmp_path):
    path = tmp_path / "megatron.log"
    path.write_text("\n".join(_megatron_lines(stamps=False)[:-1]) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64, "seq_len": 4096})
    assert r["wall_s"] == pytest.approx(400 * 2.0)
    assert [w.code for w in r.warnings] == ["time-from-elapsed"]
    with pytest.raises(InputError, match="seq_len is required for Megatron-LM logs"):
        calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64})


def test_torchtitan_lines_with_colour_codes(tmp_path):
    esc = "\x1b"
    lines = ["[titan] 2024-05-01 00:00:00,000 - root - INFO - Training starts at step 1"]
    for i, step in enumerate((10, 20, 30, 40)):
        lines.append(f"[titan] 2024-05-01 00:0{i}:00,000 - root - INFO - {esc}[31mstep: {step:2}  {esc}[32mloss:  7.1234  "
                     f"{esc}[33mmemory: 30.12GiB(38.05%)  {esc}[34mtps: 6,827  {esc}[36mtflops: 250.12  "
                     f"{esc}[35mmfu: 25.30%{esc}[39m")
    lines.insert(3, "[titan] 2024-05-01 00:01:30,000 - root - INFO - validate step: 20  loss:  6.0  tps: 9,999")
    path = tmp_path / "titan.log"
    path.write_text("\n".join(lines) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 8, "tokens_per_step": "32768"})
    assert r["records"] == 4 and r["last_step"] == 40
    assert r["advanced_tokens"] == 30 * 32768
    assert r["mfu_logged_median"] == pytest.approx(0.253)
    est = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 8})
    # tps 6,827 per GPU · 8 GPUs · 60 s / 10 steps = 327,696 tokens per step, with a warning
    assert est["advanced_tokens"] == pytest.approx(30 * 6827 * 8 * 60 / 10)
    assert "tokens-estimated" in [w.code for w in est.warnings]


def _trainer_state(tmp_path, with_clock):
    hist = []
    for s, t, g, k in HAND:
        if s == 0:
            continue
        e = {"loss": 2.0, "learning_rate": 1e-4, "epoch": s / 100, "step": s}
        if with_clock:
            e.update({"napkin/t_wall": t, "napkin/gpus_allocated": g})
        hist.append(e)
    hist.append({"eval_loss": 1.9, "epoch": 0.3, "step": 30})
    hist.append({"train_runtime": 650.0, "train_loss": 2.0, "epoch": 0.3, "step": 30})
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 30, "train_batch_size": 8, "log_history": hist}))
    return path


def test_hf_trainer_state_needs_a_clock(tmp_path):
    """Without napkin's clock: --start/--end if given; else the summary's train_runtime (650 s here), spread over
    the steps run and said; with neither, an error that names both."""
    path = _trainer_state(tmp_path, with_clock=False)
    r = _report(path, gpus=8, tokens_per_step="1000", start="2024-05-01T00:00:00Z", end="2024-05-01T01:00:00Z")
    assert r["gpu_hours_allocated"] == pytest.approx(8.0)
    # --start is step 0: steps 0 to 30, though the first entry is at step 10 (its 10 steps were paid too)
    assert r["advanced_tokens"] == 30_000
    assert "--start is the run at step 0 (give --start-step N for a run resumed at step N): the steps from 0 to " \
           "the first logged step 10 are paid and counted" in r.notes
    assert "time-interpolated" in [w.code for w in r.warnings]
    assert r["per_day"] == []  # times spread over the run say nothing of days
    inferred = _report(path, gpus=8, tokens_per_step="1000")
    assert inferred["gpu_hours_allocated"] == pytest.approx(650 * 8 / 3600)
    assert inferred["advanced_tokens"] == 30_000
    assert "t_wall inferred: the summary's train_runtime (650 s, the Trainer's own clock) spread over the steps " \
           "run" in inferred.notes
    state = json.loads(path.read_text())
    state["log_history"] = state["log_history"][:-1]  # no summary: nothing to infer from
    path.write_text(json.dumps(state))
    with pytest.raises(InputError, match=r"t_wall is not in the hf log \(the Trainer logs no wall clock per step, "
                                         r"and no train_runtime\); got .*trainer_state.json \(log with napkin's "
                                         r"callback"):
        _report(path, gpus=8, tokens_per_step="1000")


def test_hf_trainer_state_with_callback_clock(tmp_path):
    r = _report(_trainer_state(tmp_path, with_clock=True), tokens_per_step="1000")
    # the records from step 10 on: 100·8 + 300·8 + 100·4 + 50·4 GPU-seconds
    assert r["gpu_hours_allocated"] == pytest.approx(3800 / 3600)
    assert r["format"] == "hf"


def test_lightning_metrics_csv_merges_rows(tmp_path):
    lines = ["epoch,step,train_loss,val_loss,napkin/t_wall"]
    for s, t, g, k in HAND:
        lines.append(f"0,{s},2.0,,{t}")
        lines.append(f"0,{s},,1.9,")  # validation row of the same step
    lines.append("0,31,2.0,,")  # a later row without the clock: other metrics, not a record
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(lines) + "\n")
    r = _report(path, gpus=8, tokens_per_step="1000")
    assert r["format"] == "lightning" and r["records"] == 6
    assert r["skipped_lines"]["count"] == 0
    assert r["gpu_hours_allocated"] == pytest.approx(650 * 8 / 3600)


def test_tensorboard_reads_every_event(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(log_dir=str(tmp_path / "tb"))
    n = 12_000  # more than the default reservoir of 10,000: a sampling reader would lose events
    for s in range(n):
        w.add_scalar("train/loss", 2.0, global_step=s, walltime=T0 + s)
    for s in range(n - 100, n + 50):  # a rollback of 100 steps after a restart
        w.add_scalar("train/loss", 1.9, global_step=s, walltime=T0 + n + 600 + s)
    w.close()
    r = calculate("ledger", {"logs": [str(tmp_path / "tb")], "price": "3.6/h", "gpus": 1, "tokens_per_step": "1"})
    assert r["records"] == n + 150
    assert r["restarts"]["rollbacks"] == 1
    assert r["advanced_tokens"] == n + 49
    assert r["format"] == "tensorboard"


def test_upload_content_through_the_calculator():
    text = "step,t_wall,gpus_allocated,tokens\n" + "\n".join(",".join(map(str, r)) for r in HAND) + "\n"
    r = calculate("ledger", {"content": text, "filename": "run.csv", "price": "3.60/h"})
    assert r["realised_usd"] == pytest.approx(HAND_USD)
    assert r.title == "Realised cost: run.csv"


# ------------------------------------------------------------------ review 56: logs as they come
BASE = [(s, T0 + 3 * s, 8, 1000) for s in range(0, 101, 10)]  # 30 s per 10 steps on 8 GPUs, 1,000 tokens/step
BASE_USD = 300 * 8 / 3600 * 3.60  # 300 s · 8 GPUs at $3.60/GPU-hour = $2.40 (seed 001's paid GPU time)


def _base_text(sep=",", quote=False):
    head = sep.join(("step", "t_wall", "gpus_allocated", "tokens", "note"))
    rows = [sep.join((str(s), iso(t), str(g), str(k), '"ok, fine"' if quote else "ok")) for s, t, g, k in BASE]
    return head + "\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("name, text", [
    ("spaces in the header", _base_text().replace(",", ", ", 4)),
    ("spaces after every comma", _base_text(sep=", ")),
    ("a UTF-8 byte order mark (Excel)", "\ufeff" + _base_text()),
    ("quoted fields with commas (RFC 4180)", _base_text(quote=True)),
    ("a quoted header, CRLF line ends", _base_text().replace("step,t_wall", '"step","t_wall"').replace("\n", "\r\n")),
])
def test_csv_as_spreadsheets_write_it(tmp_path, name, text):
    path = tmp_path / "log.csv"
    path.write_bytes(text.encode())
    r = _report(path)
    assert (r["records"], r["skipped_lines"]["count"]) == (11, 0), name
    assert r["realised_usd"] == pytest.approx(BASE_USD, rel=1e-12)
    assert r["advanced_tokens"] == 100_000


def test_csv_quoting_keeps_text_and_skips_a_stray_quote_by_line(tmp_path):
    from napkin.ledger.readers import read_log

    lines = _base_text(quote=True).splitlines()
    lines[3] = lines[3].replace('"ok, fine"', '"say ""hi"", then go"')
    lines[5] = lines[5].replace('"ok, fine"', '"unclosed, quote')  # line 6: not a whole quoted field
    path = tmp_path / "q.csv"
    path.write_text("\n".join(lines) + "\n")
    read = read_log(str(path))
    assert read.frame["note"].to_list()[:3] == ["ok, fine", "ok, fine", 'say "hi", then go']
    assert read.skipped == [(6, "has a quote that is not a whole quoted field (RFC 4180)")]
    assert read.frame["line"].to_list()[4] == 7  # the lines after it keep their numbers


def test_auto_finds_megatron_behind_a_long_preamble(tmp_path):
    """Megatron-LM prints every argument first (over 64 KB on a real job) and its first line has commas:
    auto looks past it for the iteration lines instead of calling the file a CSV."""
    preamble = ["using world size: 64, data-parallel size: 8, tensor-model-parallel size: 8",
                "------------------------ arguments ------------------------"]
    preamble += [f"  arg_{i:05d} {'.' * 40} {i}" for i in range(1500)]
    path = tmp_path / "megatron.log"
    path.write_text("\n".join(preamble + _megatron_lines()[2:-1]) + "\n")
    assert path.stat().st_size > 65536
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64, "seq_len": 4096})
    assert r["advanced_tokens"] == 400 * 512 * 4096
    assert "format: megatron (auto: lines match 'iteration N/ M |' (Megatron-LM) after a preamble of over 64 KB)" \
        in r.notes


def test_megatron_validation_lines_are_not_malformed(tmp_path):
    lines = _megatron_lines()[:-1]
    lines.insert(4, " validation loss at iteration 200 | lm loss value: 6.982E+00 | lm loss PPL: 1.077E+03 | ")
    path = tmp_path / "megatron.log"
    path.write_text("\n".join(lines) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64, "seq_len": 4096})
    assert r["skipped_lines"]["count"] == 0 and r["records"] == 5
    assert "1 evaluation line(s) ('validation loss at iteration N | ...') are not training steps: not records" \
        in r.notes


def test_nan_and_infinity_in_optional_fields(tmp_path):
    """Python's json.dumps writes NaN and Infinity (a diverged loss or grad norm): not JSON, but read as floats.
    In a field the cost needs, the record is skipped with that reason."""
    rows = [{"step": s, "t_wall": t, "gpus_allocated": g, "tokens": k, "loss": float("nan")} for s, t, g, k in BASE]
    rows[3]["grad_norm"] = float("inf")
    rows[5]["per_layer"] = [float("nan"), 1.0]  # inside a list: read by Python's parser
    path = tmp_path / "nan.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # every line has a NaN
    r = _report(path)
    assert (r["records"], r["skipped_lines"]["count"]) == (11, 0)
    assert r["realised_usd"] == pytest.approx(BASE_USD, rel=1e-12)
    from napkin.ledger.readers import read_log

    frame = read_log(str(path)).frame
    assert math.isnan(frame["loss"][0]) and frame["grad_norm"][3] == math.inf
    assert frame["per_layer"][5] == '["NaN",1.0]'  # kept as text
    rows[4]["step"] = float("nan")
    rows[6]["tokens"] = float("-inf")
    rows[8]["loss"] = {"a": 1}  # a nested value: kept as text, never an internal error
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = _report(path)
    assert r["skipped_lines"]["first"] == [
        {"source": "nan.jsonl", "line": 5, "reason": "step is NaN or infinite"},
        {"source": "nan.jsonl", "line": 7, "reason": "tokens is NaN or infinite"}]
    assert r["records"] == 9


def test_nested_value_in_the_line_by_line_path(tmp_path):
    from napkin.ledger.readers import read_log

    rows = [{"step": s, "t_wall": t, "gpus_allocated": g, "tokens": k, "loss": 2.0} for s, t, g, k in BASE]
    rows[3]["loss"] = {"a": 1}
    path = tmp_path / "nested.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 110, "t_wall": \n')
    read = read_log(str(path))
    assert read.frame["loss"].to_list()[2:4] == ["2.0", '{"a":1}']
    assert read.skipped == [(12, "not valid JSON")]
    assert _report(path)["realised_usd"] == pytest.approx(BASE_USD, rel=1e-12)


def test_trainer_state_with_nan_grad_norm(tmp_path):
    hist = [{"loss": 2.0, "grad_norm": float("nan") if s == 20 else 0.5, "step": s, "napkin/t_wall": t,
             "napkin/gpus_allocated": g} for s, t, g, _ in BASE]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": hist}))  # as the Trainer writes it: "grad_norm": NaN
    assert "NaN" in path.read_text()
    r = _report(path, tokens_per_step="1000")
    assert r["records"] == 11 and r["realised_usd"] == pytest.approx(BASE_USD, rel=1e-12)


def test_trainer_state_of_transformers_5_counting_tokens():
    """A real trainer_state.json of transformers 5.24 with include_num_input_tokens_seen=True (GPT-2 tiny, 20 steps
    of 4 × 16 tokens): every entry has train_runtime, so only train_loss/total_flos mark the summary."""
    from pathlib import Path

    path = Path(__file__).parent / "data" / "trainer_state_tokens_seen.json"
    r = _report(path, gpus=1, start="2024-05-01T00:00:00Z", end="2024-05-01T01:00:00Z")
    assert r["format"] == "hf" and r["last_step"] == 20 and r["records"] == 13  # 12 entries and step 0 at --start
    assert r["advanced_tokens"] == 20 * 64
    assert r["usd_per_million_advanced_tokens"] == pytest.approx(3.60 / 1280 * 1e6, rel=1e-12)


def test_dates_without_a_time_of_day(tmp_path):
    """Every record at midnight: no paid time to count, so an error that says why, not $0."""
    import datetime as dt

    import polars as pl

    path = write_csv(tmp_path / "day.csv", [(s, "2024-05-01", 8, 1000) for s in (0, 10, 20)])
    with pytest.raises(InputError) as exc:
        _report(path)
    assert str(exc.value) == (
        "t_wall does not advance: all 3 records (steps 0 to 20) are at one time, so there is no paid time to count "
        "(the log's clock has dates without a time of day: a 1-day resolution); got 2024-05-01 00:00:00 UTC at "
        f"{path}:line 2 to {path}:line 4 (log the wall time of each step to the second: ISO timestamps with a time "
        "of day, or Unix seconds)")
    pl.DataFrame({"step": [0, 10], "t_wall": [dt.date(2024, 5, 1)] * 2, "gpus_allocated": [8, 8],
                  "tokens": [1000, 1000]}).write_parquet(tmp_path / "day.parquet")
    with pytest.raises(InputError, match=r"does not advance: .*dates without a time of day"):
        _report(tmp_path / "day.parquet")
    two_days = write_csv(tmp_path / "days.csv", [(0, "2024-05-01", 1, 1000), (10, "2024-05-02", 1, 1000)])
    r = _report(two_days)
    assert r["gpu_hours_allocated"] == pytest.approx(24.0)
    assert [w.code for w in r.warnings] == ["clock-resolution"]


def test_cumulative_tokens_column(tmp_path):
    """tokens_seen counts tokens so far (1,000 per step): read as tokens per step it would understate the
    cost 500-fold, so napkin warns; --tokens-cumulative reads it as its change per step."""
    rows = [(s, T0 + 3 * s, 8, 1000 * s) for s in range(0, 101, 10)]
    path = write_csv(tmp_path / "cum.csv", rows, header="step,t_wall,gpus_allocated,tokens_seen")
    warned = _report(path, map={"tokens_seen": "tokens"})
    assert ("tokens-cumulative", "the tokens column grows with the step (10 of the 10 records that advance have "
            "more tokens than the one before; 0 to 100,000): if it counts tokens seen so far, not tokens per step, "
            "give --tokens-cumulative (or --tokens-per-step T)") in [(w.code, w.message) for w in warned.warnings]
    r = _report(path, map={"tokens_seen": "tokens"}, tokens_cumulative=True)
    assert r["advanced_tokens"] == 100_000
    assert r["realised_usd"] == pytest.approx(BASE_USD, rel=1e-12)
    assert "tokens-cumulative" not in [w.code for w in r.warnings]
    assert "tokens-cumulative" not in [w.code for w in _report(write_csv(tmp_path / "b.csv", BASE)).warnings]
    with pytest.raises(InputError, match="tokens_cumulative cannot be combined with --tokens-per-step"):
        _report(path, map={"tokens_seen": "tokens"}, tokens_cumulative=True, tokens_per_step="1000")


def test_lightning_without_clock_counts_from_step_0(tmp_path):
    """CSVLogger rows at steps 49, 99, ..., 999 (log_every_n_steps=50, max_steps=1000) over two hours: Lightning
    writes step s's row when s + 1 steps are done, and --start is step 0, so all 1,000 steps are counted
    (before: 950, 5% short)."""
    lines = ["epoch,lr-AdamW,step,train_loss,val_loss"] + [f"0,0.0003,{s},2.5," for s in range(49, 1000, 50)]
    lines.append("0,,999,,2.3")
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(lines) + "\n")
    r = _report(path, gpus=8, tokens_per_step="1M", start="2024-05-01T00:00:00Z", end="2024-05-01T02:00:00Z")
    assert (r["first_step"], r["last_step"]) == (0, 1000)
    assert r["advanced_tokens"] == 1000 * 1_000_000
    assert r["gpu_hours_allocated"] == pytest.approx(16.0)
    assert "Lightning writes step s's row when s + 1 steps are done: read as step s + 1" in r.notes
    path.write_text("\n".join(lines[:1] + lines[11:]) + "\n")  # a run resumed from a checkpoint at step 500
    resumed = _report(path, gpus=8, tokens_per_step="1M", start="2024-05-01T00:00:00Z",
                      end="2024-05-01T02:00:00Z", start_step=500)
    assert (resumed["first_step"], resumed["advanced_tokens"]) == (500, 500 * 1_000_000)
    with pytest.raises(InputError, match=r"start_step must be at most the first logged step \(550\)"):
        _report(path, gpus=8, tokens_per_step="1M", start="2024-05-01T00:00:00Z", end="2024-05-01T02:00:00Z",
                start_step=551)
