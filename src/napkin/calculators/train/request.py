"""The inputs of `napkin train`: one Struct, declared once for the CLI, the web page, the API and plan files."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators.failures import ALIASES, DOCS
from napkin.formulas import flops
from napkin.request import field

S = msgspec.Struct

DEFAULT_MAX_GPUS = 100_000  # the largest cluster a --deadline may ask for unless --max-gpus says otherwise


class TrainRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str | None, field("name", "catalog model or path to a config.json (instead of --params)")] = None
    params: Annotated[float | None, field("count", "parameters N (active parameters for MoE FLOPs)", gt=0)] = None
    flops: Annotated[float | None, field("flops", "a compute budget in FLOPs: its time, GPU-hours and cost (with "
                                                  "--params, read as tokens D = C / 6N)", gt=0)] = None
    tokens: Annotated[float | None, field("count", "advanced tokens D of the final run (the planning denominator)",
                                          gt=0)] = None
    unique_tokens: Annotated[float | None, field("count", "distinct tokens of data (the data-cost denominator)",
                                                 gt=0)] = None
    epochs: Annotated[float | None, field("number", "passes over the unique tokens (tokens = unique · epochs)",
                                          gt=0)] = None
    gpu: Annotated[str | None, field("name", f"accelerator (default {catalog.default_value('default_gpu')})")] = None
    precision: Annotated[str, field("precision", "training precision; the peak is the dense one at it")] = "bf16"
    gpus: Annotated[int | None, field("int", "GPUs in the job (gives the wall time)", gt=0)] = None
    deadline: Annotated[float | None, field("seconds", "calendar time allowed (gives the GPUs needed)", gt=0)] = None
    max_gpus: Annotated[int, field("int", "largest cluster a --deadline may ask for", gt=0)] = DEFAULT_MAX_GPUS
    mfu: Annotated[float | str | None, field("fraction", f"model FLOPs utilisation (default "
                                                        f"{catalog.default_value('training_mfu'):.0%}, assumed), or "
                                                        "'auto': the best layout `napkin plan train` finds for "
                                                        "--model on --gpus", words=("auto",))] = None
    goodput: Annotated[str | None, field("text", "fraction of paid time making progress (default "
                                                 f"{catalog.default_value('training_goodput'):.0%}, assumed), "
                                                 "or 'auto' from an interruption rate (--mtbf-per-gpu, --cluster-mtbf "
                                                 "or --interruptions/--period), --checkpoint-time and "
                                                 "--restart-time, as `napkin goodput` takes them")] = None
    flops_convention: Annotated[str, field("choice", "FLOPs per token: 6N, or with the attention term",
                                           choices=flops.CONVENTIONS)] = "6N"
    seq_len: Annotated[float | None, field("count", "sequence length (for causal/full FLOPs)", gt=0)] = None
    mfu_convention: Annotated[str | None, field("choice", "the FLOPs convention --mfu was measured under, when it "
                                                          "is not this plan's --flops-convention (it is converted)",
                                                choices=flops.CONVENTIONS)] = None
    price: Annotated[float | None, field("usd_per_hour", "loaded $/GPU-hour (default: the catalog's dated "
                                                        "reference list price)", gt=0)] = None
    overhead: Annotated[dict[str, float], field("number", "overheads as multipliers on the final run's compute",
                                                ge=0, example="experiments=0.6")] = {}
    fixed_usd: Annotated[float, field("usd", "fixed spend added once (licensing, people, ...; data in --data-usd)",
                                      ge=0)] = 0.0
    data_usd: Annotated[float | None, field("usd", "data spend, spread over unique tokens", ge=0)] = None
    pue: Annotated[float | None, field("number", "facility power / IT power for energy (default "
                                                 f"{catalog.default_value('energy_pue'):.1f}: GPUs only)",
                                       ge=1)] = None
    peak: Annotated[float | None, field("flops_per_s", "dense peak per GPU by hand (instead of the catalog's)",
                                        gt=0)] = None
    usable: Annotated[float, field("fraction", "fraction of GPU memory usable for training state")] = \
        catalog.default_value("train_usable_memory_fraction")
    calibration: Annotated[str | None, field("path", "calibration file from `napkin measure` "
                                                     "(its training MFU)")] = None
    # the failure model of --goodput auto: the same names, docs and aliases as `napkin goodput`
    mtbf_per_gpu: Annotated[float | None, field("seconds", "goodput auto: " + DOCS["mtbf_per_gpu"], gt=0)] = None
    cluster_mtbf: Annotated[float | None, field("seconds", "goodput auto: " + DOCS["cluster_mtbf"], gt=0)] = None
    interruptions: Annotated[int | None, field("int", "goodput auto: " + DOCS["interruptions"], gt=0)] = None
    period: Annotated[float | None, field("seconds", "goodput auto: " + DOCS["period"], gt=0)] = None
    observed_gpus: Annotated[int | None, field("int", "goodput auto: " + DOCS["observed_gpus"], gt=0)] = None
    checkpoint_time: Annotated[float | None, field("seconds", "goodput auto: " + DOCS["checkpoint_time"], gt=0,
                                                   aliases=ALIASES["checkpoint_time"])] = None
    restart_time: Annotated[float | None, field("seconds", "goodput auto: " + DOCS["restart_time"], ge=0,
                                                aliases=ALIASES["restart_time"])] = None
    checkpoint_interval: Annotated[float | None, field("seconds", "goodput auto: " + DOCS["checkpoint_interval"],
                                                       gt=0, aliases=ALIASES["checkpoint_interval"])] = None
    sensitivity: Annotated[bool, field("bool", "rank inputs by how far ±20% moves loaded $/M tokens")] = False
    assumed: Annotated[list[str], field("text", "inputs a saved plan took from defaults (kept labelled as such)",
                                        hidden=True)] = []
    # `napkin train --vary`: the answer at each value of inputs (a grid when several), see train/vary.py
    vary: Annotated[list[str], field("text", "NAME=V1,V2,...: the answer for each value of an input (any field; "
                                             "overhead.NAME for one overhead); several for a grid",
                                     hidden=True)] = []
