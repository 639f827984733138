"""A test calculator whose step cites a formula function and whose input is a sourced default.

Until every calculator cites its formulas, this is what the web tests use to check that a
step's formula, trap and source (and a default's source) reach the API and the page:
``register()`` adds it to the registry as ``cited``; the browser tests start a server with it.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import calculators
from napkin.calculators import Calculator
from napkin.calculators.resolve import given_or_default
from napkin.derivation import Report
from napkin.formulas.memory import weights_bytes
from napkin.request import field

NAME = "cited"


class CitedRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    params: Annotated[float, field("count", "parameters", gt=0)] = 7e9
    mfu: Annotated[float | None, field("fraction", "MFU", gt=0, le=1)] = None


def run_cited(req: CitedRequest) -> Report:
    r = Report("Cited")
    r.step("weights_bytes", "N · bytes_per_param", value=weights_bytes(req.params, bytes_per_param=2.0),
           unit="bytes", cites=weights_bytes, N=(req.params, "count"), bytes_per_param=2.0)
    r.step("doubled_bytes", "2 · weights_bytes", value=2 * r["weights_bytes"], unit="bytes")  # cites nothing
    given_or_default(r, "mfu", req.mfu, "training_mfu", unit="fraction")
    return r


CITED = Calculator(NAME, CitedRequest, run_cited, "Cited", "A step that cites its formula (a test calculator).",
                   establishes="the weights' bytes", needs_measuring="nothing: a test")


def register() -> None:
    """Add ``cited`` to the registry (for a server started by the browser tests)."""
    calculators.CALCULATORS[NAME] = f"{__name__}:CITED"
