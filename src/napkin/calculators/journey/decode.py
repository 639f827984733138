"""Rung 5, decode: one user's tokens at the bandwidth floor and by the operator model (`napkin serve`'s
decode step, all-reduces included), the node batched under continuous batching with every request's
prefill paid, and how far batching goes before the cache fills."""

from __future__ import annotations

import math

from napkin import catalog, units
from napkin.calculators import resolve
from napkin.calculators.replica import describe, error_bars
from napkin.calculators.steps import kv_held
from napkin.derivation import Report
from napkin.formulas import journey as jf
from napkin.formulas import operators as op
from napkin.formulas import roofline as roof
from napkin.formulas import scheduling as sch
from napkin.formulas import serving as sv
from napkin.units import MINUTE

from . import node
from .walk import Trip, Walk


def one_user(r: Report, t: Trip, kv_seq: float) -> float:
    """One sequence alone on the node: the napkin floor, the operator model's step, and the answer's time."""
    req, m = t.req, t.m
    floor_tps = roof.decode_tokens_per_s(1, memory_bytes_per_s=t.node_bw, weights_bytes=t.active_weights,
                                         kv_bytes_per_sequence=kv_seq)
    floor_s = r.step("decode_floor_s_per_token", "(active weights + KV) / (gpus · bandwidth)  (the napkin floor: "
                     "every byte once, at the datasheet rate)", value=1.0 / floor_tps, unit="seconds",
                     bandwidth=(t.node_bw, "bytes_per_s"), cites=roof.decode_tokens_per_s)
    r.step("decode_compute_s_per_token", "flops_per_token / (gpus · dense peak)  (what FLOPs alone would take)",
           value=t.flops_per_token / t.node_peak, unit="seconds")
    ctx = t.prompt_tokens + req.output_tokens / 2.0
    held, held_expr = kv_held(r, m, ctx, "ctx")
    t.held_avg = held
    ops = t.replica.operators(1.0, kv_tokens=held, logits=1.0)
    step_s = r.step("decode_s_per_token", f"Σ operators of a decode step of one sequence (KV of {held_expr} tokens) "
                    f"on TP {t.n_gpus}  (the operator model)", value=float(op.total_seconds(ops)), unit="seconds",
                    ctx=(ctx, "count"), note="ctx = prompt + output / 2, the mean over the answer",
                    cites=op.step_seconds)
    r.step("decode_floor_share", "decode_floor_s_per_token / decode_s_per_token", value=floor_s / step_s,
           unit="fraction", note="how close one request comes to the floor")
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
    tensor_parallel(r, t, ops["allreduce"], step_s)
    r.note(f"decode operators, one sequence: {describe(ops)}")
    return tps


