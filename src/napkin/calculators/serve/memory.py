"""Does it fit? Weights, the KV cache (sliding windows, a shared cached prefix, TP replication of
KV heads), a draft model's share, and the largest batch the usable memory holds."""

from __future__ import annotations

from dataclasses import dataclass

from napkin import catalog
from napkin.calculators import replica as rep
from napkin.calculators import resolve
from napkin.calculators.steps import kv_held, kv_replication_step, kv_step
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import memory as mem
from napkin.formulas import serving as sv
from napkin.model import ModelSpec
from napkin.units import format as _fmt

from .inputs import Setup
from .request import ServeRequest


@dataclass
class Memory:
    """What the later rooms need of the fit: weights as the decode step reads them, the KV layout, the draft."""

    weights_bytes: float
    shared_weight_bytes: float  # what every token touches (dense: all of it)
    routed_weight_bytes: float  # every routed expert together (dense: 0)
    kv_bytes_per_token: float
    kv_shards: float
    draft: ModelSpec | None
    max_batch: int


def _eh(kept: bool, n_eh: float) -> dict:
    return {"N_eh": (n_eh, "count")} if kept else {}


def weights(r: Report, s: Setup, req: ServeRequest) -> tuple[float, float]:
    """(weights bytes, per GPU) of the target model (its MLP at --mlp-precision when given)."""
    m = s.m
    n_total, n_active = m.params, m.active_params
    n_eh = m.embedding_head_params()
    kept = s.b_w < 2  # a quantized engine keeps the embedding and the LM head at 16 bits
    eh = " + N_eh · 2" if kept else ""
    n_q = "(N − N_eh" if kept else "(N"
    if req.mlp_precision:
        b_mlp = s.replica.shapes.mlp_bytes_per_weight
        n_mlp = float(m.params_breakdown()["mlp"])
        w = r.step("weights_bytes", f"{n_q} − N_mlp) · bytes_per_param + N_mlp · mlp_bytes_per_param{eh}",
                   value=mem.served_weights_bytes(n_total, n_embedding_head=n_eh, bytes_per_param=s.b_w, n_mlp=n_mlp,
                                                  mlp_bytes_per_param=b_mlp),
                   unit="bytes", N=(n_total, "count"), N_mlp=(n_mlp, "count"), **_eh(kept, n_eh),
                   bytes_per_param=s.b_w, mlp_bytes_per_param=b_mlp, cites=mem.served_weights_bytes)
    else:
        w = r.step("weights_bytes", f"{n_q}) · bytes_per_param{eh}" if kept else "N · bytes_per_param",
                   value=mem.served_weights_bytes(n_total, n_embedding_head=n_eh, bytes_per_param=s.b_w),
                   unit="bytes", N=(n_total, "count"), **_eh(kept, n_eh), bytes_per_param=s.b_w,
                   precision=s.precision, cites=mem.served_weights_bytes)
    if kept:
        r.note(f"at {s.precision} the engine quantizes the linear layers; the embedding and the LM head "
               f"({_fmt(n_eh, 'count')} parameters) stay at 16 bits")
    if m.is_moe:
        r.note(f"MoE: memory holds all {_fmt(n_total, 'count')} parameters; compute uses the {_fmt(n_active, 'count')} "
               f"active per token ({m.n_active_experts} of {m.n_experts} routed experts)")
    return w, r.step("weights_bytes_per_gpu", "weights_bytes / gpus", value=w / s.gpus, unit="bytes", gpus=s.gpus)


def kv_cache(r: Report, s: Setup, req: ServeRequest) -> tuple[float, float, float, float, float]:
    """(kv bytes per token, KV bytes per GPU, kv_shards, shared-prefix tokens held, own tokens held per sequence)."""
    m = s.m
    kv_tok = kv_step(r, m, s.b_kv, req.kv_precision)
    ctx_max = req.prompt + req.output
    held_max, held_expr = kv_held(r, m, ctx_max, "(prompt + output)")  # a sliding window caps the cache
    r.step("kv_bytes_per_sequence", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held_max,
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
                          unit="bytes", batch=req.batch, cites=mem.kv_total_bytes)
    _, shards = kv_replication_step(r, m, s.tp, kv_total)
    kv_gpu = r.step("kv_bytes_per_gpu", "kv_total_bytes / (pp · kv_shards)", value=kv_total / (s.pp * shards),
                    unit="bytes", pp=s.pp, kv_shards=float(shards))
    return kv_tok, kv_gpu, shards, shared_held, own_held


