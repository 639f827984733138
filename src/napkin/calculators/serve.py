"""Serving one model on one replica: memory fit, prefill (TTFT), decode (TPOT), cost per token.

The two halves of inference (seeds 003 and 004): prefill reads the prompt in one
compute-bound pass; decode re-reads the active weights and every sequence's KV cache for
each new token, so it is bound by memory bandwidth until the batch is large enough for
the FLOPs to catch up. Tensor parallelism splits weights and KV over the replica's GPUs
and pays two all-reduces per layer per step; pipeline stages (GPUs beyond the TP degree)
add memory, not speed. Speculative decoding and an optimisation waterfall ride on top.

Every figure is a Report step; the formulas live in :mod:`napkin.formulas.serving`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators.basics import kv_held, kv_step
from napkin.derivation import Report
from napkin.errors import InputError, NapkinError
from napkin.formulas import cost as costf
from napkin.formulas import memory as mem
from napkin.formulas import serving as sv
from napkin.hardware import COMPUTE_FALLBACK, Accelerator, bytes_per_value
from napkin.model import ModelSpec
from napkin.request import basis_of, field
from napkin.units import HOUR, MILLION
from napkin.units import format as _fmt

S = msgspec.Struct

DEFAULT_MFU = 0.4
DEFAULT_BANDWIDTH_EFFICIENCY = 0.8
DEFAULT_ACCEPTANCE = 0.7
DEFAULT_ALLREDUCE_LATENCY_S = 10e-6  # 10 µs: order of an NCCL small-message all-reduce on NVLink
LONG_CONTEXT_SHARE = 0.10  # warn when attention adds more than this to the 2N prefill
CONVENTIONS = ("2N", "causal", "full")
# request fields a waterfall step may change (the workload itself stays fixed)
WATERFALL_KNOBS = ("batch", "precision", "kv_precision", "tp", "gpus", "gpu", "cached_prefix", "draft",
                   "draft_tokens", "acceptance", "mfu", "bandwidth_efficiency", "allreduce_latency", "price")


class ServeRequest(S, kw_only=True, forbid_unknown_fields=True):
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
    mfu: Annotated[float | None, field("fraction", f"fraction of dense peak prefill sustains (default {DEFAULT_MFU})")] = None
    bandwidth_efficiency: Annotated[float | None, field(
        "fraction", f"fraction of memory bandwidth decode sustains (default {DEFAULT_BANDWIDTH_EFFICIENCY})")] = None
    allreduce_latency: Annotated[float, field("seconds", "fixed cost of one tensor-parallel all-reduce",
                                              ge=0)] = DEFAULT_ALLREDUCE_LATENCY_S
    usable: Annotated[float, field("fraction", "fraction of GPU memory for weights and KV")] = 0.9
    convention: Annotated[str, field("choice", "FLOPs convention: 2N (no attention), causal or full",
                                     choices=CONVENTIONS)] = "causal"
    price: Annotated[float | None, field("usd_per_hour", "price of one GPU-hour (no price: no $ figures)",
                                         gt=0)] = None
    utilization: Annotated[float | None, field("fraction", "fraction of the hour the replica is generating "
                                                          "(default 1: every hour busy)")] = None
    draft: Annotated[str | None, field("name", "draft model for speculative decoding")] = None
    draft_tokens: Annotated[int, field("int", "tokens the draft proposes per verification", gt=0, le=64)] = 4
    acceptance: Annotated[float | None, field("fraction", "probability the target accepts a drafted token "
                                                         "(default 0.7)", ge=0, le=1)] = None
    scale_out_bandwidth: Annotated[float | None, field(
        "bytes_per_s", "per-GPU bandwidth, one direction, of a TP all-reduce that spans more GPUs than the "
        "scale-up domain (default 50 GB/s: one 400 Gb/s NIC per GPU)", gt=0)] = None
    waterfall: Annotated[list[str], field(
        "text", "NAME=VALUE changes applied one at a time, in order, to this workload (a knob may repeat): "
                "batch=64,precision=fp8,tp=2,...",
        example="batch=64,precision=fp8,tp=2,cached-prefix=900,draft=llama-3.2-1b")] = []
    calibration: Annotated[str | None, field("path", "calibration TOML from `napkin measure` (measured efficiencies)")] = None


# ------------------------------------------------------------------------------ set-up
@dataclass
class Setup:
    """Everything resolved from a request before any figure is computed."""

    m: ModelSpec
    g: Accelerator
    gpus: int
    tp: int
    pp: int
    precision: str
    compute_precision: str
    b_w: float
    b_kv: float
    peak: float
    bw: float
    link: float
    mfu: float
    bw_eff: float
    allreduce_latency: float = 0.0


def compute_precision_for(g: Accelerator, precision: str) -> str:
    """The precision the matmuls run at: the weights' own, else the fallback chain (int4 -> bf16)."""
    p = precision
    seen = set()
    while not g.supports(p):
        seen.add(p)
        nxt = COMPUTE_FALLBACK.get(p)
        if nxt is None or nxt in seen:
            raise InputError("precision", precision, f"has no compute precision on the {g.name}",
                             "its dense peaks are at " + ", ".join(g.dense_flops_per_s))
        p = nxt
    return p


def d_attn_of(m: ModelSpec) -> float:
    """Width of the attention products per token: h · d_h (MLA: h · (qk + v) / 2)."""
    if m.attention == "mla":
        return m.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2.0
    return float(m.n_heads * m.head_dim)


def window_of(m: ModelSpec) -> dict[str, float]:
    """The sliding window of ``m`` as the attention-FLOPs formulas take it: W (∞ when none) and L_w."""
    return {"window_tokens": m.window_tokens, "window_layers": float(m.n_sliding_layers)}


def moe_split(m: ModelSpec) -> tuple[float, float]:
    """(shared params, routed-expert params in total): shared + routed · k/E = active."""
    if not m.is_moe:
        return m.params, 0.0
    e, k = m.n_experts, m.n_active_experts
    routed = (m.params - m.active_params) * e / (e - k)
    return m.params - routed, routed


