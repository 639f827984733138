"""`napkin train` and `napkin compare`: training economics from the shell.

Options become a TrainRequest / CompareRequest and the calculators build the Reports; the
sweep (``--vary``, train/vary.py) and plan files (``--save``, train/plans.py) are the
library's. This module adds what only a command line needs: the ``--vary`` and ``--chart
out.svg|out.png`` options, and printing.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from napkin.cli.common import calculator_command, emit
from napkin.errors import InputError

_vary = click.Option(["--vary"], multiple=True, metavar="NAME=V1,V2,...",
                     help="Print the answer for each value of an input (any field; overhead.NAME for one "
                          "overhead); repeat for a grid.")
_chart = click.Option(["--chart"], metavar="OUT.svg|OUT.png",
                      help="Draw the cost bars (the tornado with --sensitivity) to an SVG or PNG file.")


def _write_chart(report: Any, which: tuple[str, ...], path: str, charts: Any) -> None:
    from napkin.charts.train import write_chart

    specs = charts(report)
    for name in which:
        if name in specs:
            write_chart(specs[name], path)
            report.note(f"chart {name!r} written to {path}")
            return
    raise InputError("chart", path, "has nothing to draw", "give the inputs a cost needs")


def _after_train(report: Any, req: Any, params: dict) -> Any:
    from napkin.calculators.train import TRAIN, save_plan, sensitivity_text

    save = click.get_current_context().params.get("save")
    if save:
        save_plan(save, req, report)
    as_json, explain, cite = params.get("as_json"), params.get("explain"), params.get("cite", False)
    from napkin.cli.export import export

    export(params, (report.results.get("vary") or {}).get("rows"),
           what="--csv writes the table of --vary (give --vary NAME=V1,V2,...)")
    if params.get("chart"):
        _write_chart(report, ("sensitivity", "cost"), params["chart"], TRAIN.charts)
    if report.results.get("vary") and not as_json:
        click.echo(report.text())  # the sweep's table
        return False
    emit(report, as_json=as_json, explain=explain, cite=cite)
    if not as_json and not explain and not cite and sys.stdout.isatty() and report.results.get("sensitivity"):
        click.echo(sensitivity_text(report.results["sensitivity"]))
    return False


def _after_compare(report: Any, req: Any, params: dict) -> Any:
    from napkin.calculators.compare import COMPARE

    if params.get("chart"):
        _write_chart(report, ("cost-per-million",), params["chart"], COMPARE.charts)
    if params.get("as_json") or params.get("explain") or params.get("cite"):
        emit(report, as_json=params.get("as_json"), explain=params.get("explain"), cite=params.get("cite", False))
    else:
        click.echo(report.text())  # the ranking table, on a terminal too
    return False


def _csv() -> click.Option:
    from napkin.cli.export import csv_option

    return csv_option


train = calculator_command(
    "train", extra=[_vary, _chart, _csv()], after=_after_train,
    help="Cost, time and cluster size of a planned training run: marginal and loaded $ per million tokens.\n\n"
         "e.g. napkin train --params 7B --tokens 2T --gpu h100 --mfu 0.4 --goodput 0.9 --price 2.50/h "
         "--overhead experiments=0.6,lost=0.15,eval=0.05,idle=0.2 --fixed-usd 60k")
compare = calculator_command(
    "compare", extra=[_chart], after=_after_compare,
    help="Rank accelerators for one training job by cost per million tokens and delivered FLOP per dollar.\n\n"
         "e.g. napkin compare --gpu h100-sxm,h200,b200,mi300x --mfu h100-sxm=0.40,b200=0.35 "
         "--price h100-sxm=2.50,b200=4.50 --params 7B --tokens 2T")
