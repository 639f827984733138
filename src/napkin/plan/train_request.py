"""The request of `napkin plan train`: the model, the cluster, the run, and any degree held fixed."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin.request import field

S = msgspec.Struct

RECOMPUTE_CHOICES = ("none", "selective", "full")


class PlanTrainRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str | None, field("name", "catalog model or path to a Hugging Face config.json "
                                               "(or give --layers, --hidden and --heads)")] = None
    layers: Annotated[int | None, field("int", "layers, for a model by hand", gt=0)] = None
    hidden: Annotated[int | None, field("int", "model width d_model, for a model by hand", gt=0)] = None
    heads: Annotated[int | None, field("int", "attention heads, for a model by hand", gt=0)] = None
    kv_heads: Annotated[int | None, field("int", "key-value heads (GQA), for a model by hand (default: heads)",
                                          gt=0)] = None
    head_dim: Annotated[int | None, field("int", "head dimension, for a model by hand (default: hidden / heads)",
                                          gt=0)] = None
    ffn: Annotated[int | None, field("int", "MLP width d_ff, for a model by hand (default 8/3 · hidden gated, "
                                            "4 · hidden otherwise)", gt=0)] = None
    vocab: Annotated[int | None, field("int", "vocabulary, for a model by hand (default 32000)", gt=0)] = None
    gated_mlp: Annotated[bool | None, field("bool", "SwiGLU MLP, RoPE, RMSNorm (Llama style; false: GeLU, learned "
                                                    "positions, LayerNorm, GPT style), for a model by hand")] = None
    experts: Annotated[int | None, field("int", "routed experts (MoE), for a model by hand", gt=0)] = None
    top_k: Annotated[int | None, field("int", "experts per token (MoE), for a model by hand", gt=0)] = None
    expert_ffn: Annotated[int | None, field("int", "one expert's MLP width (MoE), for a model by hand", gt=0)] = None
    gpu: Annotated[str | None, field("name", "accelerator (default h100-sxm)")] = None
    gpus: Annotated[list[int], field("int", "GPUs in the job (several: each is searched)", gt=0)] = []
    deadline: Annotated[float | None, field("seconds", "calendar time for --tokens: the fewest GPUs that meet it",
                                            gt=0)] = None
    max_gpus: Annotated[int, field("int", "largest cluster a --deadline may ask for", gt=0)] = 65536
    tokens: Annotated[float | None, field("count", "tokens of the whole run (gives wall time, GPU-hours, cost)",
                                          gt=0)] = None
    goodput: Annotated[float | None, field("fraction", "share of paid time that advances training, for wall time, "
                                                       "GPU-hours and cost (default: assumed, as `napkin train`)",
                                           gt=0, le=1)] = None
    seq_len: Annotated[float | None, field("count", "tokens per sequence (default 4096, assumed)", gt=0)] = None
    global_batch: Annotated[str | None, field("text", "sequences or tokens per optimizer step: 2048seq, 16Mi or 4M "
                                                      "tokens (default 4Mi tokens, assumed)")] = None
    batch_tolerance: Annotated[float, field("fraction", "how far a configuration may round the global batch to "
                                                        "whole micro-batches per data-parallel rank", ge=0,
                                            le=0.5)] = 0.05
    precision: Annotated[str, field("choice", "GEMM precision: bf16, or fp8 with bf16 weights and fp32 master "
                                              "weights", choices=("bf16", "fp8"))] = "bf16"
    tp: Annotated[int | None, field("int", "tensor-parallel degree (default: searched within the scale-up domain)",
                                    gt=0)] = None
    pp: Annotated[int | None, field("int", "pipeline-parallel stages (default: searched)", gt=0)] = None
    cp: Annotated[int | None, field("int", "context-parallel degree (default: searched)", gt=0)] = None
    ep: Annotated[int | None, field("int", "expert-parallel degree, MoE only (default: searched)", gt=0)] = None
    dp: Annotated[int | None, field("int", "data-parallel degree (default: what the GPUs leave)", gt=0)] = None
    zero: Annotated[int | None, field("int", "ZeRO stage 0-3 (default: searched)", ge=0, le=3)] = None
    fsdp: Annotated[str | None, field("choice", "FSDP: full shard (ZeRO-3) or hybrid (shard within the scale-up "
                                                "domain, replicate across)", choices=("full", "hybrid"))] = None
    recompute: Annotated[str | None, field("choice", "activation recomputation (default: searched)",
                                           choices=RECOMPUTE_CHOICES)] = None
    micro_batch: Annotated[int | None, field("int", "sequences per micro-batch (default: searched)", gt=0)] = None
    interleave: Annotated[int | None, field("int", "virtual pipeline stages per GPU (default: searched)",
                                            gt=0)] = None
    sequence_parallel: Annotated[bool | None, field("bool", "sequence parallelism with TP (default: searched)")] = None
    optimizer: Annotated[str, field("text", "optimizer state: adam, adam-8bit, sgd, or bytes per parameter "
                                            "(with the fp32 master weights)")] = "adam"
    gradient_bytes: Annotated[float | None, field("number", "bytes per gradient value (default 4: fp32 main "
                                                            "gradients, assumed)", gt=0, le=4)] = None
    flops_convention: Annotated[str, field("choice", "model FLOPs per token for MFU: 6N, or with the attention "
                                                     "term", choices=("6N", "causal", "full"))] = "6N"
    flash: Annotated[bool, field("bool", "FlashAttention (no s² scores stored; false: an unfused softmax)")] = True
    dropout: Annotated[bool, field("bool", "dropout after attention and MLP (GPT-3 style; masks are stored)")] = False
    fused_swiglu: Annotated[bool, field("bool", "a fused SwiGLU kernel (keeps 3 f-wide tensors; false: eager "
                                                "PyTorch keeps 4)")] = True
    price: Annotated[float | None, field("usd_per_hour", "$/GPU-hour (default: the catalog's dated reference "
                                                         "price; ranks by cost across cluster sizes)", gt=0)] = None
    usable: Annotated[float | None, field("fraction", "fraction of GPU memory a run may fill (default 0.9, "
                                                      "assumed)")] = None
    scale_out_bandwidth: Annotated[float | None, field("bytes_per_s", "per-GPU bandwidth, one direction, beyond the "
                                                                      "scale-up domain (default 50 GB/s)", gt=0)] = None
    gemm_efficiency: Annotated[float | None, field("fraction", "GEMM fraction of the dense peak at large shapes "
                                                               "(default: the accelerator's, sourced)")] = None
    attention_efficiency: Annotated[float | None, field("fraction", "attention kernel fraction of the dense peak "
                                                                    "(default: the accelerator's, sourced)")] = None
    top: Annotated[int, field("int", "configurations to list", gt=0, le=1000)] = 10
    executor: Annotated[str, field("choice", "evaluate in this process, a local pool, or dask.distributed",
                                   choices=("none", "local", "dask"), cli_only=True)] = "none"
    scheduler: Annotated[str | None, field("text", "dask scheduler address, tcp://host:8786 (default: a local "
                                                   "in-process cluster)", cli_only=True)] = None
    workers: Annotated[int | None, field("int", "workers of the local pool or local dask cluster", gt=0,
                                         cli_only=True)] = None
