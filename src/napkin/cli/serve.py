"""Commands for serving: `napkin serve`, `napkin bill` and `napkin plan serve`.

The figures come from the calculators; this module only adds the tables a list result
needs in plain text (the waterfall, the price comparison, an agent's calls, the planner's
ranking and Pareto front) and writes charts with ``--chart``.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from napkin import units
from napkin.cli.common import calculator_command, emit

Column = tuple[str, str, str | None]  # (key, header, unit kind)

WATERFALL_COLUMNS: list[Column] = [
    ("step", "step", None), ("tokens_per_s", "tokens/s", "per_s"), ("speedup", "x", "number"),
    ("tpot_s", "TPOT", "seconds"), ("ttft_s", "TTFT", "seconds"),
    ("usd_per_million_output_tokens", "$/M out", "usd_per_million"), ("binds", "binds", None),
    ("max_batch", "max batch", "count")]
COMPARE_COLUMNS: list[Column] = [
    ("model", "model", None), ("provider", "provider", None), ("usd", "usd", "usd"), ("tier", "tier", None),
    ("date", "price date", None), ("age_days", "age (days)", "count")]
CALLS_COLUMNS: list[Column] = [
    ("call", "call", "count"), ("input_tokens", "input", "count"), ("cache_read_tokens", "cache read", "count"),
    ("cache_write_tokens", "cache write", "count"), ("usd", "usd (cached)", "usd")]
PLAN_COLUMNS: list[Column] = [
    ("gpu", "gpu", None), ("precision", "prec", None), ("gpus", "gpus", "count"), ("tp", "tp", "count"),
    ("pp", "pp", "count"), ("batch", "batch", "count"), ("replicas", "replicas", "count"),
    ("total_gpus", "total", "count"), ("ttft_s", "TTFT", "seconds"), ("tpot_s", "TPOT@load", "seconds"),
    ("tokens_per_s_per_gpu", "tok/s/GPU@load", "per_s"), ("fleet_usd_per_hour", "fleet $/h", "usd_per_hour"),
    ("usd_per_million_tokens_all_in", "$/M all-in", "usd_per_million"), ("bound", "bound", None)]
# plan serve with no --rate: one replica at its highest rate within the objectives
PLAN_MAX_RATE_COLUMNS: list[Column] = [
    ("gpu", "gpu", None), ("precision", "prec", None), ("gpus", "gpus", "count"), ("tp", "tp", "count"),
    ("pp", "pp", "count"), ("batch", "batch", "count"), ("requests_per_s_per_replica", "req/s", "per_s"),
    ("ttft_s", "TTFT", "seconds"), ("tpot_s", "TPOT", "seconds"), ("tokens_per_s_per_gpu", "tok/s/GPU", "per_s"),
    ("fleet_usd_per_hour", "$/h", "usd_per_hour"), ("usd_per_million_tokens_all_in", "$/M all-in", "usd_per_million"),
    ("bound", "bound", None)]
# plan serve with p99 objectives: the screen's p99s and the simulation's (sim)
PLAN_P99_COLUMNS: list[Column] = [
    ("gpu", "gpu", None), ("precision", "prec", None), ("gpus", "gpus", "count"), ("tp", "tp", "count"),
    ("pp", "pp", "count"), ("batch", "batch", "count"), ("replicas", "replicas", "count"),
    ("requests_per_s_per_replica", "req/s/replica", "per_s"), ("ttft_p99_s", "TTFT p99", "seconds"),
    ("tpot_p99_s", "TPOT p99", "seconds"), ("simulated_ttft_p99_s", "sim TTFT p99", "seconds"),
    ("simulated_tpot_p99_s", "sim TPOT p99", "seconds"), ("fleet_usd_per_hour", "fleet $/h", "usd_per_hour"),
    ("usd_per_million_tokens_all_in", "$/M all-in", "usd_per_million")]
WORKLOAD_COLUMNS: list[Column] = [("prompt", "prompt", "count"), ("output", "output", "count")]
OPERATOR_COLUMNS: list[Column] = [
    ("step", "step", None), ("operator", "operator", None), ("bytes", "bytes", "bytes"), ("flops", "FLOPs", "flops"),
    ("memory_s", "memory", "seconds"), ("compute_s", "compute", "seconds"), ("seconds", "time", "seconds"),
    ("share", "share", "fraction"), ("bound", "bound", None)]
PARETO_COLUMNS: list[Column] = [
    ("gpu", "gpu", None), ("precision", "prec", None), ("gpus", "gpus", "count"), ("tp", "tp", "count"),
    ("batch", "batch", "count"), ("tokens_per_s_per_user", "tok/s/user", "per_s"),
    ("tokens_per_s_per_gpu", "tok/s/GPU@capacity", "per_s"), ("tpot_s", "TPOT", "seconds"), ("bound", "bound", None)]


MAX_TABLE_ROWS = 40  # a longer list prints its first and last rows


def table(rows: list[dict], columns: list[Column]) -> str:
    """A plain aligned table: numbers right-aligned, formatted by unit kind; missing values as '-'."""
    def cell(row: dict, key: str, kind: str | None) -> str:
        v = row.get(key)
        if v is None:
            return "-"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if kind == "number" and isinstance(v, (int, float)):
            return f"{v:.2f}"
        return units.fmt_auto(v, kind)

    body = [[cell(r, k, kind) for k, _, kind in columns] for r in rows]
    heads = [h for _, h, _ in columns]
    widths = [max([len(heads[i])] + [len(b[i]) for b in body]) for i in range(len(columns))]
    numeric = [kind is not None for _, _, kind in columns]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()

    return "\n".join(["  " + line(heads)] + ["  " + line(b) for b in body])


def print_with_tables(report: Any, *, as_json: bool, explain: bool,
                      tables: list[tuple[str, str, list[Column]]], cite: bool = False) -> None:
    """Print a report whose list results read better as tables; JSON keeps them as lists.

    ``cite`` (--cite) adds each step's formula with its trap and source to the working (or the JSON).
    """
    if as_json:
        emit(report, as_json=True, explain=False, cite=cite)
        return
    present = [(key, title, cols) for key, title, cols in tables if report.get(key)]
    lists = {key: report.results.pop(key) for key, _, _ in present}
    for key in ("pareto_points",):
        report.results.pop(key, None)
    click.echo(report.text())
    for key, title, cols in present:
        rows = lists[key]
        click.echo("")
        click.echo(title)
        if len(rows) > MAX_TABLE_ROWS:  # the first and last rows; --json has every one
            head, tail = rows[:MAX_TABLE_ROWS - 5], rows[-5:]
            lines = table(head + tail, cols).split("\n")
            skipped = len(rows) - len(head) - len(tail)
            lines.insert(1 + len(head), f"  ... {skipped:,} rows more (--json lists all {len(rows):,})")
            click.echo("\n".join(lines))
        else:
            click.echo(table(rows, cols))
    if explain or cite:
        click.echo("")
        click.echo(report.explain(cite=cite) if cite else report.explain())


def chart_option(help_: str) -> list[click.Parameter]:
    return [click.Option(["--chart"], metavar="FILE.svg|png", help=help_),
            click.Option(["--chart-name"], metavar="NAME", help="which chart to write (default: the main one)")]


def write_chart(report: Any, calc_charts: Callable[[Any], dict], path: str, name: str | None,
                default: str) -> None:
    from napkin.charts.serve import write_chart as render
    from napkin.errors import InputError, quote

    charts = calc_charts(report)
    key = name or default
    if key not in charts:
        raise InputError("chart_name", key, "is not a chart of this result", "use one of " + ", ".join(charts))
    render(charts[key], path)
    click.echo(f"wrote {key} chart to {quote(path)}", err=True)


# ------------------------------------------------------------------------------- serve
def _serve_after(report: Any, req: Any, params: dict) -> bool:
    from napkin import calculators

    if params.get("chart"):
        default = "waterfall" if report.get("waterfall") else "roofline"
        write_chart(report, calculators.get("serve").charts, params["chart"], params.get("chart_name"), default)
    explain = params["explain"] or params.get("cite", False)
    if not explain and not params["as_json"]:
        report.results.pop("operators", None)  # the per-operator table is part of the working (--explain)
    print_with_tables(report, as_json=params["as_json"], explain=params["explain"], cite=params.get("cite", False),
                      tables=[("waterfall", "waterfall (each change on top of the ones before):", WATERFALL_COLUMNS),
                              ("operators", "operators of one step (each at the larger of its memory and compute "
                                            "time; the step is their sum):", OPERATOR_COLUMNS)])
    return False


def _build_serve() -> click.Command:
    return calculator_command(
        "serve", extra=chart_option("write a chart: the decode roofline, or the waterfall with --waterfall"),
        after=_serve_after)


# -------------------------------------------------------------------------------- bill
def _bill_after(report: Any, req: Any, params: dict) -> bool:
    print_with_tables(report, as_json=params["as_json"], explain=params["explain"], cite=params.get("cite", False),
                      tables=[("compare", "every catalog model, same request:", COMPARE_COLUMNS),
                              ("task_calls", "the agent's calls, with prompt caching:", CALLS_COLUMNS)])
    return False


def _build_bill() -> click.Command:
    return calculator_command("bill", after=_bill_after)


# -------------------------------------------------------------------------------- plan
class _PlanGroup(click.Group):
    """`napkin plan`: its subcommands are built (and their calculators imported) only when called."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["serve", "train"]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from napkin.cli.export import csv_option

        if name == "train":
            return calculator_command("plan-train", name="train", after=_plan_train_after, extra=[csv_option],
                                      progress="plan train: searching parallel layouts")
        if name != "serve":
            return None
        return calculator_command(
            "plan-serve", name="serve", after=_plan_after, progress="plan serve: searching configurations",
            extra=chart_option("write the Pareto front chart (tokens/s per GPU against tokens/s per user)")
            + [csv_option])


