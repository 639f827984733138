"""Shared CLI machinery: options generated from a request Struct, output, errors.

``calculator_command("memory")`` builds a click command whose options are the
calculator's request fields (``--tokens-per-step`` for ``tokens_per_step``), plus
``--json``, ``--explain``, ``--config FILE.toml`` and ``--save FILE.toml``.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

import click

from napkin.cli.collect import OPTION_TWIN, collect  # noqa: F401  (shared with napkin.cli.quick)
from napkin.errors import NapkinError, quote
from napkin.errors import quote_lines as plain
from napkin.request import read_config, write_config  # noqa: F401  (the CLI's plan files)


def fail(message: str) -> None:
    """Print one line to stderr and exit 1: bad input, never a traceback.

    The line is quoted (control characters escaped) whatever it holds: a value the user typed or a
    log held cannot forge a second line or move the terminal's cursor.
    """
    click.echo(f"error: {quote(message)}", err=True)
    sys.exit(1)


def guarded(fn: Callable) -> Callable:
    """Turn NapkinError (and the OS errors of reading a file) into one line and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NapkinError as exc:
            fail(str(exc))
        except BrokenPipeError:  # `napkin ... | head`
            sys.exit(0)
        except (SystemExit, KeyboardInterrupt, click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            if isinstance(exc, OSError) and exc.filename is not None:  # a file napkin could not read or write
                fail(f"{exc.filename}: {exc.strerror or exc}")
            if os.environ.get("NAPKIN_DEBUG"):  # a bug in napkin: still one line, never a traceback
                raise
            fail(f"internal error ({type(exc).__name__}: {exc}); please report the command that caused it "
                 f"(NAPKIN_DEBUG=1 shows the traceback)")

    return wrapper


def end_process() -> None:
    """End the process now, its answer printed, without freeing its heap object by object.

    For a command that holds a big heap to the end (`ledger report` on a 3M-row log: its records, their
    analysis, polars' and numpy's state), interpreter shutdown frees every object and module in turn,
    about 0.1 CPU-second that no one waits for; the operating system takes the memory back at once (a
    compiler does the same: clang's -disable-free). Only when napkin is the process's own command
    (:data:`napkin.cli.WHOLE_PROCESS`), after output is flushed, and with nothing left open: files are
    closed and a spilled temporary file is anonymous. Inside a caller (a test runner, ``main([...])``) it
    returns and the caller goes on."""
    import napkin.cli

    if not napkin.cli.WHOLE_PROCESS:
        return
    sys.stdout.flush()  # a closed pipe raises here, as it would at exit (`guarded` ends it quietly)
    sys.stderr.flush()
    os._exit(0)


def emit(report: Any, *, as_json: bool, explain: bool, cite: bool = False) -> None:
    """Print a Report: JSON, the explained working, or a table (``cite``: with each formula's trap and source)."""
    if as_json:
        click.echo(report.to_json(cite=cite) if cite else report.to_json())
    elif explain or cite:
        click.echo(plain(report.text()))
        click.echo("")
        click.echo(plain(report.explain(cite=cite) if cite else report.explain()))
    elif sys.stdout.isatty():
        from napkin.cli.render import print_rich

        print_rich(report)
    else:
        click.echo(plain(report.text()))


def options_for(request_cls: type, *, skip: tuple[str, ...] = ()) -> list[click.Parameter]:
    """click parameters for each field of a request Struct (all raw strings)."""
    from napkin import units
    from napkin.request import fields

    params: list[click.Parameter] = []
    for info in fields(request_cls):
        if info.name in skip or info.meta.get("hidden"):
            continue
        unit_hint = ""
        if info.kind == "number" and info.meta.get("unit") == "d":  # a days field takes a duration too
            unit_hint = " [days such as 54, or a duration such as 54d or 3w]"
        elif info.kind in units.EXPECTED:
            unit_hint = f" [{units.EXPECTED[info.kind]}]"
        elif info.kind == "choice":
            unit_hint = f" [{' | '.join(info.meta.get('choices', []))}]"
        default = "" if info.default in (None, msgspec_nodefault(), [], {}) else f" (default {shown_default(info)})"
        help_ = (info.doc + unit_hint + default).strip()
        if info.meta.get("positional"):
            params.append(click.Argument([info.name], required=False,
                                         nargs=-1 if info.container == "list" else 1))
            # the same field as an option too: `napkin bill claude-sonnet-4` or `--model claude-sonnet-4`
            params.append(click.Option([info.option, info.name + OPTION_TWIN], default=None, help=help_,
                                       multiple=bool(info.container), metavar=_metavar(info)))
        elif info.kind == "bool":
            params.append(click.Option([info.option + "/--no-" + info.option[2:], info.name],
                                       default=None, help=help_))
        else:
            params.append(click.Option([info.option, *info.alias_options, info.name], default=None, help=help_,
                                       multiple=bool(info.container), metavar=_metavar(info)))
    return params


def shown_default(info: Any) -> str:
    """A field's default as a reader types it: in its unit (``10 GB/s``, ``80%``, ``1,000``), never a raw
    float (``10000000000.0``)."""
    from napkin import units

    v = info.default
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)) and info.kind in units.KINDS:
        return units.format(v, info.kind)
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    return str(v)


