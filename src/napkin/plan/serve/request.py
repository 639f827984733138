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
DEFAULT_TTFT_S = 0.5  # the mean objectives when neither a mean nor a p99 objective is given
DEFAULT_TPOT_S = 0.05
_SCALE_OUT = units.format(catalog.default_value("scale_out_bytes_per_s_per_gpu"), "bytes_per_s")
SIZES = tuple(2**i for i in range(7))  # GPUs per replica and TP degrees the plan searches: powers of two to 64


class PlanServeRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog model or path to a Hugging Face config.json")]
    rate: Annotated[float | None, field("per_s", "requests per second to serve (none: find each configuration's "
                                                 "highest rate within the objectives and rank by $/M at it)",
                                        gt=0)] = None
    prompt: Annotated[list[float], field("count", "prompt tokens per request (a list is a grid axis)", gt=0)] = (
        msgspec.field(default_factory=lambda: [1000.0]))
    output: Annotated[list[float], field("count", "output tokens per request (a list is a grid axis)", ge=1)] = (
        msgspec.field(default_factory=lambda: [300.0]))
    ttft: Annotated[float | None, field("seconds", "mean time-to-first-token objective, no queue (default "
                                                   f"{units.format(DEFAULT_TTFT_S, 'seconds')} unless --ttft-p99 is given)", gt=0)] = None
    tpot: Annotated[float | None, field("seconds", "mean time-per-output-token objective, every slot busy (default "
                                                   f"{units.format(DEFAULT_TPOT_S, 'seconds')} unless --tpot-p99 is given)", gt=0)] = None
    ttft_p99: Annotated[float | None, field("seconds", "99th-percentile TTFT objective under Poisson arrivals "
                                                       "(queue for a slot included)", gt=0)] = None
    tpot_p99: Annotated[float | None, field("seconds", "99th-percentile TPOT objective under Poisson arrivals",
                                            gt=0)] = None
    gpu: Annotated[list[str], field("name", "accelerators to consider")] = msgspec.field(
        default_factory=lambda: list(DEFAULT_GPUS))
    price: Annotated[dict[str, float], field("usd_per_hour", "price per GPU-hour by GPU (default: the catalog's); "
                                                             "one value with no name prices every GPU alike (a "
                                                             "warning when that is several)",
                                             example="h100-sxm=2.50,h200=3.50", gt=0, bare="all")] = {}
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
                                                                "per GPU family); given, it also replaces the "
                                                                "families' published all-reduce sweeps", ge=0)] = None
    host_per_request: Annotated[float | None, field(
        "seconds", "host CPU time the engine spends per request in a step, overlapped with the GPU's previous "
                   "step: a step lasts the longer of the two (default: none; as `napkin serve --host-per-request`)",
        ge=0)] = None
    scale_out_bandwidth: Annotated[float | None, field(
        "bytes_per_s", "per-GPU bandwidth, one direction, of a TP all-reduce that spans more GPUs than the "
        f"scale-up domain (default {_SCALE_OUT}: one 400 Gb/s NIC per GPU)", gt=0)] = None
    usable: Annotated[float, field("fraction", "fraction of GPU memory for weights and KV")] = (
        catalog.default_value("serve_usable_memory_fraction"))
    kv_free_fraction: Annotated[float | None, field(
        "fraction", "in place of --usable: the KV cache's fraction of the memory left after weights and engine "
                    "buffers (TensorRT-LLM's kv_cache_free_gpu_mem_fraction)", gt=0, le=1)] = None
    top: Annotated[int, field("int", "configurations to list", gt=0)] = 10
    confirm: Annotated[int, field("int", "configurations the load simulation confirms under p99 objectives "
                                         "(`napkin serve --rate` on each, cheapest first)", ge=0, le=20)] = 3
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


def replica_sizes(max_gpus: int) -> list[int]:
    """GPUs per replica (and TP degrees) the plan searches: the powers of two up to ``max_gpus``."""
    return [s for s in SIZES if s <= max_gpus]


def grid_size(req: PlanServeRequest, hardware_rows: int | None = None) -> int:
    """Configurations the plan counts: (GPU, precision) rows x GPUs per replica x TP degrees x prompts x
    outputs x batches, valid splits or not (`napkin plan serve` prints it; the web page caps it).

    ``hardware_rows``: the (GPU, precision) rows the catalog resolved; without it every pair asked
    (an upper bound, known before the catalog is read).
    """
    rows = len(dict.fromkeys(req.gpu)) * len(dict.fromkeys(req.precision)) if hardware_rows is None else hardware_rows
    lengths = len({float(p) for p in req.prompt}) * len({float(o) for o in req.output})
    return rows * len(replica_sizes(req.max_gpus)) ** 2 * lengths * len(set(req.batch))


def objectives(req: PlanServeRequest) -> dict[str, float]:
    """The objectives that apply: {ttft, tpot, ttft_p99, tpot_p99} (seconds), those given or defaulted.

    A mean objective not given defaults (500 ms TTFT, 50 ms TPOT) unless a p99 objective on the same
    figure is given: `--tpot-p99 80ms` alone must not be held to a 50 ms mean.
    """
    out = {}
    for name, p99, default in (("ttft", req.ttft_p99, DEFAULT_TTFT_S), ("tpot", req.tpot_p99, DEFAULT_TPOT_S)):
        mean = getattr(req, name)
        if mean is None and p99 is None:
            mean = default
        if mean is not None:
            out[name] = mean
        if p99 is not None:
            out[name + "_p99"] = p99
    return out