def _plan_after(report: Any, req: Any, params: dict) -> bool:
    from napkin import calculators

    if params.get("chart"):
        write_chart(report, calculators.get("plan-serve").charts, params["chart"], params.get("chart_name"), "pareto")
    from napkin.cli.export import export

    rows = report.get("ranking") or []
    export(params, rows, what="")
    first = rows[0] if rows else {}
    if "simulated_ttft_p99_s" in first:
        title, cols = ("cheapest configurations that meet the p99 objectives (the screen's p99s; sim: `napkin serve "
                       "--rate` on each):", PLAN_P99_COLUMNS)
    elif "requests_per_s_per_replica" in first:
        title, cols = ("cheapest per million output tokens (all-in), each replica at its highest rate within the "
                       "objectives:", PLAN_MAX_RATE_COLUMNS)
    else:
        title, cols = "cheapest configurations that meet both objectives:", PLAN_COLUMNS
    if "prompt" in first:  # prompt and output lengths are axes of the grid: the rows say which
        cols = cols[:6] + WORKLOAD_COLUMNS + cols[6:]
    print_with_tables(report, as_json=params["as_json"], explain=params["explain"], cite=params.get("cite", False),
                      tables=[("ranking", title, cols),
                              ("best_per_workload", "cheapest for each prompt and output length:",
                               cols[:6] + WORKLOAD_COLUMNS + cols[6:] if "prompt" not in first else cols),
                              ("pareto_front", "Pareto front, tokens/s per GPU against tokens/s per user "
                                               "(everything that fits, objectives aside):",
                               PARETO_COLUMNS[:5] + WORKLOAD_COLUMNS + PARETO_COLUMNS[5:] if "prompt" in first
                               else PARETO_COLUMNS)])
    return False


