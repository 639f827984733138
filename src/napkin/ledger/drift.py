"""Drift: the realised cost per million advanced tokens, day by day, against the plan or the run itself.

The plan's figure is ``napkin train``'s marginal $/M tokens (compute at the GPU-hour
price per advanced token, with its assumed MFU and goodput); the realised figure has the
same definition with the run's own MFU and goodput. A day whose realised figure exceeds
the plan by more than ``alert`` (10% by default) is an alert; the usual
causes are a slow node, a data-loader stall, or a silent MFU regression after a code change.

Without a plan the run is its own baseline (:func:`baseline_drift`): each day against the
run's first day(s), its first 24 hours of wall time in whole calendar days, and against the
day before. A step time 19% longer from day 3 on costs 19% more per advanced token: an
alert against both. Per-day figures need a clock per record; a log whose times were spread
over the run has none, and the report says so instead of inventing them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from napkin.errors import InputError, NapkinError, quote
from napkin.units import MILLION


@dataclass(frozen=True)
class Plan:
    usd_per_million: float
    source: str  # "plan.toml" or "--plan-usd-per-million"
    usd_per_gpu_hour: float | None = None
    mfu: float | None = None
    goodput: float | None = None
    price_basis: str = "given"  # "reference" when the plan took a catalog list price (its `assumed` list)


def drift_ratio(realised_usd_per_million: float, *, planned_usd_per_million: float) -> float:
    """drift_ratio = realised $/M / planned $/M  (1.0 on plan; 1.12 is 12% over)

    Trap: comparing a realised cost per processed token, or a loaded plan figure, with a
    marginal one; both sides here are marginal per advanced token.
    Source: reasoning: a day's cost per advanced token over the plan's, both marginal; 10% is
    about a day of lost work a week, a drift worth an alert.
    """
    return realised_usd_per_million / planned_usd_per_million


def resolve_plan(req: Any, r: Any) -> Plan | None:
    """The plan of the request: its plan file, or --plan-usd-per-million (which replaces the file's figure)."""
    plan = load_plan(req.plan) if req.plan else None
    if req.plan_usd_per_million is not None:
        if plan is not None:
            r.warn("plan-overridden", f"--plan-usd-per-million {req.plan_usd_per_million:g} replaces the plan "
                   f"file's {plan.usd_per_million:.4g}")
        plan = Plan(req.plan_usd_per_million, "--plan-usd-per-million")
    return plan


PLAN_HEADER = re.compile(r"#\s*napkin\s+(\S+)\s+plan\b")


def load_plan(path: str) -> Plan:
    """The planned marginal $/M tokens of a plan file written by ``napkin train --save``.

    A plan another command saved (``napkin serve --save`` writes ``# napkin serve plan``) is
    refused: `napkin train` would fill the inputs it lacks with defaults and plan a run nobody
    planned. The price keeps its basis: a list price the plan took by default (named in its
    ``assumed`` list) stays a reference price, not one given."""
    from napkin.calculators import get
    from napkin.files import regular_file
    from napkin.request import read_config

    regular_file(path, "plan")  # a FIFO or a device would block the reading, or never end
    kind = _plan_kind(path)
    if kind is not None and kind != "train":
        raise InputError("plan", path, f"is a `napkin {kind}` plan, not a training plan",
                         "give a plan written by `napkin train --save plan.toml`, or --plan-usd-per-million X")
    raw = read_config(path)
    try:
        report = get("train")(raw)
    except NapkinError as exc:
        raise InputError("plan", path, f"could not be evaluated by `napkin train` ({quote(exc)})",
                         "check the file, or give --plan-usd-per-million X") from None
    per_m = report.get("usd_per_million_tokens")
    if not isinstance(per_m, dict) or "marginal" not in per_m:
        raise InputError("plan", path, "gave no marginal usd_per_million_tokens", "give --plan-usd-per-million X")
    price = report.get("price", report.get("usd_per_gpu_hour"))
    if price is None and isinstance(raw.get("price"), (int, float)):
        price = float(raw["price"])
    basis = next((a.basis for a in report.assumptions if a.name == "price"), "given")
    mfu, goodput = report.get("mfu"), report.get("goodput")
    return Plan(float(per_m["marginal"]), path, usd_per_gpu_hour=_num(price), mfu=_num(mfu), goodput=_num(goodput),
                price_basis="reference" if basis == "reference" else "given")


def _plan_kind(path: str) -> str | None:
    """The command named by a saved plan's first line (``# napkin train plan: ...``), if any."""
    from napkin.files import open_regular

    try:
        with open_regular(path, "plan") as fh:
            first = fh.readline(4096).decode("utf-8", errors="replace")
    except InputError:
        return None  # read_config says what is wrong with the path
    m = PLAN_HEADER.match(first.strip())
    return m.group(1) if m else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def day_drift(days: list[dict], plan: Plan | None, *, alert: float) -> list[dict]:
    """Each day with its realised $/M and, with a plan, its drift ratio and alert; returns the alerts."""
    alerts = []
    for day in days:
        adv = day["advanced_tokens"]
        per_m = day["usd"] / adv * MILLION if adv > 0 else None
        day["usd_per_million_advanced_tokens"] = per_m
        day["goodput_tokens"] = adv / day["processed_tokens"] if day["processed_tokens"] > 0 else None
        day["goodput_time"] = day["productive_s"] / day["wall_s"] if day["wall_s"] > 0 else None
        if plan is None:
            continue
        ratio = drift_ratio(per_m, planned_usd_per_million=plan.usd_per_million) if per_m is not None else None
        day["drift_ratio"] = ratio
        if ratio is None:
            if day["usd"] > 0:
                alerts.append({"date": day["date"], "drift_ratio": None, "usd": day["usd"],
                               "reason": "paid GPU time with no forward progress"})
        elif ratio > 1 + alert:
            alerts.append({"date": day["date"], "drift_ratio": ratio, "usd_per_million_advanced_tokens": per_m,
                           "planned_usd_per_million_tokens": plan.usd_per_million,
                           "reason": f"{(ratio - 1):.1%} above plan"})
        day["alert"] = ratio is None and day["usd"] > 0 or (ratio is not None and ratio > 1 + alert)
    return alerts


BASELINE_S = 86400.0  # the baseline: the run's first calendar days, until they hold a day (24 h) of wall time


def baseline_drift(days: list[dict], *, alert: float) -> tuple[dict | None, list[dict]]:
    """Each day (after :func:`day_drift` gave it its $/M) against the run's first day(s) and the day before;
    returns the baseline ({dates, usd_per_million_advanced_tokens}) and the alerts."""
    base: list[dict] = []
    wall = 0.0
    for day in days:
        base.append(day)
        wall += day["wall_s"]
        if wall >= BASELINE_S:
            break
    adv = sum(d["advanced_tokens"] for d in base)
    base_per_m = sum(d["usd"] for d in base) / adv * MILLION if adv > 0 else None
    baseline = None if base_per_m is None else {
        "dates": [d["date"] for d in base], "usd_per_million_advanced_tokens": base_per_m}
    label = (f"first day ({base[0]['date']})" if len(base) == 1 else
             f"first days ({base[0]['date']} to {base[-1]['date']})" if base else "")
    alerts: list[dict] = []
    before: dict | None = None
    for i, day in enumerate(days):
        per_m = day["usd_per_million_advanced_tokens"]
        vs_base = drift_ratio(per_m, planned_usd_per_million=base_per_m) if (
            per_m is not None and base_per_m is not None and i >= len(base)) else None
        prior = before["usd_per_million_advanced_tokens"] if before is not None else None
        vs_prior = drift_ratio(per_m, planned_usd_per_million=prior) if per_m is not None and prior else None
        day["baseline_ratio"], day["day_over_day_ratio"] = vs_base, vs_prior
        found = []
        if per_m is None and day["usd"] > 0 and day["wall_s"] > 0:
            found.append({"date": day["date"], "kind": "no-progress", "ratio": None, "usd": day["usd"],
                          "reason": "paid GPU time with no forward progress"})
        if vs_base is not None and vs_base > 1 + alert:
            found.append({"date": day["date"], "kind": "baseline", "ratio": vs_base,
                          "usd_per_million_advanced_tokens": per_m,
                          "reason": f"{vs_base - 1:.1%} above the run's {quote(label)}"})
        if vs_prior is not None and vs_prior > 1 + alert:
            found.append({"date": day["date"], "kind": "day-over-day", "ratio": vs_prior,
                          "usd_per_million_advanced_tokens": per_m,
                          "reason": f"{vs_prior - 1:.1%} above the day before ({quote(before['date'])})"})
        day["alert"] = bool(found)
        alerts += found
        if per_m is not None:
            before = day
    return baseline, alerts
