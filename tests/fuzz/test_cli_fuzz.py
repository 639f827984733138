"""Fuzz of the command line (issue 15): every command's options, from its click parameters and request Struct.

Each case is an argv for one command: half start from the command's worked example (the page's
tab, ``napkin.web.examples``) and change a few options to values each accepts, to reach deep into
the calculation; the others mix in anything: boundary numbers (each bound and each physical range,
just inside and just outside), extremes (1.7e308, 5e-324, "1e400", "nan"), hostile text (control
characters, a forged second error line, server paths, long names), files that are not what they
should be (a FIFO, a symlink to /dev/zero or into a loop, a name over 255 bytes, TOML that is not
UTF-8 or nests 100,000 deep, a plan with junk in ``assumed``), unknown options and missing values.
Options that write (``--save``, ``--chart``, ``--store``, ``--html``, ``--markdown``, ``--png``)
name paths inside the test's temporary folder only: the machines run as root.

Every case exits 0 or 1, never with an internal error or a traceback; an error is one line, every
echoed character escaped; nothing printed has a control character; and no figure is ``inf`` or
``nan`` (in the table, or in the JSON, where an infinite figure would read null) unless the command
line itself said so. ``napkin web``, ``napkin measure`` and ``napkin ledger watch`` run until stopped
or take minutes (a server, a benchmark, a loop) and are left out.

Cases: ``NAPKIN_FUZZ_CASES`` in all, split evenly over the commands (default 1,300: 50 each; `make fuzz`
runs 60,000). Hypothesis is derandomised by the suite's profile, so every run draws the same cases.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from napkin import calculators, units
from napkin.errors import quote
from napkin.request import fields
from napkin.web.examples import EXAMPLES
from tests.fuzz.tally import Tally
from tests.fuzz.values import (ALL_NAMES, EXTREME_STRINGS, NAMES, PRECISIONS,
                               any_text, numeric, valid_number)

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {"web": "serves until stopped", "measure": "runs benchmarks for minutes",
           "ledger watch": "refreshes until stopped"}
CALCULATOR_OF = {"plan serve": "plan-serve", "plan train": "plan-train", "ledger report": "ledger"}
WRITES = {"save": ".toml", "chart": ".svg", "html_out": ".html", "markdown_out": ".md", "png": ".png",
          "store": ".sqlite", "csv_path": ".csv"}


def commands() -> dict[str, click.Command]:
    """Every command, by its words after `napkin` (``plan serve``), less those that run until stopped."""
    from napkin.cli import cli

    out: dict[str, click.Command] = {}

    def walk(cmd: click.Command, words: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(None):  # type: ignore[arg-type]
                walk(cmd.get_command(None, name), [*words, name])  # type: ignore[arg-type]
        elif " ".join(words) not in SKIPPED:
            out[" ".join(words)] = cmd

    walk(cli, [])
    return out


COMMANDS = commands()
# `napkin validate` runs the model over every published point (seconds a case): a fiftieth of the others' cases
WEIGHTS = {words: 0.02 if words == "validate" else 1.0 for words in COMMANDS}
TOTAL = int(os.environ.get("NAPKIN_FUZZ_CASES", "1300"))


def cases(words: str) -> int:
    """The cases of one command: NAPKIN_FUZZ_CASES in all, shared by the commands' weights."""
    return max(2, round(TOTAL * WEIGHTS[words] / sum(WEIGHTS.values())))


def calculator_of(words: str) -> Any:
    name = CALCULATOR_OF.get(words, words)
    return calculators.get(name) if name in calculators.CALCULATORS else None


