"""One configuration, or millions at once: memory per GPU and step time of a training layout.

``evaluate`` takes the degrees (tp, pp, cp, ep, dp, zero, recompute, micro_batch, interleave,
sp) as numbers or as numpy arrays shaped to broadcast against each other, and calls the
formulas of :mod:`napkin.formulas.activations`, :mod:`~napkin.formulas.parallelism` and
:mod:`~napkin.formulas.train_step` on them. On the search grid each intermediate is computed
on the axes it depends on (the weights on the degrees and ZeRO, the activations on the degrees,
recomputation and micro-batch), so only the last sums span the whole grid; for one
configuration the same function gives the figures of one row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from napkin.formulas import activations as A
from napkin.formulas import comm as C
from napkin.formulas import flops as F
from napkin.formulas import parallelism as P
from napkin.formulas import train_step as TS
from napkin.formulas.serving import kv_shards
from napkin.plan.train_setup import TrainSetup
from napkin.units import HOUR

DEGREES = ("tp", "pp", "cp", "ep", "dp")
OPTIONS = ("zero", "recompute", "micro_batch", "interleave", "sp")
CE_BYTES_PER_LOGIT = 16.0  # cross-entropy over fp32 logits: written, read and written back, forward and backward
BF16 = 2.0  # bytes per value of gathered weights and of activations on the wire


def _f(x: Any) -> Any:
    return np.asarray(x, dtype=float)


def memory(S: TrainSetup, c: dict[str, Any]) -> dict[str, Any]:
    """Bytes per GPU by kind: weights, gradients, optimizer state, activations, buffers (and the parts)."""
    tp, pp, cp, ep, dp = (c[k] for k in DEGREES)
    zero, rc, sp = c["zero"], c["recompute"], c["sp"]
    L, h, B = S.n_layers, S.d_model, S.act_bytes
    T = S.seq_len / cp * c["micro_batch"]
    ks = kv_shards(tp, n_kv_heads=S.n_kv_heads)
    shard = dp * cp
    if S.fsdp_hybrid:  # shard within the scale-up domain, replicate across domains
        shard = np.minimum(shard, np.maximum(S.scale_up_domain // tp, 1.0))
    Ls = P.stage_layers(L, pp=pp)
    head = S.head_params + S.tied_head_params * (pp > 1)  # Megatron keeps a tied head's copy on the last stage
    dense = P.stage_params(S.layer_dense_params, stage_layers=Ls, pp=pp, embedding_params=S.embedding_params,
                           head_params=head) / tp
    expert = Ls * S.layer_expert_params / (tp * ep)
    shard_e = np.maximum(shard / ep, 1.0)

    def state(bytes_per_param: float, shard_from: int) -> Any:
        return (P.zero_sharded_bytes(dense, bytes_per_param=bytes_per_param, zero=zero, shard_from=shard_from,
                                     shard=shard)
                + P.zero_sharded_bytes(expert, bytes_per_param=bytes_per_param, zero=zero, shard_from=shard_from,
                                       shard=shard_e))

    attn = dict(seq_len=S.seq_len, n_heads=S.n_heads, d_attn=S.d_attn, d_kv=S.d_kv, tp=tp, kv_shards=ks,
                flash=S.flash, dropout=S.dropout, bytes_per_value=B)
    rest = (A.replicated_activation_bytes(T, d_model=h, tp=tp, sequence_parallel=sp, dropout=S.dropout,
                                          bytes_per_value=B)
            + A.mlp_activation_bytes(T, d_ff_active=S.d_ff_active, d_model=h, tp=tp, ff_tensors=S.ff_tensors,
                                     moe_copies=S.moe_copies, n_experts=S.router_experts, bytes_per_value=B))
    none = rest + A.attention_activation_bytes(T, selective=0.0, **attn)
    selective = rest + A.attention_activation_bytes(T, selective=1.0, **attn)
    full = A.checkpoint_activation_bytes(T, d_model=h, tp=tp, sequence_parallel=sp, bytes_per_value=B)
    per_layer = A.layer_activation_bytes(none, selective_bytes=selective, full_bytes=full, recompute=rc)
    inflight = P.layers_in_flight(Ls, pp=pp, interleave=c["interleave"], n_microbatches=c["m"])
    logits = A.logits_activation_bytes(T, vocab_size=S.vocab_size, d_model=h, tp=tp, sequence_parallel=sp,
                                       bytes_per_value=B)
    first = inflight * per_layer + (pp == 1) * logits  # one stage holds everything
    last = Ls * per_layer + logits  # the last stage: one micro-batch in flight, and the logits
    working = A.recompute_working_bytes(none, stored_bytes=per_layer)
    activations = np.maximum(first, last) + working
    layer_params = (S.layer_dense_params + S.layer_expert_params / ep) / tp
    buffers = S.runtime_bytes + (zero >= 3) * layer_params * (2.0 * BF16 + S.grad_bytes)  # ZeRO-3 prefetch
    out = {"weights": state(S.weight_bytes, 3), "gradients": state(S.grad_bytes, 2),
           "optimizer": state(S.optimizer_bytes, 1), "activations": activations, "buffers": buffers}
    out["total"] = (out["weights"] + out["gradients"] + out["optimizer"] + out["buffers"]) + activations
    out.update(per_layer=per_layer, layers_in_flight=inflight, logits=logits, working=working, shard=shard,
               stage_params=dense + expert)
    return out


def _bus(S: TrainSetup, n_ranks: Any, stride: Any, *, alltoall: bool = False) -> Any:
    """Achieved bus bandwidth of a collective over ``n_ranks`` ranks spaced ``stride`` apart."""
    k = P.ranks_per_domain(n_ranks, stride=stride, scale_up_domain=S.scale_up_domain)
    f = P.alltoall_bytes_per_s if alltoall else P.ring_bus_bytes_per_s
    return f(n_ranks, ranks_per_domain=k, link_bytes_per_s=S.link_bytes_per_s * S.collective_efficiency,
             scale_out_bytes_per_s=S.scale_out_bytes_per_s * S.scale_out_efficiency)


def _p2p(S: TrainSetup, span: Any) -> Any:
    """Achieved rate of a point-to-point send between ranks ``span`` apart (a pipeline neighbour)."""
    inside = S.link_bytes_per_s * S.collective_efficiency
    return P.p2p_bytes_per_s(span, scale_up_domain=S.scale_up_domain, link_bytes_per_s=inside,
                             scale_out_bytes_per_s=S.scale_out_bytes_per_s * S.scale_out_efficiency)


def _gemm(S: TrainSetup, tokens: Any, n: Any, k: Any, eff_tokens: Any = None) -> Any:
    eta = TS.gemm_efficiency(tokens if eff_tokens is None else eff_tokens,
                             peak_fraction=S.gemm_peak_fraction * S.gemm_training_fraction,
                             tokens_half=S.gemm_tokens_half)
    return TS.gemm_seconds(tokens, n=n, k=k, dense_flops_per_s=S.peak, memory_bytes_per_s=S.memory_bytes_per_s,
                           bandwidth_efficiency=S.bandwidth_efficiency, efficiency=eta)


def layer_times(S: TrainSetup, c: dict[str, Any]) -> dict[str, Any]:
    """Seconds of one layer (forward, backward, recomputation) and of the output layer, per micro-batch."""
    tp, cp, sp, rc = c["tp"], c["cp"], c["sp"], c["recompute"]
    h = S.d_model
    T = S.seq_len / cp * c["micro_batch"]
    ks = kv_shards(tp, n_kv_heads=S.n_kv_heads)
    f = S.d_ff_active / tp
    expert_tokens = T * S.top_k * c["ep"] / S.n_experts if S.n_experts else T  # tokens each expert's GEMM sees
    gemm = (_gemm(S, T, S.d_attn / tp + 2.0 * S.d_kv / ks, h) + _gemm(S, T, h, S.d_attn / tp)
            + _gemm(S, T, S.mlp_inputs * f, h, expert_tokens) + _gemm(S, T, h, f, expert_tokens))
    flash = S.flash
    core = TS.attention_core_flops(T, seq_len=S.seq_len, d_attn=S.d_attn, tp=tp, causal_fraction=0.5 if flash else 1.0)
    eta_core = S.attention_efficiency * S.attention_training_fraction if flash else TS.gemm_efficiency(
        T, peak_fraction=S.gemm_peak_fraction * S.gemm_training_fraction, tokens_half=S.gemm_tokens_half)
    attention = core / ((S.attention_peak if flash else S.peak) * eta_core)
    ew = TS.elementwise_bytes_per_layer(T, d_model=h, d_attn=S.d_attn, d_kv=S.d_kv, d_ff_active=S.d_ff_active,
                                        mlp_inputs=S.mlp_inputs, n_heads=S.n_heads, seq_len=S.seq_len, tp=tp,
                                        kv_shards=ks, sequence_parallel=sp, rope=S.rope, flash=flash,
                                        dropout=S.dropout, bytes_per_value=S.act_bytes)
    elementwise = ew / (S.memory_bytes_per_s * S.bandwidth_efficiency)
    ratio = TS.FLASH_BACKWARD_RATIO if flash else TS.BACKWARD_GEMM_RATIO
    layer = TS.layer_train_seconds(gemm, attention_s=attention, elementwise_s=elementwise, recompute=rc,
                                   attention_backward_ratio=ratio)
    ce = CE_BYTES_PER_LOGIT * T * S.vocab_size / tp / (S.memory_bytes_per_s * S.bandwidth_efficiency)
    head = (1.0 + TS.BACKWARD_GEMM_RATIO) * _gemm(S, T, S.vocab_size / tp, h) + ce
    return {"layer": layer, "head": head, "attention": attention, "attention_ratio": ratio, "tokens": T,
            "kv_shards": ks}


def times(S: TrainSetup, c: dict[str, Any], mem: dict[str, Any]) -> dict[str, Any]:
    """Step time and its parts (seconds), from the layer times and the communication of each degree."""
    tp, pp, cp, ep, dp = (c[k] for k in DEGREES)
    rc, sp, zero, v, m = c["recompute"], c["sp"], c["zero"], c["interleave"], c["m"]
    L, h, B = S.n_layers, S.d_model, S.act_bytes
    lt = layer_times(S, c)
    T, ks = lt["tokens"], lt["kv_shards"]
    full = rc == 2
    Ls = P.stage_layers(L, pp=pp)
    moe = Ls * S.moe_layers / L  # MoE layers on the stage
    mb_compute = Ls * lt["layer"] + lt["head"]  # the last (slowest) stage, one micro-batch
    n_coll = ((4.0 + 2.0 * full) * (1.0 + sp) + 2.0 * sp) * (tp > 1)
    tp_layer = P.collective_seconds(P.tp_bytes_per_layer(T, d_model=h, tp=tp, full_recompute=full,
                                                         sequence_parallel=sp, bytes_per_value=B),
                                    link_bytes_per_s=_bus(S, tp, 1.0), latency_s=S.latency_s,
                                    n_collectives=n_coll) * S.tp_exposed
    cp_raw = P.collective_seconds(P.cp_bytes_per_layer(T, d_kv=S.d_kv, kv_shards=ks, cp=cp, bytes_per_value=B),
                                  link_bytes_per_s=_bus(S, cp, tp), latency_s=S.latency_s,
                                  n_collectives=3.0 * (cp - 1.0))
    cp_layer = P.exposed_seconds(cp_raw, window_s=lt["attention"] * (1.0 + lt["attention_ratio"]),
                                 overlap=S.cp_overlap)
    ep_layer = P.collective_seconds(P.ep_bytes_per_layer(T, d_model=h, top_k=S.top_k, ep=ep, tp=tp,
                                                         full_recompute=full, bytes_per_value=B),
                                    link_bytes_per_s=_bus(S, ep, tp * cp, alltoall=True), latency_s=S.latency_s,
                                    n_collectives=(4.0 + 2.0 * full) * (ep > 1)) * S.ep_exposed
    mb_comm = Ls * (tp_layer + cp_layer) + moe * ep_layer
    bubble = P.bubble_fraction(pp, n_microbatches=m, interleave=v) * m * (mb_compute + mb_comm)
    p2p = P.collective_seconds(P.p2p_bytes(T, d_model=h, tp=tp, bytes_per_value=B),
                               link_bytes_per_s=_p2p(S, tp * cp * dp * pp), latency_s=S.latency_s)
    pp_comm = (pp > 1) * 2.0 * m * v * p2p * S.pp_exposed
    shard = mem["shard"]
    stage = mem["stage_params"]
    dp_raw = P.collective_seconds(P.dp_bytes_per_rank(stage * BF16, grad_bytes=stage * S.grad_bytes, n_ranks=shard,
                                                      zero=zero, n_microbatches=m),
                                  link_bytes_per_s=_bus(S, shard, tp), latency_s=S.latency_s)
    replicas = dp * cp / shard  # hybrid sharding: an all-reduce of the shard across the replicas
    dp_raw = dp_raw + P.collective_seconds(C.ring_allreduce_bytes_per_rank(stage * S.grad_bytes / shard,
                                                                           n_ranks=replicas),
                                           link_bytes_per_s=_bus(S, replicas, tp * shard))
    dp_comm = P.exposed_seconds(dp_raw, window_s=np.where(zero >= 3, m * mb_compute, mb_compute),
                                overlap=S.dp_overlap)
    owned = stage / np.where(zero >= 1, shard, 1.0)
    optimizer = TS.optimizer_seconds(owned, memory_bytes_per_s=S.memory_bytes_per_s,
                                     bandwidth_efficiency=S.bandwidth_efficiency)
    parts = {"compute": m * mb_compute + optimizer, "tp_comm": m * Ls * tp_layer, "pp_bubble": bubble,
             "pp_comm": pp_comm, "dp_comm": dp_comm, "cp_comm": m * Ls * cp_layer, "ep_comm": m * moe * ep_layer}
    step = TS.step_seconds(parts["compute"], tp_comm_s=parts["tp_comm"], pp_bubble_s=bubble, pp_comm_s=pp_comm,
                           dp_comm_s=dp_comm, cp_comm_s=parts["cp_comm"], ep_comm_s=parts["ep_comm"])
    return {"step": step, "parts": parts, "microbatch_s": mb_compute + mb_comm, "microbatch_compute_s": mb_compute,
            "dp_raw_s": dp_raw, "tp_layer_s": tp_layer, "cp_raw_s": cp_raw, "ep_layer_s": ep_layer, "p2p_s": p2p}


def config(S: TrainSetup, **degrees: Any) -> dict[str, Any]:
    """The degrees as floats (arrays or scalars), with m, the micro-batches per step, and the batch they make."""
    c = {k: _f(v) for k, v in degrees.items()}
    G = S.global_batch_seqs
    c["m"] = np.maximum(np.floor(G / (c["dp"] * c["micro_batch"]) + 0.5), 1.0)
    c["batch"] = c["m"] * c["dp"] * c["micro_batch"]
    return c


def valid(S: TrainSetup, c: dict[str, Any], mem: dict[str, Any]) -> Any:
    """Combinations the frameworks run: the batch within tolerance, layers split evenly over the stages
    and chunks (unevenly only for a --pp given), interleaving on a pipeline whose micro-batches fill it,
    sequence parallelism only with TP, ZeRO only with ranks to shard over."""
    pp, v, m = c["pp"], c["interleave"], c["m"]
    batch_ok = np.abs(c["batch"] - S.global_batch_seqs) <= S.batch_tolerance * S.global_batch_seqs + 1e-9
    even = (np.mod(S.n_layers, pp * v) == 0) | ((S.uneven_stages > 0) & (pp * v <= S.n_layers))
    v_ok = ((v == 1) & even) | ((pp > 1) & even & (np.mod(m, pp) == 0))
    return batch_ok & v_ok & ((c["sp"] == 0) | (c["tp"] > 1)) & ((c["zero"] == 0) | (mem["shard"] > 1))


def evaluate(S: TrainSetup, **degrees: Any) -> dict[str, Any]:
    """Memory, fit, step time and throughput of the configurations ``degrees`` (scalars or arrays)."""
    c = config(S, **degrees)
    mem = memory(S, c)
    t = times(S, c, mem)
    return {"config": c, "memory": mem, "fits": mem["total"] <= S.usable_bytes, "valid": valid(S, c, mem), **t}


def figures(S: TrainSetup, e: dict[str, Any]) -> dict[str, Any]:
    """MFU, HFU, tokens/s, wall time, GPU-hours and cost of evaluated configurations (wall time = tokens /
    (tokens/s · goodput), as `napkin train` counts it)."""
    c = e["config"]
    n = c["tp"] * c["pp"] * c["cp"] * c["dp"]
    tokens_per_step = c["batch"] * S.seq_len
    mfu = F.model_flops_utilization(S.flops_per_token, tokens_per_step=tokens_per_step, step_s=e["step"],
                                    n_gpus=n, dense_flops_per_s=S.peak)
    extra = TS.recompute_flops_per_token(S.active_params, attention_flops_per_token=S.attention_flops_per_token,
                                         recompute=c["recompute"])
    hfu = mfu * (1.0 + extra / S.flops_per_token)
    tps = tokens_per_step / e["step"]
    wall = S.tokens / (tps * S.goodput)  # the paid time: the share goodput leaves advances the run
    gpu_hours = wall * n / HOUR
    return {"gpus": n, "mfu": mfu, "hfu": hfu, "tokens_per_s": tps, "wall_s": wall, "gpu_hours": gpu_hours,
            "usd": gpu_hours * S.usd_per_gpu_hour, "tokens_per_step": tokens_per_step}
