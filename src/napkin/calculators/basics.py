"""The napkin rules of seed 004 as calculators: model, memory, roofline, mfu, allreduce."""

from __future__ import annotations

import math
from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators.resolve import gpu_or_none, model_or_none, peak_of, resolve_params, warn_if_sparse  # noqa: F401
from napkin.calculators.steps import kv_held, kv_held_step, kv_step, kv_window_note  # noqa: F401
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import comm, flops, memory as mem, roofline as roof
from napkin.formulas.serving import SCALE_OUT_BYTES_PER_S_PER_GPU
from napkin.hardware import Accelerator, bytes_per_value
from napkin.model import ModelSpec
from napkin.request import basis_of, field
from napkin.units import GIBI, KIBI, KILO, MEBI, MEGA
from napkin.units import format as fmt

S = msgspec.Struct


# ------------------------------------------------------------------------------------ model
class ModelRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog name or path to a Hugging Face config.json", positional=True)]
    precision: Annotated[str, field("precision", "precision of weights and KV cache")] = "bf16"


def run_model(req: ModelRequest) -> Report:
    m = catalog.model(req.model)
    r = Report(f"{m.name}", command="model")
    b = bytes_per_value(req.precision)
    r.set("name", m.name)
    if m.family:
        r.set("family", m.family)
    # ------------------------------------------------------------ attention
    for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim"):
        r.set(k, getattr(m, k))
    r.set("attention", m.attention)
    if m.attention == "mla":
        if m.q_lora_rank:
            r.set("q_lora_rank", m.q_lora_rank)
        for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            r.set(k, getattr(m, k))
    if m.sliding_window:
        r.set("sliding_window", m.sliding_window)
        r.set("n_sliding_layers", m.n_sliding_layers)
    if m.qkv_bias and not m.linear_bias:
        r.set("qkv_bias", True)
    # ------------------------------------------------------------ feed-forward
    r.set("gated_mlp", m.gated_mlp)
    if m.is_moe:
        r.set("n_experts", m.n_experts)
        r.set("n_active_experts", m.n_active_experts)
        if m.n_shared_experts:
            r.set("n_shared_experts", m.n_shared_experts)
        r.set("d_ff_expert", m.d_ff_expert or m.d_ff)
        if m.n_dense_layers:
            r.set("n_dense_layers", m.n_dense_layers)
            r.set("d_ff_dense", m.d_ff)
            r.note(f"d_ff_dense ({m.d_ff:,}) is the feed-forward width of the first {m.n_dense_layers} layers only, "
                   f"which are dense; the other {m.n_layers - m.n_dense_layers} route each token to "
                   f"{m.n_active_experts} of {m.n_experts} experts of width d_ff_expert ({m.d_ff_expert or m.d_ff:,})"
                   + (f" plus {m.n_shared_experts} shared" if m.n_shared_experts else ""))
    else:
        r.set("d_ff", m.d_ff)
    if m.linear_bias:
        r.set("linear_bias", True)
    # ------------------------------------------------------------ embeddings, positions, norms
    r.set("vocab_size", m.vocab_size)
    r.set("tied_embeddings", m.tied_embeddings)
    r.set("position", m.position)
    if m.position == "learned":
        r.set("max_position", m.max_position)
    if m.relative_pos_proj:
        r.set("relative_pos_proj", True)
    r.set("norm", m.norm)
    r.set("norms_per_layer", m.norms_per_layer)
    if m.max_context:
        r.set("max_context", m.max_context)
    # ------------------------------------------------------------ parameters
    bd = m.params_breakdown()
    r.step("params", "embedding + lm_head + attention + mlp + norms", value=float(bd["total"]), unit="count",
           embedding=(bd["embedding"], "count"), lm_head=(bd["lm_head"], "count"),
           attention=(bd["attention"], "count"), mlp=(bd["mlp"], "count"), norms=(bd["norms"], "count"))
    if m.is_moe:
        r.step("active_params", "params with k of E routed experts per token", value=float(bd["active"]),
               unit="count", k=m.n_active_experts, E=m.n_experts, shared=m.n_shared_experts)
    else:
        r.set("active_params", float(bd["active"]), "count")
    if m.published_params:
        r.set("published_params", m.published_params, "count")
    if m.published_active_params:
        r.set("published_active_params", m.published_active_params, "count")
    if m.training_tokens:
        r.set("training_tokens", m.training_tokens, "count")
    kv_tok = kv_step(r, m, b, req.precision)
    if m.sliding_window:
        w = m.sliding_window
        if m.n_sliding_layers == m.n_layers:
            r.note(f"all {m.n_layers} layers attend over a {w:,}-token sliding window: one sequence's cache stops "
                   f"growing at {w:,} tokens ({fmt(float(m.kv_bytes(w, b)), 'bytes')}); `napkin memory --context` "
                   "applies the cap")
        else:
            r.note(f"{m.n_sliding_layers} of {m.n_layers} layers attend over a {w:,}-token sliding window: past "
                   f"{w:,} tokens a sequence's cache grows by {fmt(kv_tok * (1 - m.window_layers_fraction), 'bytes')} "
                   "per token (the global layers' share), not by kv_bytes_per_token; `napkin memory --context` "
                   "applies the cap")
    r.set("source", m.source)
    if m.params_source:
        r.set("params_source", m.params_source)
    if m.note:
        r.note(m.note)
    return r


