"""`napkin check`, `amortise`, `gpu-hour`, `goodput` and `optimal`: money beyond the final run.

No formulas here: options become the calculators' requests; this module adds only
``--chart out.svg|out.png`` for the two commands that draw.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from napkin.cli.common import calculator_command
from napkin.errors import InputError

_chart = click.Option(["--chart"], metavar="OUT.svg|OUT.png", help="Draw the chart to an SVG or PNG file.")


def _chart_writer(calc_name: str, chart_name: str) -> Callable[[Any, Any, dict], None]:
    def after(report: Any, req: Any, params: dict) -> None:
        path = params.get("chart")
        if not path:
            return None
        from napkin import calculators
        from napkin.charts.economics import write_chart

        specs = calculators.get(calc_name).charts(report)
        if chart_name not in specs:
            raise InputError("chart", path, "has nothing to draw", "give --tokens (or --model) to draw the crossover")
        write_chart(specs[chart_name], path)
        report.note(f"chart {chart_name!r} written to {path}")
        return None

    return after


check = calculator_command(
    "check",
    help="Check a published training cost or GPU-hour figure against 6·N·D: the compute of one run, the MFU or "
         "price the claim implies, a verdict, and what a production cost adds.\n\n"
         "e.g. napkin check --params 70B --tokens 2T --claimed-usd 500k\n\n"
         "napkin check --gpus 16384 --days 54 --claimed-gpu-hours 30.84M")
amortise = calculator_command(
    "amortise", extra=[_chart], after=_chart_writer("amortise", "serving-vs-training"),
    help="Spread the loaded training cost over the tokens the model will serve, and find when serving compute "
         "equals training compute (3·D served tokens).\n\n"
         "e.g. napkin amortise --training-usd 387679 --served 500B,50T\n\n"
         "napkin amortise --params 8B --tokens 15T --per-day 10B,120B --chart crossover.svg")
gpu_hour = calculator_command(
    "gpu-hour",
    help="The loaded price of one GPU-hour from capital, power, yearly costs and utilisation; spot priced per "
         "useful hour.\n\n"
         "e.g. napkin gpu-hour --capex 30000 --years 4 --residual 10% --gpu h100 --per-gpu-year network=1500 "
         "--utilization 0.8 --vs 2.50/h")
goodput = calculator_command(
    "goodput", extra=[_chart], after=_chart_writer("goodput", "goodput-vs-cluster"),
    help="Goodput and the best checkpoint interval (Daly 2006) from failure rates, checkpoint and restart "
         "times; how goodput falls as the cluster grows.\n\n"
         "e.g. napkin goodput --gpus 16384 --interruptions 419 --period 54d --checkpoint-time 60s --restart-time 10min")
optimal = calculator_command(
    "optimal",
    help="Compute-optimal parameters and tokens for a budget (N = sqrt(C / 6r), D = r·N); a planned run's "
         "over-training and the lifetime serving compute of both choices.\n\n"
         "e.g. napkin optimal --flops 3.8e25\n\n"
         "napkin optimal --params 8B --tokens 15T --per-day 10B --years 2")
