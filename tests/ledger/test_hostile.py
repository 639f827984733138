"""Hostile and careless logs (the hostile-input review): each repro of the review is the input here.

Nothing blocks or grows without bound, a value no run could log is skipped and counted with
its line number, a line cut short when a job was killed is counted, and every error is one
line with what the log held quoted (control characters escaped).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import warnings

import pytest

from napkin import calculate
from napkin.errors import InputError

from ledger_helpers import BASE_ROWS, T0, write_csv

NAPKIN = [sys.executable, "-c", "import sys; from napkin.cli import main; sys.argv[0] = 'napkin'; main()"]


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in its own process, its memory capped at 2 GiB (a log read whole from /dev/zero would pass it)."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([*NAPKIN, *args], capture_output=True, text=True, timeout=timeout, preexec_fn=cap)


def _report(path, **kw):
    return calculate("ledger", {"logs": [str(path)], "price": "2.5/h", **kw})


# ------------------------------------------------------------------ 1. regular files only
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-to-fifo", "link-to-dev-zero"])
def test_a_log_that_is_not_a_regular_file_is_one_line(tmp_path, kind):
    """Review: /dev/zero grew memory at 1.5 GB/s, a FIFO blocked forever, a symlink hid either."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    path = {"fifo": fifo, "dev-zero": "/dev/zero"}.get(kind, tmp_path / "steps.csv")
    if kind.startswith("link"):
        os.symlink(fifo if kind == "link-to-fifo" else "/dev/zero", path)
    said = "a FIFO" if "fifo" in kind else "a character device"
    out = _cli("ledger", "report", str(path), "--price", "2.5/h", "--no-store", timeout=30)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == f"error: log is {said}, not a regular file; got {path} (give the path of a file)\n"


# ------------------------------------------------------------------ 3. values no run could log
@pytest.mark.parametrize("field, value, reason", [
    ("tokens", "1e308", "tokens is over 5e+31 (more than all the world's GPUs could process in a year)"),
    ("gpus_allocated", "1e308", "gpus_allocated is over 1e+08 (more GPUs than exist)"),
    ("gpus_allocated", "2e8", "gpus_allocated is over 1e+08 (more GPUs than exist)"),
    ("tokens", "6e31", "tokens is over 5e+31 (more than all the world's GPUs could process in a year)"),
])
def test_a_value_no_run_could_log_is_skipped_and_counted(tmp_path, field, value, reason):
    """Review: one line with tokens or gpus_allocated of 1e308 made every total inf (null in JSON), $0/M, and
    leaked numpy's overflow warnings to stderr, exit 0."""
    header = "step,t_wall,gpus_allocated,tokens"
    i = header.split(",").index(field)
    rows = [list(map(str, r)) for r in BASE_ROWS]
    rows[3][i] = value
    path = write_csv(tmp_path / "huge.csv", rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy overflow warning would fail the test
        r = _report(path)
    assert r["skipped_lines"] == {"count": 1, "location": "line", "first": [
        {"source": "huge.csv", "line": 5, "reason": reason}]}
    assert r["records"] == len(BASE_ROWS) - 1
    assert r["realised_usd"] == pytest.approx(300 * 8 / 3600 * 2.5, rel=1e-12)  # every figure finite and right
    text = _cli("ledger", "report", path, "--price", "2.5/h", "--no-store")
    assert text.returncode == 0 and text.stderr == ""
    assert "inf" not in text.stdout and "$0/M" not in text.stdout and "nan" not in text.stdout


# ------------------------------------------------------------------ 4. lines cut short when a job was killed
MEGATRON = (" [2024-05-01 00:0{m}:00] iteration      {it}/  500000 | consumed samples: {cs} | elapsed time per "
            "iteration (ms): 2000.0 | global batch size:   512 | lm loss: 2.345678E+00 |")


def test_megatron_line_cut_short_is_counted(tmp_path):
    """Review: ' [2024-05-01 00:03:00] iteration      300' (the last line of a killed job) vanished uncounted."""
    lines = [MEGATRON.format(m=m, it=100 * m, cs=51200 * m) for m in (1, 2)]
    lines.append(" [2024-05-01 00:03:00] iteration      300")
    path = tmp_path / "megatron.log"
    path.write_text("\n".join(lines) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 64, "seq_len": 4096})
    assert r["records"] == 2
    assert r["skipped_lines"]["first"] == [
        {"source": "megatron.log", "line": 3, "reason": "an 'iteration' line cut short (no '|' fields)"}]