def parallelism(req_gpus: int | None, req_tp: int | None, m: ModelSpec) -> tuple[int, int, int]:
    """(gpus, tp, pp) from --gpus/--tp, with clear errors for impossible layouts."""
    gpus = req_gpus if req_gpus is not None else (req_tp if req_tp is not None else 1)
    tp = req_tp if req_tp is not None else gpus
    if tp > gpus:
        raise InputError("tp", tp, f"exceeds the GPUs of the replica ({gpus})",
                         f"use --tp at most {gpus}, or raise --gpus to {tp}")
    if gpus % tp:
        raise InputError("gpus", gpus, f"is not a multiple of --tp {tp}",
                         "GPUs beyond the TP degree form pipeline stages: give gpus = tp x stages")
    if m.n_heads % tp:
        divisors = [d for d in (1, 2, 4, 8, 16, 32, 64) if m.n_heads % d == 0 and d <= m.n_heads]
        raise InputError("tp", tp, f"does not divide the {m.n_heads} attention heads of {m.name}",
                         "use one of " + ", ".join(map(str, divisors)))
    pp = gpus // tp
    if pp > m.n_layers:
        raise InputError("gpus", gpus, f"gives {pp} pipeline stages for {m.n_layers} layers",
                         "use at most one stage per layer")
    return gpus, tp, pp


def setup(req: ServeRequest, r: Report) -> Setup:
    m = catalog.model(req.model)
    g = catalog.gpu(req.gpu)
    gpus, tp, pp = parallelism(req.gpus, req.tp, m)
    b_w = bytes_per_value(req.precision)
    b_kv = bytes_per_value(req.kv_precision, "kv_precision")
    cp = compute_precision_for(g, req.precision)
    if cp != req.precision:
        r.note(f"the {g.name} has no {req.precision} tensor-core peak: {req.precision} weights are dequantised and "
               f"multiplied at {cp}, so compute uses the {cp} peak")
    peak = g.peak(cp)
    link = g.link_bytes_per_s_per_direction
    if tp > 1 and link is None:
        raise InputError("tp", tp, f"needs a scale-up link, and the {g.name} has none in the catalog",
                         "use --tp 1 (pipeline stages only)")
    mfu, bw_eff = efficiencies(req, g, cp, r)
    r.assume("dense_flops_per_s", peak, f"{g.name} dense {cp} peak ({g.source})", unit="flops_per_s",
             basis="catalog")
    r.assume("memory_bytes_per_s", g.memory_bytes_per_s, f"{g.name} HBM bandwidth (catalog)", unit="bytes_per_s",
             basis="catalog")
    if link is not None and tp > 1 and req.calibration:
        link = measured_link(req, m, tp, link, r)
    if link is not None:  # a TP group beyond the scale-up domain crosses the scale-out network
        link = float(sv.tp_link_bytes_per_s(tp, scale_up_domain=g.scale_up_domain, link_bytes_per_s_per_direction=link,
                                            scale_out_bytes_per_s_per_gpu=scale_out_of(req)))
    return Setup(m, g, gpus, tp, pp, req.precision, cp, b_w, b_kv, peak, g.memory_bytes_per_s,
                 link if link is not None else math.inf, mfu, bw_eff, req.allreduce_latency)


def measured_link(req: ServeRequest, m: ModelSpec, tp: int, link: float, r: Report) -> float:
    """The TP all-reduce link from a calibration's measured bus bandwidth (`torchrun -m napkin.measure
    --collectives`), at the measured message size nearest a decode step's all-reduce; else the catalog's."""
    from napkin.calibration import load

    cal = load(req.calibration)
    message = req.batch * m.d_model * sv.ACTIVATION_BYTES
    hit = cal.allreduce_bus_at(message)
    if hit is None:
        r.note("the calibration has no all-reduce figures; the TP link stays the catalog's")
        return link
    label, bus = hit
    r.assume("link_bytes_per_s_per_direction", bus, f"{cal.label}: all-reduce bus bandwidth at {label} "
             f"{cal.allreduce_setup}, nearest a decode all-reduce of "
             f"{_fmt(message, 'bytes')}; it includes that size's latency", unit="bytes_per_s", basis="measured")
    if cal.allreduce_ranks and cal.allreduce_ranks != tp:
        r.warn("calibration-ranks", f"the bus bandwidth was measured over {cal.allreduce_ranks} ranks, not the "
                                    f"TP degree {tp}")
    return bus


def scale_out_of(req: Any) -> float:
    """The per-GPU scale-out bandwidth a TP all-reduce gets beyond the scale-up domain: given or assumed."""
    return req.scale_out_bandwidth if req.scale_out_bandwidth is not None else sv.SCALE_OUT_BYTES_PER_S_PER_GPU


def beyond_scale_up(r: Report, s: Setup, req: ServeRequest) -> bool:
    """Record the all-reduce link of a TP group larger than the scale-up domain; True when it is slower."""
    g = s.g
    link = g.link_bytes_per_s_per_direction
    if link is None or s.tp <= g.scale_up_domain or s.link >= link:
        return False
    r.assume("scale_out_bandwidth", scale_out_of(req),
             "per GPU, one direction, beyond the scale-up domain" + (
                 "" if req.scale_out_bandwidth is not None else
                 ": one 400 Gb/s NIC per GPU (NVIDIA DGX H100 User Guide, Network Modules: eight ConnectX-7 "
                 "InfiniBand NDR ports, one per GPU)"),
             unit="bytes_per_s", basis="given" if req.scale_out_bandwidth is not None else "assumed")
    r.step("tp_link_bytes_per_s", "min(scale-up link, scale-out per GPU), since tp > scale_up_domain", value=s.link,
           unit="bytes_per_s", tp=s.tp, scale_up_domain=g.scale_up_domain, link=(link, "bytes_per_s"),
           scale_out=(scale_out_of(req), "bytes_per_s"),
           note=f"a ring all-reduce runs at its slowest hop; {g.link_name} joins {g.scale_up_domain} GPUs")
    return True


