"""The ``ledger`` calculator: a run's realised cost per million tokens from its logs.

One request Struct serves ``napkin ledger report``, the web page's upload (``content``
holds the log's text) and ``napkin.calculate("ledger", ...)``. The Report's results are
the issue's JSON keys; its derivation writes out every definition with the run's values.
"""

from __future__ import annotations

import datetime as _dt
import os
from typing import Annotated, Any

import msgspec

from napkin import units
from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.ledger.readers import FORMATS
from napkin.request import field
from napkin.units import HOUR


class LedgerRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    logs: Annotated[list[str], field("path", "step logs of one run (restarts may be separate files)",
                                     positional=True)] = []
    content: Annotated[str | None, field("text", "the log's text (an upload, instead of a path)", hidden=True)] = None
    filename: Annotated[str | None, field("text", "the uploaded log's file name (for --format auto)",
                                          hidden=True)] = None
    price: Annotated[float | None, field("usd_per_hour", "loaded $/GPU-hour paid (default: the plan's)", gt=0)] = None
    plan: Annotated[str | None, field("path", "plan file written by `napkin train --save plan.toml`")] = None
    plan_usd_per_million: Annotated[float | None, field("usd_per_million", "planned marginal $/M advanced tokens "
                                                        "(instead of --plan)", gt=0)] = None
    alert: Annotated[float, field("fraction", "alert when a day's realised $/M exceeds plan by more than this",
                                  gt=0, le=1)] = 0.10
    format: Annotated[str, field("choice", "log format (auto sniffs and says what it chose)",
                                 choices=FORMATS)] = "auto"
    map: Annotated[dict[str, str], field("text", "log column (or TensorBoard tag) to field: step, t_wall, "
                                         "gpus_allocated or tokens", example="iter=step")] = {}
    tokens_per_step: Annotated[float | None, field("count", "tokens per optimiser step, global (replaces the "
                                                   "log's)", gt=0)] = None
    tokens_cumulative: Annotated[bool, field("bool", "the log's tokens column counts tokens seen so far (tokens "
                                             "per step = its change per step)")] = False
    gpus: Annotated[int | None, field("int", "GPUs allocated (replaces the log's)", gt=0)] = None
    seq_len: Annotated[float | None, field("count", "sequence length (Megatron-LM: tokens = global batch · "
                                           "seq_len)", gt=0)] = None
    start: Annotated[str | None, field("text", "run start, ISO time (logs without a wall clock per step)")] = None
    end: Annotated[str | None, field("text", "run end, ISO time (logs without a wall clock per step)")] = None
    start_step: Annotated[int | None, field("int", "the step at --start (default 0; a run resumed from a "
                                            "checkpoint: its step)", ge=0)] = None
    params: Annotated[float | None, field("count", "model parameters N (for realised MFU)", gt=0)] = None
    model: Annotated[str | None, field("name", "catalog model or config.json (for realised MFU)")] = None
    gpu: Annotated[str | None, field("name", "accelerator (its dense peak, for realised MFU)")] = None
    precision: Annotated[str, field("precision", "training precision (the dense peak at it)")] = "bf16"
    peak: Annotated[float | None, field("flops_per_s", "dense peak per GPU by hand", gt=0)] = None
    gap_factor: Annotated[float, field("number", "a step slower than this × the median is a gap (lost time)",
                                       gt=1)] = 5.0