MODEL = Calculator("model", ModelRequest, run_model, "Model",
                   "Architecture, parameters (total and active) and KV bytes per token of a model.",
                   establishes="parameter counts (total, and active per token for MoE) and KV bytes per token, "
                               "from the architecture alone, checked against the published count",
                   needs_measuring="nothing for the arithmetic; a checkpoint's real tensor sizes if its config "
                                   "differs from the published architecture")


# ----------------------------------------------------------------------------------- memory
class MemoryRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str | None, field("name", "catalog model or path to a config.json")] = None
    params: Annotated[float | None, field("count", "parameters N (instead of --model)", gt=0)] = None
    precision: Annotated[str, field("precision", "weight precision")] = "bf16"
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    context: Annotated[float | None, field("count", "tokens each sequence holds (prompt + generated)", gt=0)] = None
    sequences: Annotated[int, field("int", "sequences in flight", gt=0)] = 1
    layers: Annotated[int | None, field("int", "layers L (without --model)", gt=0)] = None
    kv_heads: Annotated[int | None, field("int", "key-value heads h_kv (without --model)", gt=0)] = None
    head_dim: Annotated[int | None, field("int", "head dimension d_h (without --model)", gt=0)] = None
    gpu: Annotated[str | None, field("name", "accelerator to fit on")] = None
    gpus: Annotated[int, field("int", "GPUs the model is sharded over", gt=0)] = 1
    memory: Annotated[float | None, field("bytes", "memory per GPU (instead of the catalog's)", gt=0)] = None
    training: Annotated[bool, field("bool", "also count static training state (16 bytes/param)")] = False
    usable: Annotated[float, field("fraction", "fraction of GPU memory usable for training state")] = 0.8


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
           precision=req.precision)
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
                        unit="bytes", L=req.layers, h_kv=req.kv_heads, d_h=req.head_dim, bytes=kvb)
        r.note("h_kv is the number of key-value heads, not query heads (8 vs 64 on Llama 3.1 70B)")
    total = w
    if req.context is not None:
        if kv_tok is None:
            raise InputError("context", req.context, "needs the KV layout",
                             "give --model, or --layers, --kv-heads and --head-dim")
        held = kv_held_step(r, m, req.context) if m is not None else req.context
        capped = held != req.context
        kv = mem.kv_total_bytes(kv_tok, context_tokens=held, n_sequences=req.sequences)
        _finite(kv, "context", f"{fmt(req.context, 'count')} with {req.sequences:,} sequences", "the KV cache",
                "give the tokens one sequence holds and the sequences in flight, e.g. --context 8Ki --sequences 32")
        r.step("kv_total_bytes", "kv_bytes_per_token · " + ("kv_tokens_held" if capped else "context") + " · sequences",
               value=kv, unit="bytes", **({} if capped else {"context": (req.context, "count")}),
               sequences=req.sequences)
        if req.context % KILO == 0 and req.context % KIBI != 0:
            r.note(f"context read as {req.context:,.0f} tokens (k = 1,000); write {req.context / KILO:g}Ki for "
                   f"{req.context / KILO * KIBI:,.0f}")
        gib = kv / GIBI
        if kv >= GIBI and gib < 2**53 and gib == math.floor(gib):
            r.note(f"kv_total_bytes is exactly {gib:.0f} GiB ({fmt(kv, 'bytes')}): GB and GiB differ by 7%")
        total = _finite(w + kv, "context", fmt(req.context, "count"), "weights + KV cache",
                        "give a realistic context and sequence count")
    cap = req.memory if req.memory is not None else (g.memory_bytes if g else None)
    if req.training:
        static = _finite(mem.training_static_bytes(n), "params", fmt(n, "count"), "the training state",
                         "give the parameter count, e.g. 70B")
        r.step("training_static_bytes", "N · 16  (bf16 weights 2 + grads 2 + fp32 master 4 + Adam m 4 + v 4)",
               value=static, unit="bytes", N=(n, "count"))
        r.set("training_bytes_per_param", dict(mem.TRAINING_BYTES_PER_PARAM))
        r.note("activations are extra: they scale with batch × sequence × hidden × layers")
        if cap is not None:
            training_fit(r, req, static, cap, m)
    if cap is not None and not req.training:
        capacity = _finite(req.gpus * cap, "memory", fmt(cap, "bytes"), "the GPUs' memory",
                           "give the memory of one GPU, e.g. 80GB")
        r.step("capacity_bytes", "gpus · memory_per_gpu", value=capacity, unit="bytes",
               gpus=req.gpus, memory_per_gpu=(cap, "bytes"))
        r.step("needed_bytes", "weights + kv_total", value=total, unit="bytes")
        fits = total <= capacity
        r.set("fits", fits)
        if fits:
            r.step("free_bytes", "capacity − needed", value=capacity - total, unit="bytes")
        else:
            r.step("short_by_bytes", "needed − capacity", value=total - capacity, unit="bytes")
            r.set("gpus_needed", _gpu_count(total / cap, cap))
        r.note("weights + KV only: activations, CUDA context and fragmentation take a few GB more per GPU")
    return r


