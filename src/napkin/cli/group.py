"""The click group behind ``napkin``: commands load only when called; usage errors as one line.

:func:`napkin.cli.main` answers a plain calculator command without click when it can
(:mod:`napkin.cli.quick`); everything else comes here.
"""

from __future__ import annotations

import importlib
import sys

import click

from napkin.cli import COMMANDS
from napkin.version import __version__


class LazyGroup(click.Group):
    def main(self, args: list[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: object) -> object:
        """click's main, with a usage error as one line and exit 1 like every other bad input."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        argv = sys.argv[1:] if args is None else list(args)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `napkin` (or `napkin plan`): the help itself
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        except click.UsageError as exc:
            click.echo(f"error: {usage_line(exc, argv)}", err=True)
            sys.exit(1)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name][0].split(":")
        # a command whose module fails to import raises: a broken build, never a command left out
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def usage_line(exc: click.UsageError, argv: list[str] | None = None) -> str:
    """One line: click's message, the closest command for a mistyped one, and where the help is.

    What the user typed is quoted (control characters escaped), so an option's name cannot forge a
    second line. click leaves the context out of an option's own errors (``napkin train --params``
    with no value), so the command's words are then read from ``argv``.
    """
    from napkin.errors import closest, quote

    msg = quote(" ".join(exc.format_message().split()))
    words = exc.ctx.command_path.split()[1:] if exc.ctx is not None else command_words(argv or [])
    path = " ".join(["napkin", *words])
    if (msg.startswith("No such command") and "Did you mean" not in msg and exc.ctx is not None
            and isinstance(exc.ctx.command, click.Group)):
        typed = msg.split("'")[1] if msg.count("'") >= 2 else ""
        near = closest(typed, exc.ctx.command.list_commands(exc.ctx))
        if near:
            msg += f" Did you mean {' or '.join(near)}?"
    return f"{msg} (see `{path} --help`)"


def command_words(argv: list[str]) -> list[str]:
    """The (sub)command words at the head of a command line: ``["plan", "serve"]`` of ``plan serve --rate``."""
    words: list[str] = []
    group: click.Command = cli
    for arg in argv:
        if arg.startswith("-") or not isinstance(group, click.Group):
            break
        try:
            sub = group.get_command(None, arg)  # type: ignore[arg-type]  # neither group reads the context
        except Exception:  # a command module that fails to import: the words so far
            break
        if sub is None:
            break
        words.append(arg)
        group = sub
    return words


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", "-V", prog_name="napkin")
def cli() -> None:
    """napkin: the cost and capacity of training and serving LLMs, with the working.

    Options take units: --tokens 15T --memory 80GiB --price 2.50/h --deadline 3w.
    Every command prints a table; --json for machines; --explain for the derivation.
    """