# ------------------------------------------------------------------------------------------- the folder
@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> dict[str, Any]:
    """The temporary folder every path of the fuzz lies in: good files to read, bad ones, and where to write.

    Also the environment: the ledger's default store and the caches under it.
    """
    base = tmp_path_factory.mktemp("cli-fuzz")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_DATA_HOME", str(base / "data"))
    mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
    (base / "sub").mkdir()
    good = {
        "log": _copy(ROOT / "examples" / "logs" / "sample-run.csv", base / "run.csv"),
        "calibration": _write(base / "cal.toml", 'device = "fuzz"\ndate = "2024-01-01"\nmemory_bytes_per_s = 3e12\n'
                                                 'bandwidth_fraction = 0.8\n'),
        "trace": _write(base / "trace.csv", "prompt,output\n1000,200\n500,100\n2000,50\n"),
        "text": _write(base / "prose.txt", "Why is the sky red at sunset but blue at noon?\n" * 20),
        "config.json": _write(base / "config.json", json.dumps({
            "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 131072, "torch_dtype": "bfloat16"})),
    }
    os.mkfifo(base / "fifo")
    os.symlink("/dev/zero", base / "zero")
    os.symlink(base / "fifo", base / "fifo-link")
    os.symlink(base / "loop", base / "loop")
    bad = [base / "fifo", base / "zero", base / "fifo-link", base / "loop", base / ("x" * 300), base / "missing" / "x",
           base / "sub", base / "nothing.toml",
           _write(base / "not-utf8.toml", b"\xff\xfe params = 1\n"),
           _write(base / "deep.toml", b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"),
           _write(base / "big.toml", b"# " + b"x" * (2**20 + 10) + b"\n"),
           _write(base / "bigint.toml", b"params = 1" + b"0" * 400 + b"\ntokens = 2e12\n"),
           _write(base / "junk.toml", b'params = "7B"\ntokens = "2T"\nassumed = [1, {a = 1}, "nope", "x\\ny"]\n'),
           _write(base / "types.toml", b'params = {a = {b = 1}}\ntokens = [[1]]\ngpu = 3\nmfu = 1979-05-27\n'),
           _write(base / "empty", b""), _write(base / "binary.csv", bytes(range(256)) * 4),
           _write(base / "cr.csv", (ROOT / "examples" / "logs" / "sample-run.csv").read_bytes()[:4000]
                  .replace(b"\n", b"\r")),
           Path("/etc/hostname"), Path("/proc/self/status")]
    plans = {}
    for words, cmd in COMMANDS.items():  # a plan each calculator wrote itself (--save), for --config to read
        calc = calculator_of(words)
        if calc is None or words == "ledger report" or "save" not in {p.name for p in cmd.params}:
            continue
        path = base / f"{words.replace(' ', '-')}.plan.toml"
        code, _, _ = run(words.split() + example_argv(words, good) + ["--save", str(path)])
        if code == 0:
            plans[words] = path
    yield {"base": base, "good": good, "bad": bad, "plans": plans}
    mp.undo()


def _write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _copy(src: Path, dst: Path) -> Path:
    return _write(dst, src.read_bytes())


# ------------------------------------------------------------------------------------------- argv
def option_of(info: Any) -> str:
    return info.option


def example_argv(words: str, good: dict[str, Path]) -> list[str]:
    """The command's worked example (the page's tab) as options; the ledger's is the sample log."""
    if words == "ledger report":
        return [str(good["log"]), "--price", "2.5/h", "--no-store"]
    if words == "catalog":
        return ["gpus"]
    calc = calculator_of(words)
    if calc is None:
        return []
    infos = {f.name: f for f in fields(calc.request)}
    out: list[str] = []
    for name, value in EXAMPLES.get(CALCULATOR_OF.get(words, words), {}).items():
        info = infos[name]
        if info.kind == "bool":
            out.append(info.option if str(value).lower() in ("true", "1", "yes") else "--no-" + info.option[2:])
        else:
            out += [info.option, str(value)]
    return out


def text_of(v: Any) -> str:
    """A value as a command line carries it."""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return str(v)


def field_value(info: Any, valid: bool) -> st.SearchStrategy:
    """One value of a request field as text: one it accepts (``valid``), or anything."""
    kind = info.kind
    if kind in units.KINDS or kind == "int":
        one = valid_number(info) if valid else numeric(info)
    elif kind == "name":
        catalog_names = st.sampled_from(ALL_NAMES)
        one = catalog_names if valid else st.one_of(catalog_names, catalog_names.map(str.upper), any_text())
    elif kind == "choice":
        choices = st.sampled_from(info.meta.get("choices") or ["x"])
        one = choices if valid else st.one_of(choices, choices.map(str.upper), any_text())
    elif kind == "precision":
        one = st.sampled_from(PRECISIONS[:8] if valid else PRECISIONS) if valid else st.one_of(
            st.sampled_from(PRECISIONS), any_text())
    else:
        one = st.sampled_from(["auto", "0.9", "16Mi", "4M", "adam", "8", "experiments=0.5"]) if valid else any_text(80)
    one = one.map(text_of)
    if info.container == "list":
        return st.lists(one, min_size=1, max_size=4).map(",".join) if valid else st.one_of(
            one, st.lists(one, min_size=1, max_size=4).map(",".join))
    if info.container == "dict":
        keys = st.sampled_from(NAMES["gpus"][:6] + ["experiments", "lost", "facility", "network", "step", "tokens"])
        keys = keys if valid else st.one_of(keys, any_text(12))
        pairs = st.dictionaries(keys, one, min_size=1, max_size=3).map(
            lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
        return pairs if valid else st.one_of(pairs, one)
    return one


def read_path(folder: dict[str, Any], good: str | None) -> st.SearchStrategy:
    """A path to read: the good file of its kind, another good file, or a bad one (all in the temporary folder)."""
    goods = list(folder["good"].values()) + list(folder["plans"].values())
    first = [folder["good"][good]] if good in folder["good"] else []
    return st.one_of(st.sampled_from(first or goods), st.sampled_from(goods), st.sampled_from(folder["bad"])).map(str)


SAFE_NAME = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1,
                    max_size=40).filter(lambda n: n not in (".", ".."))


def write_path(folder: dict[str, Any], suffix: str) -> st.SearchStrategy:
    """A path to write, always inside the temporary folder (a name never holds a separator)."""
    base: Path = folder["base"]
    fixed = [base / f"out{suffix}", base / "sub" / f"out{suffix}", base / "missing" / f"out{suffix}",
             base / ("y" * 300 + suffix), base / "loop", base / "fifo", base / "zero", base / "sub", base / "out",
             base / f"out{suffix}.txt", base / f"\x1b[2J\nerror: x{suffix}"]
    return st.one_of(st.sampled_from(fixed), st.sampled_from(fixed),
                     SAFE_NAME.map(lambda n: base / n)).map(str)


PATH_FIELDS = {"calibration": "calibration", "trace": "trace", "logs": "log", "file": "text", "plan": "config.json"}


def option_value(words: str, param: click.Parameter, infos: dict[str, Any], folder: dict[str, Any],
                 valid: bool) -> st.SearchStrategy:
    """Text for one option or argument of the command (None for a flag)."""
    name = param.name.removesuffix("__option")
    if isinstance(param, click.Option) and param.is_flag:
        return st.none()
    info = infos.get(name)
    if name in WRITES:
        return write_path(folder, WRITES[name])
    if name == "config":
        plan = folder["plans"].get(words)
        return st.one_of(st.sampled_from([str(plan)] if plan else [str(folder["good"]["calibration"])]),
                         read_path(folder, None))
    if info is not None and info.kind == "path":
        return read_path(folder, PATH_FIELDS.get(name))
    if info is not None and info.kind == "name" and not valid:  # a config.json to read, beside the catalog's names
        return st.one_of(field_value(info, valid), read_path(folder, "config.json"))
    if info is not None:
        return field_value(info, valid)
    if name == "executor":
        return st.sampled_from(["none", "local"])  # dask is tested by name: a cluster per case is minutes
    if name == "scheduler":  # addresses that never connect: the check refuses them before any network
        return st.one_of(st.sampled_from(["not an address", "tcp://", "tcp://host", "foo://x:1", "tcp://x:99999",
                                          "tcp://\x1b[2J:1"]), any_text(30))
    if name == "workers":
        return st.one_of(st.integers(1, 4).map(str), st.sampled_from(EXTREME_STRINGS), any_text(10))
    if name == "table":
        return st.one_of(st.sampled_from(["gpus", "models", "prices"]), any_text(20))
    return st.one_of(st.sampled_from(["main", "serving", "training", "run-1"]), any_text(40))


@st.composite
def argvs(draw: Any, words: str, folder: dict[str, Any]) -> list[str]:
    """A command line for ``napkin <words>``: its example with changes, or anything."""
    cmd = COMMANDS[words]
    calc = calculator_of(words)
    infos = {f.name: f for f in fields(calc.request)} if calc is not None else {}
    params = [p for p in cmd.params if p.name not in ("help",)]
    valid = draw(st.booleans())
    argv = list(words.split())
    argv += example_argv(words, folder["good"]) if valid or draw(st.booleans()) else []
    for _ in range(draw(st.integers(min_value=0 if not valid else 1, max_value=4))):
        if not params:
            break
        param = draw(st.sampled_from(params))
        value = draw(option_value(words, param, infos, folder, valid))
        if isinstance(param, click.Argument):
            argv.append(value)
        elif param.is_flag:
            argv.append(draw(st.sampled_from(param.opts + list(param.secondary_opts))))
        else:
            argv += [draw(st.sampled_from(param.opts)), value]
    if not valid:
        extra = draw(st.integers(0, 14))
        if extra == 0:
            argv.append(draw(st.sampled_from(["--no-such-option", "--json=x", "-x", "--", "--gpus"])))
        elif extra == 1:
            argv.append(draw(any_text(20)))
        elif extra == 2 and len(argv) > len(words.split()):
            argv.pop()  # an option left without its value
    return argv


# ------------------------------------------------------------------------------------------- running
def run(argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `napkin argv` in process; a warning that would print is an error."""
    from click.testing import CliRunner

    from napkin.cli import cli

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(cli, argv)
    leaked = [w for w in caught if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
    err = result.stderr + "".join(f"{w.category.__name__}: {w.message}\n" for w in leaked)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        err += f"traceback: {type(result.exception).__name__}: {result.exception}\n"
    return result.exit_code, result.stdout, err


# a figure gone non-finite, as Python or JavaScript writes it (AMD's link is called Infinity Fabric)
FIGURE_WORDS = re.compile(r"(?<![A-Za-z])(inf|nan|infinity)(?![A-Za-z])(?! Fabric)", re.IGNORECASE)


def check(tally: Tally, argv: list[str], code: int, out: str, err: str, non_finite: list[float]) -> None:
    said = repr(argv)
    tally.check("traceback:" not in err and "internal error" not in err, "internal error", (argv, err))
    tally.check(code in (0, 1), "exit status", (argv, code, err))
    tally.check(all(quote(line) == line for line in (out + err).split("\n")), "unescaped control character",
                (argv, out[-500:], err))
    if code == 1:
        tally.check(err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, "multi-line error",
                    (argv, err))
        return
    lines = [ln for ln in err.split("\n") if ln]
    tally.check(all(ln.startswith("wrote ") or ln.startswith("note: ") for ln in lines), "leaked output",
                (argv, err))
    rows = out.split("\n\n", 1)[0] if "--json" not in argv else ""
    for m in FIGURE_WORDS.finditer(rows):
        tally.check(m.group().lower() in said.lower(), "non-finite figure", (argv, m.group(), rows[-800:]))
    tally.check(not non_finite, "non-finite figure", (argv, non_finite[:3]))




@pytest.mark.parametrize("words", sorted(COMMANDS))
def test_every_command_exits_0_or_1_with_one_clean_line(words, folder, non_finite):
    tally = Tally("cli", words)

    @settings(max_examples=cases(words), deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(argv=argvs(words, folder))
    def case(argv: list[str]) -> None:
        non_finite.clear()
        code, out, err = run(argv)
        tally.case(code)
        check(tally, argv, code, out, err, non_finite)

    case()
    tally.close()


def test_the_examples_run_and_the_plans_read_back(folder):
    """Every command's worked example answers (so the fuzz starts from somewhere real), and every plan it
    saved reads back with --config."""
    for words in COMMANDS:
        code, _, err = run(words.split() + example_argv(words, folder["good"]))
        assert code == 0, (words, err)
    for words, path in folder["plans"].items():
        code, _, err = run(words.split() + ["--config", str(path)])
        assert code == 0, (words, err)
    assert len(folder["plans"]) >= 15, sorted(folder["plans"])