def _gpu_count(ratio: float, cap: float) -> int:
    """ceil(ratio) as an int; an InputError when the memory per GPU is too small to count GPUs."""
    if not ratio < 2**53:
        raise InputError("memory", fmt(cap, "bytes"), "is too small: the GPUs needed cannot be counted",
                         "give the memory of one GPU, e.g. 80GB")
    return int(math.ceil(ratio - 1e-9))


def training_fit(r: Report, req: MemoryRequest, static: float, cap: float, m: ModelSpec | None) -> None:
    """Does the static training state, fully sharded over --gpus, fit in their usable memory?"""
    r.assume("usable", req.usable, "fraction of memory left for state after buffers and fragmentation",
             unit="fraction", basis=basis_of(req, "usable"))
    n_min = _gpu_count(mem.min_gpus_for_state(static, memory_bytes=cap, usable=req.usable), cap)
    r.step("min_gpus_for_state", "ceil(static_bytes / (memory · usable)), fully sharded", value=n_min, unit="count",
           static_bytes=(static, "bytes"), memory=(cap, "bytes"), usable=req.usable)
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


# --------------------------------------------------------------------------------- roofline
class RooflineRequest(S, kw_only=True, forbid_unknown_fields=True):
    gpu: Annotated[str | None, field("name", "accelerator")] = None
    precision: Annotated[str, field("precision", "compute precision")] = "bf16"
    intensity: Annotated[float | None, field("number", "arithmetic intensity, FLOP per byte moved", gt=0, unit="FLOP/B")] = None
    peak: Annotated[float | None, field("flops_per_s", "dense peak (instead of the catalog's)", gt=0)] = None
    bandwidth: Annotated[float | None, field("bytes_per_s", "memory bandwidth (instead of the catalog's)", gt=0)] = None


