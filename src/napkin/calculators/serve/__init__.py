"""Serving one model on one replica: memory fit, prefill (TTFT), decode (TPOT), cost per token.

The two halves of inference: prefill reads the prompt in one
compute-bound pass; decode re-reads the active weights and every sequence's KV cache for
each new token, so it is bound by memory bandwidth until the batch is large enough for
the FLOPs to catch up. Tensor parallelism splits weights and KV over the replica's GPUs
and pays two all-reduces per layer per step; pipeline stages (GPUs beyond the TP degree)
add memory, not speed. Speculative decoding and an optimisation waterfall ride on top.

Every figure is a Report step; the physics lives in :mod:`napkin.formulas.serving` (the
decode and prefill steps, their parts and how they combine). The rooms of this package:
``request`` (the fields), ``inputs`` (model, accelerator, layout, efficiencies), ``memory``
(the fit), ``prefill``, ``decode``, ``speculative``, ``price``, ``waterfall`` and ``run``.
"""

from __future__ import annotations

from typing import Any

from napkin.calculators import Calculator

from .request import ServeRequest
from .run import run_serve


def _charts(report: Any) -> dict[str, dict]:
    from napkin.charts.serve import serve_charts

    return serve_charts(report)


SERVE = Calculator(
    "serve", ServeRequest, run_serve, "Serve",
    "Memory fit, prefill (TTFT), decode (TPOT) on the roofline with TP communication, and $/M tokens.",
    establishes="whether the model fits, the bandwidth/compute floor of each decode step, and the cost at a "
                "stated utilisation",
    needs_measuring="achieved bandwidth and prefill MFU (`napkin measure`), all-reduce latency (nccl-tests), "
                    "draft acceptance on real traffic, and the utilisation of the fleet",
    charts=_charts,
)


__all__ = ["SERVE", "ServeRequest", "run_serve"]
