"""The ``ledger`` calculator: a run's realised cost per million tokens from its logs.

One request Struct serves ``napkin ledger report``, the web page's upload (``content``
holds the log's text) and ``napkin.calculate("ledger", ...)``. The Report's results are
the issue's JSON keys; its derivation writes out every definition with the run's values.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.ledger.inputs import read_all
from napkin.ledger.readers import FORMATS
from napkin.request import field


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
    skip_bad_clock: Annotated[bool, field("bool", "skip (and count) each record whose t_wall goes backwards, "
                                          "instead of refusing the log")] = False


def run_ledger(req: LedgerRequest) -> Any:
    from napkin.ledger.records import combine
    from napkin.ledger.report import build_report

    reads = read_all(req)
    return build_report(req, reads, combine(reads, skip_bad_clock=req.skip_bad_clock))


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