def run_roofline(req: RooflineRequest) -> Report:
    g = gpu_or_none(req.gpu)
    r = Report("Roofline" + (f": {g.name} {req.precision}" if g else ""), command="roofline")
    peak = peak_of(r, g, req.precision, req.peak)
    if req.bandwidth is not None:
        bw = req.bandwidth
    elif g is not None:
        bw = g.memory_bytes_per_s
    else:
        raise InputError("bandwidth", "nothing", "is required", "give --gpu NAME or --bandwidth 3.35TB/s")
    r.set("dense_flops_per_s", peak, "flops_per_s")
    r.set("memory_bytes_per_s", bw, "bytes_per_s")
    ridge = r.step("ridge_flops_per_byte", "peak / bandwidth", value=roof.ridge_flops_per_byte(peak, memory_bytes_per_s=bw),
                   unit="number", peak=(peak, "flops_per_s"), bandwidth=(bw, "bytes_per_s"))
    if req.intensity is not None:
        att = r.step("attainable_flops_per_s", "min(peak, intensity · bandwidth)",
                     value=float(roof.attainable_flops_per_s(req.intensity, dense_flops_per_s=peak, memory_bytes_per_s=bw)),
                     unit="flops_per_s", intensity=req.intensity, bandwidth=(bw, "bytes_per_s"), peak=(peak, "flops_per_s"))
        r.step("fraction_of_peak", "attainable / peak", value=att / peak, unit="fraction")
        bound = "memory" if req.intensity < ridge else "compute"
        r.set("bound", bound)
        if bound == "memory":
            r.note("memory-bound by construction: the fix is fewer bytes (fusion, quantisation) or more FLOPs "
                   "per byte (batching), not more threads")
    return r


ROOFLINE = Calculator("roofline", RooflineRequest, run_roofline, "Roofline",
                      "Ridge point, attainable FLOP/s and which roof binds at an intensity.",
                      establishes="the ceiling a kernel of this intensity can reach",
                      needs_measuring="achieved FLOP/s and bytes of the real kernel, from a profiler")


# -------------------------------------------------------------------------------------- mfu
class MfuRequest(S, kw_only=True, forbid_unknown_fields=True):
    params: Annotated[float | None, field("count", "model parameters N", gt=0)] = None
    model: Annotated[str | None, field("name", "catalog model (instead of --params)")] = None
    tokens_per_step: Annotated[float, field("count", "tokens per optimiser step (4M = 4e6; 4Mi = 4·2^20)", gt=0)]
    step_time: Annotated[float, field("seconds", "wall time of one step", gt=0)]
    gpus: Annotated[int, field("int", "GPUs in the job", gt=0)]
    gpu: Annotated[str | None, field("name", "accelerator")] = None
    precision: Annotated[str, field("precision", "training precision")] = "bf16"
    peak: Annotated[float | None, field("flops_per_s", "dense peak per GPU (instead of the catalog's)", gt=0)] = None
    recompute: Annotated[bool, field("bool", "full activation recomputation is on: report HFU beside MFU")] = False