def efficiencies(req: ServeRequest, g: Accelerator, cp: str, r: Report) -> tuple[float, float]:
    """Prefill MFU and decode bandwidth efficiency: given, measured (--calibration) or assumed."""
    mfu = req.mfu
    bw_eff = req.bandwidth_efficiency
    mfu_basis = bw_basis = "given"
    mfu_note = bw_note = "given"
    if req.calibration:
        from napkin.calibration import load

        cal = load(req.calibration)
        for code, message in cal.fit_warnings(g, uses="its bandwidth and matmul fractions"):
            r.warn(code, message)
        if bw_eff is None and cal.bandwidth_fraction is not None:
            bw_eff, bw_basis, bw_note = min(cal.bandwidth_fraction, 1.0), "measured", cal.label
        frac = cal.matmul_fraction_of_peak.get(cp)
        if mfu is None and frac is not None:
            mfu, mfu_basis, mfu_note = min(frac, 1.0), "measured", cal.label + f" (matmul ceiling at {cp})"
        if bw_basis != "measured" and req.bandwidth_efficiency is None:
            r.note("the calibration has no bandwidth fraction; decode bandwidth efficiency stays assumed")
        if mfu_basis != "measured" and req.mfu is None:
            r.note(f"the calibration has no {cp} matmul fraction; prefill MFU stays assumed")
        if req.mfu is not None and req.bandwidth_efficiency is not None:
            r.note("--mfu and --bandwidth-efficiency given: they override the calibration's fractions")
    if mfu is None:
        mfu, mfu_basis = DEFAULT_MFU, "assumed"
        mfu_note = "typical of tuned prefill kernels; measure with `napkin measure` (--calibration)"
    if bw_eff is None:
        bw_eff, bw_basis = DEFAULT_BANDWIDTH_EFFICIENCY, "assumed"
        bw_note = "achieved / datasheet HBM bandwidth of a tuned decode kernel; measure with `napkin measure`"
    r.assume("mfu", mfu, mfu_note + "; also the ceiling of the decode compute roof", unit="fraction", basis=mfu_basis)
    r.assume("bandwidth_efficiency", bw_eff, bw_note, unit="fraction", basis=bw_basis)
    return mfu, bw_eff


# ------------------------------------------------------------------------------ decode
def stage_parts(s: Setup, batch: float, *, shared_bytes: float, routed_bytes: float, kv_read_per_seq: float,
                flops_per_token: float, shards: float, tokens_per_seq: float = 1.0) -> tuple[Any, Any, Any]:
    """(memory_s, compute_s, comm_s) of one pipeline stage on one GPU for its micro-batch."""
    m = s.m
    b = sv.microbatch(batch, pp=s.pp)
    e, k = (m.n_experts, m.n_active_experts) if m.is_moe else (1.0, 1.0)
    w_read = sv.moe_weights_read_bytes(b * tokens_per_seq, shared_bytes=shared_bytes, routed_bytes=routed_bytes,
                                       n_experts=e, n_active_experts=k)
    bytes_gpu = w_read / (s.pp * s.tp) + b * kv_read_per_seq / (s.pp * shards)
    flops_gpu = b * tokens_per_seq * flops_per_token / (s.pp * s.tp)
    comm = sv.tp_comm_seconds(m.n_layers / s.pp, message_bytes=b * tokens_per_seq * m.d_model * sv.ACTIVATION_BYTES,
                              tp=s.tp, link_bytes_per_s_per_direction=s.link, latency_s=s.allreduce_latency)
    return bytes_gpu / (s.bw * s.bw_eff), flops_gpu / (s.peak * s.mfu), comm


def bound_of(mem_s: float, comp_s: float, comm_s: float) -> str:
    if comm_s > max(mem_s, comp_s):
        return "communication"
    return "bandwidth" if mem_s >= comp_s else "compute"


