"""``napkin memory``: weights, KV cache and static training state, and whether they fit on the GPUs."""

from __future__ import annotations

import math
from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators.resolve import assume_default, gpu_or_none, model_or_none, resolve_params
from napkin.calculators.steps import kv_copies, kv_held_step, kv_replication_step, kv_step
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import memory as mem
from napkin.hardware import bytes_per_value
from napkin.model import ModelSpec
from napkin.request import basis_of, field
from napkin.units import GIBI, KIBI, KILO
from napkin.units import format as fmt

S = msgspec.Struct


class MemoryRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str | None, field("name", "catalog model or path to a config.json")] = None
    params: Annotated[float | None, field("count", "parameters N (instead of --model)", gt=0)] = None
    precision: Annotated[str, field("precision", "weight precision")] = "bf16"
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    context: Annotated[float | None, field("count", "tokens each sequence holds (prompt + generated)", gt=0)] = None
    sequences: Annotated[int, field("int", "sequences in flight, each holding --context tokens (--batch)", gt=0,
                                    aliases=("batch",))] = 1
    layers: Annotated[int | None, field("int", "layers L (without --model)", gt=0)] = None
    kv_heads: Annotated[int | None, field("int", "key-value heads h_kv (without --model)", gt=0)] = None
    head_dim: Annotated[int | None, field("int", "head dimension d_h (without --model)", gt=0)] = None
    gpu: Annotated[str | None, field("name", "accelerator to fit on")] = None
    gpus: Annotated[int, field("int", "GPUs the model is sharded over", gt=0)] = 1
    memory: Annotated[float | None, field("bytes", "memory per GPU (instead of the catalog's)", gt=0)] = None
    training: Annotated[bool, field("bool", "also count static training state (16 bytes/param)")] = False
    usable: Annotated[float, field("fraction", "fraction of GPU memory usable for training state")] = \
        catalog.default_value("train_usable_memory_fraction")


def _finite(value: float, field_name: str, given: object, what: str, fix: str) -> float:
    """``value``, or an InputError naming the input that pushed it past what a float holds."""
    if not math.isfinite(value):
        raise InputError(field_name, given, f"is too large: {what} would pass 1.8e308 bytes, beyond a float", fix)
    return value


