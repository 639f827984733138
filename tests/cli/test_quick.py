"""The quick path (napkin.cli.quick) prints what the click command prints, byte for byte, or nothing.

`napkin memory --params 70B --json` is answered without click; every such answer is checked
here against the click command's on the same line, and every line the quick path must leave
to click (errors, help, plan files, positional arguments) is checked to be left, with nothing
printed. A plain answer imports none of numpy, polars, rich or starlette (checked in a fresh
interpreter: an import check, not a timing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from napkin import calculators
from napkin.cli import COMMANDS, quick

ANSWERED = [
    ["memory", "--params", "70B", "--precision", "bf16", "--json"],
    ["memory", "--model", "llama-3.1-70b", "--context", "8192", "--sequences", "32", "--gpu", "h100", "--gpus", "4"],
    ["memory", "--model=llama-3.1-70b", "--context=8k", "--sequences=32", "--gpu=h100", "--gpus=4", "--explain"],
    ["memory", "--params", "70B", "--training", "--gpu", "h100", "--gpus", "8", "--cite"],
    ["memory", "--params", "70B", "--no-training", "--json", "--cite"],
    ["memory", "--params", "405B", "--precision", "fp8", "--gpu", "h100", "--gpus", "8", "--usable", "0.9"],
    ["memory", "--params", "1B", "--params", "7B"],  # the last one wins, as in click
    ["model", "--model", "llama-3.1-8b"],
    ["model", "--model", "mixtral-8x7b", "--json"],
    ["roofline", "--gpu", "h100", "--intensity", "100"],
    ["roofline", "--gpu", "a100", "--precision", "fp16", "--intensity", "20", "--explain"],
    ["mfu", "--params", "7B", "--tokens-per-step", "4Mi", "--step-time", "1.9s", "--gpus", "256", "--gpu", "h100"],
    ["allreduce", "--size", "14GB", "--ranks", "8", "--link", "h100", "--json"],
    ["allreduce", "--size", "14GB", "--ranks", "8", "--link-bandwidth", "900GB/s", "--bidirectional", "--explain"],
    ["check", "--params", "70B", "--tokens", "2T", "--claimed-usd", "500k"],
    ["check", "--gpus", "16384", "--days", "54", "--claimed-gpu-hours", "30.84M", "--json"],
    ["gpu-hour", "--capex", "30000", "--years", "4", "--gpu", "h100", "--utilization", "0.8"],
    ["gpu-hour", "--capex", "30000", "--gpu", "h100", "--per-gpu-year", "network=1500", "--per-gpu-year",
     "facility=$60,000", "--vs", "2.50/h"],
    ["optimal", "--flops", "3.8e25"],
    ["memory", "--model", "llama-3.1-70b", "--batch", "4", "--context", "8k", "--gpu", "h100"],  # notes
    ["check", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--claimed-usd", "500k"],  # a stale price
    ["check", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--claimed-usd", "500k", "--json"],
    ["mfu", "--model", "llama-3.1-8b", "--seq-len", "8192", "--flops-convention", "causal", "--tokens-per-step",
     "4Mi", "--step-time", "1.9s", "--gpus", "256", "--gpu", "h100", "--explain"],
    ["optimal", "--params", "8B", "--tokens", "15T", "--per-day", "10B", "--years", "2", "--json"],
]
LEFT_TO_CLICK = [
    [],
    ["memory"],  # nothing given: click's error
    ["memory", "--params", "0"],
    ["memory", "--params", "-5"],
    ["memory", "--params"],
    ["memory", "--params", "70B", "--help"],
    ["memory", "-h"],
    ["memory", "--parms", "70B"],
    ["memory", "--params", "70B", "--config", "plan.toml"],
    ["memory", "--params", "70B", "--save", "plan.toml"],
    ["memory", "--params", "70B", "--training=yes"],
    ["memory", "--params", "70B", "--", "x"],
    ["model", "llama-3.1-8b"],  # a positional argument
    ["train", "--params", "7B", "--tokens", "2T"],  # a command with options of its own
    ["serve", "--model", "llama-3.1-8b"],
    ["--version"],
    ["memory", "--model", "no-such-model"],
]


def _click(args: list[str]) -> str:
    from click.testing import CliRunner

    from napkin.cli import cli

    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("args", ANSWERED, ids=" ".join)
def test_answers_as_the_click_command_does(args, capsys):
    assert quick.answer(args) is True
    out = capsys.readouterr()
    assert out.err == ""
    assert out.out == _click(args)


@pytest.mark.parametrize("args", LEFT_TO_CLICK, ids=lambda a: " ".join(a) or "(nothing)")
def test_leaves_the_rest_to_click_having_printed_nothing(args, capsys):
    assert quick.answer(args) is False
    assert capsys.readouterr() == ("", "")


def test_a_terminal_gets_the_rich_table_from_click(monkeypatch, capsys):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert quick.answer(["memory", "--params", "70B"]) is False
    assert quick.answer(["memory", "--params", "70B", "--json"]) is True


@pytest.mark.parametrize("name", sorted(quick.QUICK))
def test_quick_commands_have_no_options_of_their_own(name):
    """A command the quick path answers is a bare calculator command: its click options are the request's
    fields (and the positional twins) plus the common flags, so reading them by hand reads them all."""
    module, attr = COMMANDS[name][0].split(":")
    command = getattr(__import__(module, fromlist=[attr]), attr)
    flags = {opt for p in command.params if isinstance(p, click.Option) for opt in (*p.opts, *p.secondary_opts)}
    known = set(quick.options(calculators.get(quick.QUICK[name]).request))
    assert flags == known | set(quick.FLAGS) | {"--config", "--save"}
    fn = command.callback.__wrapped__  # calculator_command's callback: no `after`, `prepare` or spinner given
    cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
    assert cells["after"] is None and cells["prepare"] is None and cells["calc"].name == quick.QUICK[name]
    assert cells["progress"] is None  # a spinner's text goes to a terminal: the quick path has none


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["--params", "70B", "--gpu", "h100", "--json", "--gpus", "4", "--context", "8k",
                                 "--model", "llama-3.1-8b", "--training", "--sequences", "0", "--explain", "x",
                                 "--precision", "int4", "--memory", "80GB", "=", "--usable=0.5"]), max_size=9))
def test_any_line_either_matches_click_or_is_left_to_it(args):
    import contextlib
    import io

    from click.testing import CliRunner

    from napkin.cli import cli

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    with contextlib.redirect_stdout(out):
        answered = quick.answer(["memory", *args])
    out.flush()
    if answered:
        result = CliRunner().invoke(cli, ["memory", *args])
        assert result.exit_code == 0
        assert raw.getvalue().decode() == result.stdout
    else:
        assert raw.getvalue() == b""


HEAVY = ("numpy", "polars", "rich", "starlette")
PROBE = ("import sys\nsys.argv = ['napkin', *{args!r}]\nfrom napkin.cli import {entry}\n"
         "try:\n    {call}\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
         "print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}), file=sys.stderr)\n")


@pytest.mark.parametrize("entry, call", [("main", "main()"),
                                         ("cli", "cli.main(args=sys.argv[1:], prog_name='napkin')")],
                         ids=["quick path", "click path"])
@pytest.mark.parametrize("args", [["memory", "--params", "70B", "--precision", "bf16", "--json"],
                                  ["memory", "--model", "llama-3.1-70b", "--context", "8k", "--gpu", "h100"]],
                         ids=["--params --json", "--model --gpu"])
def test_memory_imports_none_of_the_heavy_libraries(entry, call, args):
    code = PROBE.format(args=args, entry=entry, call=call, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]"
    if "--json" in args:
        assert json.loads(done.stdout)["weights_bytes"] == 140e9


def test_the_command_reads_its_types_without_typing_extensions():
    """``napkin.cli.main`` imports msgspec as it runs without typing_extensions (which would bring in
    ``inspect``, ``ast`` and ``dis``); typing_extensions stays importable afterwards, and a command that
    goes on to click (train, whose options and sweep use the request Structs) answers as always."""
    code = ("import sys\nfrom napkin.cli import main\n"
            "for argv in (['memory', '--params', '70B', '--json'], ['train', '--params', '7B', '--tokens', '2T',"
            " '--price', '2', '--vary', 'mfu=0.3,0.4']):\n"
            "    sys.argv = ['napkin', *argv]\n"
            "    try:\n        main()\n    except SystemExit as e:\n        assert not e.code, e.code\n"
            "    print(sorted(m for m in ('typing_extensions', 'inspect', 'ast') if m in sys.modules), file=sys.stderr)\n"
            "import typing_extensions\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-2] == "[]"  # the plain answer; click itself imports inspect
    assert json.loads(done.stdout.split("\n}\n")[0] + "\n}")["weights_bytes"] == 140e9
    assert "as mfu varies" in done.stdout and "$0.0" in done.stdout


@pytest.mark.parametrize("env, args, expected", [
    ({}, ["ledger", "report", "x.csv"], "1"),  # napkin's numpy never calls BLAS: one thread, no pool
    ({"OPENBLAS_NUM_THREADS": "4"}, ["plan", "serve"], "4"),  # the environment's number is kept
    ({}, ["measure"], None),  # a CPU matmul sweep may run on a BLAS: left as it is
])
def test_the_command_starts_one_blas_thread_unless_told(env, args, expected):
    """numpy's OpenBLAS pool spins up at import (about 0.1 CPU-s on 2 cores) and napkin's numpy never uses it."""
    code = (f"import os\nfrom napkin.cli import _one_blas_thread\n_one_blas_thread({args!r})\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**clean, **env})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(expected)
