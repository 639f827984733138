"""The napkin rules of seed 004 as calculators: model, memory, roofline, mfu, allreduce."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import comm, flops, memory as mem, roofline as roof
from napkin.hardware import Accelerator, bytes_per_value
from napkin.model import ModelSpec
from napkin.request import field
from napkin.units import GIBI, KIBI, KILO, MEBI, MEGA
from napkin.units import format as fmt

S = msgspec.Struct


# ------------------------------------------------------------------ helpers shared by calculators
def resolve_params(report: Report, model: ModelSpec | None, params: float | None, *, active: bool = False) -> float:
    """N from --params or the model's computed count; recorded in the report."""
    if params is not None:
        report.set("params", params, "count")
        if model is not None and abs(params - model.params) / model.params > 0.01:
            report.warn("params-mismatch", f"--params {params:.4g} differs from {model.name}'s computed {model.params:.4g}; using --params")
        return params
    if model is None:
        raise InputError("model", "nothing", "is required", "give --model NAME|PATH or --params N")
    report.set("params", model.params, "count")
    if model.is_moe:
        report.set("active_params", model.active_params, "count")
    return model.active_params if active else model.params


def peak_of(report: Report, gpu: Accelerator | None, precision: str, given: float | None,
            field_name: str = "peak") -> float:
    """Dense peak FLOP/s: given by hand (checked against sparse figures) or from the catalog."""
    if given is not None:
        warn_if_sparse(report, given, precision)
        report.assume("dense_flops_per_s", given, "given by hand", unit="flops_per_s", basis="given")
        return given
    if gpu is None:
        raise InputError("gpu", "nothing", "is required", f"give --gpu NAME or --{field_name} FLOP/S")
    value = gpu.peak(precision)
    report.assume("dense_flops_per_s", value, f"{gpu.name} dense {precision} peak ({gpu.source})",
                  unit="flops_per_s", basis="catalog")
    return value


def warn_if_sparse(report: Report, peak: float, precision: str) -> None:
    """Warn when a hand-typed peak equals some part's sparse (2:4) datasheet figure."""
    for g in catalog.gpus().values():
        sparse = g.sparse_peak(precision) if g.supports(precision) else None
        if sparse and abs(peak - sparse) / sparse < 0.01:
            report.warn("sparse-peak",
                        f"the peak given ({fmt(peak, 'flops_per_s')}) equals the {g.name}'s {precision} figure "
                        f"with 2:4 sparsity; its dense peak is {fmt(g.peak(precision), 'flops_per_s')}, and a "
                        f"dense run never reaches the sparse one (using it halves the predicted time and the reported MFU)")
            return


def model_or_none(name: str | None, field_name: str = "model") -> ModelSpec | None:
    return catalog.model(name, field_name) if name else None


def gpu_or_none(name: str | None, field_name: str = "gpu") -> Accelerator | None:
    return catalog.gpu(name, field_name) if name else None


# ------------------------------------------------------------------------------------ model
class ModelRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog name or path to a Hugging Face config.json", positional=True)]
    precision: Annotated[str, field("precision", "precision of weights and KV cache")] = "bf16"


def run_model(req: ModelRequest) -> Report:
    m = catalog.model(req.model)
    r = Report(f"{m.name}", command="model")
    b = bytes_per_value(req.precision)
    r.set("name", m.name)
    for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size"):
        r.set(k, getattr(m, k))
    r.set("attention", m.attention)
    if m.attention == "mla":
        r.set("kv_lora_rank", m.kv_lora_rank)
        r.set("qk_rope_head_dim", m.qk_rope_head_dim)
    if m.is_moe:
        r.set("n_experts", m.n_experts)
        r.set("n_active_experts", m.n_active_experts)
        r.set("n_shared_experts", m.n_shared_experts)
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
    kv_step(r, m, b, req.precision)
    r.set("source", m.source)
    if m.note:
        r.note(m.note)
    return r


