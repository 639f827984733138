"""`napkin ledger report|watch|runs`: exact plain-text output, JSON keys, the store, errors."""

from __future__ import annotations

import json

import pytest

from ledger_helpers import HAND, T0, write_csv

EXPECTED_REPORT = """\
Realised cost: hand.csv
  format                            csv
  records                           6
  first_step                        0
  last_step                         30
  wall_s                            10.83 min
  gpu_hours_allocated               1.278
  realised_usd                      $4.60
  advanced_tokens                   30,000
  processed_tokens                  45,000
  usd_per_million_advanced_tokens   $153.3/M
  usd_per_million_processed_tokens  $102.2/M
  goodput                           tokens 66.7%, time 46.2%
  restarts                          1 (1 rollback, 0 gaps); 15 steps and 5.833 min lost
  planned_usd_per_million_tokens    $120/M
  drift_alert_threshold             10%
  drift_ratio                       1.278
  skipped_lines                     0
  duplicates                        0
per day (UTC):
  date        gpu_hours    usd  advanced   $/M adv  goodput        vs plan
  2024-05-01        1.3  $4.60    30,000  $153.3/M    46.2%  +27.8%  ALERT
ALERT 2024-05-01: 27.8% above plan
note: after each rollback the steps between the checkpoint and the first logged step are not in the log: \
counted as one log interval (10 steps)
note: drift alerts: days whose realised $/M exceeds the plan by more than 10%
note: format: csv (auto: a comma-separated header)
"""


def test_report_exact_text(tmp_path, run_cli):
    log = write_csv(tmp_path / "hand.csv", HAND)
    out = run_cli("ledger", "report", log, "--price", "3.60/h", "--plan-usd-per-million", "120")
    assert out.stdout == EXPECTED_REPORT


def test_report_json_keys(tmp_path, run_cli):
    log = write_csv(tmp_path / "hand.csv", HAND)
    d = json.loads(run_cli("ledger", "report", log, "--price", "3.60/h", "--plan-usd-per-million", "120",
                           "--params", "1B", "--gpu", "h100", "--json").stdout)
    for key in ("realised_usd", "gpu_hours_allocated", "advanced_tokens", "processed_tokens",
                "usd_per_million_advanced_tokens", "goodput", "restarts", "mfu_realised", "per_day", "drift_alerts",
                "skipped_lines", "derivation", "warnings"):
        assert key in d, key
    assert set(d["goodput"]) == {"tokens", "time"}
    assert set(d["restarts"]) >= {"count", "steps_lost", "time_lost_s"}
    assert d["drift_alerts"][0]["date"] == "2024-05-01"
    assert d["realised_usd"] == pytest.approx(4.6)
    names = [s["name"] for s in d["derivation"]]
    assert names[:4] == ["gpu_hours_allocated", "realised_usd", "advanced_tokens", "processed_tokens"]


def test_bad_input_is_one_line(tmp_path, run_cli):
    log = write_csv(tmp_path / "one.csv", HAND[:1])
    out = run_cli("ledger", "report", log, "--price", "1/h", code=1)
    assert out.stderr == (f"error: log has one step record (step 0 at line 2): a cost needs at least two, and the time "
                          f"between them; got {log} (give a longer log)\n")
    out = run_cli("ledger", "report", str(tmp_path / "missing.csv"), "--price", "1/h", code=1)
    assert out.stderr == f"error: log does not exist; got {tmp_path / 'missing.csv'} (give the path of a step log)\n"
    out = run_cli("ledger", "report", log, "--price", "40%", code=1)
    assert out.stderr.startswith("error: price")


