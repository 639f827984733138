"""The serving capacity question: which GPUs, how many per replica, what TP degree, what batch
and how many replicas serve a request rate within TTFT and TPOT objectives (mean, or p99 under
Poisson arrivals) at least cost; or, with no rate, the highest rate each configuration serves
within them and what a million tokens costs at it.

The grid (hardware x GPUs per replica x TP degree x prompt x output x batch) is evaluated at
once with numpy broadcasting on the same formulas as ``napkin serve``: the scheduler of
:mod:`napkin.formulas.scheduling` on the operators of :mod:`napkin.formulas.operators`
(grid.py); the cheapest cells and the Pareto front are chosen with array operations
(select.py), and only the printed rows become Python objects (rows.py). p99 objectives are
screened on the grid with a queueing approximation and confirmed by the load simulation of
``napkin serve --rate`` on the best few (tail.py).
"""

from __future__ import annotations

from typing import Any

from napkin.calculators import Calculator

from .evaluate import evaluate, evaluate_grid
from .grid import evaluate_compact, steady_state
from .report import run_plan_serve
from .request import PlanServeRequest, grid_size
from .select import pareto_front


def _charts(report: Any) -> dict[str, dict]:
    from napkin.charts.serve import plan_charts

    return plan_charts(report)


PLAN_SERVE = Calculator(
    "plan-serve", PlanServeRequest, run_plan_serve, "Plan serving capacity",
    "Search GPU type, GPUs per replica, TP degree, batch and replicas for a request rate under TTFT/TPOT "
    "objectives; rank by cost per million output tokens (all-in); the throughput-interactivity Pareto front.",
    establishes="the cheapest configuration the roofline model says meets both objectives, and the trade-off curve",
    needs_measuring="real TTFT/TPOT under load (a load test at the chosen batch), queueing at the burst rate",
    charts=_charts, grid_size=grid_size,
)


__all__ = ["PLAN_SERVE", "PlanServeRequest", "evaluate", "evaluate_compact", "evaluate_grid", "grid_size",
           "pareto_front", "run_plan_serve", "steady_state"]
