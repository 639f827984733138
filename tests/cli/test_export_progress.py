"""--csv writes a sweep's or a planner's rows; a spinner shows long work on a terminal only."""

from __future__ import annotations

import csv
import io
import json

from napkin.cli.spinner import Spinner, spinning


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_vary_csv_holds_every_row_in_base_units(run_cli, tmp_path):
    path = tmp_path / "sweep.csv"
    args = ["train", "--params", "7B", "--tokens", "2T", "--vary", "gpu=h100,b200", "--vary", "mfu=0.3,0.4"]
    r = run_cli(*args, "--csv", str(path))
    assert r.stderr == f"wrote 4 rows to {path}\n"
    rows = _rows(path)
    js = json.loads(run_cli(*args, "--json").stdout)["vary"]["rows"]
    assert [(x["gpu"], float(x["mfu"])) for x in rows] == [("h100", 0.3), ("h100", 0.4), ("b200", 0.3), ("b200", 0.4)]
    assert [float(x["usd_per_million_tokens.loaded"]) for x in rows] == [j["usd_per_million_tokens"]["loaded"]
                                                                       for j in js]
    assert float(rows[1]["gpu_hours"]) == js[1]["gpu_hours"]  # every digit, not the printed 65.5k


def test_csv_without_a_table_says_so(run_cli, tmp_path):
    r = run_cli("train", "--params", "7B", "--tokens", "2T", "--csv", str(tmp_path / "x.csv"), code=1)
    assert r.stderr.startswith("error: csv has no table to write: --csv writes the table of --vary")
    assert not (tmp_path / "x.csv").exists()


def test_plan_serve_csv(run_cli, tmp_path):
    path = tmp_path / "plan.csv"
    args = ["plan", "serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--tpot", "50ms", "--ttft", "2s",
            "--rate", "5/s", "--batch", "8,16", "--precision", "bf16"]
    run_cli(*args, "--csv", str(path))
    rows = _rows(path)
    ranking = json.loads(run_cli(*args, "--json").stdout)["ranking"]
    assert len(rows) == len(ranking) > 0
    assert [float(x["usd_per_million_tokens_all_in"]) for x in rows] == [r["usd_per_million_tokens_all_in"]
                                                                       for r in ranking]


def test_plan_train_csv(run_cli, tmp_path):
    path = tmp_path / "layouts.csv"
    args = ["plan", "train", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "4096",
            "--global-batch", "1Mi"]
    run_cli(*args, "--csv", str(path))
    rows = _rows(path)
    ranked = json.loads(run_cli(*args, "--json").stdout)["ranked"]
    assert len(rows) == len(ranked) > 0
    assert float(rows[0]["step_s"]) == ranked[0]["step_s"]
    assert "memory_bytes_per_gpu.total" in rows[0]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_spinner_draws_while_work_runs_and_clears_after():
    import time

    out = _Tty()
    with Spinner("plan serve: searching configurations", out, delay_s=0.0, every_s=0.01):
        time.sleep(0.1)
    text = out.getvalue()
    assert "plan serve: searching configurations (" in text
    assert text.endswith("\r\x1b[2K")  # the line is cleared for the answer


def test_spinner_stays_silent_when_quick_piped_or_json():
    quick = _Tty()
    with Spinner("x", quick, delay_s=10.0):
        pass
    assert quick.getvalue() == ""
    piped = io.StringIO()
    with spinning("x", as_json=False, stream=piped):
        pass
    assert piped.getvalue() == ""
    tty = _Tty()
    with spinning("x", as_json=True, stream=tty):
        pass
    assert tty.getvalue() == ""


def test_csv_writes_regular_files_only(run_cli, tmp_path):
    """--csv goes through napkin.files.write_file (issue 15, item 3's rule for every written file): a FIFO at the
    path would block the open forever, a folder or a missing folder was an OSError; each is one line, nothing
    written, and the path is quoted."""
    import os

    args = ["train", "--params", "7B", "--tokens", "2T", "--vary", "mfu=0.3,0.4", "--csv"]
    os.mkfifo(tmp_path / "fifo")
    r = run_cli(*args, str(tmp_path / "fifo"), code=1)
    assert r.stderr == (f"error: csv is a FIFO, not a regular file; got {tmp_path / 'fifo'} "
                        "(give the path of a file to write)\n")
    r = run_cli(*args, str(tmp_path), code=1)
    assert r.stderr == f"error: csv is a folder, not a regular file; got {tmp_path} (give the path of a file to write)\n"
    missing = tmp_path / "missing" / "x.csv"
    r = run_cli(*args, str(missing), code=1)
    assert r.stderr == (f"error: csv is in a folder that does not exist; got {missing} (create the folder first, or "
                        "give a path in an existing one)\n")
    forged = tmp_path / "a\nerror: x.csv"
    r = run_cli(*args, str(forged))
    assert r.stderr == f"wrote 2 rows to {tmp_path}/a\\nerror: x.csv\n" and forged.exists()