def run_mfu(req: MfuRequest) -> Report:
    m = model_or_none(req.model)
    g = gpu_or_none(req.gpu)
    r = Report("MFU", command="mfu")
    n = resolve_params(r, m, req.params, active=True)
    peak = peak_of(r, g, req.precision, req.peak)
    fpt = r.step("flops_per_token", "6 · N", value=flops.train_flops_per_token(n), unit="flops", N=(n, "count"))
    step_flops = fpt * req.tokens_per_step
    needed = step_flops / req.step_time
    avail = req.gpus * peak
    mfu = needed / avail if math.isfinite(avail) else math.nan
    if not (math.isfinite(mfu) and mfu > 0):
        raise _mfu_not_finite(req, n, peak, fpt, step_flops, needed, avail)
    r.step("model_flops_per_s", "flops_per_token · tokens_per_step / step_time", value=needed, unit="flops_per_s",
           tokens_per_step=(req.tokens_per_step, "count"), step_time=(req.step_time, "seconds"))
    r.step("available_flops_per_s", "gpus · peak", value=avail, unit="flops_per_s", gpus=req.gpus,
           peak=(peak, "flops_per_s"))
    r.step("mfu", "model_flops_per_s / available_flops_per_s", value=mfu, unit="fraction")
    if mfu > 1:
        r.warn("mfu-above-one",
               f"MFU {fmt(mfu, 'fraction')} is above 100%: the model's arithmetic ({fmt(needed, 'flops_per_s')}) "
               f"exceeds every FLOP the {req.gpus:,} GPUs could do at the {fmt(peak, 'flops_per_s')} dense "
               f"{req.precision} peak ({fmt(avail, 'flops_per_s')}). Likely: the step time is too short (time the "
               f"whole optimiser step, not one micro-batch), tokens per step too large (the global batch, counted "
               f"once), too few GPUs counted (--gpus is every GPU in the job), or the peak too low (the wrong "
               f"precision: an fp8 run against the bf16 peak, or a hand-typed peak)")
    elif req.recompute and mfu * 8 / 6 > 1:
        r.warn("mfu-above-one", f"HFU {fmt(mfu * 8 / 6, 'fraction')} is above 100%: with full recomputation the "
                                "hardware would do more than its dense peak; check the step time, tokens per step, "
                                "GPU count and precision")
    t = req.tokens_per_step
    if t % MEGA == 0:
        alt = t / MEGA * MEBI
        r.note(f"tokens_per_step read as {fmt(t, 'count')} = {t:,.0f} (decimal M); if it meant {t / MEGA:g}Mi = "
               f"{alt:,.0f} tokens, MFU would be {mfu * alt / t:.3f}")
    elif t % MEBI == 0:
        alt = t / MEBI * MEGA
        r.note(f"tokens_per_step read as {t / MEBI:g}Mi = {t:,.0f} (binary); if it meant {alt:,.0f}, "
               f"MFU would be {mfu * alt / t:.3f}")
    if req.recompute:
        r.step("hfu", "mfu · 8 / 6  (recompute adds one forward pass: 2N more per token)",
               value=mfu * 8 / 6, unit="fraction")
        r.warn("hfu-not-mfu", "HFU counts recomputed activations; report MFU, which counts only the model's FLOPs")
    else:
        r.note("MFU counts model FLOPs only; with activation recomputation the hardware does more (HFU), "
               "which must not be reported as MFU")
    return r


def _mfu_not_finite(req: MfuRequest, n: float, peak: float, fpt: float, step_flops: float, needed: float,
                    avail: float) -> InputError:
    """The input that pushed MFU past what a float holds (or to zero), named with its fix."""
    if not math.isfinite(fpt):
        return InputError("params", fmt(n, "count"), "is too large: 6 · N passes 1.8e308 FLOPs, beyond a float",
                          "give the parameter count, e.g. 70B")
    if not math.isfinite(step_flops):
        return InputError("tokens_per_step", fmt(req.tokens_per_step, "count"), "is too large: 6 · N · tokens passes "
                          "1.8e308 FLOPs, beyond a float", "give the global batch in tokens, e.g. 4M")
    if not math.isfinite(needed):
        return InputError("step_time", fmt(req.step_time, "seconds"), "is too short: the model FLOP/s it implies "
                          "passes 1.8e308, beyond a float", "give the measured wall time of one optimiser step, e.g. 2.07s")
    if not math.isfinite(avail):
        what = "peak" if req.peak is not None else "gpus"
        return InputError(what, fmt(peak, "flops_per_s") if what == "peak" else f"{req.gpus:,}",
                          "is too large: gpus · peak passes 1.8e308 FLOP/s, beyond a float",
                          "give the job's GPU count and one GPU's dense peak")
    return InputError("step_time", fmt(req.step_time, "seconds"), "is too long: MFU comes out as 0 (below the "
                      "smallest float)", "give the measured wall time of one optimiser step, e.g. 2.07s")