# ------------------------------------------------------------------------------ the run
def run_serve(req: ServeRequest) -> Report:
    r = Report("Serve", command="serve")
    s = setup(req, r)
    m, g = s.m, s.g
    r.title = f"Serve {m.name} on {s.gpus} x {g.name}" + (f" (TP {s.tp} x PP {s.pp})" if s.pp > 1 else f" (TP {s.tp})")
    if req.cached_prefix >= req.prompt:
        raise InputError("cached_prefix", req.cached_prefix, f"must be less than the prompt ({req.prompt:g} tokens)",
                         "at least one prompt token is computed")
    r.set("model", m.name)
    r.set("gpu", g.name)
    r.set("gpus", s.gpus, "count")
    r.set("tp", s.tp, "count")
    if s.pp > 1:
        r.set("pp", s.pp, "count")
    r.set("batch", req.batch, "count")
    check_heads(r, m)
    if m.key.startswith("hf:") and m.note:
        r.note(m.note)  # how the config was read (an absent key, a bias not counted): the loader's words
    if m.max_context and req.prompt + req.output > m.max_context:
        r.warn("context-too-long", f"{req.prompt:,.0f} prompt + {req.output:,.0f} output tokens exceed {m.name}'s "
                                   f"{m.max_context:,}-token context window; the figures below are what it would "
                                   "cost if it did not")

    # ---------------------------------------------------------------- weights
    n_total, n_active = m.params, m.active_params
    w = r.step("weights_bytes", "N · bytes_per_param", value=mem.weights_bytes(n_total, bytes_per_param=s.b_w),
               unit="bytes", N=(n_total, "count"), bytes_per_param=s.b_w, precision=s.precision)
    if m.is_moe:
        r.note(f"MoE: memory holds all {_fmt(n_total, 'count')} parameters; compute uses the {_fmt(n_active, 'count')} active "
               f"per token ({m.n_active_experts} of {m.n_experts} routed experts)")
    w_gpu = r.step("weights_bytes_per_gpu", "weights_bytes / gpus", value=w / s.gpus, unit="bytes", gpus=s.gpus)
    shared_p, routed_p = moe_split(m)
    shared_b, routed_b = shared_p * s.b_w, routed_p * s.b_w

    # ---------------------------------------------------------------- KV cache
    kv_tok = kv_step(r, m, s.b_kv, req.kv_precision)
    ctx_max = req.prompt + req.output
    held_max, held_expr = kv_held(r, m, ctx_max, "(prompt + output)")  # a sliding window caps the cache
    kv_seq = r.step("kv_bytes_per_sequence", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held_max,
                    unit="bytes", prompt=(req.prompt, "count"), output=(req.output, "count"))
    prefix = req.cached_prefix
    shared_held = float(m.kv_shared_prefix_tokens(prefix, ctx_max)) if prefix else 0.0
    own_held, own_expr = kv_held(r, m, ctx_max - prefix, "(prompt + output − prefix)")
    if prefix:
        kv_total = r.step("kv_total_bytes", "kv_bytes_per_token · (" + ("prefix" if shared_held == prefix else
                                                                      "shared(prefix)") + f" + batch · {own_expr})",
                          value=kv_tok * (shared_held + req.batch * own_held), unit="bytes",
                          prefix=(prefix, "count"), batch=req.batch)
        r.note("the cached prefix's KV is stored once and shared by every sequence (paged prefix caching); "
               "each sequence still reads it at every step")
    else:
        kv_total = r.step("kv_total_bytes", "kv_bytes_per_sequence · batch",
                          value=mem.kv_total_bytes(kv_tok, context_tokens=held_max, n_sequences=req.batch),
                          unit="bytes", batch=req.batch)
    latent = m.attention == "mla"
    shards = sv.kv_shards(s.tp, n_kv_heads=m.n_kv_heads, latent=latent)
    repl = sv.kv_replication(s.tp, n_kv_heads=m.n_kv_heads, latent=latent)
    if repl > 1:
        r.step("kv_replication", "tp / kv_shards" + ("  (MLA: one latent every head reads)" if latent else
                                                      "  (kv_shards = h_kv / ceil(h_kv / tp))"),
               value=float(repl), unit="number", tp=s.tp, kv_shards=float(shards))
        extra = kv_total * (repl - 1)
        r.step("kv_replicated_bytes", "kv_total_bytes · (replication − 1)", value=extra, unit="bytes")
        if latent:
            r.warn("kv-replicated", f"MLA caches one latent per token that all heads read: TP {s.tp} keeps a full copy "
                                    f"on every GPU ({_fmt(extra, 'bytes')} more than one copy)")
        else:
            r.warn("kv-replicated", f"TP {s.tp} exceeds the {m.n_kv_heads} KV heads: each head is kept on "
                                    f"{repl:g} GPUs, costing {_fmt(extra, 'bytes')} of KV memory beyond one copy")
    kv_gpu = r.step("kv_bytes_per_gpu", "kv_total_bytes / (pp · kv_shards)", value=kv_total / (s.pp * shards),
                    unit="bytes", pp=s.pp, kv_shards=float(shards))

    # ---------------------------------------------------------------- draft model (memory)
    d_model_spec = catalog.model(req.draft, "draft") if req.draft else None
    draft_w_gpu = draft_kv_gpu = draft_kv_seq_gpu = 0.0
    if d_model_spec is not None:
        dm = d_model_spec
        if dm.n_heads % s.tp:
            raise InputError("draft", req.draft, f"has {dm.n_heads} attention heads, which TP {s.tp} does not divide",
                             "pick a draft whose head count the TP degree divides")
        dw = r.step("draft_weights_bytes", "N_draft · bytes_per_param",
                    value=mem.weights_bytes(dm.params, bytes_per_param=s.b_w), unit="bytes",
                    N_draft=(dm.params, "count"))
        draft_w_gpu = dw / s.tp
        d_shards = sv.kv_shards(s.tp, n_kv_heads=dm.n_kv_heads, latent=dm.attention == "mla")
        draft_kv_seq_gpu = dm.kv_bytes(ctx_max, s.b_kv) / d_shards
        draft_kv_gpu = draft_kv_seq_gpu * req.batch
        if dm.vocab_size != m.vocab_size:
            r.warn("draft-vocab", f"the draft's vocabulary ({dm.vocab_size:,}) differs from the target's "
                                  f"({m.vocab_size:,}): speculative decoding needs one tokenizer")

    # ---------------------------------------------------------------- fit
    cap_gpu = g.memory_bytes * req.usable
    r.assume("usable", req.usable, "fraction of GPU memory for weights and KV (vLLM's gpu_memory_utilization "
                                   "default); the rest is activations, CUDA context, fragmentation", unit="fraction",
             basis=basis_of(req, "usable"))
    need_gpu = w_gpu + kv_gpu + draft_w_gpu + draft_kv_gpu
    r.step("usable_bytes_per_gpu", "memory · usable", value=cap_gpu, unit="bytes", memory=(g.memory_bytes, "bytes"),
           usable=req.usable)
    r.step("needed_bytes_per_gpu", "weights_per_gpu + kv_per_gpu" + (" + draft" if d_model_spec else ""),
           value=need_gpu, unit="bytes")
    fits = need_gpu <= cap_gpu
    r.set("fits", fits)
    if fits:
        r.step("free_bytes", "(usable − needed) · gpus", value=(cap_gpu - need_gpu) * s.gpus, unit="bytes")
    else:
        r.step("short_by_bytes", "(needed − usable) · gpus", value=(need_gpu - cap_gpu) * s.gpus, unit="bytes")
    shared_kv_gpu = kv_tok * shared_held / (s.pp * shards)
    per_seq_gpu = kv_tok * own_held / (s.pp * shards) + draft_kv_seq_gpu
    mb = int(sv.max_batch(cap_gpu, weights_bytes_per_gpu=w_gpu + draft_w_gpu, shared_kv_bytes_per_gpu=shared_kv_gpu,
                          kv_bytes_per_sequence_per_gpu=per_seq_gpu))
    r.step("max_batch", "floor((usable − weights − shared KV) / KV per sequence), per GPU", value=mb, unit="count",
           usable=(cap_gpu, "bytes"), weights=(w_gpu + draft_w_gpu, "bytes"), kv_per_sequence=(per_seq_gpu, "bytes"))
    if not fits:
        if mb == 0:
            r.warn("does-not-fit", f"the weights alone do not fit in {s.gpus} x {g.name} at {req.usable:.0%} usable: "
                                   f"add GPUs or quantise (timings below are what it would do if it fit)")
        else:
            r.warn("does-not-fit", f"batch {req.batch} does not fit: at most {mb} sequences of "
                                   f"{ctx_max:,.0f} tokens do (timings below assume it fit)")

    # ---------------------------------------------------------------- prefill
    d_attn = d_attn_of(m)
    new = req.prompt - prefix
    lin = r.step("prefill_linear_flops", "2 · N_active · (prompt − cached_prefix)", value=2.0 * n_active * new,
                 unit="flops", N_active=(n_active, "count"), tokens=(new, "count"))
    causal = req.convention != "full"
    attn_full = float(sv.prefill_attention_flops(m.n_layers, d_attn=d_attn, new_tokens=new, cached_tokens=prefix,
                                                 causal=causal, **window_of(m)))
    if req.convention == "2N":
        attn = 0.0
        r.set("prefill_attention_flops", 0.0, "flops")
    elif m.window_caps(req.prompt):  # some layers see at most W keys per query
        glob = "(L − L_w) · T · (P + T/2)" if causal else "(L − L_w) · T · (P + T)"
        win = "L_w · Σ min(i, W)  (i = P+1 … P+T)" if causal else "L_w · T · min(P + T, W)"
        attn = r.step("prefill_attention_flops", f"4 · d_attn · ({glob} + {win})", value=attn_full, unit="flops",
                      L=m.n_layers, L_w=m.n_sliding_layers, W=(m.sliding_window, "count"), d_attn=d_attn,
                      T=(new, "count"), P=(prefix, "count"),
                      note="sliding-window layers attend to at most the last W tokens")
    else:
        attn = r.step("prefill_attention_flops",
                      "4 · L · d_attn · T · (P + T/2)" if causal else "4 · L · d_attn · T · (P + T)",
                      value=attn_full, unit="flops", L=m.n_layers, d_attn=d_attn, T=(new, "count"),
                      P=(prefix, "count"))
    pf = r.step("prefill_flops", "prefill_linear_flops + prefill_attention_flops", value=lin + attn, unit="flops",
                note=f"FLOPs convention: {req.convention}")
    share = attn_full / lin
    if share > LONG_CONTEXT_SHARE:
        if req.convention == "2N":
            r.warn("long-context", f"the 2N convention leaves out attention, which adds {share:.0%} to this prefill's "
                                   f"FLOPs at {req.prompt:,.0f} tokens: use --convention causal")
        else:
            r.warn("long-context", f"at {req.prompt:,.0f} prompt tokens attention adds {share:.0%} to the 2N prefill "
                                   f"FLOPs: 2N alone undercounts")
    r.step("prefill_compute_s", "prefill_flops / (tp · peak · mfu)", value=pf / (s.tp * s.peak * s.mfu),
           unit="seconds", tp=s.tp, peak=(s.peak, "flops_per_s"), mfu=s.mfu)
    far = beyond_scale_up(r, s, req)
    pre_comm = float(sv.tp_comm_seconds(m.n_layers, message_bytes=new * m.d_model * sv.ACTIVATION_BYTES, tp=s.tp,
                                        link_bytes_per_s_per_direction=s.link, latency_s=req.allreduce_latency))
    if s.tp > 1:
        r.step("prefill_comm_s", "L · 2 · (2 · (tp − 1)/tp · T · d · 2 B / link + latency)", value=pre_comm,
               unit="seconds", L=m.n_layers, T=(new, "count"), d=m.d_model,
               link=(s.link, "bytes_per_s"), latency=(req.allreduce_latency, "seconds"))
    ttft = r.step("ttft_s", "max(prefill_flops / (tp · peak · mfu), weights / (tp · bw · η_bw)) + prefill_comm",
                  value=float(sv.prefill_seconds(pf, weights_bytes=w, n_gpus=s.tp, dense_flops_per_s=s.peak,
                                                 mfu=s.mfu, memory_bytes_per_s=s.bw,
                                                 bandwidth_efficiency=s.bw_eff, comm_s=pre_comm)),
                  unit="seconds")
    r.note("TTFT here is the prefill on an idle replica: queueing and network add to it")

    # ---------------------------------------------------------------- decode
    ctx_avg = req.prompt + req.output / 2.0
    use_attn = req.convention != "2N"
    windowed = use_attn and m.window_caps(ctx_avg)
    fpt_expr = ("2 · N_active" if not use_attn else
                "2 · N_active + 4 · d_attn · ((L − L_w) · ctx + L_w · min(ctx, W))" if windowed else
                "2 · N_active + 4 · L · d_attn · ctx")
    fpt = r.step("decode_flops_per_token", fpt_expr,
                 value=float(sv.decode_flops_per_token(n_active, n_layers=m.n_layers, d_attn=d_attn,
                                                       context_tokens=ctx_avg, attention=use_attn, **window_of(m))),
                 unit="flops", ctx=(ctx_avg, "count"),
                 **({"L_w": m.n_sliding_layers, "W": (m.sliding_window, "count")} if windowed else {}),
                 note="ctx = prompt + output/2, the mean over the answer")
    held_avg, ctx_expr = kv_held(r, m, ctx_avg, "ctx")
    kv_read = kv_tok * held_avg
    e, k = (m.n_experts, m.n_active_experts) if m.is_moe else (1.0, 1.0)
    b_micro = float(sv.microbatch(req.batch, pp=s.pp))
    n_micro = req.batch / b_micro
    w_read = float(sv.moe_weights_read_bytes(b_micro, shared_bytes=shared_b, routed_bytes=routed_b, n_experts=e,
                                             n_active_experts=k))
    if m.is_moe:
        r.step("weights_read_bytes", "shared + routed · (1 − (1 − k/E)^b)   (experts some token picked)",
               value=w_read, unit="bytes", shared=(shared_b, "bytes"), routed=(routed_b, "bytes"), k=k, E=e,
               b=b_micro)
        if req.batch > 1:
            r.note(f"at batch {req.batch} the tokens pick {(w_read - shared_b) / routed_b:.0%} of the routed experts "
                   f"per layer (uniform routing): a batched MoE step reads far more than its active weights")
    step_bytes = r.step("decode_step_bytes", f"active weights read + batch · kv_bytes_per_token · {ctx_expr}" +
                        (" (per micro-batch)" if s.pp > 1 else ""),
                        value=n_micro * w_read + req.batch * kv_read, unit="bytes",
                        weights_read=(w_read, "bytes"), batch=req.batch, ctx=(ctx_avg, "count"))
    step_flops = r.step("decode_step_flops", "batch · decode_flops_per_token", value=req.batch * fpt, unit="flops",
                        batch=req.batch)
    parts = dict(shared_bytes=shared_b, routed_bytes=routed_b, kv_read_per_seq=kv_read, flops_per_token=fpt,
                 shards=shards)
    mem_s, comp_s, comm_s = (float(x) for x in stage_parts(s, req.batch, **parts))
    r.step("decode_memory_s", "bytes_per_gpu / (bw · η_bw)", value=mem_s, unit="seconds",
           bw=(s.bw, "bytes_per_s"), eta_bw=s.bw_eff, note="one stage, one GPU" if s.pp > 1 else "")
    r.step("decode_compute_s", "flops_per_gpu / (peak · mfu)", value=comp_s, unit="seconds",
           peak=(s.peak, "flops_per_s"), mfu=s.mfu)
    if s.tp > 1:
        r.step("decode_comm_s", "L · 2 · (2 · (tp − 1)/tp · b · d · 2 B / link + latency)", value=comm_s,
               unit="seconds", L=m.n_layers / s.pp, b=b_micro, d=m.d_model, tp=s.tp,
               link=(s.link, "bytes_per_s"), latency=(req.allreduce_latency, "seconds"),
               note=f"{2 * m.n_layers / s.pp:g} all-reduces of {_fmt(b_micro * m.d_model * sv.ACTIVATION_BYTES, 'bytes')}")
        r.assume("allreduce_latency", req.allreduce_latency, "fixed cost per whole all-reduce, not per ring step as "
                 "`napkin allreduce --latency` (NCCL small-message order); "
                                                             "measure with nccl-tests", unit="seconds",
                 basis=basis_of(req, "allreduce_latency"))
    step_s = r.step("decode_step_s", "pp · (max(decode_memory_s, decode_compute_s) + decode_comm_s)",
                    value=s.pp * (max(mem_s, comp_s) + comm_s), unit="seconds", pp=s.pp)
    bound = bound_of(mem_s, comp_s, comm_s)
    r.set("bound", bound)
    if far:
        r.warn("beyond-scale-up-domain",
               f"TP {s.tp} spans {math.ceil(s.tp / g.scale_up_domain)} scale-up domains of {g.scale_up_domain} "
               f"{g.name} ({g.link_name}): its all-reduces cross the scale-out network at {_fmt(s.link, 'bytes_per_s')} "
               f"per GPU, not {_fmt(g.link_bytes_per_s_per_direction, 'bytes_per_s')}, so {_fmt(comm_s, 'seconds')} of "
               f"each {_fmt(s.pp * (max(mem_s, comp_s) + comm_s), 'seconds')} decode step is communication; "
               f"keep TP within {g.scale_up_domain} GPUs and use pipeline stages across domains")
    if s.pp > 1:
        r.note(f"{s.pp} pipeline stages hold more memory but a token passes them in turn: they add throughput only "
               f"with at least {s.pp} micro-batches in flight")

    def step_parts(bb: float) -> tuple[float, float]:
        mm, cc, _ = stage_parts(s, bb, **parts)
        return float(mm), float(cc)

    cbb = sv.compute_bound_batch(step_parts)
    if cbb is None:
        r.set("compute_bound_batch", None)
        r.note("no batch makes this decode step compute-bound: the KV read grows as fast as the FLOPs")
    else:
        r.step("compute_bound_batch", "smallest batch with decode_compute_s ≥ decode_memory_s", value=cbb,
               unit="count", effective_ridge=(s.peak * s.mfu / (s.bw * s.bw_eff), "number"))
        if cbb > mb and mb > 0:
            r.note(f"memory holds at most {mb} sequences, short of the {cbb:,.0f} that would make decode "
                   "compute-bound: this replica is always bandwidth-bound")
    tpot = step_s
    # ---------------------------------------------------------------- speculative decoding
    if d_model_spec is not None:
        tpot = speculative(r, s, req, d_model_spec, parts, step_s)
    tpot = r.step("tpot_s", "decode_step_s" if d_model_spec is None else "spec_pass_s / spec_tokens_per_pass",
                  value=tpot, unit="seconds")
    r.step("tokens_per_s_per_sequence", "1 / tpot_s", value=1.0 / tpot, unit="per_s")
    tps = r.step("tokens_per_s", "batch / tpot_s", value=req.batch / tpot, unit="per_s", batch=req.batch)
    r.step("request_latency_s", "ttft_s + (output − 1) · tpot_s",
           value=float(sv.request_latency_seconds(ttft, tpot_s=tpot, output_tokens=req.output)), unit="seconds",
           output=(req.output, "count"))
    r.set("dense_flops_per_s", s.peak, "flops_per_s")
    r.set("memory_bytes_per_s", s.bw, "bytes_per_s")

    # ---------------------------------------------------------------- money
    price_lines(r, req, s, tps, ttft)
    if req.waterfall:
        run_waterfall(r, req)
    return r


