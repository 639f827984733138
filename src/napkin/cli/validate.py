"""`napkin validate`: the per-point table, the error summary and the chart of the validation run."""

from __future__ import annotations

from typing import Any

import click

from napkin.cli.common import calculator_command
from napkin.cli.serve import Column, chart_option, print_with_tables, write_chart

SUMMARY_COLUMNS: list[Column] = [
    ("group", "figure", None), ("subset", "points", None), ("n", "n", "count"),
    ("median_error", "median |error|", "fraction"), ("max_error", "max |error|", "fraction")]
POINT_COLUMNS: list[Column] = [
    ("group", "figure", None), ("id", "point", None), ("measured", "measured", None),
    ("predicted", "predicted", None), ("error", "error", "fraction"), ("explanation", "why, when over 20%", None)]
SKIPPED_COLUMNS: list[Column] = [("id", "point", None), ("reason", "not modelled because", None)]
REPLICATE_COLUMNS: list[Column] = [
    ("group", "figure", None), ("configuration", "configuration", None), ("measured", "measured by", None),
    ("unexplained_spread", "spread", "number"), ("max_error_floor", "least max |error|", "fraction")]


def _after(report: Any, req: Any, params: dict) -> bool:
    from napkin import calculators

    if params.get("chart"):
        write_chart(report, calculators.get("validate").charts, params["chart"], params.get("chart_name"),
                    "validate")
    fitted = report.results.pop("fitted_toml", None) if not params["as_json"] else None
    print_with_tables(report, as_json=params["as_json"], explain=params["explain"], cite=params.get("cite", False),
                      tables=[("serving_summary", "serving: median and max |predicted / measured − 1|, out of sample:",
                               SUMMARY_COLUMNS),
                              ("serving_replicates", "serving configurations measured by several sources, "
                               "widest first (spread: the measurements' ratio over napkin's for their engines' "
                               "settings):", REPLICATE_COLUMNS),
                              ("serving", "serving, point by point:", POINT_COLUMNS),
                              ("serving_skipped", "serving points not modelled:", SKIPPED_COLUMNS),
                              ("training_summary", "training: median and max |error|, out of sample:",
                               SUMMARY_COLUMNS),
                              ("training", "training, point by point:", POINT_COLUMNS),
                              ("training_skipped", "training points not modelled:", SKIPPED_COLUMNS)])
    if fitted:
        click.echo("")
        click.echo(fitted)
    return False


def _build() -> click.Command:
    return calculator_command("validate", extra=chart_option("write the chart of predicted against measured"),
                              after=_after, progress="validate: predicting every published measurement")


validate = _build()