TITAN = "[titan] 2025-01-01 10:0{m}:00,000 - root - INFO - step: {s:2}  loss:  7.1234  tps: 5,123"


def test_torchtitan_line_cut_short_is_counted_and_rank_copies_are_duplicates(tmp_path):
    """Review: 'step: 60' before 'loss:' vanished uncounted, and a step line repeated across ranks was dropped
    without being counted (the CSV reader counts its duplicates)."""
    lines = [TITAN.format(m=m, s=10 * m) for m in (1, 2)] + ["[titan] 2025-01-01 10:03:00,000 - root - INFO - step: 60"]
    path = tmp_path / "titan.log"
    path.write_text("\n".join(lines) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 8, "tokens_per_step": "1000"})
    assert r["records"] == 2
    assert r["skipped_lines"]["first"] == [
        {"source": "titan.log", "line": 3, "reason": "a step line without a readable loss"}]
    ranks = [f"[rank{k}]:" + TITAN.format(m=m, s=10 * m) for m in (1, 2, 3) for k in (0, 1)]
    path.write_text("\n".join(ranks) + "\n")
    r = calculate("ledger", {"logs": [str(path)], "price": "2/h", "gpus": 8, "tokens_per_step": "1000"})
    assert (r["records"], r["duplicates"], r["skipped_lines"]["count"]) == (3, 3, 0)


# ------------------------------------------------------------------ 5. a byte that is not UTF-8
def test_a_non_utf8_byte_skips_its_line_only(tmp_path):
    """Review: one non-UTF-8 byte in an unused column rejected the whole log ('invalid utf-8 sequence')."""
    path = tmp_path / "utf.csv"
    rows = [f"{s},{t},{g},{k},ok" for s, t, g, k in BASE_ROWS]
    path.write_bytes(("step,t_wall,gpus_allocated,tokens,note\n" + "\n".join(rows[:4])).encode() + b"\xff\n"
                     + "\n".join(rows[4:]).encode() + b"\n")
    r = _report(path)
    assert r["skipped_lines"]["first"] == [{"source": "utf.csv", "line": 5, "reason": "is not UTF-8 text"}]
    assert r["records"] == len(BASE_ROWS) - 1
    jl = tmp_path / "utf.jsonl"
    jl.write_bytes(b"".join(json.dumps({"step": s, "t_wall": t, "gpus_allocated": g, "tokens": k}).encode()
                            + (b' \xfe' if s == 30 else b"") + b"\n" for s, t, g, k in BASE_ROWS))
    assert _report(jl)["skipped_lines"]["first"] == [{"source": "utf.jsonl", "line": 4, "reason": "is not UTF-8 text"}]


# ------------------------------------------------------------------ 6. a clock going backwards
def test_a_clock_going_backwards_names_the_option_and_the_option_skips_it(tmp_path):
    rows = [list(r) for r in BASE_ROWS]
    rows[4][1] = T0 + 1  # line 6 goes back to the run's first seconds
    path = write_csv(tmp_path / "back.csv", rows)
    with pytest.raises(InputError) as exc:
        _report(path)
    assert str(exc.value).startswith("t_wall must not go backwards (it was 2024-05-01 00:01:30 UTC at ")
    assert str(exc.value).endswith("or --skip-bad-clock to skip (and count) each record whose clock goes backwards)")
    r = _report(path, skip_bad_clock=True)
    assert r["skipped_lines"]["first"] == [
        {"source": "back.csv", "line": 6, "reason": "t_wall goes backwards (--skip-bad-clock)"}]
    assert r["records"] == len(BASE_ROWS) - 1
    rows = [list(r) for r in BASE_ROWS]
    rows[4][1] = T0 + 10 ** 6  # line 6 jumps forward: the records after it come back, so it is the bad one
    r = _report(write_csv(tmp_path / "jump.csv", rows), skip_bad_clock=True)
    assert r["skipped_lines"]["first"] == [
        {"source": "jump.csv", "line": 6, "reason": "t_wall jumps ahead of the records after it (--skip-bad-clock)"}]
    assert r["wall_s"] == 300