def speculative(r: Report, s: Setup, req: ServeRequest, dm: ModelSpec, parts: dict, step_s: float) -> float:
    """Draft k tokens with a small model, verify them in one target pass; returns the TPOT."""
    k = req.draft_tokens
    a = req.acceptance if req.acceptance is not None else DEFAULT_ACCEPTANCE
    r.assume("acceptance", a, "probability the target accepts a drafted token" +
             (" (measure it on your traffic)" if req.acceptance is None else ""), unit="fraction",
             basis="assumed" if req.acceptance is None else "given")
    etok = r.step("spec_tokens_per_pass", "(1 − a^(k+1)) / (1 − a)",
                  value=float(sv.speculative_tokens_per_pass(a, draft_tokens=k)), unit="number", a=a, k=k)
    ds = Setup(dm, s.g, s.tp, s.tp, 1, s.precision, s.compute_precision, s.b_w, s.b_kv, s.peak, s.bw, s.link,
               s.mfu, s.bw_eff, s.allreduce_latency)
    ctx_avg = req.prompt + req.output / 2.0
    d_fpt = float(sv.decode_flops_per_token(dm.active_params, n_layers=dm.n_layers, d_attn=d_attn_of(dm),
                                            context_tokens=ctx_avg, attention=req.convention != "2N",
                                            **window_of(dm)))
    d_shared, d_routed = moe_split(dm)
    d_shards = sv.kv_shards(s.tp, n_kv_heads=dm.n_kv_heads, latent=dm.attention == "mla")
    dm_s, dc_s, dcomm = (float(x) for x in stage_parts(
        ds, req.batch, shared_bytes=d_shared * s.b_w, routed_bytes=d_routed * s.b_w,
        kv_read_per_seq=dm.kv_bytes(ctx_avg, s.b_kv), flops_per_token=d_fpt, shards=d_shards))
    d_step = r.step("draft_step_s", "max(memory, compute) + comm of one draft step (same GPUs, TP only)",
                    value=max(dm_s, dc_s) + dcomm, unit="seconds")
    vm, vc, vcomm = (float(x) for x in stage_parts(s, req.batch, tokens_per_seq=k + 1.0, **parts))
    v_step = r.step("verify_step_s", "decode step with k + 1 tokens per sequence (FLOPs and messages × (k+1))",
                    value=s.pp * (max(vm, vc) + vcomm), unit="seconds", k=k)
    pass_s = r.step("spec_pass_s", "k · draft_step_s + verify_step_s",
                    value=float(sv.speculative_pass_seconds(d_step, draft_tokens=k, verify_step_s=v_step)),
                    unit="seconds")
    tpot = pass_s / etok
    r.set("tpot_without_draft_s", step_s, "seconds")
    r.step("spec_speedup", "decode_step_s / (spec_pass_s / spec_tokens_per_pass)", value=step_s / tpot, unit="number")
    if tpot >= step_s:
        r.warn("draft-slower", f"speculative decoding is slower here ({step_s / tpot:.2f}x): the draft and the "
                               "verification cost more than the accepted tokens save")
    r.note("speculative decoding emits exactly the tokens the target alone would: it changes the speed, not the output")
    return tpot


