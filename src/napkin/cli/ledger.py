"""``napkin ledger report|watch|runs``: the realised cost of a run from its own logs."""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any

import click

from napkin.cli.common import collect, emit, end_process, fail, guarded, options_for


def _request(params: dict[str, Any], config: str | None) -> Any:
    from napkin.ledger.calculator import LedgerRequest
    from napkin.request import parse_request

    return parse_request(LedgerRequest, collect(LedgerRequest, params, config))


def _request_options() -> list[click.Parameter]:
    from napkin.ledger.calculator import LedgerRequest

    return options_for(LedgerRequest)


def _write_chart(report: Any, path: str) -> None:
    from napkin.ledger.calculator import ledger_charts

    specs = ledger_charts(report)
    if not specs:
        fail("--chart: the report has no day with forward progress to draw")
    from napkin.charts import write_chart

    write_chart(next(iter(specs.values())), path, scale=2)


def _summary(report: Any) -> dict[str, Any]:
    keys = ("usd_per_million_advanced_tokens", "realised_usd", "gpu_hours_allocated", "advanced_tokens",
            "goodput", "mfu_realised", "planned_usd_per_million_tokens", "drift_ratio", "last_step", "wall_s",
            "records")
    out = {k: report.get(k) for k in keys if report.get(k) is not None}
    out["drift_alerts"] = len(report.get("drift_alerts") or [])
    out["restarts"] = (report.get("restarts") or {}).get("count", 0)
    return out


