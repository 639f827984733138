"""The inputs of `napkin check` and the rules its verdicts follow."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.request import field

S = msgspec.Struct

# Above this no large dense run has published a sustained MFU (Llama 3 405B: 38–43%;
# PaLM 540B: 46%); between it and 1 a claim is implausible, above 1 impossible.
MFU_PLAUSIBLE_MAX = 0.60
# GPU-hours from GPUs × days agree with a claimed figure within this fraction.
AGREE_WITHIN = 0.10
# Illustrative overheads (experiments 0.60 + lost 0.15 + eval 0.05 + idle 0.20)
# double the final run's compute before data and people: a model's cost is at least that.
PRODUCTION_MULTIPLE = 2.0

VERDICTS = ("consistent", "plausible only as one final run's compute", "implausible", "inconsistent")

# What a production cost adds to one run's compute (DeepSeek-V3's report, section 1, says its $5.576M leaves these out).
OMITTED = ["failed and abandoned runs", "ablations", "data pipeline", "post-training", "salaries"]


class CheckRequest(S, kw_only=True, forbid_unknown_fields=True):
    params: Annotated[float | None, field("count", "parameters N (active parameters for MoE)", gt=0)] = None
    model: Annotated[str | None, field("name", "catalog model (instead of --params; MoE uses its active count)")] = None
    tokens: Annotated[float | None, field("count", "training tokens D (default: the catalog model's)", gt=0)] = None
    claimed_usd: Annotated[float | None, field("usd", "the published cost to check", gt=0)] = None
    claimed_gpu_hours: Annotated[float | None, field("count", "the published GPU-hours to check", gt=0)] = None
    gpus: Annotated[int | None, field("int", "GPUs the run used (with --days)", gt=0)] = None
    days: Annotated[float | None, field("number", "wall-clock days the GPUs ran (with --gpus)", gt=0, unit="d")] = None
    gpu: Annotated[str | None, field("name", "accelerator (default "
                                             f"{catalog.default_value('default_gpu')}, stated as an assumption)")] = None
    precision: Annotated[str, field("precision", "training precision of the dense peak")] = "bf16"
    mfu: Annotated[float | None, field("fraction", "MFU of the run (default "
                                                  f"{catalog.default_value('reference_mfu'):.0%}, a reference)")] = None
    goodput: Annotated[float | None, field("fraction", "fraction of paid time making progress (default "
                                                       f"{catalog.default_value('claim_goodput'):.0%}: the most "
                                                       "generous reading)")] = None
    price: Annotated[float | None, field("usd_per_hour", "price of one GPU-hour (default: the catalog's)", gt=0)] = None

