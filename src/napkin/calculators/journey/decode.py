"""Rung 5, decode: one user's tokens at the bandwidth floor, the same step batched (the decode step of
formulas.serving), how far batching goes before the cache fills, and what TP all-reduces would add."""

from __future__ import annotations

import math
from typing import Any

from napkin import catalog, units
from napkin.calculators import resolve
from napkin.calculators.steps import kv_held
from napkin.derivation import Report
from napkin.formulas import journey as jf
from napkin.formulas import roofline as roof
from napkin.formulas import serving as sv
from napkin.units import MINUTE

from .walk import Trip, Walk


def node_step(t: Trip, batch: Any, kv_seq: float) -> sv.StepParts:
    """A decode step of the whole node taken as one device (gpus · peak, gpus · bandwidth), reading the active
    weights, with no all-reduces: the journey's convention (`napkin serve` splits it by TP and adds them)."""
    m, req = t.m, t.req
    return sv.decode_step_parts(batch, tp=1, pp=1, n_layers=m.n_layers, d_model=m.d_model,
                                shared_weight_bytes=t.active_weights, kv_read_bytes_per_sequence=kv_seq, kv_shards=1,
                                flops_per_token=t.flops_per_token, memory_bytes_per_s=t.node_bw,
                                dense_flops_per_s=t.node_peak, bandwidth_efficiency=req.bandwidth_fraction,
                                compute_efficiency=req.mfu)


def one_user(r: Report, t: Trip, kv_seq: float) -> float:
    """The single sequence's decode: the bandwidth floor, the achieved fraction of it, the answer's time."""
    req = t.req
    floor_tps = roof.decode_tokens_per_s(1, memory_bytes_per_s=t.node_bw, weights_bytes=t.active_weights,
                                         kv_bytes_per_sequence=kv_seq)
    floor_s = r.step("decode_floor_s_per_token", "(active weights + KV) / (gpus · bandwidth)", value=1.0 / floor_tps,
                     unit="seconds", bandwidth=(t.node_bw, "bytes_per_s"), cites=roof.decode_tokens_per_s)
    r.step("decode_compute_s_per_token", "flops_per_token / effective_flops_per_s  (what FLOPs alone would take)",
           value=node_step(t, 1, kv_seq).compute_s, unit="seconds", cites=sv.decode_step_parts)
    resolve.assume_field(r, "bandwidth_fraction", req, "journey_bandwidth_fraction", basis="assumed")
    r.set("bandwidth_fraction", req.bandwidth_fraction, "fraction")
    step_s = r.step("decode_s_per_token", "decode_floor_s_per_token / bandwidth_fraction",
                    value=floor_s / req.bandwidth_fraction, unit="seconds",
                    bandwidth_fraction=(req.bandwidth_fraction, "fraction"))
    tps = r.step("decode_tokens_per_s", "1 / decode_s_per_token", value=1.0 / step_s, unit="per_s")
    r.step("decode_s", "(output_tokens − 1) · decode_s_per_token  (prefill emits the first)",
           value=(req.output_tokens - 1) * step_s, unit="seconds", output_tokens=req.output_tokens)
    t.answer_s = r.step("answer_s", "ttft_s + (output_tokens − 1) · decode_s_per_token",
                        value=sv.request_latency_seconds(t.prefill_s, tpot_s=step_s, output_tokens=req.output_tokens),
                        unit="seconds", ttft_s=(t.prefill_s, "seconds"), output_tokens=req.output_tokens,
                        cites=sv.request_latency_seconds)
    wpm, wpt = catalog.default_value("reading_words_per_minute"), catalog.default_value("words_per_token")
    reading = r.step("reading_tokens_per_s", f"{wpm:g} words/min / 60 / {wpt:g} words per token",
                     value=wpm / MINUTE / wpt, unit="per_s")
    r.step("speed_over_reading", "decode_tokens_per_s / reading_tokens_per_s", value=tps / reading, unit="number")
    return tps