def kv_step(r: Report, m: ModelSpec, b: float, precision: str) -> float:
    """Record kv_bytes_per_token for a model (GQA or MLA) and return it."""
    if m.attention == "mla":
        return r.step("kv_bytes_per_token", "L · (kv_lora_rank + rope_dim) · bytes  (MLA: one latent, no factor 2)",
                      value=mem.kv_bytes_per_token_mla(m.n_layers, kv_lora_rank=m.kv_lora_rank,
                                                       qk_rope_head_dim=m.qk_rope_head_dim, bytes_per_value=b),
                      unit="bytes", L=m.n_layers, kv_lora_rank=m.kv_lora_rank, rope_dim=m.qk_rope_head_dim,
                      bytes=b, precision=precision)
    return r.step("kv_bytes_per_token", "2 · L · h_kv · d_h · bytes",
                  value=mem.kv_bytes_per_token(m.n_layers, n_kv_heads=m.n_kv_heads, head_dim=m.head_dim,
                                               bytes_per_value=b),
                  unit="bytes", L=m.n_layers, h_kv=m.n_kv_heads, d_h=m.head_dim, bytes=b, precision=precision)


MODEL = Calculator("model", ModelRequest, run_model, "Model",
                   "Architecture, parameters (total and active) and KV bytes per token of a model.")


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


