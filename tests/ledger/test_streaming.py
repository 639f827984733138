"""A log read a piece at a time, its records spilled to a temporary file and its medians found in bounded
memory, gives the report it gives read whole: the same totals, days and skip counts.

The benchmark (benchmarks/ledger_bench.py --memory) measures the peak memory on a 1 GB log; here the pieces,
the memory budget and the medians' in-memory limit are made tiny, so that a small log takes every path a
1 GB one does (a piece boundary inside every few records, frames in the temporary file, the radix median).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from napkin import calculate
from napkin.ledger import median as median_mod
from napkin.ledger.readers import lines

from ledger_helpers import T0, iso

KEYS = ("records", "first_step", "last_step", "wall_s", "gpu_hours_allocated", "realised_usd", "advanced_tokens",
        "processed_tokens", "usd_per_million_advanced_tokens", "goodput", "restarts", "skipped_lines", "duplicates",
        "per_day", "drift_alerts", "mfu_busy", "mfu_realised")


def _figures(path, **kw) -> dict:
    d = calculate("ledger", {"logs": [str(path)], "price": "2.5/h", "params": "1B", "gpu": "h100", **kw}).to_dict()
    return {k: d.get(k) for k in KEYS}


def _same(a, b, where=""):
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-9), where
    else:
        assert a == b, where


@pytest.fixture
def tiny(monkeypatch):
    """Pieces of 256 bytes, 1 KB of records in memory, medians of over 5 values from the temporary file."""
    def shrink() -> None:
        monkeypatch.setattr(lines, "CHUNK_BYTES", 256)
        monkeypatch.setattr(lines, "SPILL_AFTER_BYTES", 1024)
        monkeypatch.setattr(median_mod, "IN_MEMORY", 5)
    return shrink


def _rows(n: int, *, restart_at: int, gap_at: int) -> list[tuple]:
    rows, step, t = [], 0, T0 + 23 * 3600  # starts an hour before midnight: the run spans days
    for i in range(n):
        if i == restart_at:
            step, t = step - 30, t + 1800
        if i == gap_at:
            t += 7200
        rows.append((step, t, 8 if i < n // 2 else 6, 4096))
        step, t = step + 10, t + 95.5
    return rows


def test_csv_in_pieces_and_spilled_gives_the_same_report(tmp_path, tiny):
    rows = _rows(400, restart_at=150, gap_at=300)
    text = ["step,t_wall,gpus_allocated,tokens,loss"] + [f"{s},{iso(t)},{g},{k},2.5" for s, t, g, k in rows]
    text.insert(60, "1234,2024-05-0")  # a line cut short
    text.insert(200, text[199])  # a line written twice
    text.insert(250, "")  # a blank line
    path = tmp_path / "run.csv"
    path.write_text("\n".join(text) + "\n")
    whole = _figures(path, plan_usd_per_million="0.5")
    tiny()
    _same(_figures(path, plan_usd_per_million="0.5"), whole)
    assert whole["skipped_lines"]["count"] == 1 and whole["duplicates"] == 1 and whole["restarts"]["count"] == 2


def test_jsonl_in_pieces_and_spilled_gives_the_same_report(tmp_path, tiny):
    rows = _rows(300, restart_at=100, gap_at=200)
    text = [json.dumps({"step": s, "t_wall": t, "gpus_allocated": g, "tokens": k}) for s, t, g, k in rows]
    text.insert(40, '{"step": 11, "t_wall": ')
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(text) + "\n")
    whole = _figures(path)
    tiny()
    _same(_figures(path), whole)


def test_records_past_the_budget_go_to_a_temporary_file(tmp_path, tiny):
    from napkin.ledger.readers import read_log

    rows = _rows(200, restart_at=50, gap_at=150)
    path = tmp_path / "run.csv"
    path.write_text("step,t_wall,gpus_allocated,tokens\n" + "".join(f"{s},{t},{g},{k}\n" for s, t, g, k in rows))
    tiny()
    read = read_log(str(path))
    assert read.frames.spill is not None and len(read.frames) > 10
    assert read.frame["step"].to_list() == [s for s, *_ in rows]  # every record, in order, back from the file


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(st.floats(-1e6, 1e6), st.integers(0, 5).map(float)), min_size=1, max_size=60))
def test_the_bounded_median_is_numpys(values, monkeypatch):
    import numpy as np

    monkeypatch.setattr(median_mod, "IN_MEMORY", 7)
    monkeypatch.setattr(median_mod, "PIECE", 5)
    v = median_mod.Values()
    for i in range(0, len(values), 4):
        v.add(np.array(values[i:i + 4]))
    assert median_mod.median(v) == float(np.median(values))


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 120), min_size=0, max_size=80), size=st.integers(8, 400),
       tail=st.integers(1, 64), last_newline=st.booleans())
def test_pieces_are_whole_lines_and_add_up_to_the_log(lengths, size, tail, last_newline):
    """Each piece read (the tail window looked at first, then the piece to its last line end) is whole lines,
    no longer than the piece size when every line fits in one, and the pieces add up to the log byte for byte."""
    import io

    text = b"".join(bytes([97 + i % 26]) * n + b"\n" for i, n in enumerate(lengths))
    if text and not last_newline:
        text = text[:-1]
    original = lines.TAIL_BYTES
    lines.TAIL_BYTES = tail
    try:
        pieces = list(lines.LineChunks(io.BytesIO(text), size=size, max_line=10_000))
    finally:
        lines.TAIL_BYTES = original
    assert b"".join(pieces) == text
    assert all(p.endswith(b"\n") for p in pieces[:-1])
    if max(lengths, default=0) + 1 <= size:
        assert all(len(p) <= size for p in pieces)


def _edges() -> list:
    """Each bound of the row check, the floats either side of it, and the values no bound admits."""
    import math

    from napkin.ledger import limits

    out = [0.0, -0.0, 1.0, 2.5, -1.0, float("nan"), float("inf"), float("-inf"), None]
    for bound in (limits.MAX_STEP, limits.MAX_T_WALL_S, -limits.MAX_T_WALL_S, limits.MAX_GPUS,
                  limits.MAX_TOKENS_PER_STEP):
        out += [bound, math.nextafter(bound, math.inf), math.nextafter(bound, -math.inf)]
    return out


EDGES = _edges()
GOOD_ROW = (12.0, 1.7e9, 8.0, 4096.0)
VALUES = st.sampled_from(EDGES) | st.floats(-1e3, 1e12)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.none() | st.tuples(st.integers(0, 3), VALUES), min_size=1, max_size=6), st.booleans())
def test_the_quick_row_check_agrees_with_the_full_one(changes, malformed):
    """The numpy check that passes a whole piece (rows.py: _all_good) says yes exactly when the polars
    expression that names each row's reason (_good) finds every row good: a null, a NaN, an infinity or a value
    on either side of each bound, in any one field of a good row."""
    import polars as pl

    from napkin.ledger.readers import FIELDS
    from napkin.ledger.readers.rows import _all_good, _good

    rows = [list(GOOD_ROW) for _ in changes]
    for row, change in zip(rows, changes):
        if change is not None:
            row[change[0]] = change[1]
    df = pl.DataFrame(dict(zip(FIELDS, zip(*rows))), schema=dict.fromkeys(FIELDS, pl.Float64))
    good = _good()
    if malformed:
        df = df.with_columns(pl.Series("_malformed", ["has 3 field(s)"] + [None] * (df.height - 1), pl.String))
        good = good & pl.col("_malformed").is_null()
    assert _all_good(df) == df.select(good.fill_null(False).all()).item()


def test_the_quick_row_check_agrees_at_every_bound():
    """Every field of a good row set to every edge value in turn, one row at a time: the quick check and the
    full one agree on each."""
    import polars as pl

    from napkin.ledger.readers import FIELDS
    from napkin.ledger.readers.rows import _all_good, _good

    agreed = 0
    for field in range(4):
        for value in EDGES:
            row = list(GOOD_ROW)
            row[field] = value
            df = pl.DataFrame(dict(zip(FIELDS, zip(row, GOOD_ROW))), schema=dict.fromkeys(FIELDS, pl.Float64))
            assert _all_good(df) == df.select(_good().fill_null(False).all()).item(), (FIELDS[field], value)
            agreed += _all_good(df)
    # good: step 0, -0, 1, 2^53 - 1 and the whole-number bounds 253402300799 and 1e8 (6); t_wall every finite
    # value within 253402300799 s either way (12); gpus 1, 2.5, 1e8 and the float below it (4); tokens every
    # value from 0 to 5.3e31 (15)
    assert agreed == 6 + 12 + 4 + 15


def _report_or_error(path, **kw) -> object:
    from napkin.errors import InputError

    try:
        return calculate("ledger", {"logs": [str(path)], "price": "2.5/h", **kw}).to_dict()
    except InputError as e:
        return f"error: {e}"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from([1] * 12 + [0, -40, 3]),
                                st.sampled_from([60.0] * 14 + [61.5, 0.0, 9000.0, 40000.0])),
                      min_size=30, max_size=150),
       back=st.none() | st.integers(1, 150), piece=st.sampled_from([96, 256, 2048]), unix=st.booleans(),
       skip_bad_clock=st.booleans())
def test_the_readers_early_pass_gives_the_report_the_two_passes_give(tmp_path_factory, monkeypatch, steps, back,
                                                                     piece, unix, skip_bad_clock):
    """The first pass made while the log is read (napkin.ledger.early) and the sums it keeps for the usual
    chunks give exactly the report (or the error) that the two passes after the read give: steps that repeat,
    roll back or jump, a clock that stalls, repeats or goes back, days that turn at midnight, Unix time or
    seconds from the start, pieces of a few records."""
    from napkin.ledger import early

    rows, step, t = [], 0, (T0 + 23.5 * 3600) if unix else 50.0
    for i, (ds, dt) in enumerate(steps):
        step, t = max(step + ds, 0), t + (-30.0 if i == back else dt)  # a clock that goes back, at ``back``
        rows.append(f"{step},{t},8,4096")
    path = tmp_path_factory.mktemp("early") / "run.csv"
    path.write_text("step,t_wall,gpus_allocated,tokens\n" + "\n".join(rows) + "\n")
    kw = {"skip_bad_clock": True} if skip_bad_clock else {}
    used: list = []
    real = early.early_pass
    with monkeypatch.context() as patch:  # one example's patches, undone before the next
        patch.setattr(lines, "CHUNK_BYTES", piece)
        patch.setattr(early, "early_pass", lambda frames: used.append(real(frames)) or used[-1])
        with_early = _report_or_error(path, **kw)
        patch.setattr(early, "early_pass", lambda frames: None)
        assert with_early == _report_or_error(path, **kw)
    if not skip_bad_clock and (back is None or back >= len(steps)):
        assert used and used[0] is not None  # the shortcut was taken