def price_lines(r: Report, req: ServeRequest, s: Setup, tps: float, ttft: float) -> None:
    if req.price is None:
        listed = catalog_gpu_hour(s.g.key)
        hint = (f"; the catalog lists the {s.g.name} at ${listed[0]:g}/h ({listed[1]}): --price {listed[0]:g}/h"
                if listed else "")
        r.note(f"no price given, so no $ figures: add --price 2.50/h (per GPU-hour){hint}")
        return
    r.assume("price", req.price, "per GPU-hour, as given", unit="usd_per_hour", basis="given")
    util = req.utilization if req.utilization is not None else 1.0
    note = "the replica generates all hour" if req.utilization is None else "fraction of the hour generating"
    r.assume("utilization", util, note + "; bursty traffic is often 30-60%", unit="fraction",
             basis="assumed" if req.utilization is None else "given")
    fleet = r.step("replica_usd_per_hour", "gpus · price", value=s.gpus * req.price, unit="usd_per_hour",
                   gpus=s.gpus, price=(req.price, "usd_per_hour"))
    r.step("usd_per_million_output_tokens", "(replica $/h / 3600) / (tokens_per_s · utilization) · 1e6",
           value=costf.usd_per_million_tokens(fleet, tokens_per_s=tps, utilization=util),
           unit="usd_per_million", utilization=util)
    r.step("usd_per_million_input_tokens", "(replica $/h / 3600) · ttft_s / prompt / utilization · 1e6",
           value=fleet / HOUR * ttft / req.prompt / util * MILLION, unit="usd_per_million",
           prompt=(req.prompt, "count"),
           note="the replica's time on one prompt's prefill, per prompt token")