@click.group(help="Realised cost of a run from its own logs; drift alerts against the plan.",
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
def ledger() -> None:
    pass


def _report_callback(**params: Any) -> None:
    import sys

    from napkin.ledger.inputs import read_all
    from napkin.ledger.progress import for_terminal

    as_json = params.pop("as_json")
    explain = params.pop("explain")
    config = params.pop("config")
    run = params.pop("run")
    store_path = params.pop("store")
    no_store = params.pop("no_store")
    chart = params.pop("chart")
    req = _request(params, config)
    progress = for_terminal(sys.stderr, as_json=as_json)  # a big log shows how far it is, on a terminal only
    try:
        fresh = read_all(req, progress) if (req.logs or req.content) or not run else []
        if progress is not None:
            progress.stage(f"working out the cost of {sum(r.records for r in fresh):,} records")
        report, stored_as = _report(req, fresh, params, run, store_path, no_store)
    finally:
        if progress is not None:
            progress.close()  # before anything is printed
    if as_json or explain:
        emit(report, as_json=as_json, explain=explain)
    else:  # the plain text on a terminal too: its day table and ALERT lines are the point
        click.echo(report.text())
    if stored_as:  # another run's log has this file name: stored under its folders
        click.echo(f"note: {stored_as}", err=True)  # where it was kept, not a figure of the run: not in --json
    if chart:
        _write_chart(report, chart)
    end_process()


def _report(req: Any, fresh: list[Any], params: dict[str, Any], run: str | None, store_path: str | None,
            no_store: bool) -> tuple[Any, str | None]:
    """The report over the logs read (and, with --run, the run's stored ones), kept in the store."""
    from napkin.errors import InputError, quote
    from napkin.ledger.records import combine
    from napkin.ledger.report import build_report

    reads = list(fresh)
    if not no_store:
        from napkin.ledger.store import Store
    store = None if no_store else Store(store_path)
    stored_as = None
    try:
        if run:
            if store is None:
                raise InputError("run", run, "needs the store (it keeps the run's records there)", "drop --no-store")
            if store.run_id(run) is not None:
                reads = store.load_reads(run, exclude=tuple(r.path for r in fresh)) + fresh
            elif not fresh:
                raise InputError("run", run, f"is not in the store {quote(store.path)}", "give its logs")
        report = build_report(req, reads, combine(reads, skip_bad_clock=req.skip_bad_clock))
        if store is not None:
            name, stored_as = (run, None) if run else store.name_for(req.logs[0])
            if fresh:
                store.set_sources(name, fresh, keep_records=bool(run), replace=not run)
            store.save_summary(name, fmt=report["format"], summary=_summary(report),
                               options={k: v for k, v in params.items() if v not in (None, (), [])})
    finally:
        if store is not None:
            store.close()
    return report, stored_as


report = click.Command(
    "report", callback=guarded(_report_callback),
    params=_request_options() + [
        click.Option(["--run"], metavar="NAME", help="Keep this run's records in the store and report over all "
                     "its logs so far (restarts that wrote separate files)."),
        click.Option(["--store"], metavar="PATH", help="SQLite store of runs (default "
                     "$XDG_DATA_HOME/napkin/ledger.sqlite3)."),
        click.Option(["--no-store"], is_flag=True, help="Do not record this report in the store."),
        click.Option(["--chart"], metavar="FILE.svg|png", help="Write realised $/M per day against plan."),
        click.Option(["--json", "as_json"], is_flag=True, help="Print JSON: base units, derivation, warnings."),
        click.Option(["--explain"], is_flag=True, help="Print the derivation behind every figure."),
        click.Option(["--config"], metavar="FILE.toml", help="Read options from a TOML file; options override it."),
    ],
    help="Realised cost per million advanced tokens of a run from its step logs (LOG...).",
    context_settings={"max_content_width": 100},
)
ledger.add_command(report)


def _watch_callback(**params: Any) -> None:
    from napkin.ledger.watch import watch

    interval = params.pop("interval")
    prom = params.pop("prometheus")
    refreshes = params.pop("refreshes")
    config = params.pop("config")
    req = _request(params, config)
    if len(req.logs) != 1:
        fail(f"watch follows one log; got {len(req.logs)}")
    from napkin import units

    interval_s = units.parse(interval, "seconds", "interval")
    if interval_s <= 0:
        fail(f"interval must be > 0; got {interval}")
    exporter = None
    if prom:
        from napkin.ledger.prometheus import Exporter

        exporter = Exporter(prom, os.path.basename(req.logs[0]))
        click.echo(f"serving Prometheus metrics on http://{prom}/metrics")
    try:
        watch(req.logs[0], req, interval_s=interval_s, max_refreshes=refreshes,
              echo=lambda line: click.echo(line), on_update=exporter.update if exporter else None)
    except KeyboardInterrupt:
        pass
    finally:
        if exporter is not None:
            exporter.close()


watch_cmd = click.Command(
    "watch", callback=guarded(_watch_callback),
    params=_request_options() + [
        click.Option(["--interval"], default="10s", show_default=True, metavar="TIME",
                     help="Time between refreshes."),
        click.Option(["--prometheus"], metavar="HOST:PORT", help="Serve the figures as Prometheus metrics."),
        click.Option(["--refreshes"], type=click.IntRange(min=1), help="Stop after this many refreshes."),
        click.Option(["--config"], metavar="FILE.toml", help="Read options from a TOML file; options override it."),
    ],
    help="Follow a growing log (LOG), refresh the realised cost, alert when it drifts above plan.",
    context_settings={"max_content_width": 100},
)
ledger.add_command(watch_cmd)


@ledger.command(help="Runs in the store, newest first.")
@click.option("--store", metavar="PATH", help="SQLite store of runs (default $XDG_DATA_HOME/napkin/ledger.sqlite3).")
@click.option("--forget", metavar="NAME", help="Remove a run from the store.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@guarded
def runs(store: str | None, forget: str | None, as_json: bool) -> None:
    import json

    from napkin import units
    from napkin.ledger.store import Store

    with Store(store) as st:
        if forget:
            st.forget(forget)
            click.echo(f"forgot run {forget!r}")
            return
        rows = st.runs()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no runs in the store yet: `napkin ledger report LOG --price ...` records one")
        return

    def day(t: float | None) -> str:
        return "-" if t is None else _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%d %H:%M")

    table = [["run", "format", "logs", "records", "first", "last", "$/M adv", "vs plan", "alerts"]]
    for r in rows:
        s = r["summary"]
        ratio = s.get("drift_ratio")
        absolute = r["first_t"] is not None and r["first_t"] >= 1e8
        records = r["summary"].get("records", r["records"])  # as the report counted them: duplicates once
        table.append([r["name"], r["format"] or "-", str(r["sources"]), f"{records:,}",
                      day(r["first_t"]) if absolute else "-", day(r["last_t"]) if absolute else "-",
                      units.fmt_auto(s["usd_per_million_advanced_tokens"], "usd_per_million")
                      if "usd_per_million_advanced_tokens" in s else "-",
                      "-" if ratio is None else f"{ratio - 1:+.1%}", str(s.get("drift_alerts", 0))])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
