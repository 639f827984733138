"""Issue 15 on the command line: each repro of the issue is the input of a test here.

Files that are not regular (a FIFO, /dev/zero, a symlink to either, a symlink loop), names over
255 bytes, TOML that is not UTF-8, nests 100,000 deep, holds a 401-digit integer or junk in
``assumed``, text that forges a second error line or clears the screen, a dask scheduler that
does not answer, bare ``napkin`` and an option without its value: each is one line naming the
input, exit 1 (the help, exit 0, for bare ``napkin``). Every path lies in the test's temporary folder.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

NAPKIN = [sys.executable, "-c", "import sys; from napkin.cli import main; sys.argv[0] = 'napkin'; main()"]
LONG = "x" * 300  # a file name over the 255 bytes of a name on Linux file systems


@pytest.fixture
def odd(tmp_path, monkeypatch):
    """A temporary folder holding a FIFO, links to it and to /dev/zero, a symlink loop, and bad TOML; the cwd."""
    monkeypatch.chdir(tmp_path)
    os.mkfifo("fifo")
    os.symlink("fifo", "fifo-link")
    os.symlink("/dev/zero", "zero-link")
    os.symlink("loop", "loop")
    (tmp_path / "not-utf8.toml").write_bytes(b"\xff\xfe params = 1\n")
    (tmp_path / "deep.toml").write_bytes(b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    (tmp_path / "bigint.toml").write_text("params = 1" + "0" * 400 + "\ntokens = 2e12\n")
    (tmp_path / "junk.toml").write_text('params = "7B"\ntokens = "2T"\nassumed = [1, {a = 1}, "nope"]\n')
    return tmp_path


FILE = "(give the path of a file)"
NOT_REGULAR = [
    # item 3: not a regular file, as --config, --calibration, tokens --file, ledger --plan and --model config.json
    (["train", "--config", "/dev/zero"], f"config is a character device, not a regular file; got /dev/zero {FILE}"),
    (["train", "--config", "fifo"], f"config is a FIFO, not a regular file; got fifo {FILE}"),
    (["train", "--config", "fifo-link"], f"config is a FIFO, not a regular file; got fifo-link {FILE}"),
    (["train", "--config", "zero-link"], f"config is a character device, not a regular file; got zero-link {FILE}"),
    (["serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", "fifo"],
     f"calibration is a FIFO, not a regular file; got fifo {FILE}"),
    (["serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", "/dev/zero"],
     f"calibration is a character device, not a regular file; got /dev/zero {FILE}"),
    (["tokens", "--file", "/dev/zero"], f"file is a character device, not a regular file; got /dev/zero {FILE}"),
    (["tokens", "--file", "fifo-link"], f"file is a FIFO, not a regular file; got fifo-link {FILE}"),
    (["memory", "--model", "fifo", "--gpu", "h100"], f"model is a FIFO, not a regular file; got fifo {FILE}"),
    # item 10: symlink loops and names over 255 bytes in --save/--config/--calibration/--plan/--chart/--model
    (["train", "--config", "loop"], "config is a symlink loop; got loop (point the link at a file)"),
    (["serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", "loop"],
     "calibration is a symlink loop; got loop (point the link at a file)"),
    (["memory", "--model", "loop", "--gpu", "h100"], "model is a symlink loop; got loop (point the link at a file)"),
    (["train", "--params", "7B", "--tokens", "2T", "--save", "loop"],
     "save is a symlink loop; got loop (point the link at a file)"),
    (["tokens", "--file", "loop"], "file is a symlink loop; got loop (point the link at a file)"),
    (["train", "--config", f"{LONG}.toml"],
     f"config has a name too long for the file system; got {LONG}.toml (give a shorter path)"),
    (["train", "--params", "7B", "--tokens", "2T", "--save", f"{LONG}.toml"],
     f"save has a name too long for the file system; got {LONG}.toml (give a shorter path)"),
    (["train", "--params", "7B", "--tokens", "2T", "--chart", f"{LONG}.svg"],
     f"chart has a name too long for the file system; got {LONG}.svg (give a shorter path)"),
    (["memory", "--model", LONG, "--gpu", "h100"],
     f"model has a name too long for the file system; got {LONG} (give a shorter path)"),
    # item 10: TOML that is not UTF-8, nests deeply, holds an integer beyond a float, or junk in assumed
    (["train", "--config", "not-utf8.toml"], "config is not UTF-8 text, so not a TOML file; got not-utf8.toml (give "
     "a plan file written by --save (TOML of field = value))"),
    (["train", "--config", "deep.toml"], "config is nested too deeply to be a plan file; got deep.toml (give a plan "
     "file written by --save (TOML of field = value))"),
    (["train", "--config", "bigint.toml"],
     "params is beyond the range of a number; got an integer of 401 digits (no physical input is that large)"),
    (["train", "--config", "junk.toml"], "assumed must be text; got a table (give one value in quotes)"),
]


@pytest.mark.parametrize("args,message", NOT_REGULAR, ids=[" ".join(a)[:60] for a, _ in NOT_REGULAR])
def test_files_that_are_not_what_they_should_be_are_one_line(odd, run_cli, args, message):
    r = run_cli(*args, code=1)
    assert r.stderr == f"error: {message}\n"
    assert r.stdout == ""
    assert sorted(p.name for p in odd.iterdir()) == ["bigint.toml", "deep.toml", "fifo", "fifo-link", "junk.toml",
                                                     "loop", "not-utf8.toml", "zero-link"]  # nothing written


def test_ledger_plan_that_is_a_fifo_is_one_line(odd, run_cli):
    log = odd / "run.csv"
    log.write_text("step,t_wall,gpus_allocated,tokens\n1,0,8,1000\n2,10,8,1000\n")
    r = run_cli("ledger", "report", str(log), "--price", "2.5/h", "--no-store", "--plan", "fifo", code=1)
    assert r.stderr.startswith("error: plan is a FIFO, not a regular file; got fifo") and r.stderr.count("\n") == 1


# ------------------------------------------------------------------ item 2: what is echoed is quoted
def test_a_forged_second_error_line_is_escaped(run_cli):
    r = run_cli("train", "--params", "7B\nerror: spoofed second line", "--tokens", "2T", code=1)
    assert r.stderr == ("error: params is not a count such as 7B, 70.6e9, 15T, 4M or 4Mi; got 7B\\nerror: spoofed "
                        "second line\n")
    r = run_cli("train", "--params", "\x1b[2J", "--tokens", "2T", code=1)
    assert r.stderr == "error: params is not a count such as 7B, 70.6e9, 15T, 4M or 4Mi; got \\x1b[2J\n"


def test_usage_errors_quote_what_was_typed(run_cli):
    r = run_cli("train", "--bogus\x1b[2J", code=1)
    assert "\x1b" not in r.stderr and r.stderr.count("\n") == 1
    assert r.stderr.startswith("error: No such option '--bogus\\x1b[2J'")
    assert r.stderr.endswith("(see `napkin train --help`)\n")


# ------------------------------------------------------------------ item 12: bare napkin, a missing value
def test_bare_napkin_prints_the_help():
    """Was a one-line flattened "error: Usage: ..."; now the help, exit 0 (run as `napkin`, its real name)."""
    for args, usage in (([], "Usage: napkin [OPTIONS] COMMAND [ARGS]...\n"),
                        (["plan"], "Usage: napkin plan [OPTIONS] COMMAND [ARGS]...\n")):
        r = subprocess.run([*NAPKIN, *args], capture_output=True, text=True, timeout=120)
        assert (r.returncode, r.stderr) == (0, "")
        assert r.stdout.startswith(usage) and "\nCommands:\n" in r.stdout


def test_a_missing_value_points_to_the_commands_help(run_cli):
    r = run_cli("train", "--params", code=1)
    assert r.stderr == "error: Option '--params' requires an argument. (see `napkin train --help`)\n"
    r = run_cli("plan", "serve", "--model", code=1)
    assert r.stderr == "error: Option '--model' requires an argument. (see `napkin plan serve --help`)\n"


# ------------------------------------------------------------------ item 5: a dask scheduler that does not answer
@pytest.mark.parametrize("address,message", [
    ("tcp://127.0.0.1:1", "scheduler is not answering: no dask scheduler replied within 4 s; got tcp://127.0.0.1:1 "
     "(start one with `dask scheduler`, check the address, or use --executor local)"),
    ("not an address", "scheduler is not a dask scheduler address; got not an address (write scheme://host:port, "
     "e.g. tcp://10.0.0.5:8786; schemes: tcp, tls, ws, wss, ucx)"),
    ("tcp://127.0.0.1:99999", "scheduler is not a dask scheduler address; got tcp://127.0.0.1:99999 (write "
     "scheme://host:port, e.g. tcp://10.0.0.5:8786; schemes: tcp, tls, ws, wss, ucx)"),
])
def test_a_dask_scheduler_that_does_not_answer_is_one_line(address, message):
    """Was a 31 s wait and then an internal error (port 1), an internal error at once (a bad address). The
    subprocess's timeout is a hang guard, not a timing assertion: the check itself waits 4 s."""
    r = subprocess.run([*NAPKIN, "plan", "serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--tpot", "50ms",
                        "--ttft", "2s", "--rate", "5/s", "--executor", "dask", "--scheduler", address],
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"error: {message}\n")