MFU = Calculator("mfu", MfuRequest, run_mfu, "MFU",
                 "Model FLOPs utilisation from a measured step time (HFU beside it with --recompute).",
                 establishes="the fraction of dense peak the run turns into model arithmetic",
                 needs_measuring="nothing more if the step time is measured; never use hardware activity counters")


# -------------------------------------------------------------------------------- allreduce
class AllreduceRequest(S, kw_only=True, forbid_unknown_fields=True):
    size: Annotated[float, field("bytes", "buffer to all-reduce (e.g. the gradients)", gt=0)]
    ranks: Annotated[int, field("int", "ranks in the ring", ge=2)]
    link: Annotated[str | None, field("name", "GPU whose scale-up link to use (NVLink rating from the catalog)")] = None
    link_bandwidth: Annotated[float | None, field("bytes_per_s", "link bandwidth by hand", gt=0)] = None
    bidirectional: Annotated[bool, field("bool", "--link-bandwidth is a bidirectional rating (halved per direction)")] = False
    unidirectional: Annotated[bool, field("bool", "--link-bandwidth is per direction")] = False
    latency: Annotated[float, field("seconds", "per-step latency of the collective", ge=0)] = 0.0
    calibration: Annotated[str | None, field("path", "calibration from `napkin measure --collectives`: its measured "
                                                     "all-reduce bus bandwidth as the link")] = None


def run_allreduce(req: AllreduceRequest) -> Report:
    r = Report("Ring all-reduce", command="allreduce")
    if req.link_bandwidth is not None:
        if req.bidirectional == req.unidirectional:
            raise InputError("link_bandwidth", fmt(req.link_bandwidth, "bytes_per_s"), "needs its direction stated",
                             "add --bidirectional (a rating like NVLink's 900 GB/s) or --unidirectional")
        one_way = req.link_bandwidth / 2 if req.bidirectional else req.link_bandwidth
        if req.bidirectional:
            r.step("link_bytes_per_s_per_direction", "bidirectional rating / 2", value=one_way, unit="bytes_per_s",
                   rating=(req.link_bandwidth, "bytes_per_s"))
        else:
            r.set("link_bytes_per_s_per_direction", one_way, "bytes_per_s")
    elif req.calibration is not None:
        from napkin.calibration import load

        cal = load(req.calibration)
        hit = cal.allreduce_bus_at(req.size)
        if hit is None:
            raise InputError("calibration", req.calibration, "has no all-reduce figures",
                             "add them with `torchrun --nproc-per-node N -m napkin.measure --collectives --save FILE`")
        label, one_way = hit
        r.set("link_bytes_per_s_per_direction", one_way, "bytes_per_s")
        r.assume("link_bytes_per_s_per_direction", one_way, f"{cal.label}: all-reduce bus bandwidth at {label} "
                 f"{cal.allreduce_setup}; it includes that size's latency",
                 unit="bytes_per_s", basis="measured")
        if cal.allreduce_ranks and cal.allreduce_ranks != req.ranks:
            r.warn("calibration-ranks", f"the bus bandwidth was measured over {cal.allreduce_ranks} ranks, not "
                                        f"{req.ranks}; bus bandwidth changes with the group's size and the links it crosses")
        for code, message in cal.fit_warnings(uses="its all-reduce bandwidth"):
            r.warn(code, message)
    elif req.link is not None:
        g = catalog.gpu(req.link, "link")
        if g.link_bytes_per_s_bidirectional is None:
            raise InputError("link", req.link, "has no scale-up link in the catalog", "give --link-bandwidth")
        one_way = r.step("link_bytes_per_s_per_direction", "bidirectional rating / 2",
                         value=g.link_bytes_per_s_bidirectional / 2, unit="bytes_per_s",
                         rating=(g.link_bytes_per_s_bidirectional, "bytes_per_s"), link=g.link_name or g.name)
        r.set("scale_up_domain", g.scale_up_domain, "count")
        if req.ranks > g.scale_up_domain:
            warn_beyond_scale_up(r, g, req.ranks, one_way)
    else:
        raise InputError("link", "nothing", "is required", "give --link GPU or --link-bandwidth X --bidirectional")
    per_rank = r.step("bytes_per_rank", "2 · (n − 1) / n · buffer",
                      value=comm.ring_allreduce_bytes_per_rank(req.size, n_ranks=req.ranks), unit="bytes",
                      n=req.ranks, buffer=(req.size, "bytes"))
    r.step("seconds", "bytes_per_rank / one-direction bandwidth + 2 · (n − 1) · latency",
           value=comm.allreduce_seconds(per_rank, link_bytes_per_s_per_direction=one_way, n_ranks=req.ranks,
                                        latency_s=req.latency),
           unit="seconds", bandwidth=(one_way, "bytes_per_s"), latency=(req.latency, "seconds"))
    r.note("each rank sends bytes_per_rank and receives as many; the volume per rank tends to 2 × buffer and "
           "does not shrink with more ranks")
    if req.latency == 0:
        r.assume("latency", 0.0, "no per-step latency: bandwidth only (a floor)", unit="seconds")
    return r


