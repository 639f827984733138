"""The serve request: every field once, with its kind, doc string, bounds and default.

Defaults that are assumptions (the usable memory fraction, the scale-out NIC, the draft
acceptance, the scheduler's token budget) come from ``catalog/assumptions.toml``; the kernel
efficiencies from ``catalog/efficiency.toml``; each with its source and the measurement that
replaces it.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.request import field
from napkin.units import format as _fmt

CONVENTIONS = ("2N", "causal", "full")
SCHEDULING = ("continuous", "prefill-first", "static")
# request fields a waterfall step may change (the workload itself stays fixed)
WATERFALL_KNOBS = ("batch", "precision", "kv_precision", "tp", "gpus", "gpu", "cached_prefix", "draft",
                   "draft_tokens", "acceptance", "gemm_efficiency", "bandwidth_efficiency", "allreduce_latency",
                   "price", "scheduling", "chunk")

_ACCEPTANCE = catalog.default_value("speculative_acceptance")
_SCALE_OUT = _fmt(catalog.default_value("scale_out_bytes_per_s_per_gpu"), "bytes_per_s")
_CHUNK = int(catalog.default_value("chunk_tokens"))


class ServeRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog model or path to a Hugging Face config.json")]
    gpu: Annotated[str, field("name", "accelerator (catalog name)")]
    gpus: Annotated[int | None, field("int", "GPUs per replica (default: the TP degree)", gt=0)] = None
    tp: Annotated[int | None, field("int", "tensor-parallel degree (default: all GPUs of the replica)", gt=0)] = None
    precision: Annotated[str, field("precision", "weight precision (int4 = 0.5 byte)")] = "bf16"
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    mlp_precision: Annotated[str | None, field("precision", "precision of the MLP's (or routed experts') weights "
                                                             "when it differs from --precision (gpt-oss: fp4 experts)")] = None
    prompt: Annotated[float, field("count", "prompt tokens per request", gt=0)] = 1000.0
    output: Annotated[float, field("count", "output tokens per request", ge=1)] = 300.0
    batch: Annotated[int, field("int", "sequences in flight on the replica: the concurrency (static: the batch "
                                       "that arrives together)", gt=0)] = 1
    scheduling: Annotated[str, field("choice", "continuous: in-flight batching with prompt chunks riding in decode "
                                               "steps (vLLM V1, SGLang, TensorRT-LLM); prefill-first: prompts run "
                                               "as steps of their own that pause decoding (vLLM before V1); static: "
                                               "a batch that arrives together and runs to completion",
                                     choices=SCHEDULING)] = "continuous"
    chunk: Annotated[int, field("int", "token budget of one continuous-batching step (decode tokens plus prompt "
                                       f"chunks; default {_CHUNK})", gt=0)] = _CHUNK
    cached_prefix: Annotated[float, field("count", "prompt tokens served from a prefix cache (shared by the batch): "
                                                   "their prefill is skipped", ge=0,
                                          aliases=("cached_prompt",))] = 0.0
    rate: Annotated[float | None, field("per_s", "requests per second arriving (Poisson): simulate the replica "
                                                 "under this load for latency percentiles", gt=0)] = None
    trace: Annotated[str | None, field("path", "CSV or JSONL of requests (prompt and output tokens, optional "
                                               "arrival seconds) to simulate instead of Poisson arrivals")] = None
    requests: Annotated[int | None, field("int", "requests the load simulation runs (default 2000; the first "
                                                 "tenth is warm-up)", gt=0, le=1_000_000)] = None
    seed: Annotated[int, field("int", "seed of the simulated arrivals", ge=0)] = 0
    disaggregate: Annotated[str | None, field("text", "P:D, prefill and decode on separate replicas of --gpus each "
                                                      "(P prefilling, D decoding, the KV cache moved between "
                                                      "them)", example="1:3")] = None
    gemm_efficiency: Annotated[float | None, field(
        "fraction", "fraction of the dense peak a large GEMM reaches (default: measured for the GPU family, "
                    "catalog/efficiency.toml)", aliases=("mfu",))] = None
    bandwidth_efficiency: Annotated[float | None, field(
        "fraction", "fraction of HBM bandwidth the kernels reach (default: measured for the GPU family)")] = None
    allreduce_latency: Annotated[float | None, field("seconds", "fixed cost of one tensor-parallel all-reduce "
                                                                "(default: measured for the GPU family); given, it "
                                                                "also replaces the family's published all-reduce "
                                                                "sweep with latency + bytes / link",
                                                     ge=0)] = None
    layer_overhead: Annotated[float | None, field("seconds", "fixed cost of one layer's kernels per step "
                                                             "(default: fitted to published runs)", ge=0)] = None
    step_overhead: Annotated[float | None, field("seconds", "fixed cost of one step: scheduling, sampling "
                                                            "(default: fitted to published runs)", ge=0)] = None
    host_per_request: Annotated[float | None, field(
        "seconds", "host CPU time the engine spends per request in a step (scheduling, sampling bookkeeping), "
                   "overlapped with the GPU's previous step: a step lasts the longer of the two (default: none; "
                   "TensorRT-LLM's PyTorch executor on a Grace host: about 29us)", ge=0)] = None
    peak: Annotated[float | None, field("flops_per_s", "dense peak per GPU at the compute precision by hand, "
                                                   "replacing --gpu's datasheet figure (an SRAM part such as a Groq "
                                                   "LPU or a Cerebras wafer, a future part)", gt=0)] = None
    bandwidth: Annotated[float | None, field("bytes_per_s", "memory bandwidth per GPU by hand, replacing --gpu's "
                                                            "datasheet HBM figure (on-chip SRAM is far faster)",
                                             gt=0)] = None
    memory: Annotated[float | None, field("bytes", "memory per GPU by hand, replacing --gpu's (an SRAM part holds "
                                                   "hundreds of MB per chip)", gt=0)] = None
    usable: Annotated[float, field("fraction", "fraction of the GPU memory the runtime reports that weights and "
                                               "the KV cache may take")] = (
        catalog.default_value("serve_usable_memory_fraction"))
    kv_free_fraction: Annotated[float | None, field(
        "fraction", "in place of --usable: the KV cache takes this fraction of the memory left after the weights "
                    "and the engine's own buffers (TensorRT-LLM's kv_cache_free_gpu_mem_fraction, 0.9 by default "
                    "there)", gt=0, le=1)] = None
    convention: Annotated[str, field("choice", "FLOPs convention: 2N (no attention), causal or full",
                                     choices=CONVENTIONS)] = "causal"
    price: Annotated[float | None, field("usd_per_hour", "price of one GPU-hour (no price: no $ figures)",
                                         gt=0)] = None
    utilization: Annotated[float | None, field("fraction", "fraction of the hour the replica is generating "
                                                          "(default 1: every hour busy)")] = None
    draft: Annotated[str | None, field("name", "draft model for speculative decoding")] = None
    draft_tokens: Annotated[int, field("int", "tokens the draft proposes per verification", gt=0, le=64)] = 4
    acceptance: Annotated[float | None, field("fraction", "probability the target accepts a drafted token "
                                                         f"(default {_fmt(_ACCEPTANCE, 'fraction')})", ge=0, le=1)] = None
    scale_out_bandwidth: Annotated[float | None, field(
        "bytes_per_s", "per-GPU bandwidth, one direction, of traffic that leaves the scale-up domain (TP beyond it, "
        f"KV moved between disaggregated replicas; default {_SCALE_OUT}: one 400 Gb/s NIC per GPU)", gt=0)] = None
    waterfall: Annotated[list[str], field(
        "text", "NAME=VALUE changes applied one at a time, in order, to this workload (a knob may repeat): "
                "batch=64,precision=fp8,tp=2,...",
        example="batch=64,precision=fp8,tp=2,cached-prefix=900,draft=llama-3.2-1b")] = []
    calibration: Annotated[str | None, field("path", "calibration TOML from `napkin measure` (measured efficiencies)")] = None