def test_store_spans_restarts_in_separate_files(tmp_path, run_cli):
    store = str(tmp_path / "ledger.sqlite3")
    first = write_csv(tmp_path / "part1.csv", HAND[:3])
    second = write_csv(tmp_path / "part2.csv", HAND[3:])
    run_cli("ledger", "report", first, "--price", "3.60/h", "--run", "llama", "--store", store)
    (tmp_path / "part1.csv").unlink()  # the first file is gone: its records are in the store
    d = json.loads(run_cli("ledger", "report", second, "--price", "3.60/h", "--run", "llama", "--store", store,
                           "--json").stdout)
    assert d["realised_usd"] == pytest.approx(4.6)  # the hand-computed figure of the whole run
    assert d["restarts"]["rollbacks"] == 1
    again = json.loads(run_cli("ledger", "report", "--run", "llama", "--price", "3.60/h", "--store", store,
                               "--json").stdout)
    assert again["realised_usd"] == pytest.approx(4.6)
    out = run_cli("ledger", "runs", "--store", store).stdout
    assert out == ("run    format  logs  records  first             last              $/M adv   vs plan  alerts\n"
                   "llama  csv     2     6        2024-05-01 00:00  2024-05-01 00:10  $153.3/M  -        0\n")
    assert run_cli("ledger", "runs", "--store", store, "--forget", "llama").stdout == "forgot run 'llama'\n"
    assert run_cli("ledger", "runs", "--store", store).stdout.startswith("no runs in the store yet")


def test_default_store_is_per_user(tmp_path, run_cli):
    log = write_csv(tmp_path / "hand.csv", HAND)
    run_cli("ledger", "report", log, "--price", "3.60/h")
    assert (tmp_path / "xdg" / "napkin" / "ledger.sqlite3").exists()  # XDG_DATA_HOME set by conftest
    assert "hand.csv" in run_cli("ledger", "runs").stdout


def test_chart_svg(tmp_path, run_cli):
    log = write_csv(tmp_path / "hand.csv", HAND)
    run_cli("ledger", "report", log, "--price", "3.60/h", "--plan-usd-per-million", "120", "--no-store",
            "--chart", str(tmp_path / "c.svg"))
    svg = (tmp_path / "c.svg").read_text()
    assert svg.startswith("<svg") and "Realised cost per day against plan" in svg


def test_watch_once(tmp_path, run_cli):
    rows = [(s, T0 + 10 * s, 8, 1000) for s in range(0, 11)]
    log = write_csv(tmp_path / "live.csv", rows)
    with open(log, "a") as fh:
        fh.write("11,17145")  # half-written last line: left for the next refresh
    out = run_cli("ledger", "watch", log, "--price", "3.6/h", "--plan-usd-per-million", "0.5",
                  "--refreshes", "1", "--interval", "0.01s")
    lines = out.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("step 10  $80/M adv (plan $0.50/M, +15900.0%)  time goodput 100%  $0.80 so far")
    assert lines[1] == "ALERT 2024-05-01: realised $80/M is 15900.0% above plan ($0.50/M)"


# ------------------------------------------------------------------ review 56
def test_alert_typed_as_a_percentage(tmp_path, run_cli):
    """--alert is a fraction over plan: 10 is 1000%, which no day would reach; the same hint as other fractions."""
    log = write_csv(tmp_path / "hand.csv", HAND)
    out = run_cli("ledger", "report", log, "--price", "3.60/h", "--plan-usd-per-million", "120", "--alert", "10",
                  code=1)
    assert out.stderr == "error: alert must be in (0, 1]; got 10 (did you mean 0.10?)\n"
    out = run_cli("ledger", "report", log, "--price", "3.60/h", "--plan-usd-per-million", "120", "--alert", "30%",
                  "--no-store")
    assert "+27.8%" in out.stdout and "ALERT" not in out.stdout  # 27.8% over plan, under 30%: no alert


def _plans(tmp_path, run_cli):
    serve, train = tmp_path / "serve.toml", tmp_path / "train.toml"
    run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--save", str(serve))
    run_cli("train", "--model", "llama-3.1-8b", "--gpu", "h100", "--tokens", "1T", "--gpus", "64", "--save", str(train))
    return str(serve), str(train)


