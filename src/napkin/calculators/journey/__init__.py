"""The journey of one prompt (seed 003): seven rungs, each with its figures and working.

A question is tokenized, meets the weights, hits the memory wall, is prefilled, decoded,
billed, and finally set against the training run that made the model. A running meter
adds the FLOPs each rung spends; only prefill and decode spend any, and the meter is by
construction the sum of the rungs' FLOPs: Σ = 2 · N_active · (T_prompt + T_out), plus
the attention term when ``attention`` is on.

The seed's node: 8 × H100 serving FP8 weights at 40% MFU of the FP8 peak, KV in bf16,
1,000 prompt tokens (12 of question, 988 of scaffolding), 300 out, $3/$15 per million.
The seed rounds N to 405B; the catalog's architecture gives 405.9B, so the default meter
reads 1.055 PFLOP where the seed writes 1.053e15 (``params=405e9`` reproduces it).

The rungs are rooms of this package (``tokens``, ``weights``, ``memory_wall``, ``prefill``,
``decode``, ``bill``, ``training``) over ``walk`` (the meter and the rung reports) and ``run``.
Prefill and the batched decode step are the prefill and decode steps of
:mod:`napkin.formulas.serving`, the ones ``napkin serve`` runs, called with the node taken as one
device and no all-reduces (the journey's stated convention).
"""

from __future__ import annotations

from napkin.calculators import Calculator
from napkin.derivation import Report

from .request import RUNG_TITLES, SEED_PROMPT, JourneyRequest
from .run import run_journey


def charts(report: Report) -> dict[str, dict]:
    from napkin.charts.journey import ladder_spec

    return {"ladder": ladder_spec(report)}


JOURNEY = Calculator(
    "journey", JourneyRequest, run_journey, "Journey of one prompt",
    "One prompt through a model, rung by rung: tokens, weights, memory wall, prefill, decode, bill, training debt, "
    "with a running FLOPs meter.",
    establishes="the napkin figures of one request end to end, each with its working",
    needs_measuring="real MFU of prefill and achieved decode bandwidth (napkin measure); the provider's batch and price",
    charts=charts,
)

__all__ = ["JOURNEY", "RUNG_TITLES", "JourneyRequest", "SEED_PROMPT", "run_journey"]