# ------------------------------------------------------------------ what the CLI fuzz found (tests/fuzz/test_cli_fuzz.py)
def test_compare_with_no_gpu_is_one_line(run_cli):
    """Fuzz: `napkin compare --gpu ''` was an internal error (IndexError at the baseline)."""
    r = run_cli("compare", "--gpu", "", "--tokens", "1e+30", code=1)
    assert r.stderr == "error: gpu must name at least one accelerator; got an empty list (e.g. --gpu h100-sxm,b200)\n"


@pytest.mark.parametrize("command", [["card"], ["journey"]])
def test_no_page_is_written_when_another_cannot_be(tmp_path, run_cli, command):
    """Fuzz: `card --html ok.html --markdown FOLDER` wrote the page, then failed: two lines on stderr, exit 1.
    Every path is checked first: one line, nothing written."""
    (tmp_path / "sub").mkdir()
    r = run_cli(*command, "--html", str(tmp_path / "ok.html"), "--markdown", str(tmp_path / "sub"), code=1)
    assert r.stderr == (f"error: markdown is a folder, not a regular file; got {tmp_path / 'sub'} (give the path of "
                        "a file to write)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


def test_journey_quotes_the_prompt_it_echoes(run_cli):
    """Fuzz: a prompt's DEL and line separators reached the terminal in `prompt: "..."`."""
    r = run_cli("journey", "--prompt", "a\x7fb\x1b[2Jc")
    assert r.stdout.split("\n")[1] == 'prompt: "a\\x7fb\\x1b[2Jc"'


def test_plan_serve_quotes_the_chart_path_it_names(tmp_path, run_cli):
    """Fuzz: `wrote pareto chart to PATH` printed a newline in the path raw (a forged second line)."""
    path = tmp_path / "a\nerror: x.svg"
    r = run_cli("plan", "serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--tpot", "50ms", "--ttft", "2s",
                "--rate", "5/s", "--batch", "8", "--chart", str(path))
    assert r.stderr == f"wrote pareto chart to {tmp_path}/a\\nerror: x.svg\n" and path.exists()


def test_a_local_dask_cluster_warns_of_no_port(recwarn):
    """Fuzz: a local dask cluster took the dashboard's port 8787 and, when another process held it, warned
    "Port 8787 is already in use" on stderr. It takes a free port now, and warns of nothing."""
    import socket
    import warnings

    from napkin.plan.executors import DaskExecutor

    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))  # hold the port where it is free, as another cluster would
    except OSError:
        pass  # something else holds it already: the same case
    warnings.simplefilter("always")
    try:
        ex = DaskExecutor()
        assert ex.gather([ex.submit(pow, 2, 10)]) == [1024]
        ex.close()
    finally:
        holder.close()
    assert [str(w.message) for w in recwarn if issubclass(w.category, UserWarning)] == []
