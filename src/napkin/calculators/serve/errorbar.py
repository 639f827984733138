"""The error bar of a serving answer: how far napkin's predictions were from published measurements.

`napkin validate` runs the model on measured serving runs (src/napkin/validation/serving.toml)
and stores the out-of-sample median error of each kind of answer, per accelerator family, in
src/napkin/validation/baseline.json; every serve answer names the one that applies to it.
"""

from __future__ import annotations

from napkin.calculators.replica import error_bars
from napkin.derivation import Report

from .inputs import Setup
from .request import ServeRequest


BY_HAND = ("gemm_efficiency", "bandwidth_efficiency", "allreduce_latency", "layer_overhead", "step_overhead",
           "host_per_request")


def error_bar(r: Report, s: Setup, req: ServeRequest) -> None:
    if s.by_hand:  # figures by hand: no published measurement covers the part
        return
    given = [f"--{k.replace('_', '-')}" for k in BY_HAND if getattr(req, k, None) is not None]
    if given:  # the validated model's efficiencies and fixed costs, replaced: its error bar is not this model's
        r.note(f"no error bar: {', '.join(given)} replace{'s' if len(given) == 1 else ''} what `napkin validate` "
               "measured the model with, so its published errors do not cover these figures")
        return
    out = error_bars(s.g, s.tp * s.pp, moe=s.m.is_moe)
    if out:
        r.set("error_bar", out)