def catalog_gpu_hour(key: str) -> tuple[float, str] | None:
    """The catalog's dated list price of one GPU-hour, if it has one."""
    try:
        entry = catalog.table("prices").get("gpu_hour", {}).get(key)
    except FileNotFoundError:
        return None
    if not entry or "usd_per_gpu_hour" not in entry:
        return None
    return float(entry["usd_per_gpu_hour"]), str(entry.get("date", "undated"))


# the Hugging Face loader's note when a Llama-family config.json has no num_key_value_heads
ABSENT_KV_HEADS = "num_key_value_heads is absent"


def check_heads(r: Report, m: ModelSpec) -> None:
    """Warn where a config looks like it confused query heads with KV heads (issue 6: "GQA ... and a
    warning if a config looks like it confused them"): KV heads that do not divide the query heads,
    a GQA/MQA model listing as many KV heads as query heads, a config.json with no
    num_key_value_heads (read as MHA), and a large config.json that lists one KV head per query head.
    Catalog entries are checked against their published parameter counts, so a large MHA entry
    (GPT-3) gets a note, not a warning."""
    if m.attention == "mla":
        return
    config = m.key.startswith("hf:")
    group8 = f" ({m.n_heads // 8}x with 8 KV heads)" if m.n_heads > 8 and m.n_heads % 8 == 0 else ""
    if m.n_heads % m.n_kv_heads:
        r.warn("kv-heads", f"{m.n_kv_heads} KV heads do not divide {m.n_heads} query heads: check n_kv_heads "
                           "(num_key_value_heads) in the config")
    elif m.attention in ("gqa", "mqa") and m.n_kv_heads == m.n_heads:
        r.warn("kv-heads", f"{m.name} is marked {m.attention.upper()} but lists as many KV heads as query heads "
                           f"({m.n_heads}): if it shares KV heads, the config confused them and the KV cache "
                           "here is too large by the group size")
    elif config and ABSENT_KV_HEADS in m.note:
        r.warn("kv-heads", f"the config of {m.name} has no num_key_value_heads, so it is read as MHA with "
                           f"{m.n_kv_heads} KV heads (the transformers default): if the checkpoint shares KV heads "
                           f"(GQA), the KV cache here is too large by heads / kv_heads{group8}: check the model card "
                           "and add num_key_value_heads")
    elif m.n_kv_heads == m.n_heads and m.n_heads >= 32 and m.d_model >= 4096:
        if config:
            r.warn("kv-heads", f"the config of {m.name} lists as many KV heads as query heads ({m.n_heads}) at "
                               f"d_model {m.d_model:,}: models this size usually share KV heads (GQA); if this one "
                               f"does, the config confused them and the KV cache here is too large by the group "
                               f"size{group8}")
        else:  # a catalog entry: its head counts are checked against the published parameter count
            r.note(f"{m.name} caches K and V for all {m.n_heads} heads (MHA); a GQA model whose config omits "
                   "num_key_value_heads would look the same, with a KV cache 8x too large")


