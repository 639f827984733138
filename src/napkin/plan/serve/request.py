"""The plan serve request: the rate, the objectives, the search space, and the shared assumptions
(defaults from catalog/assumptions.toml)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog, units
from napkin.request import field

S = msgspec.Struct

DEFAULT_GPUS = ["h100-sxm", "h200", "b200", "mi300x"]
DEFAULT_BATCHES = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
_SCALE_OUT = units.format(catalog.default_value("scale_out_bytes_per_s_per_gpu"), "bytes_per_s")
class PlanServeRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog model or path to a Hugging Face config.json")]
    rate: Annotated[float, field("per_s", "requests per second to serve", gt=0)]
    prompt: Annotated[float, field("count", "prompt tokens per request", gt=0)] = 1000.0
    output: Annotated[float, field("count", "output tokens per request", ge=1)] = 300.0
    ttft: Annotated[float, field("seconds", "time-to-first-token objective", gt=0)] = 0.5
    tpot: Annotated[float, field("seconds", "time-per-output-token objective", gt=0)] = 0.05
    gpu: Annotated[list[str], field("name", "accelerators to consider")] = msgspec.field(
        default_factory=lambda: list(DEFAULT_GPUS))
    price: Annotated[dict[str, float], field("usd_per_hour", "price per GPU-hour by GPU (default: the catalog's)",
                                             example="h100-sxm=2.50,h200=3.50", gt=0)] = {}
    precision: Annotated[list[str], field("precision", "weight precisions to consider")] = msgspec.field(
        default_factory=lambda: ["bf16"])
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    max_gpus: Annotated[int, field("int", "most GPUs per replica (powers of two up to this)", gt=0, le=64)] = 8
    batch: Annotated[list[int], field("int", "batches to consider", gt=0)] = msgspec.field(
        default_factory=lambda: list(DEFAULT_BATCHES))
    cached_prefix: Annotated[float, field("count", "prompt tokens served from a prefix cache", ge=0)] = 0.0
    utilization: Annotated[float, field("fraction", "target utilisation of each replica (headroom for bursts)")] = (
        catalog.default_value("plan_serve_utilization"))
    chunk: Annotated[int, field("int", "token budget of one continuous-batching step (decode tokens plus prompt "
                                       "chunks)", gt=0)] = int(catalog.default_value("chunk_tokens"))
    gemm_efficiency: Annotated[float | None, field(
        "fraction", "fraction of the dense peak a large GEMM reaches, on every GPU (default: measured per GPU "
                    "family, catalog/efficiency.toml)", aliases=("mfu",))] = None
    bandwidth_efficiency: Annotated[float | None, field(
        "fraction", "fraction of HBM bandwidth the kernels reach, on every GPU (default: measured per GPU family)")] = None
    allreduce_latency: Annotated[float | None, field("seconds", "fixed cost of one TP all-reduce (default: measured "
                                                                "per GPU family)", ge=0)] = None
    scale_out_bandwidth: Annotated[float | None, field(
        "bytes_per_s", "per-GPU bandwidth, one direction, of a TP all-reduce that spans more GPUs than the "
        f"scale-up domain (default {_SCALE_OUT}: one 400 Gb/s NIC per GPU)", gt=0)] = None
    usable: Annotated[float, field("fraction", "fraction of GPU memory for weights and KV")] = (
        catalog.default_value("serve_usable_memory_fraction"))
    top: Annotated[int, field("int", "configurations to list", gt=0)] = 10
    executor: Annotated[str, field("choice", "evaluate in this process, a local pool, or dask.distributed "
                                             "(one chunk per GPU type)", choices=("none", "local", "dask"),
                                   cli_only=True)] = "none"
    scheduler: Annotated[str | None, field("text", "dask scheduler address, tcp://host:8786 "
                                                   "(default: a local in-process cluster)", cli_only=True)] = None
    workers: Annotated[int | None, field("int", "workers of the local pool or local dask cluster", gt=0,
                                         cli_only=True)] = None


def _scale_out(req: PlanServeRequest) -> float:
    """The per-GPU scale-out bandwidth a TP group beyond the scale-up domain all-reduces at: given or assumed."""
    if req.scale_out_bandwidth is not None:
        return req.scale_out_bandwidth
    return catalog.default_value("scale_out_bytes_per_s_per_gpu")
