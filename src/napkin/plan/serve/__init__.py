"""The serving capacity question: which GPUs, how many per replica, what TP degree, what batch
and how many replicas serve a request rate within TTFT and TPOT objectives at least cost?

The grid (hardware x GPUs per replica x TP degree x batch) is evaluated at once with numpy
broadcasting on the same formulas as ``napkin serve``: the decode and prefill steps of
:mod:`napkin.formulas.serving`, called with arrays; the replica count is then the
smallest that carries the rate at the target utilisation. Simplifications, stated in the
output: no queueing model beyond a utilisation target; static roofline efficiencies (one
MFU, one bandwidth efficiency for every GPU and batch); prefills run whole (no chunking)
and pause decoding; a TP group larger than the GPU's scale-up domain (8 on an HGX board)
runs its all-reduces at the scale-out bandwidth, and pipeline hops are not costed.
"""

from __future__ import annotations

from typing import Any

from napkin.calculators import Calculator

from .grid import evaluate, evaluate_grid
from .report import pareto_front, run_plan_serve
from .request import PlanServeRequest


def _charts(report: Any) -> dict[str, dict]:
    from napkin.charts.serve import plan_charts

    return plan_charts(report)


PLAN_SERVE = Calculator(
    "plan-serve", PlanServeRequest, run_plan_serve, "Plan serving capacity",
    "Search GPU type, GPUs per replica, TP degree, batch and replicas for a request rate under TTFT/TPOT "
    "objectives; rank by cost per million output tokens; the throughput-interactivity Pareto front.",
    establishes="the cheapest configuration the roofline model says meets both objectives, and the trade-off curve",
    needs_measuring="real TTFT/TPOT under load (a load test at the chosen batch), queueing at the burst rate",
    charts=_charts,
)


__all__ = ["PLAN_SERVE", "PlanServeRequest", "evaluate", "evaluate_grid", "pareto_front", "run_plan_serve"]