def run_memory(req: MemoryRequest) -> Report:
    m = model_or_none(req.model)
    by_hand = [k for k in ("layers", "kv_heads", "head_dim") if getattr(req, k) is not None]
    if m is not None and by_hand:  # the KV cache would be the model's, the flag silently unused
        raise InputError(by_hand[0], getattr(req, by_hand[0]), f"is for a model given by hand, and --model "
                         f"{req.model} gives its own", f"drop --{by_hand[0].replace('_', '-')}, or drop --model and "
                         "give --params with --layers, --kv-heads and --head-dim")
    g = gpu_or_none(req.gpu)
    r = Report("Memory" + (f": {m.name}" if m else ""), command="memory")
    n = resolve_params(r, m, req.params)
    b = bytes_per_value(req.precision, "precision")
    w = _finite(mem.weights_bytes(n, bytes_per_param=b), "params", fmt(n, "count"), "the weights",
                "give the parameter count, e.g. 70B")
    r.step("weights_bytes", "N · bytes_per_param", value=w, unit="bytes", N=(n, "count"), bytes_per_param=b,
           precision=req.precision, cites=mem.weights_bytes)
    if req.precision in ("int4", "fp4"):
        r.note("int4/fp4 are half a byte per parameter (bits / 8, never an integer division)")
    kvb = bytes_per_value(req.kv_precision, "kv_precision")
    kv_tok = None
    if m is not None:
        kv_tok = kv_step(r, m, kvb, req.kv_precision)
    elif req.layers and req.kv_heads and req.head_dim:
        kv_tok = r.step("kv_bytes_per_token", "2 · L · h_kv · d_h · bytes",
                        value=mem.kv_bytes_per_token(req.layers, n_kv_heads=req.kv_heads, head_dim=req.head_dim,
                                                     bytes_per_value=kvb),
                        unit="bytes", L=req.layers, h_kv=req.kv_heads, d_h=req.head_dim, bytes=kvb,
                        cites=mem.kv_bytes_per_token)
        r.note("h_kv is the number of key-value heads, not query heads (8 vs 64 on Llama 3.1 70B)")
    total, one_copy = w, 0.0
    if req.context is not None:
        kv, one_copy = _kv_cache(r, req, m, kv_tok)
        total = _finite(w + kv, "context", fmt(req.context, "count"), "weights + KV cache",
                        "give a realistic context and sequence count")
    elif kv_tok is not None:
        r.note("no --context: the KV cache is not counted; give --context (tokens per sequence) and --batch "
               "(sequences in flight), e.g. --context 8Ki --batch 32")
    cap = req.memory if req.memory is not None else (g.memory_bytes if g else None)
    if req.training:
        static = _finite(mem.training_static_bytes(n), "params", fmt(n, "count"), "the training state",
                         "give the parameter count, e.g. 70B")
        r.step("training_static_bytes", "N · 16  (bf16 weights 2 + grads 2 + fp32 master 4 + Adam m 4 + v 4)",
               value=static, unit="bytes", N=(n, "count"), cites=mem.training_static_bytes)
        r.set("training_bytes_per_param", dict(mem.TRAINING_BYTES_PER_PARAM))
        r.note("activations are extra: they scale with batch × sequence × hidden × layers")
        if cap is not None:
            training_fit(r, req, static, cap, m)
    if cap is not None and not req.training:
        capacity = _finite(req.gpus * cap, "memory", fmt(cap, "bytes"), "the GPUs' memory",
                           "give the memory of one GPU, e.g. 80GB")
        r.step("capacity_bytes", "gpus · memory_per_gpu", value=capacity, unit="bytes",
               gpus=req.gpus, memory_per_gpu=(cap, "bytes"))
        replicated = total > w + one_copy  # the group keeps the cache more than once
        r.step("needed_bytes", "weights + kv_total" + (" + kv_replicated" if replicated else ""), value=total,
               unit="bytes")
        fits = total <= capacity
        r.set("fits", fits)
        if fits:
            r.step("free_bytes", "capacity − needed", value=capacity - total, unit="bytes")
        else:
            r.step("short_by_bytes", "needed − capacity", value=total - capacity, unit="bytes")
            need = (_gpus_needed(m, w, one_copy, cap) if m is not None and req.context is not None
                    else _gpu_count(total / cap, cap))
            r.set("gpus_needed", need)
            if need is None and m is not None:
                least = one_copy if m.attention == "mla" else one_copy / m.n_kv_heads
                how = (f"MLA keeps the whole cache ({fmt(least, 'bytes')}) on every GPU" if m.attention == "mla" else
                       f"the cache splits over the {m.n_kv_heads:g} KV heads at most, so every GPU keeps at least "
                       f"1/{m.n_kv_heads:g} of it ({fmt(least, 'bytes')})")
                r.note(f"no tensor-parallel group holds it: {how}, more than one {fmt(cap, 'bytes')} GPU holds; give "
                       "fewer sequences or a shorter context (more replicas, each with its own sequences, serve the "
                       "rest)")
        r.note("weights + KV only, against the datasheet capacity: activations, CUDA context and fragmentation take a "
               "few GB more per GPU (`napkin serve` counts them: 90% of the capacity the runtime reports)")
    return r


def _kv_cache(r: Report, req: MemoryRequest, m: ModelSpec | None, kv_tok: float | None) -> tuple[float, float]:
    """(the KV cache the GPUs hold, one copy of it): --context tokens of --sequences sequences; over --gpus as one
    tensor-parallel group, MLA's latent (or a KV head shared by several GPUs) held once per GPU that needs it."""
    if kv_tok is None:
        raise InputError("context", req.context, "needs the KV layout",
                         "give --model, or --layers, --kv-heads and --head-dim")
    r.set("context", req.context, "count")
    r.set("sequences", req.sequences, "count")
    if m is not None and m.max_context and req.context > m.max_context:
        r.warn("context-too-long", f"{req.context:,.0f} tokens exceed {m.name}'s {m.max_context:,}-token context "
                                   "window; the figures below are what it would hold if it did not")
    held = kv_held_step(r, m, req.context) if m is not None else req.context
    capped = held != req.context
    kv = mem.kv_total_bytes(kv_tok, context_tokens=held, n_sequences=req.sequences)
    _finite(kv, "context", f"{fmt(req.context, 'count')} with {req.sequences:,} sequences", "the KV cache",
            "give the tokens one sequence holds and the sequences in flight, e.g. --context 8Ki --sequences 32")
    r.step("kv_total_bytes", "kv_bytes_per_token · " + ("kv_tokens_held" if capped else "context") + " · sequences",
           value=kv, unit="bytes", **({} if capped else {"context": (req.context, "count")}),
           sequences=req.sequences, cites=mem.kv_total_bytes)
    if req.context % KILO == 0 and req.context % KIBI != 0:
        r.note(f"context read as {req.context:,.0f} tokens (k = 1,000); write {req.context / KILO:g}Ki for "
               f"{req.context / KILO * KIBI:,.0f}")
    gib = kv / GIBI
    if kv >= GIBI and gib < 2**53 and gib == math.floor(gib):
        r.note(f"kv_total_bytes is exactly {gib:.0f} GiB ({fmt(kv, 'bytes')}): GB and GiB differ by 7%")
    one_copy = kv
    if m is not None and req.gpus > 1:  # --gpus as one tensor-parallel group: MLA keeps its latent on each
        repl, _ = kv_replication_step(r, m, float(req.gpus), kv)
        kv = kv * repl
    return kv, one_copy


