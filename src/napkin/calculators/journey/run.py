"""The journey's run: the seven rungs in order, each a Report closed into the journey's, and the meter."""

from __future__ import annotations

from napkin import catalog
from napkin.derivation import Report

from .bill import bill
from .decode import decode
from .memory_wall import memory_wall
from .prefill import prefill
from .request import JourneyRequest
from .tokens import tokens
from .training import training
from .walk import Trip, Walk
from .weights import weights


def run_journey(req: JourneyRequest) -> Report:
    m = catalog.model(req.model)
    g = catalog.gpu(req.gpu)
    top = Report(f"One prompt through {m.name} on {req.gpus} × {g.name} ({req.precision})", command="journey")
    top.set("model", m.name)
    top.set("gpu", g.name)
    top.set("precision", req.precision)
    top.set("kv_precision", req.kv_precision)
    top.set("gpus", req.gpus, "count")
    walk = Walk(top)
    trip = Trip(req, m, g, req.gpus)
    for rung in (tokens, weights, memory_wall, prefill, decode, bill, training):
        rung(walk, trip)
    top.set("rungs", walk.rungs)
    top.step("meter_flops", "Σ rungs' FLOPs = prefill_flops + decode_flops", value=walk.meter, unit="flops",
             prefill_flops=(trip.prefill_flops, "flops"), decode_flops=(trip.decode_flops, "flops"))
    conv = "2N per token plus the causal attention term" if req.attention else "2N per token, no attention term"
    top.set("flops_convention", conv)
    return top
