"""``napkin check``: hold a published training cost or GPU-hour figure against 6·N·D.

The method: the compute for one run at a stated (or reference) MFU and price;
the MFU or price that would make the claim true; a verdict that never overstates; and
the list of what a production cost adds beyond one run's compute.

Every MFU is read on one part at that part's own price and peak. A cost claim alone is read
on the part named with ``--gpu`` (at ``--price``, else the lowest price its catalog source
documents); when no part is named, it says nothing of the hardware, so its verdict is read on
the most favourable part in the catalog at its lowest documented price, the default GPU's
figure at its own price beside it. A cost claim with hours (claimed GPU-hours, or GPUs × days)
is also judged against what those hours cost: a rate below the rental market is possible
(owned hardware at cost, a negotiated rate), one below an owned GPU's electricity is not.

One idea per file: request.py (the inputs and the verdict rules), readings.py (catalog prices
as readings), verdicts.py (each check), run.py (the steps).
"""

from __future__ import annotations

from napkin.calculators import Calculator
from napkin.calculators.check.request import MFU_PLAUSIBLE_MAX, OMITTED, VERDICTS, CheckRequest
from napkin.calculators.check.run import run_check

__all__ = ["CHECK", "MFU_PLAUSIBLE_MAX", "OMITTED", "VERDICTS", "CheckRequest", "run_check"]

CHECK = Calculator(
    "check", CheckRequest, run_check, "Check a claim",
    "Check a published training cost or GPU-hour figure against 6·N·D: implied MFU and price, and a verdict.",
    establishes="whether a published figure can be one run's compute, and the MFU or price it implies",
    needs_measuring="the run's own MFU, goodput and price, which only its authors know",
)