def run_memory(req: MemoryRequest) -> Report:
    m = model_or_none(req.model)
    g = gpu_or_none(req.gpu)
    r = Report("Memory" + (f": {m.name}" if m else ""), command="memory")
    n = resolve_params(r, m, req.params)
    b = bytes_per_value(req.precision, "precision")
    w = r.step("weights_bytes", "N · bytes_per_param", value=mem.weights_bytes(n, bytes_per_param=b),
               unit="bytes", N=(n, "count"), bytes_per_param=b, precision=req.precision)
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
        kv = r.step("kv_total_bytes", "kv_bytes_per_token · context · sequences",
                    value=mem.kv_total_bytes(kv_tok, context_tokens=req.context, n_sequences=req.sequences),
                    unit="bytes", context=(req.context, "count"), sequences=req.sequences)
        if req.context % KILO == 0 and req.context % KIBI != 0:
            r.note(f"context read as {req.context:,.0f} tokens (k = 1,000); write {req.context / KILO:g}Ki for "
                   f"{req.context / KILO * KIBI:,.0f}")
        if abs(kv / GIBI - round(kv / GIBI)) < 1e-9 and kv >= GIBI:
            r.note(f"kv_total_bytes is exactly {round(kv / GIBI)} GiB ({fmt(kv, 'bytes')}): GB and GiB differ by 7%")
        total = w + kv
    if req.training:
        static = r.step("training_static_bytes", "N · 16  (bf16 weights 2 + grads 2 + fp32 master 4 + Adam m 4 + v 4)",
                        value=mem.training_static_bytes(n), unit="bytes", N=(n, "count"))
        r.set("training_bytes_per_param", dict(mem.TRAINING_BYTES_PER_PARAM))
        r.note("activations are extra: they scale with batch × sequence × hidden × layers")
        cap = req.memory if req.memory is not None else (g.memory_bytes if g else None)
        if cap is not None:
            r.step("min_gpus_for_state", "ceil(static_bytes / (memory · usable)), fully sharded",
                   value=mem.min_gpus_for_state(static, memory_bytes=cap, usable=req.usable), unit="count",
                   static_bytes=(static, "bytes"), memory=(cap, "bytes"), usable=req.usable)
            r.assume("usable", req.usable, "fraction of memory left for state after buffers and fragmentation",
                     unit="fraction")
    cap = req.memory if req.memory is not None else (g.memory_bytes if g else None)
    if cap is not None and not req.training:
        capacity = r.step("capacity_bytes", "gpus · memory_per_gpu", value=req.gpus * cap, unit="bytes",
                          gpus=req.gpus, memory_per_gpu=(cap, "bytes"))
        r.step("needed_bytes", "weights + kv_total", value=total, unit="bytes")
        fits = total <= capacity
        r.set("fits", fits)
        if fits:
            r.step("free_bytes", "capacity − needed", value=capacity - total, unit="bytes")
        else:
            r.step("short_by_bytes", "needed − capacity", value=total - capacity, unit="bytes")
            need = -(-total // cap)
            r.set("gpus_needed", int(need))
        r.note("weights + KV only: activations, CUDA context and fragmentation take a few GB more per GPU")
    return r


MEMORY = Calculator("memory", MemoryRequest, run_memory, "Memory",
                    "Weights, KV cache and training state, and whether they fit on the GPUs.",
                    establishes="bytes of weights, cache and optimiser state; whether they fit",
                    needs_measuring="activation memory and framework overhead, from a profiler on the real batch")


# --------------------------------------------------------------------------------- roofline
class RooflineRequest(S, kw_only=True, forbid_unknown_fields=True):
    gpu: Annotated[str | None, field("name", "accelerator")] = None
    precision: Annotated[str, field("precision", "compute precision")] = "bf16"
    intensity: Annotated[float | None, field("number", "arithmetic intensity, FLOP per byte moved", gt=0)] = None
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
    needed = r.step("model_flops_per_s", "flops_per_token · tokens_per_step / step_time",
                    value=fpt * req.tokens_per_step / req.step_time, unit="flops_per_s",
                    tokens_per_step=(req.tokens_per_step, "count"), step_time=(req.step_time, "seconds"))
    avail = r.step("available_flops_per_s", "gpus · peak", value=req.gpus * peak, unit="flops_per_s",
                   gpus=req.gpus, peak=(peak, "flops_per_s"))
    r.step("mfu", "model_flops_per_s / available_flops_per_s", value=needed / avail, unit="fraction")
    t = req.tokens_per_step
    if t % MEGA == 0:
        alt = t / MEGA * MEBI
        r.note(f"tokens_per_step read as {fmt(t, 'count')} = {t:,.0f} (decimal M); if it meant {t / MEGA:g}Mi = "
               f"{alt:,.0f} tokens, MFU would be {needed / avail * alt / t:.3f}")
    elif t % MEBI == 0:
        alt = t / MEBI * MEGA
        r.note(f"tokens_per_step read as {t / MEBI:g}Mi = {t:,.0f} (binary); if it meant {alt:,.0f}, "
               f"MFU would be {needed / avail * alt / t:.3f}")
    if req.recompute:
        r.step("hfu", "mfu · 8 / 6  (recompute adds one forward pass: 2N more per token)",
               value=needed / avail * 8 / 6, unit="fraction")
        r.warn("hfu-not-mfu", "HFU counts recomputed activations; report MFU, which counts only the model's FLOPs")
    else:
        r.note("MFU counts model FLOPs only; with activation recomputation the hardware does more (HFU), "
               "which must not be reported as MFU")
    return r


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
                 f"over {cal.allreduce_ranks} ranks ({cal.allreduce_backend}); it includes that size's latency",
                 unit="bytes_per_s", basis="measured")
        if cal.allreduce_ranks and cal.allreduce_ranks != req.ranks:
            r.warn("calibration-ranks", f"the bus bandwidth was measured over {cal.allreduce_ranks} ranks, not "
                                        f"{req.ranks}; bus bandwidth changes with the group's size and the links it crosses")
    elif req.link is not None:
        g = catalog.gpu(req.link, "link")
        if g.link_bytes_per_s_bidirectional is None:
            raise InputError("link", req.link, "has no scale-up link in the catalog", "give --link-bandwidth")
        one_way = r.step("link_bytes_per_s_per_direction", "bidirectional rating / 2",
                         value=g.link_bytes_per_s_bidirectional / 2, unit="bytes_per_s",
                         rating=(g.link_bytes_per_s_bidirectional, "bytes_per_s"), link=g.link_name or g.name)
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


ALLREDUCE = Calculator("allreduce", AllreduceRequest, run_allreduce, "All-reduce",
                       "Ring all-reduce bytes per rank and time over one direction of a link.",
                       establishes="the bandwidth floor of a ring all-reduce",
                       needs_measuring="achieved bus bandwidth, from nccl-tests or `napkin measure --collectives`")