def msgspec_nodefault() -> Any:
    import msgspec

    return msgspec.NODEFAULT


def _metavar(info: Any) -> str:
    return {"count": "N", "bytes": "SIZE", "seconds": "TIME", "fraction": "F", "usd": "USD",
            "usd_per_hour": "$/H", "flops": "FLOP", "flops_per_s": "FLOP/S", "bytes_per_s": "B/S",
            "name": "NAME", "path": "PATH", "precision": "P", "int": "N", "text": "TEXT",
            "choice": "CHOICE"}.get(info.kind, "X") + ("=X" if info.container == "dict" else "")


def calculator_command(calc_name: str, *, name: str | None = None, help: str | None = None,
                       extra: list[click.Parameter] | None = None,
                       after: Callable[[Any, Any, dict], Any] | None = None,
                       prepare: Callable[[dict, dict], dict] | None = None,
                       skip: tuple[str, ...] = (), progress: str | None = None) -> click.Command:
    """A click command for a registered calculator.

    ``prepare(raw, params)`` may complete the raw inputs before they are parsed.
    ``after(report, request, params)``
    may print extra output (a chart, a sweep) and return a replacement report, or None to
    keep the original. ``progress`` says what a long calculation is doing, on a spinner on a
    terminal (cli/spinner.py).
    """
    from napkin import calculators

    calc = calculators.get(calc_name)

    @guarded
    def callback(**params: Any) -> None:
        from napkin.request import parse_request, to_raw

        as_json = params.pop("as_json", False)
        explain = params.pop("explain", False)
        cite = params.pop("cite", False)
        config = params.pop("config", None)
        save = params.pop("save", None)
        raw = collect(calc.request, params, config)
        if prepare is not None:
            raw = prepare(raw, params)
        req = parse_request(calc.request, raw)
        if save:
            write_config(save, to_raw(req), command=name or calc_name)
        if progress is None:
            report = calc.run(req)
        else:
            from napkin.cli.spinner import spinning

            with spinning(progress, as_json=as_json):
                report = calc.run(req)
        if after is not None:
            replaced = after(report, req, dict(params, as_json=as_json, explain=explain, cite=cite))
            if replaced is False:
                return
            if replaced is not None:
                report = replaced
        emit(report, as_json=as_json, explain=explain, cite=cite)

    common = [
        click.Option(["--json", "as_json"], is_flag=True, help="Print JSON: base units, derivation, warnings."),
        click.Option(["--explain"], is_flag=True, help="Print the derivation behind every figure."),
        click.Option(["--cite"], is_flag=True, help="With the derivation (or --json): each step's formula, its trap "
                                                    "and its source, and each default's source."),
        click.Option(["--config"], metavar="FILE.toml", help="Read inputs from a plan file; options override it."),
        click.Option(["--save"], metavar="FILE.toml", help="Write every input to a plan file."),
    ]
    return click.Command(
        name or calc_name,
        callback=callback,
        params=options_for(calc.request, skip=skip) + (extra or []) + common,
        help=help or calc.help,
        context_settings={"max_content_width": 100},
    )
