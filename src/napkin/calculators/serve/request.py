"""The serve request: every field once, with its kind, doc string, bounds and default.

Defaults that are assumptions (efficiencies, latencies, the usable memory fraction, the
scale-out NIC, the draft acceptance) come from ``catalog/assumptions.toml``, where each has
its source and the measurement that replaces it.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.request import field
from napkin.units import format as _fmt

CONVENTIONS = ("2N", "causal", "full")
# request fields a waterfall step may change (the workload itself stays fixed)
WATERFALL_KNOBS = ("batch", "precision", "kv_precision", "tp", "gpus", "gpu", "cached_prefix", "draft",
                   "draft_tokens", "acceptance", "mfu", "bandwidth_efficiency", "allreduce_latency", "price")

_MFU = catalog.default_value("prefill_mfu")
_BW_EFF = catalog.default_value("decode_bandwidth_efficiency")
_ACCEPTANCE = catalog.default_value("speculative_acceptance")
_SCALE_OUT = _fmt(catalog.default_value("scale_out_bytes_per_s_per_gpu"), "bytes_per_s")


class ServeRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog model or path to a Hugging Face config.json")]
    gpu: Annotated[str, field("name", "accelerator (catalog name)")]
    gpus: Annotated[int | None, field("int", "GPUs per replica (default: the TP degree)", gt=0)] = None
    tp: Annotated[int | None, field("int", "tensor-parallel degree (default: all GPUs of the replica)", gt=0)] = None
    precision: Annotated[str, field("precision", "weight precision (int4 = 0.5 byte)")] = "bf16"
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    prompt: Annotated[float, field("count", "prompt tokens per request", gt=0)] = 1000.0
    output: Annotated[float, field("count", "output tokens per request", ge=1)] = 300.0
    batch: Annotated[int, field("int", "sequences decoding together", gt=0)] = 1
    cached_prefix: Annotated[float, field("count", "prompt tokens served from a prefix cache (shared by the batch)",
                                          ge=0)] = 0.0
    mfu: Annotated[float | None, field("fraction", f"fraction of dense peak prefill sustains (default {_MFU})")] = None
    bandwidth_efficiency: Annotated[float | None, field(
        "fraction", f"fraction of memory bandwidth decode sustains (default {_BW_EFF})")] = None
    allreduce_latency: Annotated[float, field("seconds", "fixed cost of one tensor-parallel all-reduce",
                                              ge=0)] = catalog.default_value("allreduce_latency_s")
    usable: Annotated[float, field("fraction", "fraction of GPU memory for weights and KV")] = (
        catalog.default_value("serve_usable_memory_fraction"))
    convention: Annotated[str, field("choice", "FLOPs convention: 2N (no attention), causal or full",
                                     choices=CONVENTIONS)] = "causal"
    price: Annotated[float | None, field("usd_per_hour", "price of one GPU-hour (no price: no $ figures)",
                                         gt=0)] = None
    utilization: Annotated[float | None, field("fraction", "fraction of the hour the replica is generating "
                                                          "(default 1: every hour busy)")] = None
    draft: Annotated[str | None, field("name", "draft model for speculative decoding")] = None
    draft_tokens: Annotated[int, field("int", "tokens the draft proposes per verification", gt=0, le=64)] = 4
    acceptance: Annotated[float | None, field("fraction", "probability the target accepts a drafted token "
                                                         f"(default {_ACCEPTANCE})", ge=0, le=1)] = None
    scale_out_bandwidth: Annotated[float | None, field(
        "bytes_per_s", "per-GPU bandwidth, one direction, of a TP all-reduce that spans more GPUs than the "
        f"scale-up domain (default {_SCALE_OUT}: one 400 Gb/s NIC per GPU)", gt=0)] = None
    waterfall: Annotated[list[str], field(
        "text", "NAME=VALUE changes applied one at a time, in order, to this workload (a knob may repeat): "
                "batch=64,precision=fp8,tp=2,...",
        example="batch=64,precision=fp8,tp=2,cached-prefix=900,draft=llama-3.2-1b")] = []
    calibration: Annotated[str | None, field("path", "calibration TOML from `napkin measure` (measured efficiencies)")] = None