def batched(r: Report, t: Trip, kv_seq: float, tps: float) -> None:
    """What batching changes: continuous batching at --batch in flight, as `napkin serve` runs it, every
    request's prefill paid; and where the weights' reads stop binding."""
    req = t.req
    r.set("batch", req.batch, "count")
    chunk = resolve.assume_default(r, "chunk", "chunk_tokens", unit="count")
    st = node.steady_state(t, req.batch, chunk)
    if st.decode_seqs < req.batch:
        r.step("decode_sequences", "min(batch, chunk · output / (output + prompt))", value=st.decode_seqs,
               unit="count", batch=req.batch, chunk=(chunk, "count"), cites=sch.decode_sequences,
               note="the step's token budget binds: the other sequences wait with their prompts")
    dec_s = r.step("batch_s_per_step", f"Σ operators of a decode step of {st.decode_seqs:,.0f} sequences "
                   "(no prompts)", value=node.total(st.decode_ops), unit="seconds", cites=op.step_seconds)
    mix_s = r.step("mixed_step_s", f"Σ operators of a step with {st.decode_seqs:,.0f} decode tokens and "
                   f"{st.prompt_tokens:,.0f} prompt tokens", value=node.total(st.mixed_ops), unit="seconds",
                   cites=op.step_seconds)
    r.step("prompt_step_share", "(decode_sequences · prompt / output) / prompt tokens in a step  (the steps that "
           "carry a new request's prompt)", value=st.prompt_share, unit="fraction",
           decode_sequences=(st.decode_seqs, "count"), prompt=(t.prompt_tokens, "count"),
           output=(req.output_tokens, "count"), in_a_step=(st.prompt_tokens, "count"), cites=sch.prompt_steps)
    cycle = r.step("batch_cycle_s", "share · mixed_step_s + (1 − share) · batch_s_per_step  (the mean step a "
                   "sequence waits per token)", value=st.cycle_s, unit="seconds", mixed=(mix_s, "seconds"),
                   decode=(dec_s, "seconds"), cites=sch.continuous_step_seconds)
    t.batch_tokens_per_s = r.step("batch_tokens_per_s", "decode_sequences / batch_cycle_s  (every request's prefill "
                                  "paid)", value=st.decode_seqs / cycle, unit="per_s",
                                  decode_sequences=(st.decode_seqs, "count"))
    r.step("batch_speedup", "batch_tokens_per_s / decode_tokens_per_s  (per-user cost falls as much)",
           value=t.batch_tokens_per_s / tps, unit="number")
    b = t.bytes_per_param
    r.step("batch_at_ridge", "ridge · bytes_per_param / 2  (where weight reads stop binding)",
           value=jf.batch_at_ridge(t.ridge, bytes_per_param=b), unit="number", ridge=t.ridge, bytes_per_param=b,
           cites=jf.batch_at_ridge)
    if t.free > 0:
        repl = node.cache_copies(r, t)
        usable = units.format(catalog.default_value("serve_usable_memory_fraction"), "fraction")
        bound = (f"an upper bound: the datasheet capacity with nothing held back; `napkin serve` budgets {usable} of "
                 "the capacity the runtime reports for weights and KV, so its max_batch is lower")
        if repl > 1:
            max_seq = r.step("max_sequences_in_memory", "floor(free_bytes / (kv_bytes_per_sequence · kv_replication))",
                             value=float(math.floor(t.free / (kv_seq * repl))), unit="count",
                             free_bytes=(t.free, "bytes"), kv_replication=repl, note=bound)
        else:
            max_seq = r.step("max_sequences_in_memory", "floor(free_bytes / kv_bytes_per_sequence)",
                             value=float(math.floor(t.free / kv_seq)), unit="count", free_bytes=(t.free, "bytes"),
                             note=bound)
        if req.batch > max_seq:
            r.warn("batch-does-not-fit", f"a batch of {req.batch} sequences of {t.context:,} tokens needs "
                                         f"{units.format(req.batch * kv_seq * repl, 'bytes')} of KV cache; "
                                         f"{units.format(t.free, 'bytes')} are free ({int(max_seq)} sequences)")
    bar = error_bars(t.g, t.n_gpus, moe=t.m.is_moe).get("tokens_per_s")
    if bar:
        r.note(f"the operator model's throughput against published runs (napkin validate): {bar}")


def tensor_parallel(r: Report, t: Trip, allreduce: op.OperatorTime, step_s: float) -> None:
    """What the tensor-parallel all-reduces move per token and what they add to the one-sequence step."""
    m, n = t.m, t.n_gpus
    if n == 1:
        return
    r.step("tp_allreduce_bytes_per_token", "2 all-reduces · L · 2 · (n − 1) / n · d_model · 2 bytes",
           value=jf.tp_allreduce_bytes_per_token(m.d_model, n_layers=m.n_layers, bytes_per_value=op.ACTIVATION_BYTES,
                                                 n_ranks=n),
           unit="bytes", L=m.n_layers, n=n, d_model=m.d_model, cites=jf.tp_allreduce_bytes_per_token)
    ar_s = r.step("tp_allreduce_s_per_token", "the allreduce operator of the one-sequence step: 2 · L all-reduces, "
                  "each the faster of a one-shot kernel (latency + (n − 1) · message / link) and the ring (its "
                  "bytes at the family's measured bus bandwidth for the message, or over the link plus its latency)",
                  value=float(allreduce.seconds), unit="seconds", cites=op.allreduce_time)
    r.step("tp_allreduce_share", "tp_allreduce_s_per_token / decode_s_per_token", value=ar_s / step_s,
           unit="fraction")


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
    r.note("each answer token needs the one before it: decode is serial, and each step reads every weight")
    r.note("the step times include what a napkin rule leaves out: the tensor-parallel all-reduces, attention "
           "over the KV cache, the element-wise kernels and the fixed per-layer costs, each operator on its own "
           "roofline, summed")
    bar = error_bars(t.g, t.n_gpus, moe=t.m.is_moe).get("tpot_s")
    if bar:
        r.note(f"the operator model's decode step (TPOT) against published runs (napkin validate): {bar}")
    r.note("the meter counts 2N for every answer token; the last token is never fed back, so strictly one pass "
           f"fewer ({1 / t.context:.2%} of Σ)")
    walk.close("decode", r, t.decode_flops)