# ------------------------------------------------------------------ 7. what ended in an internal error
def test_a_step_past_2_63_cr_line_ends_and_deep_json_are_a_line_or_a_count(tmp_path):
    """Review: step 9223372036854775808 was a multi-line polars error, CR-only line ends an internal error, a
    JSONL line nested 100,000 deep a RecursionError."""
    rows = [list(r) for r in BASE_ROWS]
    rows[2][0] = 2 ** 63
    r = _report(write_csv(tmp_path / "big.csv", rows))
    assert r["skipped_lines"]["first"] == [
        {"source": "big.csv", "line": 4, "reason": "step is 2^53 or more (no run takes that many steps)"}]
    cr = tmp_path / "cr.csv"
    cr.write_bytes(("step,t_wall,gpus_allocated,tokens\r" + "".join(f"{s},{t},{g},{k}\r" for s, t, g, k in BASE_ROWS))
                   .encode())
    assert _report(cr)["records"] == len(BASE_ROWS)
    deep = tmp_path / "deep.jsonl"
    lines = [json.dumps({"step": s, "t_wall": t, "gpus_allocated": g, "tokens": k}) for s, t, g, k in BASE_ROWS]
    lines[2] = '{"step": 20, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    deep.write_text("\n".join(lines) + "\n")
    r = _report(deep)
    assert r["skipped_lines"]["first"] == [{"source": "deep.jsonl", "line": 3, "reason": "not valid JSON"}]


def test_a_line_longer_than_16_mib_is_one_skipped_line(tmp_path):
    path = tmp_path / "long.csv"
    with open(path, "w") as fh:
        fh.write("step,t_wall,gpus_allocated,tokens\n")
        fh.write("".join(f"{s},{t},{g},{k}\n" for s, t, g, k in BASE_ROWS[:3]))
        fh.write("9" * (17 << 20) + "\n")
        fh.write("".join(f"{s},{t},{g},{k}\n" for s, t, g, k in BASE_ROWS[3:]))
    r = _report(path)
    assert r["skipped_lines"]["first"] == [
        {"source": "long.csv", "line": 5, "reason": "is longer than 16 MiB (not a log line)"}]
    assert r["records"] == len(BASE_ROWS)


# ------------------------------------------------------------------ 8. a store in a folder that does not exist
def test_a_store_in_a_missing_folder_is_refused(tmp_path, run_cli):
    """Review: --store /nonexistent/dir/x.sqlite silently created the folders (a typo starts a new store). The
    missing folder is inside the test's own temporary folder, so a regression writes nothing outside it."""
    log = write_csv(tmp_path / "run.csv", BASE_ROWS)
    store = tmp_path / "nonexistent" / "dir" / "x.sqlite"
    out = run_cli("ledger", "report", log, "--price", "2.5/h", "--store", str(store), code=1)
    assert out.stderr == (f"error: store is in a folder that does not exist; got {store} (create the folder first, "
                          "or give --store PATH in an existing folder)\n")
    assert not (tmp_path / "nonexistent").exists()


def test_a_store_that_is_a_folder_or_under_a_file_is_one_line(tmp_path, run_cli):
    """--store names a store file: a folder given as the store, or a path under a regular file, is one line
    saying which (was "not a regular file" for both, or "a folder that does not exist" for a file's child)."""
    log = write_csv(tmp_path / "run.csv", BASE_ROWS)
    out = run_cli("ledger", "report", log, "--price", "2.5/h", "--store", str(tmp_path), code=1)
    assert out.stderr == (f"error: store is a folder; got {tmp_path} (give --store PATH of a store file, or a new "
                          "name in an existing folder)\n")
    store = tmp_path / "run.csv" / "x.sqlite"
    out = run_cli("ledger", "runs", "--store", str(store), code=1)
    assert out.stderr == (f"error: store is in {tmp_path / 'run.csv'}, which is not a folder; got {store} (give --store PATH in an "
                          "existing folder)\n")


# ------------------------------------------------------------------ 9. what a log holds, echoed, is quoted
def test_control_characters_from_a_log_cannot_forge_a_line(tmp_path, run_cli):
    """Review: log content reached the terminal raw through ledger errors (a newline forged an error line, ESC
    cleared the screen)."""
    log = tmp_path / "esc.csv"
    log.write_text("step,t_wall,\x1b[2Jgpus,tokens\n" + "".join(f"{s},{t},8,1000\n" for s, t, *_ in BASE_ROWS))
    out = run_cli("ledger", "report", str(log), "--price", "2.5/h", "--no-store", code=1)
    assert out.stderr.count("\n") == 1 and "\x1b" not in out.stderr
    assert "\\x1b[2Jgpus" in out.stderr
    named = tmp_path / "a\nerror: spoofed.csv"
    named.write_text("")
    out = run_cli("ledger", "report", str(named), "--price", "2.5/h", "--no-store", code=1)
    assert out.stderr.count("\n") == 1 and "a\\nerror: spoofed.csv" in out.stderr
