"""The journey of one prompt: seven rungs, each with its figures and working.

A question is tokenized, meets the weights, hits the memory wall, is prefilled, decoded,
billed, and finally set against the training run that made the model. A running meter
adds the FLOPs each rung spends; only prefill and decode spend any, and the meter is by
construction the sum of the rungs' FLOPs: Σ = 2 · N_active · (T_prompt + T_out), plus
the attention term when ``attention`` is on.

The default node is the worked example's: 8 × H100 serving FP8 weights, KV in bf16, 1,000
prompt tokens (12 of question, 988 of scaffolding), 300 out, $3/$15 per million. The worked
example rounds N to 405B; the catalog's architecture gives 405.9B, so the default meter reads
1.055 PFLOP where the example writes 1.053e15 (``params=405e9`` reproduces it).

The times are the operator model's, the one ``napkin serve`` runs (:mod:`napkin.formulas.operators`
through the shared :mod:`napkin.calculators.replica`): the node is one tensor-parallel group of
every GPU, its prefill and decode steps are sums of operators (GEMMs, attention, element-wise
kernels, all-reduces, fixed costs) at the GPU family's measured efficiencies, and the batched
throughput is continuous batching's steady state with every request's prefill paid
(:mod:`napkin.formulas.scheduling`). Beside them stay the napkin rules the worked examples use:
the prefill at one MFU (``prefill_napkin_s``) and the decode floor (every byte once at the
datasheet bandwidth).

The rungs are rooms of this package (``tokens``, ``weights``, ``memory_wall``, ``prefill``,
``decode``, ``bill``, ``training``) over ``walk`` (the meter and the rung reports), ``node`` (the
replica and the steady state) and ``run``.
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
    establishes="the figures of one request end to end, each with its working: the napkin rules and the operator "
                "model `napkin serve` runs",
    needs_measuring="the achieved GEMM and bandwidth fractions (napkin measure), the engine's per-step costs (a "
                    "profile of one decode step); the provider's batch and price",
    charts=charts,
)

__all__ = ["JOURNEY", "RUNG_TITLES", "JourneyRequest", "SEED_PROMPT", "run_journey"]