# One 400 Gb/s NIC per GPU (ConnectX-7 on an HGX H100 node): 50 GB/s each way, as serving prices TP across nodes.
NIC_EXAMPLE_BYTES_PER_S = SCALE_OUT_BYTES_PER_S_PER_GPU


def warn_beyond_scale_up(r: Report, g: Accelerator, ranks: int, one_way: float) -> None:
    """A ring over more ranks than share the scale-up link runs at the slowest link it crosses."""
    d = g.scale_up_domain
    link = g.link_name or "scale-up link"
    if d == 1:
        r.warn("beyond-scale-up-domain",
               f"the {g.name} has no scale-up link: the {ranks} ranks' ring crosses {link} at "
               f"{fmt(one_way, 'bytes_per_s')} per direction (the figure used here) inside a server, and the "
               f"scale-out NIC between servers, whichever is slower (a 400 Gb/s NIC is "
               f"{fmt(NIC_EXAMPLE_BYTES_PER_S, 'bytes_per_s')} each way); give the slowest with --link-bandwidth X "
               f"--unidirectional")
        return
    if g.vendor == "Google":
        slow = ("the data-center network (DCN) between slices, far slower than ICI; give its per-chip rate with "
                "--link-bandwidth X --unidirectional")
    else:
        slow = (f"the scale-out NIC or PCIe (one 400 Gb/s NIC per GPU is {fmt(NIC_EXAMPLE_BYTES_PER_S, 'bytes_per_s')} "
                f"each way, {one_way / NIC_EXAMPLE_BYTES_PER_S:.0f}x below the {fmt(one_way, 'bytes_per_s')} used here: "
                f"--link-bandwidth {fmt(NIC_EXAMPLE_BYTES_PER_S, 'bytes_per_s').replace(' ', '')} --unidirectional)")
    r.warn("beyond-scale-up-domain",
           f"{ranks} ranks exceed the {g.name}'s scale-up domain of {d} {'chips' if g.vendor == 'Google' else 'GPUs'} "
           f"({link}, "
           f"{fmt(one_way, 'bytes_per_s')} per direction): a ring over more ranks runs at its slowest link, {slow}")


ALLREDUCE = Calculator("allreduce", AllreduceRequest, run_allreduce, "All-reduce",
                       "Ring all-reduce bytes per rank and time over one direction of a link.",
                       establishes="the bandwidth floor of a ring all-reduce",
                       needs_measuring="achieved bus bandwidth, from nccl-tests or `napkin measure --collectives`")