def parse_time(name: str, text: str | None) -> float | None:
    """ISO time (UTC when no offset) or Unix seconds -> Unix seconds."""
    if text is None:
        return None
    s = text.strip()
    try:
        return float(s)
    except ValueError:
        pass
    try:
        t = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(name, text, "is not an ISO time", "e.g. 2024-05-01T10:00:00Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return t.timestamp()


def read_options(req: LedgerRequest) -> Any:
    from napkin.ledger.readers import ReadOptions

    if req.tokens_cumulative and req.tokens_per_step is not None:
        raise InputError("tokens_cumulative", "given", "cannot be combined with --tokens-per-step (which replaces "
                         "the log's tokens column)", "give one or the other")
    if req.start_step is not None and req.start is None:
        raise InputError("start_step", req.start_step, "places the step at --start, which is not given",
                         "give --start and --end too (logs without a wall clock per step)")
    start, end = parse_time("start", req.start), parse_time("end", req.end)
    if start is not None and end is not None and end <= start:
        raise InputError("end", req.end, f"must be after --start ({req.start})",
                         "give the run's end time after its start")
    return ReadOptions(format=req.format, mapping=dict(req.map), tokens_per_step=req.tokens_per_step,
                       gpus=req.gpus, seq_len=req.seq_len, start=start,
                       end=end, start_step=req.start_step,
                       tokens_cumulative=req.tokens_cumulative)


def read_all(req: LedgerRequest) -> list[Any]:
    """Every log of the request read into step records (LogRead), in the order given."""
    from napkin.ledger.readers import read_log

    opts = read_options(req)
    if req.content is not None:
        if req.logs:
            raise InputError("content", "given", "cannot be combined with log paths", "give one or the other")
        name = req.filename or "upload"
        return [read_log(name, opts, content=req.content.encode(), name=name)]
    if not req.logs:
        raise InputError("logs", "nothing", "is required", "give one or more step log files")
    return [read_log(p, opts) for p in req.logs]


def resolve_plan(req: LedgerRequest, r: Report) -> Any:
    from napkin.ledger.drift import Plan, load_plan

    plan = load_plan(req.plan) if req.plan else None
    if req.plan_usd_per_million is not None:
        if plan is not None:
            r.warn("plan-overridden", f"--plan-usd-per-million {req.plan_usd_per_million:g} replaces the plan "
                   f"file's {plan.usd_per_million:.4g}")
        plan = Plan(req.plan_usd_per_million, "--plan-usd-per-million")
    return plan


class LedgerReport(Report):
    """A Report whose plain text puts the per-day figures in a table of their own."""

    HIDDEN = ("per_day", "drift_alerts")

    def rows(self) -> list[tuple[str, str]]:
        out = []
        for k, v in self.results.items():
            if k in self.HIDDEN:
                continue
            if k == "goodput":
                out.append((k, f"tokens {units.fmt_auto(v['tokens'], 'fraction')}, "
                               f"time {units.fmt_auto(v['time'], 'fraction')}"))
            elif k == "restarts":
                out.append((k, f"{v['count']} ({v['rollbacks']} rollback{'s' * (v['rollbacks'] != 1)}, "
                               f"{v['gaps']} gap{'s' * (v['gaps'] != 1)}); {v['steps_lost']:,} steps and "
                               f"{units.fmt_auto(v['time_lost_s'], 'seconds')} lost"))
            elif k == "skipped_lines":
                shown = ", ".join(str(x["line"]) for x in v["first"][:8])
                out.append((k, f"{v['count']}" + (f" ({v['location']} {shown}{', ...' if v['count'] > 8 else ''})"
                                                  if v["count"] else "")))
            elif isinstance(v, (list, dict)):
                out.append((k, str(v)))
            else:
                out.append((k, units.fmt_auto(v, self.units.get(k))))
        return out

    def day_table(self) -> list[str]:
        days = self.results.get("per_day") or []
        if not days:
            return []
        plan = "drift_ratio" in days[0]
        head = ["date", "gpu_hours", "usd", "advanced", "$/M adv", "goodput"] + (["vs plan"] if plan else [])
        rows = [head]
        for d in days:
            row = [d["date"], f"{d['gpu_hours']:,.1f}", units.fmt_auto(d["usd"], "usd"),
                   units.fmt_auto(d["advanced_tokens"], "count"),
                   "-" if d["usd_per_million_advanced_tokens"] is None
                   else units.fmt_auto(d["usd_per_million_advanced_tokens"], "usd_per_million"),
                   "-" if d["goodput_time"] is None else units.fmt_auto(d["goodput_time"], "fraction")]
            if plan:
                r = d.get("drift_ratio")
                row.append(("no progress" if r is None else f"{r - 1:+.1%}") + ("  ALERT" if d.get("alert") else ""))
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        return ["per day (UTC):" if self.absolute else "per day (from the first record):"] + [
            "  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]

    def text(self) -> str:
        rows = self.rows()
        width = max((len(k) for k, _ in rows), default=0)
        lines = [self.title] + [f"  {k.ljust(width)}  {v}" for k, v in rows]
        lines += self.day_table()
        for a in self.results.get("drift_alerts") or []:
            lines.append(f"ALERT {a['date']}: {a['reason']}")
        for w in self.warnings:
            lines.append(f"warning [{w.code}]: {w.message}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)

    absolute = True  # days are UTC dates (else 24-hour windows from the first record)


def run_ledger(req: LedgerRequest) -> LedgerReport:
    from napkin.ledger.records import combine

    reads = read_all(req)
    return build_report(req, reads, combine(reads))


def build_report(req: LedgerRequest, reads: list[Any], rec: Any, *, title: str | None = None) -> LedgerReport:
    """The Report of records ``rec`` (read from ``reads``) under the request's price, plan and model."""
    from napkin.ledger import drift, realised
    from napkin.ledger.readers.common import warn_if_cumulative

    names = ", ".join(os.path.basename(p) for p in rec.sources)
    r = LedgerReport(title or f"Realised cost: {names}", command="ledger")
    plan = resolve_plan(req, r)
    price = req.price
    if price is None:
        if plan is None or plan.usd_per_gpu_hour is None:
            raise InputError("price", "nothing", "is required", "give --price 2.50/h (the loaded $/GPU-hour paid)")
        price = plan.usd_per_gpu_hour
        if plan.price_basis == "reference":  # the plan took a catalog list price, not one paid
            r.assume("usd_per_gpu_hour", price, f"the plan's reference list price ({plan.source}), not a loaded "
                     "price paid: give --price", unit="usd_per_hour", basis="reference")
            r.warn("price-from-plan", f"no --price: the realised cost uses the plan's reference list price "
                   f"{units.fmt_auto(price, 'usd_per_hour')}, not the price paid; give --price")
        else:
            r.assume("usd_per_gpu_hour", price, f"from the plan ({plan.source})", unit="usd_per_hour", basis="given")
    else:
        r.assume("usd_per_gpu_hour", price, "given (--price)", unit="usd_per_hour", basis="given")
        if plan is not None and plan.usd_per_gpu_hour and abs(plan.usd_per_gpu_hour - price) / price > 0.01:
            r.warn("price-differs", f"--price {units.fmt_auto(price, 'usd_per_hour')} differs from the plan's "
                   f"{units.fmt_auto(plan.usd_per_gpu_hour, 'usd_per_hour')}: drift then includes the price change")
    led = realised.analyse(rec, usd_per_gpu_hour=price, gap_factor=req.gap_factor)

    fmts = sorted({x.format for x in reads})
    r.set("format", ", ".join(fmts))
    r.set("records", led.records, "count")
    r.set("first_step", led.first_step)
    r.set("last_step", led.last_step)
    r.absolute = rec.time_absolute
    r.set("wall_s", led.wall_s, "seconds")
    gpus_text = f"{led.gpus_min:g}" if led.gpus_min == led.gpus_max else f"{led.gpus_min:g}..{led.gpus_max:g}"
    r.step("gpu_hours_allocated", "Σ (t[i+1] − t[i]) · gpus_allocated[i] / 3600  (allocated, restarts included)",
           value=led.gpu_seconds / HOUR, unit="number", records=led.records, gpus_allocated=gpus_text,
           wall=(led.wall_s, "seconds"))
    r.step("realised_usd", "gpu_hours_allocated · usd_per_gpu_hour", value=led.usd, unit="usd",
           usd_per_gpu_hour=(price, "usd_per_hour"))
    k_text = (units.fmt_auto(led.tokens_per_step_min, "count") if led.tokens_per_step_min == led.tokens_per_step_max
              else f"{units.fmt_auto(led.tokens_per_step_min, 'count')}..{units.fmt_auto(led.tokens_per_step_max, 'count')}")
    r.step("advanced_tokens", "(last step − first step) · tokens_per_step  (forward progress only)",
           value=led.advanced_tokens, unit="count", last_step=led.last_step, first_step=led.first_step,
           tokens_per_step=k_text)
    r.step("processed_tokens", "Σ steps run · tokens_per_step  (every step run, re-runs after rollbacks included)",
           value=led.processed_tokens, unit="count", steps_run=(led.processed_steps, "count"))
    per_m = r.step("usd_per_million_advanced_tokens", "realised_usd / advanced_tokens · 1e6  (marginal, advanced)",
                   value=realised.usd_per_million_tokens(led.usd, n_tokens=led.advanced_tokens),
                   unit="usd_per_million")
    r.step("usd_per_million_processed_tokens", "realised_usd / processed_tokens · 1e6  (flatters: shown to compare)",
           value=realised.usd_per_million_tokens(led.usd, n_tokens=led.processed_tokens), unit="usd_per_million")
    g_tok = r.step("goodput.tokens", "advanced_tokens / processed_tokens", value=led.advanced_tokens /
                   led.processed_tokens, unit="fraction", result=False)
    g_time = r.step("goodput.time", "productive time / wall time  (time of steps that advanced, at most the "
                    "median step time inside a gap)", value=led.productive_s / led.wall_s if led.wall_s else 1.0,
                    unit="fraction", result=False, productive=(led.productive_s, "seconds"),
                    wall=(led.wall_s, "seconds"))
    r.set("goodput", {"tokens": g_tok, "time": g_time})
    lost_steps = int(round(led.processed_steps - led.advanced_steps))
    r.step("restarts.time_lost_s", "wall time − productive time", value=led.wall_s - led.productive_s,
           unit="seconds", result=False)
    r.set("restarts", {"count": led.rollbacks + led.gaps, "rollbacks": led.rollbacks, "gaps": led.gaps,
                       "steps_lost": lost_steps, "time_lost_s": led.wall_s - led.productive_s,
                       "events": led.events})
    if led.rollbacks:
        r.note(f"after each rollback the steps between the checkpoint and the first logged step are not in the "
               f"log: counted as one log interval ({led.stride_steps:g} step{'s' * (led.stride_steps != 1)})")
    if led.max_step > led.last_step:
        r.warn("ended-below-high-water", f"the run reached step {led.max_step} but the log ends at step "
               f"{led.last_step}: steps above it count as lost, not advanced")

    mfu = None
    if req.model is not None or req.params is not None:
        from napkin.calculators.basics import gpu_or_none, model_or_none, peak_of, resolve_params
        from napkin.formulas import flops

        m = model_or_none(req.model)
        n = resolve_params(r, m, req.params, active=True)
        if req.gpu is None and req.peak is None:
            r.warn("mfu-needs-peak", "realised MFU needs the dense peak: give --gpu NAME or --peak FLOP/S")
        else:
            peak = peak_of(r, gpu_or_none(req.gpu), req.precision, req.peak)
            fpt = flops.train_flops_per_token(n)
            mfu = r.step("mfu_realised", "6 · N · advanced_tokens / (allocated GPU-seconds · dense peak)  "
                         "(6N model FLOPs, no attention term)",
                         value=realised.realised_mfu(led.advanced_tokens, flops_per_token=fpt,
                                                     gpu_seconds=led.gpu_seconds, dense_flops_per_s=peak),
                         unit="fraction", N=(n, "count"), gpu_seconds=(led.gpu_seconds, "number"),
                         peak=(peak, "flops_per_s"))
            for day in led.days:
                day["mfu_realised"] = (realised.realised_mfu(day["advanced_tokens"], flops_per_token=fpt,
                                                             gpu_seconds=day["gpu_seconds"], dense_flops_per_s=peak)
                                       if day["gpu_seconds"] > 0 else None)
    if led.mfu_logged_median is not None:
        r.set("mfu_logged_median", led.mfu_logged_median, "fraction")
        r.note("mfu_logged_median is the trainer's own MFU over busy step time against its own peak; "
               "mfu_realised is over paid time")
    if mfu is not None and mfu > 1:
        r.warn("mfu-over-1", f"realised MFU {mfu:.2f} exceeds 1: check --params, --gpus and --tokens-per-step")

    alerts: list[dict] = []
    if plan is not None:
        r.assume("planned_usd_per_million_tokens", plan.usd_per_million,
                 f"marginal $/M advanced tokens of the plan ({plan.source})", unit="usd_per_million", basis="given")
        r.set("planned_usd_per_million_tokens", plan.usd_per_million, "usd_per_million")
        r.set("drift_alert_threshold", req.alert, "fraction")
        r.step("drift_ratio", "realised $/M / planned $/M  (both marginal per advanced token)",
               value=drift.drift_ratio(per_m, planned_usd_per_million=plan.usd_per_million), unit="number",
               realised=(per_m, "usd_per_million"), planned=(plan.usd_per_million, "usd_per_million"))
    for day in led.days:
        day["gpu_hours"] = day.pop("gpu_seconds") / HOUR
        day.pop("busy_gpu_seconds", None)
    alerts = drift.day_drift(led.days, plan, alert=req.alert)
    r.set("per_day", led.days)
    r.set("drift_alerts", alerts)
    if plan is None:
        r.note("no plan given (--plan plan.toml or --plan-usd-per-million): no drift alerts")
    else:
        r.note(f"drift alerts: days whose realised $/M exceeds the plan by more than {req.alert:.0%}")

    skipped = []
    total_skipped = 0
    for x in reads:
        total_skipped += x.skipped_count
        skipped += [{"source": os.path.basename(x.path), "line": n, "reason": why} for n, why in x.skipped]
    r.set("skipped_lines", {"count": total_skipped, "location": reads[0].location if reads else "line",
                            "first": skipped[:20]})
    if total_skipped:
        r.warn("skipped-lines", f"{total_skipped} malformed line(s) skipped: " + "; ".join(
            f"{s['source']}:{s['line']} {s['reason']}" for s in skipped[:3]) + ("; ..." if total_skipped > 3 else ""))
    r.set("duplicates", rec.duplicates, "count")
    if rec.duplicates:
        r.note(f"{rec.duplicates} duplicate record(s) (same step at the same time) dropped")
    cumulative = warn_if_cumulative(rec.tally) if any(x.tokens_column for x in reads) else None
    if cumulative:
        r.warn(*cumulative)
    for x in reads:
        for code, msg in x.warnings:
            r.warn(code, msg)
        for n in x.notes:
            if n not in r.notes:
                r.note(n)
    if rec.chained:
        r.warn("downtime-not-counted", "the logs are timed from their own starts, not Unix time: they are joined end "
               "to start in the order given, so the time between one log's end and the next one's start (restarts, "
               "queueing) is not in the paid time; log Unix time to count it")
    elif len(rec.sources) > 1:
        r.note("logs joined in time order; the time between one log's end and the next one's start is paid "
               "(allocated GPUs waiting on a restart)")
    return r


def ledger_charts(report: Report) -> dict[str, dict]:
    from napkin.charts.ledger import per_day_chart

    days = report.get("per_day") or []
    if not days:
        return {}
    return {"realised-per-day": per_day_chart(days, report.get("planned_usd_per_million_tokens"),
                                              alert=report.get("drift_alert_threshold", 0.10))}


LEDGER = Calculator(
    "ledger", LedgerRequest, run_ledger, "Realised cost (ledger)",
    "What a run really cost per million advanced tokens, from its own step logs; drift against the plan.",
    establishes="paid GPU-hours, realised $/M advanced tokens, goodput and restarts, day by day",
    needs_measuring="nothing more: these are the run's own records (the price is the one you paid)",
    charts=ledger_charts,
)