def draft_memory(r: Report, s: Setup, req: ServeRequest) -> tuple[ModelSpec | None, float, float]:
    """(the draft model, its weights per GPU, its KV per sequence per GPU); (None, 0, 0) without one."""
    if not req.draft:
        return None, 0.0, 0.0
    dm, m = catalog.model(req.draft, "draft"), s.m
    if dm.n_heads % s.tp:
        raise InputError("draft", req.draft, f"has {dm.n_heads} attention heads, which TP {s.tp} does not divide",
                         "pick a draft whose head count the TP degree divides")
    d_eh = dm.embedding_head_params() if s.b_w < 2 else 0.0
    dw = r.step("draft_weights_bytes", "(N_draft − N_eh) · bytes_per_param + N_eh · 2" if d_eh
                else "N_draft · bytes_per_param",
                value=mem.served_weights_bytes(dm.params, n_embedding_head=d_eh, bytes_per_param=s.b_w), unit="bytes",
                N_draft=(dm.params, "count"), **_eh(bool(d_eh), d_eh), cites=mem.served_weights_bytes)
    d_shards = sv.kv_shards(s.tp, n_kv_heads=dm.n_kv_heads, latent=dm.attention == "mla")
    if dm.vocab_size != m.vocab_size:
        r.warn("draft-vocab", f"the draft's vocabulary ({dm.vocab_size:,}) differs from the target's "
                              f"({m.vocab_size:,}): speculative decoding needs one tokenizer")
    return dm, dw / s.tp, dm.kv_bytes(req.prompt + req.output, s.b_kv) / d_shards


def usable_bytes(r: Report, s: Setup, req: ServeRequest, w_gpu: float) -> float:
    """Memory per GPU for weights and KV: a fraction of the total (--usable, vLLM's and SGLang's
    convention) or, with --kv-free-fraction, the weights plus a fraction of what loading leaves."""
    note = "memory as the runtime reports it, not the datasheet's round figure"
    if req.kv_free_fraction is None:
        resolve.assume_field(r, "usable", req, "serve_usable_memory_fraction")
        return r.step("usable_bytes_per_gpu", "memory · usable", value=s.capacity * req.usable, unit="bytes",
                      memory=(s.capacity, "bytes"), usable=req.usable, note=note)
    resolve.kv_budget_given_once(req)
    value, inputs = rep.engine_buffers(s.m, s.tp, float(req.chunk))
    buffers = r.step("engine_buffer_bytes_per_gpu", "max(2 · T · d_attn · c(tp), floor) + collective(tp) + context",
                     value=value, unit="bytes", **inputs, cites=sv.engine_buffer_bytes,
                     note="T: the step's token budget (--chunk)")
    r.assume("kv_free_fraction", req.kv_free_fraction, "of the memory free after loading goes to the KV cache",
             unit="fraction", basis="given")
    return r.step("usable_bytes_per_gpu", "weights + kv_free_fraction · (memory − weights − buffers)",
                  value=sv.usable_of_free(s.capacity, weights_bytes_per_gpu=w_gpu, buffer_bytes=buffers,
                                          fraction=req.kv_free_fraction),
                  unit="bytes", memory=(s.capacity, "bytes"), weights=(w_gpu, "bytes"),
                  kv_free_fraction=req.kv_free_fraction, cites=sv.usable_of_free, note=note)


def fit(r: Report, s: Setup, req: ServeRequest) -> Memory:
    """Weights, KV and draft against the usable memory: fits, free or short, and the largest batch."""
    g = s.g
    w, w_gpu = weights(r, s, req)
    shared_p, routed_p = s.m.moe_split()
    kv_tok, kv_gpu, shards, shared_held, own_held = kv_cache(r, s, req)
    dm, draft_w_gpu, draft_kv_seq_gpu = draft_memory(r, s, req)
    draft_kv_gpu = draft_kv_seq_gpu * req.batch
    cap_gpu = usable_bytes(r, s, req, w_gpu + draft_w_gpu)
    need_gpu = w_gpu + kv_gpu + draft_w_gpu + draft_kv_gpu
    r.step("needed_bytes_per_gpu", "weights_per_gpu + kv_per_gpu" + (" + draft" if dm else ""),
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
           usable=(cap_gpu, "bytes"), weights=(w_gpu + draft_w_gpu, "bytes"), kv_per_sequence=(per_seq_gpu, "bytes"),
           cites=sv.max_batch)
    if not fits:
        ctx_max = req.prompt + req.output
        if mb == 0:
            budget = (f"at {req.usable:.0%} usable" if req.kv_free_fraction is None else
                      "beside the engine's buffers")
            r.warn("does-not-fit", f"the weights alone do not fit in {s.gpus} x {g.name} {budget}: "
                                   f"add GPUs or quantise (timings below are what it would do if it fit)")
        else:
            r.warn("does-not-fit", f"batch {req.batch} does not fit: at most {mb} sequences of "
                                   f"{ctx_max:,.0f} tokens do (timings below assume it fit)")
    return Memory(w, shared_p * s.b_w, routed_p * s.b_w, kv_tok, shards, dm, mb)
