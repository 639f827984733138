"""The quick path: a plain calculator command answered without click.

``napkin memory --params 70B --json`` needs the calculator, not the command-line library:
importing click and building a command's options costs more than the answer. For the
commands in :data:`QUICK` (a calculator's own options and nothing else), :func:`answer`
reads ``--field value`` / ``--field=value``, the boolean ``--field`` / ``--no-field`` and
``--json``, ``--explain``, ``--cite`` exactly as the click command would, runs the same
code (:func:`napkin.cli.collect.collect`, :func:`napkin.request.parse_request`, the
calculator) and prints the same text.

It answers only when nothing is unusual: a positional argument, ``--help``, ``--config``,
``--save``, an option it does not know, a value that starts with ``-``, a rich table for a
terminal, or any error at all, and it returns False having printed nothing, so the click
command runs from the start and says what it always says. The output of both is the same
byte for byte (tests/cli/test_quick.py).
"""

from __future__ import annotations

import sys
from typing import Any

# command -> calculator: commands built by a bare ``calculator_command(name)`` (no extra options,
# no ``after``): their options are the request's fields and the common flags, nothing more
QUICK: dict[str, str] = {"model": "model", "memory": "memory", "roofline": "roofline", "mfu": "mfu",
                         "allreduce": "allreduce", "check": "check", "gpu-hour": "gpu-hour", "optimal": "optimal"}
FLAGS = {"--json": "as_json", "--explain": "explain", "--cite": "cite"}


def options(request_cls: type) -> dict[str, tuple[str, bool, Any]]:
    """``--flag`` -> (click's parameter name, whether it repeats, the value of a bare boolean flag or None).

    The same options :func:`napkin.cli.common.options_for` gives click, minus positional arguments.
    """
    from napkin.cli.collect import OPTION_TWIN
    from napkin.request import fields

    out: dict[str, tuple[str, bool, Any]] = {}
    for info in fields(request_cls):
        if info.meta.get("hidden"):
            continue
        if info.meta.get("positional"):
            out[info.option] = (info.name + OPTION_TWIN, bool(info.container), None)
        elif info.kind == "bool":
            out[info.option] = (info.name, False, True)
            out["--no-" + info.option[2:]] = (info.name, False, False)
        else:
            for flag in (info.option, *info.alias_options):
                out[flag] = (info.name, bool(info.container), None)
    return out


def parse_args(args: list[str], request_cls: type) -> tuple[dict[str, Any], dict[str, bool]] | None:
    """(the click parameters of the request's fields, the output flags), or None where click must read it."""
    known = options(request_cls)
    params: dict[str, Any] = {}
    flags = dict.fromkeys(FLAGS.values(), False)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in FLAGS:
            flags[FLAGS[arg]] = True
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if not name.startswith("--") or name not in known:
            return None  # a positional argument, -h, --help, --config, --save, `--`, a typo: click's to read
        field, repeats, flag_value = known[name]
        if flag_value is not None:
            if eq:
                return None  # click refuses a value on a flag
            params[field] = flag_value
            i += 1
            continue
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None  # a missing value, or one click might read as an option
            value = args[i + 1]
            i += 1
        i += 1
        params[field] = (*params.get(field, ()), value) if repeats else value
    return params, flags


def answer(args: list[str]) -> bool:
    """Print the answer to a plain calculator command and return True; False (nothing printed) otherwise."""
    if not args or args[0] not in QUICK or not _utf8(sys.stdout):
        return False
    try:
        from napkin import calculators
        from napkin.cli.collect import collect
        from napkin.request import parse_request

        calc = calculators.get(QUICK[args[0]])
        read = parse_args(args[1:], calc.request)
        if read is None:
            return False
        params, flags = read
        if not (flags["as_json"] or flags["explain"] or flags["cite"]) and sys.stdout.isatty():
            return False  # a rich table: the click command's
        report = calc.run(parse_request(calc.request, collect(calc.request, params, None)))
        text = _text(report, **flags)
    except Exception:  # an error, said by the click command exactly as always
        return False
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `napkin ... | head`, as the click command takes it
        sys.exit(0)
    return True


def _text(report: Any, *, as_json: bool, explain: bool, cite: bool) -> str:
    """What :func:`napkin.cli.common.emit` prints when the output is not a rich table."""
    from napkin.errors import quote_lines as plain  # as emit: each line quoted, so no input forges a line

    if as_json:
        return report.to_json(cite=cite) if cite else report.to_json()
    if explain or cite:
        return plain(report.text()) + "\n\n" + plain(report.explain(cite=cite) if cite else report.explain())
    return plain(report.text())


def _utf8(stream: Any) -> bool:
    """Whether ``stream`` writes UTF-8 (click's echo would handle another encoding its own way)."""
    encoding = getattr(stream, "encoding", None) or ""
    return encoding.lower().replace("-", "").replace("_", "") == "utf8"
