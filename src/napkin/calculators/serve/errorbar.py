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


def error_bar(r: Report, s: Setup, req: ServeRequest) -> None:
    if s.by_hand:  # figures by hand: no published measurement covers the part
        return
    out = error_bars(s.g)
    if out:
        r.set("error_bar", out)
