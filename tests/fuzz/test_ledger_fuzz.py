"""Fuzzing `napkin ledger report` with damaged real logs of every format.

Each case takes a sample log (CSV, JSON Lines, Megatron-LM and torchtitan stdout, a Hugging Face
trainer_state.json, a Lightning metrics.csv), damages it the ways logs are damaged (cut short,
bytes flipped, lines written twice or moved, garbage lines, numbers no run could log, bytes that
are not UTF-8, control characters, CR line ends) and runs the CLI on it, asserting:

- the exit status is 0 or 1, never an internal error, never a warning leaked to stderr;
- an error is one line, with every control character escaped;
- where a figure is printed it is a number: no inf or nan, in the text or the JSON;
- nothing is dropped silently: records + skipped + duplicates = the step lines of the log (CSV, JSON
  Lines, Megatron-LM, torchtitan, whose step lines can be counted line by line).

Cases: ``NAPKIN_FUZZ_CASES`` in all, split evenly over the formats (default 150: 25 each, a few seconds;
`make fuzz` runs 1,200). Hypothesis is derandomised by the suite's profile, so the suite draws the same
cases on every run.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from napkin.errors import quote
from tests.fuzz.tally import Tally

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ("csv", "jsonl", "megatron", "torchtitan", "hf", "lightning")
CASES = max(1, int(os.environ.get("NAPKIN_FUZZ_CASES", "150")) // len(FORMATS))  # per format
COUNTED = ("csv", "jsonl", "megatron", "torchtitan")  # formats whose step lines are counted line by line
OPTIONS = {"csv": [], "jsonl": [], "megatron": ["--gpus", "64", "--seq-len", "4096"],
           "torchtitan": ["--gpus", "8", "--tokens-per-step", "131072"], "hf": ["--gpus", "1"],
           "lightning": ["--gpus", "8", "--tokens-per-step", "1M"]}
FIGURES = ("gpu_hours_allocated", "realised_usd", "advanced_tokens", "processed_tokens",
           "usd_per_million_advanced_tokens", "usd_per_million_processed_tokens", "wall_s")
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
             "\u2028\u2029\u202f\u205f\u3000"  # Unicode White_Space: what the readers strip from a blank line
NONFINITE = re.compile(r"(?<![\w.])(?:inf|-inf|nan|NaN|Infinity|-Infinity)(?![\w.])")


# ------------------------------------------------------------------------------------------- samples
def _samples() -> dict[str, bytes]:
    csv = (ROOT / "examples" / "logs" / "sample-run.csv").read_bytes()
    head = b"\n".join(csv.split(b"\n")[:121]) + b"\n"  # 120 records of the sample run: day 1
    rows = [line.split(b",") for line in head.split(b"\n")[1:] if line]
    jsonl = b"".join(json.dumps({"step": int(r[0]), "t_wall": r[1].decode(), "gpus_allocated": int(r[2]),
                                 "tokens": int(r[3]), "loss": float(r[4])}).encode() + b"\n" for r in rows)
    megatron = [b"using world size: 64, data-parallel size: 8", b" > building GPT model ..."]
    for i, r in enumerate(rows, start=1):
        ts = r[1].decode().replace("T", " ").rstrip("Z")
        megatron.append(f" [{ts}] iteration {int(r[0]):>8d}/  500000 | consumed samples: {int(r[0]) * 512:>12d} | "
                        f"elapsed time per iteration (ms): 7000.0 | learning rate: 3.000E-04 | global batch size:   "
                        f"512 | lm loss: {float(r[4]):.6E} | loss scale: 1.0 |".encode())
        if i % 40 == 0:
            megatron.append(f" validation loss at iteration {int(r[0])} | lm loss value: 6.9E+00 |".encode())
    lightning = [b"epoch,step,train_loss,val_loss,napkin/t_wall"]
    for r in rows:
        lightning.append(b"0," + r[0] + b"," + r[4] + b",," + r[1])
        lightning.append(b"0," + r[0] + b",,1.9,")
    return {"csv": head, "jsonl": jsonl, "megatron": b"\n".join(megatron) + b"\n",
            "torchtitan": (ROOT / "tests" / "ledger" / "data" / "titan_2ranks.log").read_bytes()[:24000],
            "hf": (ROOT / "tests" / "ledger" / "data" / "trainer_state_tokens_seen.json").read_bytes(),
            "lightning": b"\n".join(lightning) + b"\n"}


SAMPLES = _samples()
NAMES = {"csv": "steps.csv", "jsonl": "steps.jsonl", "megatron": "train.log", "torchtitan": "titan.log",
         "hf": "trainer_state.json", "lightning": "metrics.csv"}


# ------------------------------------------------------------------------------------------- damage
HUGE = [b"1e308", b"-1e308", b"1e400", b"9223372036854775808", b"nan", b"inf", b"-0", b"1e-320", b"99999999999999999"]
GARBAGE = [b"\xff\xfe\xfa", b"\x1b[2J\x1b[H", b"error: spoofed\n", b"\x00\x00", b'"', b",,,,,", b"{", b"[[[[", b"\r",
           b"iteration 5 |", b"step: 7  loss: 1", "\u2028é€".encode()]


@st.composite
def damaged(draw, fmt: str) -> bytes:
    data = bytearray(SAMPLES[fmt])
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "duplicate", "move", "garbage", "huge", "utf8", "cr"]))
        lines = bytes(data).split(b"\n")
        if kind == "truncate":
            del data[draw(st.integers(1, len(data))):]
        elif kind == "flip":
            for _ in range(draw(st.integers(1, 4))):
                if data:
                    data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif kind in ("duplicate", "move"):
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines)))
            line = lines[i] if kind == "duplicate" else lines.pop(i)
            lines.insert(min(j, len(lines)), line)
            data = bytearray(b"\n".join(lines))
        elif kind == "garbage":
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(GARBAGE)))
            data = bytearray(b"\n".join(lines))
        elif kind == "huge":
            numbers = list(re.finditer(rb"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", bytes(data)))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                data[m.start():m.end()] = draw(st.sampled_from(HUGE))
        elif kind == "utf8":
            at = draw(st.integers(0, len(data)))
            data[at:at] = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82"]))
        else:
            data = bytearray(bytes(data).replace(b"\n", b"\r"))
    return bytes(data)


# ------------------------------------------------------------------------------------------- counting
def _lines(data: bytes) -> list[str]:
    from napkin.ledger.readers.lines import cr_only

    if cr_only(data[:65536]):
        data = data.replace(b"\r", b"\n")
    lines = data.decode("utf-8", errors="replace").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def step_lines(fmt: str, data: bytes) -> int:
    """The lines of the log that are step lines, counted as the review defines them: a CSV's or JSON Lines'
    lines that are not blank (after a CSV's header); Megatron-LM's and torchtitan's lines that look like a
    step line (by the readers' own patterns), whole or damaged."""
    import polars as pl

    lines = _lines(data)
    if fmt in ("csv", "jsonl"):
        filled = [i for i, ln in enumerate(lines) if ln.rstrip("\r").strip(WHITESPACE)]
        return len(filled) - (1 if fmt == "csv" and filled else 0)
    s = pl.Series(lines, dtype=pl.String)
    if fmt == "megatron":
        from napkin.ledger.readers.megatron import CUT_SHORT, EVAL, STEP_WORD

        s = s.str.strip_chars_end("\r")
        step = (s.str.contains(STEP_WORD) & s.str.contains("|", literal=True)) | s.str.contains(CUT_SHORT)
        return int((step & ~s.str.contains(EVAL)).sum())
    from napkin.ledger.readers.torchtitan import ANSI, STEP_LOOKING, VALIDATION

    s = s.str.replace_all(ANSI, "")
    return int((s.str.contains(STEP_LOOKING) & ~s.str.contains(VALIDATION, literal=True)).sum())


# ------------------------------------------------------------------------------------------- the run
def _numbers(value: object) -> list[float]:
    """Every number in a JSON document."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [float(value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _run(args: list[str]) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from napkin.cli import cli

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy overflow warning fails the case (as an internal error)
        result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout, result.stderr


def _check_error(tally: Tally, code: int, out: str, err: str) -> None:
    tally.check("internal error" not in err, "internal error", err)
    tally.check(code == 1 and out == "", "exit status", (code, out, err))
    tally.check(err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, "multi-line error", err)
    tally.check(quote(err[:-1]) == err[:-1], "unescaped control character", err)  # every control character escaped


def _check_report(tally: Tally, fmt: str, data: bytes, path: Path, extra: list[str]) -> None:
    code, out, err = _run(["ledger", "report", str(path), "--price", "2.5/h", "--no-store", "--format", fmt,
                           "--json", *extra, *OPTIONS[fmt]])
    tally.case(code)
    if code:
        return _check_error(tally, code, out, err)
    if not tally.check(err == "", "leaked output", err):
        return
    r = json.loads(out)
    tally.check(all(math.isfinite(x) for x in _numbers(r)), "non-finite figure", out)  # JSON's NaN, Infinity
    for key in FIGURES:
        tally.check(isinstance(r[key], (int, float)) and math.isfinite(r[key]), "non-finite figure", (key, r[key]))
    tally.check(all(math.isfinite(v) for v in r["goodput"].values()), "non-finite figure", r["goodput"])
    if fmt in COUNTED:
        seen = r["records"] + r["skipped_lines"]["count"] + r["duplicates"]
        tally.check(seen == step_lines(fmt, data), "silent drop",
                    (seen, step_lines(fmt, data), r["records"], r["skipped_lines"], r["duplicates"]))
    code, text, err = _run(["ledger", "report", str(path), "--price", "2.5/h", "--no-store", "--format", fmt,
                            *extra, *OPTIONS[fmt]])
    tally.check(code == 0 and err == "", "exit status", (code, err))
    figures = "\n".join(ln for ln in text.split("\n") if ln.startswith("  "))  # the rows and the day table
    tally.check(not NONFINITE.search(figures), "non-finite figure", figures)
    tally.check(all(quote(ln) == ln for ln in text.split("\n")), "unescaped control character", text)  # nothing from
    # the log moves the terminal


@pytest.mark.parametrize("fmt", FORMATS)
def test_damaged_logs(fmt, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"fuzz-{fmt}")

    tally = Tally("ledger", fmt)

    @settings(max_examples=CASES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=damaged(fmt), skip_bad_clock=st.booleans())
    def case(data: bytes, skip_bad_clock: bool) -> None:
        path = folder / NAMES[fmt]
        path.write_bytes(data)
        _check_report(tally, fmt, data, path, ["--skip-bad-clock"] if skip_bad_clock else [])

    case()
    tally.close()


def test_the_samples_are_read_whole():
    """Undamaged, every sample reads with nothing skipped (so a count that fails in a case is the damage's)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for fmt in FORMATS:
            path = Path(tmp) / NAMES[fmt]
            path.write_bytes(SAMPLES[fmt])
            code, out, err = _run(["ledger", "report", str(path), "--price", "2.5/h", "--no-store", "--format", fmt,
                                   "--json", *OPTIONS[fmt]])
            assert code == 0, err
            r = json.loads(out)
            assert r["skipped_lines"]["count"] == 0, (fmt, r["skipped_lines"])
            if fmt in COUNTED:
                assert r["records"] + r["duplicates"] == step_lines(fmt, SAMPLES[fmt]), fmt