TRAIN_COLUMNS: list[Column] = [
    ("gpus", "gpus", "count"), ("tp", "tp", "count"), ("pp", "pp", "count"), ("cp", "cp", "count"),
    ("ep", "ep", "count"), ("dp", "dp", "count"), ("zero", "zero", "count"), ("recompute", "recompute", None),
    ("micro_batch", "mb", "count"), ("interleave", "v", "count"), ("sequence_parallel", "sp", None),
    ("memory", "mem/GPU", "bytes"), ("step_s", "step", "seconds"), ("mfu", "MFU", "fraction"),
    ("tokens_per_s", "tok/s", "per_s"), ("bound", "bound", None), ("alike", "alike", "count")]
RUN_COLUMNS: list[Column] = [("wall_s", "wall", "seconds"), ("gpu_hours", "GPU-h", "count"), ("usd", "cost", "usd")]


def _plan_train_after(report: Any, req: Any, params: dict) -> bool | None:
    from napkin.cli.export import export

    export(params, report.get("ranked") or [], what="")
    if params["as_json"]:
        return None  # the command prints the report itself (with --cite's citations)
    report.results.pop("best", None)  # the table's first row; --json keeps it
    rows = report.get("ranked") or []
    for x in rows:  # the table's memory column; --json keeps the breakdown
        x["memory"] = x["memory_bytes_per_gpu"]["total"]
    cols = TRAIN_COLUMNS[:-2] + (RUN_COLUMNS if any(x.get("wall_s") is not None for x in rows) else []) + \
        TRAIN_COLUMNS[-2:]  # what --tokens gives: the run's wall time, GPU-hours and cost
    print_with_tables(report, as_json=False, explain=params["explain"],
                      tables=[("ranked", _plan_train_title(req), cols)])
    return False


def _plan_train_title(req: Any) -> str:
    """The table's heading names the order plan train ranks in (plan/train.py: by fewest GPUs with --deadline,
    by cost with --price across several cluster sizes, by tokens/s otherwise)."""
    if req.deadline is not None:
        return "fewest GPUs that meet the deadline (each size's fastest layout):"
    if req.price is not None and len(set(req.gpus)) > 1:
        return "cheapest configurations that fit:"
    return "fastest configurations that fit:"


plan = _PlanGroup("plan", help="Planners: search configurations under objectives.",
                  context_settings={"max_content_width": 100})

_BUILDERS = {"serve": _build_serve, "bill": _build_bill}


def __getattr__(name: str) -> click.Command:
    """`serve` and `bill` are built on first access, so one command does not import the others' calculators."""
    if name in _BUILDERS:
        cmd = _BUILDERS[name]()
        globals()[name] = cmd
        return cmd
    raise AttributeError(name)