def batched(r: Report, t: Trip, kv_seq: float, tps: float) -> None:
    """What batching changes: the same step for a batch, its throughput, and where weight reads stop binding."""
    req = t.req
    r.set("batch", req.batch, "count")
    parts = node_step(t, req.batch, kv_seq)
    r.step("batch_memory_s_per_step", "(active weights + batch · KV) / (bandwidth · fraction)",
           value=parts.memory_s, unit="seconds", batch=req.batch, cites=sv.decode_step_parts)
    r.step("batch_compute_s_per_step", "batch · flops_per_token / effective_flops_per_s",
           value=parts.compute_s, unit="seconds", batch=req.batch, cites=sv.decode_step_parts)
    t.batch_step_s = r.step("batch_s_per_step", "max(memory, compute)", value=sv.step_seconds(parts),
                            unit="seconds", cites=sv.step_seconds)
    t.batch_tokens_per_s = r.step("batch_tokens_per_s", "batch / batch_s_per_step", value=req.batch / t.batch_step_s,
                                  unit="per_s", batch=req.batch)
    r.step("batch_speedup", "batch_tokens_per_s / decode_tokens_per_s  (per-user cost falls as much)",
           value=t.batch_tokens_per_s / tps, unit="number")
    b = t.bytes_per_param
    r.step("batch_at_ridge", "ridge · bytes_per_param / 2  (where weight reads stop binding)",
           value=jf.batch_at_ridge(t.ridge, bytes_per_param=b), unit="number", ridge=t.ridge, bytes_per_param=b,
           cites=jf.batch_at_ridge)
    if t.free > 0:
        max_seq = r.step("max_sequences_in_memory", "floor(free_bytes / kv_bytes_per_sequence)",
                         value=float(math.floor(t.free / kv_seq)), unit="count", free_bytes=(t.free, "bytes"))
        if req.batch > max_seq:
            r.warn("batch-does-not-fit", f"a batch of {req.batch} sequences of {t.context:,} tokens needs "
                                         f"{units.format(req.batch * kv_seq, 'bytes')} of KV cache; "
                                         f"{units.format(t.free, 'bytes')} are free ({int(max_seq)} sequences)")


def tensor_parallel(r: Report, t: Trip) -> None:
    """The all-reduces a TP node would add per token: shown, not added (the journey keeps the seed's terms)."""
    m, g, n = t.m, t.g, t.n_gpus
    if not (n > 1 and g.link_bytes_per_s_bidirectional):
        return
    ar = r.step("tp_allreduce_bytes_per_token", "2 all-reduces · L · 2 · (n − 1) / n · d_model · 2 bytes",
                value=jf.tp_allreduce_bytes_per_token(m.d_model, n_layers=m.n_layers,
                                                      bytes_per_value=sv.ACTIVATION_BYTES, n_ranks=n),
                unit="bytes", L=m.n_layers, n=n, d_model=m.d_model, cites=jf.tp_allreduce_bytes_per_token)
    one_way = g.link_bytes_per_s_per_direction
    r.step("tp_allreduce_s_per_token", "2 · L all-reduces of d_model · 2 bytes over one direction of the link  "
           "(bandwidth only; latency adds)",
           value=sv.tp_comm_seconds(m.n_layers, message_bytes=m.d_model * sv.ACTIVATION_BYTES, tp=n,
                                    link_bytes_per_s_per_direction=one_way, latency_s=0.0),
           unit="seconds", link=(one_way, "bytes_per_s"), tp_bytes=(ar, "bytes"), cites=sv.tp_comm_seconds)
    r.note("the journey's times are the seed's compute and memory terms: tensor-parallel all-reduces (above, "
           "per token, and at prefill) are not added to TTFT or the step time; `napkin serve` adds them")


def decode(walk: Walk, t: Trip) -> None:
    req, m = t.req, t.m
    r = walk.start("decode")
    attn = sv.prefill_attention_flops(m.n_layers, d_attn=m.d_attn, new_tokens=req.output_tokens,
                                      cached_tokens=t.prompt_tokens, **m.window())
    r.step("decode_attention_flops", "4 · L · d_attn · T_out · (T_in + T_out / 2)", value=attn, unit="flops",
           L=m.n_layers, d_attn=m.d_attn, T_in=(t.prompt_tokens, "count"), T_out=(req.output_tokens, "count"),
           cites=sv.prefill_attention_flops)
    if req.attention:
        t.decode_flops = r.step("decode_flops", "2 · N_active · T_out + attention",
                                value=t.flops_per_token * req.output_tokens + attn, unit="flops",
                                N_active=(t.n_active, "count"), T_out=(req.output_tokens, "count"))
    else:
        t.decode_flops = r.step("decode_flops", "2 · N_active · T_out  (one full pass per output token)",
                                value=t.flops_per_token * req.output_tokens, unit="flops",
                                N_active=(t.n_active, "count"), T_out=(req.output_tokens, "count"))
    held, held_expr = kv_held(r, m, t.context, "(prompt + output)")
    kv_seq = r.step("kv_bytes_per_sequence", f"kv_bytes_per_token · {held_expr}", value=t.kv_bytes_per_token * held,
                    unit="bytes", tokens=(t.context, "count"))
    r.step("decode_bytes_per_token", "active weights + KV of the sequence", value=t.active_weights + kv_seq,
           unit="bytes", weights=(t.active_weights, "bytes"), kv=(kv_seq, "bytes"))
    tps = one_user(r, t, kv_seq)
    batched(r, t, kv_seq, tps)
    tensor_parallel(r, t)
    r.note("each answer token needs the one before it: decode is serial, and each step reads every weight")
    r.note("the meter counts 2N for every answer token, as the seed does; the last token is never fed back, so "
           f"strictly one pass fewer ({1 / t.context:.2%} of Σ)")
    walk.close("decode", r, t.decode_flops)