def test_plan_must_be_a_training_plan_and_keeps_its_price_basis(tmp_path, run_cli):
    serve, train = _plans(tmp_path, run_cli)
    log = write_csv(tmp_path / "hand.csv", HAND)
    out = run_cli("ledger", "report", log, "--plan", serve, "--no-store", code=1)
    assert out.stderr == (f"error: plan is a `napkin serve` plan, not a training plan; got {serve} (give a plan "
                          "written by `napkin train --save plan.toml`, or --plan-usd-per-million X)\n")
    d = json.loads(run_cli("ledger", "report", log, "--plan", train, "--no-store", "--json").stdout)
    price = next(a for a in d["assumptions"] if a["name"] == "usd_per_gpu_hour")
    assert (price["basis"], price["value"]) == ("reference", 2.95)  # the plan took the catalog list price
    assert "price-from-plan" in [w["code"] for w in d["warnings"]]
    assert d["realised_usd"] == pytest.approx(4600 / 3600 * 2.95)  # test_hand_computed's 4,600 GPU-seconds
    given = json.loads(run_cli("ledger", "report", log, "--plan", train, "--price", "3.60/h", "--no-store",
                               "--json").stdout)
    assert next(a for a in given["assumptions"] if a["name"] == "usd_per_gpu_hour")["basis"] == "given"


def test_restart_logs_that_overlap_or_have_no_common_clock(tmp_path, run_cli):
    first = write_csv(tmp_path / "part1.csv", HAND[:3])
    overlap = write_csv(tmp_path / "part2.csv", [(15, T0 + 150, 4, 1000), (25, T0 + 600, 4, 1000)])
    out = run_cli("ledger", "report", first, overlap, "--price", "3.60/h", "--no-store", code=1)
    assert out.stderr == (
        f"error: logs must not overlap in time ({overlap} starts at 2024-05-01 00:02:30 UTC, before {first} ends "
        f"at 2024-05-01 00:03:20 UTC at {first}:line 4); got {first}, {overlap} (give the logs of one run, whose "
        "restarts follow each other; two jobs that ran at once are two runs: report each on its own)\n")
    # seconds from each log's own start: joined end to start, and the report says the gap is not counted
    rel1 = write_csv(tmp_path / "rel1.csv", [(0, 0, 8, 1000), (10, 100, 8, 1000), (20, 200, 8, 1000)])
    rel2 = write_csv(tmp_path / "rel2.csv", [(15, 0, 4, 1000), (25, 100, 4, 1000), (30, 150, 4, 1000)])
    d = json.loads(run_cli("ledger", "report", rel1, rel2, "--price", "3.60/h", "--no-store", "--json").stdout)
    assert d["gpu_hours_allocated"] == pytest.approx((200 * 8 + 150 * 4) / 3600)  # no time between the logs
    assert [w["code"] for w in d["warnings"]] == ["downtime-not-counted"]
    assert not any("is paid" in n for n in d["notes"])
    absolute = json.loads(run_cli("ledger", "report", first, write_csv(tmp_path / "p2.csv", HAND[3:]), "--price",
                                  "3.60/h", "--no-store", "--json").stdout)
    assert any("the time between one log's end and the next one's start is paid" in n for n in absolute["notes"])


def test_store_names_runs_of_the_same_file_name_apart(tmp_path):
    """runA/log.csv then runB/log.csv: the second is stored as runB/log.csv, not over the first; the same file
    reported again keeps its name. (The CLI names a run without --run by Store.name_for.)"""
    from napkin.ledger.calculator import LedgerRequest, read_all
    from napkin.ledger.store import Store
    from napkin.request import parse_request

    (tmp_path / "runA").mkdir()
    (tmp_path / "runB").mkdir()
    a = write_csv(tmp_path / "runA" / "log.csv", HAND)
    b = write_csv(tmp_path / "runB" / "log.csv", HAND[:3])
    with Store(str(tmp_path / "s.sqlite3")) as st:
        names = []
        for path in (a, b, a, b):
            name, note = st.name_for(path)
            names.append((name, note))
            reads = read_all(parse_request(LedgerRequest, {"logs": [path], "price": "1/h"}))
            st.set_sources(name, reads, keep_records=False, replace=True)
            st.save_summary(name, fmt="csv", options={}, summary={})
        assert names == [("log.csv", None), ("runB/log.csv", "stored as run 'runB/log.csv' (another log.csv is "
                                             "stored already)")] * 2
        assert sorted((r["name"], r["records"]) for r in st.runs()) == [("log.csv", 6), ("runB/log.csv", 3)]


