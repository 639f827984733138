"""The ledger's Report: the realised figures with their working, the days, the drift, what was skipped.

:func:`build_report` writes every definition into the derivation with the run's values
(paid time, advanced and processed tokens, goodput, restarts, MFU over busy and over paid
time), then the per-day table and its drift (against the plan, or the run's own first
days and the day before), then what the readers skipped, dropped and inferred.
"""

from __future__ import annotations

import os
from typing import Any

from napkin import units
from napkin.derivation import Report
from napkin.errors import InputError, quote
from napkin.units import HOUR


class LedgerReport(Report):
    """A Report whose plain text puts the per-day figures in a table of their own."""

    HIDDEN = ("per_day", "drift_alerts", "baseline")
    absolute = True  # days are UTC dates (else 24-hour windows from the first record)

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
        own = "baseline_ratio" in days[0] and len(days) > 1
        head = ["date", "gpu_hours", "usd", "advanced", "$/M adv", "goodput"] + (
            ["vs plan"] if plan else ["vs start", "vs prior"] if own else [])
        rows = [head]
        for d in days:
            row = [d["date"], f"{d['gpu_hours']:,.1f}", units.fmt_auto(d["usd"], "usd"),
                   units.fmt_auto(d["advanced_tokens"], "count"),
                   "-" if d["usd_per_million_advanced_tokens"] is None
                   else units.fmt_auto(d["usd_per_million_advanced_tokens"], "usd_per_million"),
                   "-" if d["goodput_time"] is None else units.fmt_auto(d["goodput_time"], "fraction")]
            if plan:
                r = d.get("drift_ratio")
                row.append(("no progress" if r is None else _signed(r - 1)) + ("  ALERT" if d.get("alert") else ""))
            elif own:
                progress = d["usd_per_million_advanced_tokens"] is not None
                for key in ("baseline_ratio", "day_over_day_ratio"):
                    r = d.get(key)
                    row.append("-" if r is None else _signed(r - 1))
                if not progress and d["usd"] > 0:
                    row[-1] = "no progress"
                row[-1] += "  ALERT" if d.get("alert") else ""
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        return ["per day (UTC):" if self.absolute else "per day (from the first record):"] + [
            "  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]

    def text(self) -> str:
        rows = self.rows()
        width = max((len(k) for k, _ in rows), default=0)
        lines = [quote(self.title)] + [f"  {k.ljust(width)}  {v}" for k, v in rows]
        lines += self.day_table()
        for a in self.results.get("drift_alerts") or []:
            lines.append(f"ALERT {a['date']}: {a['reason']}")
        for w in self.warnings:
            lines.append(f"warning [{w.code}]: {w.message}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)


def build_report(req: Any, reads: list[Any], rec: Any, *, title: str | None = None) -> LedgerReport:
    """The Report of records ``rec`` (read from ``reads``) under the request's price, plan and model."""
    from napkin.ledger import realised
    from napkin.ledger.drift import resolve_plan

    names = quote(", ".join(os.path.basename(p) for p in rec.sources))
    r = LedgerReport(title or f"Realised cost: {names}", command="ledger")
    plan = resolve_plan(req, r)
    price = _price(req, plan, r)
    led = realised.analyse(rec, usd_per_gpu_hour=price, gap_factor=req.gap_factor)
    per_m = _totals(r, rec, reads, led, price)
    _restarts(r, led)
    _mfu(r, req, led)
    _drift(r, req, rec, led, plan, per_m)
    _skipped(r, rec, reads)
    _notes(r, rec, reads)
    return r


def _price(req: Any, plan: Any, r: LedgerReport) -> float:
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
    return price


def _totals(r: LedgerReport, rec: Any, reads: list[Any], led: Any, price: float) -> float:
    """Paid time, cost, tokens, $/M and goodput; returns the realised $/M advanced."""
    from napkin.ledger import realised

    r.set("format", ", ".join(sorted({x.format for x in reads})))
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
    k_lo, k_hi = (units.fmt_auto(x, "count") for x in (led.tokens_per_step_min, led.tokens_per_step_max))
    r.step("advanced_tokens", "(last step − first step) · tokens_per_step  (forward progress only)",
           value=led.advanced_tokens, unit="count", last_step=led.last_step, first_step=led.first_step,
           tokens_per_step=k_lo if k_lo == k_hi else f"{k_lo}..{k_hi}")
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
    return per_m


def _restarts(r: LedgerReport, led: Any) -> None:
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


def _mfu(r: LedgerReport, req: Any, led: Any) -> None:
    """MFU over busy time (the steps that advanced, at their own pace: a trainer's view) and MFU × goodput over
    paid time, side by side; and the trainer's own figure where the log has it."""
    from napkin.ledger import realised

    mfu = None
    if req.model is not None or req.params is not None:
        from napkin.calculators.resolve import gpu_or_none, model_or_none, peak_of, resolve_params
        from napkin.formulas import flops

        n = resolve_params(r, model_or_none(req.model), req.params, active=True)
        if req.gpu is None and req.peak is None:
            r.warn("mfu-needs-peak", "realised MFU needs the dense peak: give --gpu NAME or --peak FLOP/S")
        else:
            peak = peak_of(r, gpu_or_none(req.gpu), req.precision, req.peak)
            fpt = flops.train_flops_per_token(n)
            if led.busy_gpu_seconds > 0:
                r.step("mfu_busy", "6 · N · advanced_tokens / (busy GPU-seconds · dense peak)  (busy: the time of the "
                       "steps that advanced; 6N model FLOPs)", value=realised.realised_mfu(
                           led.advanced_tokens, flops_per_token=fpt, gpu_seconds=led.busy_gpu_seconds,
                           dense_flops_per_s=peak),
                       unit="fraction", N=(n, "count"), busy_gpu_seconds=(led.busy_gpu_seconds, "number"),
                       peak=(peak, "flops_per_s"))
            mfu = r.step("mfu_realised", "6 · N · advanced_tokens / (allocated GPU-seconds · dense peak)  "
                         "(6N model FLOPs, no attention term; over paid GPU-time)",
                         value=realised.realised_mfu(led.advanced_tokens, flops_per_token=fpt,
                                                     gpu_seconds=led.gpu_seconds, dense_flops_per_s=peak),
                         unit="fraction", N=(n, "count"), gpu_seconds=(led.gpu_seconds, "number"),
                         peak=(peak, "flops_per_s"))
            r.note("mfu_busy is MFU over busy time (the steps that advanced, at their own pace: what a trainer "
                   "reports); mfu_realised is MFU over paid (allocated) GPU-time, mfu_busy × goodput while the GPU "
                   "count holds: restarts, gaps and idle GPUs pull it down")
            for day in led.days:
                day["mfu_busy"] = (realised.realised_mfu(day["advanced_tokens"], flops_per_token=fpt,
                                                         gpu_seconds=day["busy_gpu_seconds"], dense_flops_per_s=peak)
                                   if day["busy_gpu_seconds"] > 0 else None)
                day["mfu_realised"] = (realised.realised_mfu(day["advanced_tokens"], flops_per_token=fpt,
                                                             gpu_seconds=day["gpu_seconds"], dense_flops_per_s=peak)
                                       if day["gpu_seconds"] > 0 else None)
    if led.mfu_logged_median is not None:
        r.set("mfu_logged_median", led.mfu_logged_median, "fraction")
        r.note("mfu_logged_median is the trainer's own MFU over busy step time against its own peak; "
               "mfu_realised is over paid time")
    if mfu is not None and mfu > 1:
        r.warn("mfu-over-1", f"realised MFU {mfu:.2f} exceeds 1: check --params, --gpus and --tokens-per-step")


def _drift(r: LedgerReport, req: Any, rec: Any, led: Any, plan: Any, per_m: float) -> None:
    """Per-day figures and their drift: against the plan when there is one, else against the run itself."""
    from napkin.ledger import drift

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
    baseline = None
    if plan is None and led.days:
        baseline, alerts = drift.baseline_drift(led.days, alert=req.alert)
        if baseline is not None and len(led.days) > 1:
            r.set("baseline", baseline)
            r.set("drift_alert_threshold", req.alert, "fraction")
    r.set("per_day", led.days)
    r.set("drift_alerts", alerts)
    if not rec.clock_per_record:
        r.note("no per-day figures: the log has no wall clock per record (its times are spread over the run), and "
               "drift needs one; log with napkin's callback (napkin.ledger.callbacks) for the time of each step")
    elif plan is not None:
        r.note(f"drift alerts: days whose realised $/M exceeds the plan by more than {req.alert:.0%}")
    elif baseline is None or len(led.days) < 2:
        r.note("no plan given (--plan plan.toml or --plan-usd-per-million), and one day of records: no drift to "
               "measure yet")
    else:
        dates = baseline["dates"]
        first = f"first day ({dates[0]}" if len(dates) == 1 else f"first days ({dates[0]} to {dates[-1]}"
        r.note(f"no plan given: drift alerts are days whose realised $/M exceeds the run's {first}: "
               f"{units.fmt_auto(baseline['usd_per_million_advanced_tokens'], 'usd_per_million')}) or the day "
               f"before by more than {req.alert:.0%}; --plan plan.toml or --plan-usd-per-million for drift against "
               "the plan")


def _skipped(r: LedgerReport, rec: Any, reads: list[Any]) -> None:
    """Lines skipped (by the readers, and with --skip-bad-clock by the records' check) and duplicates dropped."""
    skipped = []
    total = rec.bad_clock_count
    for i, x in enumerate(reads):
        total += x.skipped_count
        mine = [(n, why) for n, why in x.skipped] + [(n, f"{why} (--skip-bad-clock)") for s, n, why in rec.bad_clock
                                                     if s == i]
        skipped += [{"source": quote(os.path.basename(x.path)), "line": n, "reason": why} for n, why in sorted(mine)]
    skipped = skipped[:20]
    r.set("skipped_lines", {"count": total, "location": reads[0].location if reads else "line", "first": skipped})
    if total:
        r.warn("skipped-lines", f"{total} malformed line(s) skipped: " + "; ".join(
            f"{s['source']}:{s['line']} {s['reason']}" for s in skipped[:3]) + ("; ..." if total > 3 else ""))
    duplicates = rec.duplicates + sum(x.duplicates for x in reads)
    r.set("duplicates", duplicates, "count")
    if rec.duplicates:
        r.note(f"{rec.duplicates} duplicate record(s) (the step of the record before, logged again) dropped")


def _notes(r: LedgerReport, rec: Any, reads: list[Any]) -> None:
    from napkin.ledger.readers.common import warn_if_cumulative

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


def _signed(change: float) -> str:
    """A change as a signed percentage, one decimal; a change that rounds to zero reads +0.0%, never -0.0%."""
    text = f"{change:+.1%}"
    return "+0.0%" if text == "-0.0%" else text