# ------------------------------------------------------------------------------ waterfall
def waterfall_steps(raw: list[str]) -> list[tuple[str, str, str]]:
    """(field, value, label) of each NAME=VALUE step, in the order given; a knob may repeat.

    The steps arrive split at commas (a list field): a thousands group goes back on the value
    before it (``batch=1,024``), as for every NAME=VALUE field (napkin.request._split_pairs).
    """
    from napkin.request import _split_pairs

    pieces = [str(p) for p in _split_pairs(",".join(str(p) for p in raw))]
    steps = []
    for label in pieces:
        if "=" not in label:
            raise InputError("waterfall", label, "must be NAME=VALUE", "e.g. batch=64,precision=fp8,batch=128")
        raw_key, raw_val = (x.strip() for x in label.split("=", 1))
        key = raw_key.replace("-", "_")
        if key not in WATERFALL_KNOBS:
            raise InputError("waterfall", f"{raw_key}={raw_val}", "has a knob napkin does not vary",
                             "use one of " + ", ".join(k.replace("_", "-") for k in WATERFALL_KNOBS))
        if not raw_val:
            raise InputError("waterfall", label, "has no value", f"write {raw_key}=VALUE")
        steps.append((key, raw_val, f"{raw_key}={raw_val}"))
    return steps


def run_waterfall(r: Report, req: ServeRequest) -> None:
    """Apply each change in turn to the same workload; record tokens/s, $/M and what binds.

    A step that does not fit in memory is marked so (fits false, no throughput, cost or
    speed-up) rather than shown with the speed it would have if it fit; the next step that
    fits is compared with the last one that did.
    """
    from napkin.request import fields, parse_value

    infos = {f.name: f for f in fields(ServeRequest)}
    cur = msgspec.structs.replace(req, waterfall=[])
    rows = [waterfall_row("baseline", cur, r)]
    for key, raw_val, label in waterfall_steps(req.waterfall):
        try:  # an error inside a step names the step, not the base input of the same name
            value = parse_value(infos[key], raw_val)
            changes: dict[str, Any] = {key: value}
            # tp=N follows the base command's rules: a replica whose GPUs were never given (only --tp, or neither)
            # has as many GPUs as its TP degree, so the step brings them (and the cost); a replica of given --gpus
            # keeps them, so a TP degree beyond them is refused, as `serve --gpus 2 --tp 8` is
            if key == "tp" and cur.gpus is not None and value > cur.gpus:
                raise InputError("tp", value, f"exceeds the GPUs of the replica ({cur.gpus})",
                                 f"use tp at most {cur.gpus}, or put gpus={value} before it")
            cur = msgspec.structs.replace(cur, **changes)
            rows.append(waterfall_row(label, cur, r))
        except InputError as exc:
            raise InputError("waterfall", label, f"has a step whose {exc.field} {exc.problem}",
                             exc.fix or "fix that step") from None
        except NapkinError as exc:
            raise InputError("waterfall", label, f"has a step that cannot run: {exc}") from None
    last: dict | None = None  # the last step that fits
    for row in rows:
        if not row["fits"]:
            after = f"; the next step that fits is compared with {last['step']}" if last else ""
            r.warn("waterfall-does-not-fit", f"step {row['step']} does not fit ({row['why']}): it shows no tokens/s, "
                                             f"$/M or speed-up{after}")
        elif row is not rows[0]:
            row["speedup"] = row["tokens_per_s"] / last["tokens_per_s"] if last else None
        if row["fits"]:
            last = row
    r.set("waterfall", rows)
    r.note("waterfall: each change is applied on top of the ones before it, in the order given, to the same prompt "
           "and output lengths")


def waterfall_row(label: str, req: ServeRequest, r: Report) -> dict:
    sub = run_serve(req)
    seen = {w.code for w in r.warnings}
    for w in sub.warnings:  # what a step brings (TP beyond the scale-up domain, ...), once per kind
        if w.code not in seen and w.code != "does-not-fit":
            r.warn(w.code, f"at waterfall step {label}: {w.message}")
            seen.add(w.code)
    fits = bool(sub["fits"])
    mb = sub["max_batch"]
    row = {"step": label, "batch": req.batch, "gpus": sub["gpus"], "fits": fits, "max_batch": mb}
    if not fits:
        ctx = req.prompt + req.output
        why = (f"the weights alone overflow {sub['gpus']} x {sub['gpu']}" if mb == 0 else
               f"at most {mb:,} sequences of {ctx:,.0f} tokens fit on {sub['gpus']} x {sub['gpu']}, not {req.batch:,}")
        return {**row, "tokens_per_s": None, "tpot_s": None, "ttft_s": None, "usd_per_million_output_tokens": None,
                "binds": "memory capacity", "why": why}
    return {**row, "tokens_per_s": sub["tokens_per_s"], "tpot_s": sub["tpot_s"], "ttft_s": sub["ttft_s"],
            "usd_per_million_output_tokens": sub.get("usd_per_million_output_tokens"), "binds": sub["bound"]}


def _charts(report: Any) -> dict[str, dict]:
    from napkin.charts.serve import serve_charts

    return serve_charts(report)


SERVE = Calculator(
    "serve", ServeRequest, run_serve, "Serve",
    "Memory fit, prefill (TTFT), decode (TPOT) on the roofline with TP communication, and $/M tokens.",
    establishes="whether the model fits, the bandwidth/compute floor of each decode step, and the cost at a "
                "stated utilisation",
    needs_measuring="achieved bandwidth and prefill MFU (`napkin measure`), all-reduce latency (nccl-tests), "
                    "draft acceptance on real traffic, and the utilisation of the fleet",
    charts=_charts,
)