def test_report_of_a_second_log_csv_keeps_the_first_run(tmp_path, run_cli):
    """Through the CLI: runA/log.csv then runB/log.csv are two runs in `ledger runs`, and the second
    report says the name it was stored under."""
    store = str(tmp_path / "s.sqlite3")
    (tmp_path / "runA").mkdir()
    (tmp_path / "runB").mkdir()
    a = write_csv(tmp_path / "runA" / "log.csv", HAND)
    b = write_csv(tmp_path / "runB" / "log.csv", HAND[:3])
    first = run_cli("ledger", "report", a, "--price", "3.60/h", "--store", store)
    assert "stored as run" not in first.stdout + first.stderr
    second = run_cli("ledger", "report", b, "--price", "3.60/h", "--store", store)
    assert second.stderr == "note: stored as run 'runB/log.csv' (another log.csv is stored already)\n"
    runs = run_cli("ledger", "runs", "--store", store).stdout.splitlines()
    assert sorted(line.split()[0] for line in runs[1:]) == ["log.csv", "runB/log.csv"]


def test_a_corrupt_clock_is_one_line_not_a_day_table_of_millions_of_years(tmp_path, run_cli):
    """One t_wall of 1e14 made the per-day table allocate 8.6 GiB (a web upload could take the server
    down); a clock that spans more than 10 years is refused at the record that jumps (5e9 s: the year 2128)."""
    log = tmp_path / "clock.csv"
    log.write_text("step,t_wall,gpus_allocated,tokens\n0,1714521600,8,1000\n1,1714521610,8,1000\n"
                   "2,1714521620,8,1000\n3,5000000000,8,1000\n")
    r = run_cli("ledger", "report", str(log), "--price", "2/h", "--no-store", code=1)
    assert r.stderr.startswith("error: t_wall does not look like one run's clock: it jumps by ")
    assert r.stderr.endswith(f"got {log}:line 5 (fix or drop that record's clock)\n")


@pytest.mark.parametrize("bad", ["100000000000000", "1e300"])
def test_a_clock_past_the_calendar_is_skipped_and_counted(tmp_path, run_cli, bad):
    """A t_wall past the year 9999 cannot be a time a run logged: the line is skipped and counted, as a
    value that is not a number is (before: an error for the whole log)."""
    log = tmp_path / "clock.csv"
    log.write_text("step,t_wall,gpus_allocated,tokens\n0,1714521600,8,1000\n1,1714521610,8,1000\n"
                   f"2,1714521620,8,1000\n3,{bad},8,1000\n")
    d = json.loads(run_cli("ledger", "report", str(log), "--price", "2/h", "--no-store", "--json").stdout)
    assert d["records"] == 3 and d["last_step"] == 2
    assert d["skipped_lines"]["first"] == [{"source": "clock.csv", "line": 5, "reason": "t_wall is past the year 9999"}]


def test_runs_counts_records_as_the_report_does(tmp_path, run_cli):
    """A log with a duplicated line: the report counts it once, and so does `ledger runs` (665 vs 664 before)."""
    store = str(tmp_path / "s.sqlite3")
    log = write_csv(tmp_path / "dup.csv", HAND[:3] + HAND[2:3] + HAND[3:])
    report = json.loads(run_cli("ledger", "report", log, "--price", "3.60/h", "--store", store, "--json").stdout)
    assert report["records"] == len(HAND)
    row = run_cli("ledger", "runs", "--store", store).stdout.splitlines()[1].split()
    assert row[:4] == ["dup.csv", "csv", "1", str(len(HAND))]