def _gpus_needed(m: ModelSpec, weights: float, kv_one_copy: float, cap: float) -> int | None:
    """The fewest GPUs of one tensor-parallel group that hold the weights and the cache, each GPU its share of
    the weights and of the cache as the group keeps it (MLA: all of it on every GPU); None when no group does."""
    for n in range(1, 1 << 16):
        if weights / n + kv_one_copy * float(kv_copies(m, n)) / n <= cap:
            return n
    return None


def _gpu_count(ratio: float, cap: float) -> int:
    """ceil(ratio) as an int; an InputError when the memory per GPU is too small to count GPUs."""
    if not ratio < 2**53:
        raise InputError("memory", fmt(cap, "bytes"), "is too small: the GPUs needed cannot be counted",
                         "give the memory of one GPU, e.g. 80GB")
    return int(math.ceil(ratio - 1e-9))


def training_fit(r: Report, req: MemoryRequest, static: float, cap: float, m: ModelSpec | None) -> None:
    """Does the static training state, fully sharded over --gpus, fit in their usable memory?"""
    note = "fraction of memory left for state after buffers and fragmentation"
    if basis_of(req, "usable") == "assumed":
        assume_default(r, "usable", "train_usable_memory_fraction", note=note)
    else:
        r.assume("usable", req.usable, note, unit="fraction", basis="given")
    n_min = _gpu_count(mem.min_gpus_for_state(static, memory_bytes=cap, usable=req.usable), cap)
    r.step("min_gpus_for_state", "ceil(static_bytes / (memory · usable)), fully sharded", value=n_min, unit="count",
           static_bytes=(static, "bytes"), memory=(cap, "bytes"), usable=req.usable, cites=mem.min_gpus_for_state)
    capacity = _finite(req.gpus * cap, "memory", fmt(cap, "bytes"), "the GPUs' memory",
                       "give the memory of one GPU, e.g. 80GB")
    r.step("capacity_bytes", "gpus · memory_per_gpu", value=capacity, unit="bytes", gpus=req.gpus,
           memory_per_gpu=(cap, "bytes"))
    usable = r.step("usable_bytes", "capacity · usable", value=capacity * req.usable, unit="bytes", usable=req.usable)
    r.step("needed_bytes", "training_static_bytes  (sharded over the gpus: ZeRO-3 / FSDP)", value=static, unit="bytes")
    fits = req.gpus >= n_min
    r.set("fits", fits)
    if fits:
        r.step("free_bytes", "usable − needed", value=max(usable - static, 0.0), unit="bytes")
    else:
        r.step("short_by_bytes", "needed − usable", value=static - usable, unit="bytes")
        r.set("gpus_needed", n_min)
    r.note(f"fits counts the static training state only, fully sharded over {req.gpus} GPU"
           f"{'s' if req.gpus > 1 else ''} at {req.usable:.0%} usable: activations come on top of it"
           + (" (the KV cache above is a serving figure, not part of training)" if req.context is not None else ""))


MEMORY = Calculator("memory", MemoryRequest, run_memory, "Memory",
                    "Weights, KV cache and training state, and whether they fit on the GPUs.",
                    establishes="bytes of weights, cache and optimiser state; whether they fit",
                    needs_measuring="activation memory and framework overhead, from a profiler on the real batch")
