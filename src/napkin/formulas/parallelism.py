"""Training parallelism: what each GPU holds and what it sends under TP, PP, CP, EP, DP and ZeRO.

Symbols, mapped once (Megatron-LM's names and rank order tp-cp-ep-dp-pp):

    t  tensor-parallel degree      p  pipeline stages        v  virtual stages per GPU (interleave)
    c  context-parallel degree     e  expert-parallel degree (carved out of the data-parallel ranks)
    d  data-parallel degree        m  micro-batches per step per pipeline = global batch / (d · b)
    z  ZeRO stage 0-3 (FSDP full shard = 3); the states shard over the d · c ranks that hold
       the same weights (context-parallel ranks hold the same weights too)

Every function takes floats or numpy arrays and never branches on a value (a switch is a
comparison multiplied in, or ``where``), so the planner evaluates millions of configurations
at once through the same code the single-configuration report runs.
"""

from __future__ import annotations

from typing import Any

from napkin.formulas._array import maximum as _maximum
from napkin.formulas._array import where as _where


def _minimum(a: Any, b: Any) -> Any:
    return -_maximum(-a, -b)


# ---------------------------------------------------------------------- model state per GPU
def stage_layers(n_layers: Any, *, pp: Any) -> Any:
    """L_stage = ceil(L / p)

    Layers on the busiest pipeline stage. When p divides L this is L / p; otherwise some stages
    hold a layer more, and the pipeline moves at their pace (interleaving splits the stage's
    layers into v chunks, but not the count).
    Trap: L / p for a split that does not divide: Llama 3.1 405B's 126 layers on 16 stages
    put 8 layers on the busiest stage, not 7.875.
    Source: Narayanan et al. 2021 (arXiv:2104.04473), section 2.2 (stages of consecutive layers).
    """
    return -((-n_layers) // pp)


def stage_params(layer_params: Any, *, stage_layers: Any, pp: Any, embedding_params: Any = 0.0,
                 head_params: Any = 0.0) -> Any:
    """N_stage = L_stage · N_layer + N_embed + N_head − (p > 1) · min(N_embed, N_head)

    Parameters on the busiest pipeline stage before tensor parallelism: its layers plus the
    embedding (first stage) or the output layer (last stage); a single stage holds both.
    Trap: dividing the whole model by p: a 128k vocabulary's embedding (1.05B parameters on
    Llama 3.1 70B) sits on one stage, 10% more than an even share on 16 stages.
    Source: Narayanan et al. 2021 (arXiv:2104.04473), section 2.2 (stages of consecutive
    layers; the embedding on the first and the output layer on the last).
    """
    both = embedding_params + head_params
    return stage_layers * layer_params + both - (pp > 1) * _minimum(embedding_params + 0.0 * pp, head_params)


def zero_sharded_bytes(n_params: Any, *, bytes_per_param: float, zero: Any, shard_from: int, shard: Any) -> Any:
    """bytes = N · bytes_per_param / (shard if z ≥ shard_from else 1)

    One kind of model state on one GPU: the optimizer state is sharded from ZeRO stage 1, the
    gradients from stage 2 and the weights from stage 3 (FSDP full shard), each over the
    ``shard`` data-parallel ranks that hold the same weights.
    Trap: ZeRO-1 and 2 still keep a full copy of the weights on every GPU; only stage 3
    divides the 2 bytes per parameter, and it pays for that with all-gathers every micro-batch.
    Source: Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), section 5 and Figure 1
    (P_os, P_os+g, P_os+g+p: (2 + 2 + K)·Ψ / N_d).
    """
    return n_params * bytes_per_param / _where(zero >= shard_from, shard, 1.0 + 0.0 * shard)


# ---------------------------------------------------------------------------- pipeline
def layers_in_flight(stage_layers: Any, *, pp: Any, interleave: Any, n_microbatches: Any) -> Any:
    """layers = min(chunks, m · v) · L_stage / v,   chunks = p (1F1B) or p · (v + 1) − 1 (interleaved)

    Layers' worth of activations the first pipeline stage holds at its peak: under 1F1B it has
    p micro-batches in flight, each through its L_stage = L / p layers (L layers in all, whatever
    p is); the interleaved schedule warms up with 2(p − 1) + (v − 1)p chunks of L / (p · v)
    layers, L · (1 + (p − 1) / (p · v)) in all. Fewer micro-batches than that cap it.
    Trap: dividing activations by p: the first stage of a 1F1B pipeline stores as many layers'
    activations as the unpipelined model, only its weights shrink.
    Source: Korthikanti et al. 2022, section 4.2.3 (first stage: L layers under 1F1B, times
    1 + (p − 1)/(p·m) interleaved); Megatron-LM schedules.py (num_warmup_microbatches).
    """
    chunks = _where(interleave > 1, pp * (interleave + 1.0) - 1.0, pp + 0.0 * interleave)
    return _minimum(chunks, n_microbatches * interleave) * stage_layers / interleave


def bubble_fraction(pp: Any, *, n_microbatches: Any, interleave: Any = 1.0) -> Any:
    """bubble / ideal = (p − 1) / (m · v)

    Idle time of the pipeline's fill and drain relative to the time its m micro-batches take,
    shortened v-fold by interleaving v virtual stages on each GPU.
    Trap: reading it as a fraction of the step: with m < p it exceeds 1, and the step is
    (1 + bubble) times the work; few micro-batches on many stages waste most of the GPUs.
    Source: Narayanan et al. 2021, section 2.2.1 (1F1B: (p − 1)/m) and 2.2.2 (interleaved:
    (p − 1)/(m · v)).
    """
    return (pp - 1.0) / (n_microbatches * interleave)


# ----------------------------------------------------------------------- communication
def p2p_bytes_per_s(span: Any, *, scale_up_domain: Any, link_bytes_per_s: Any, scale_out_bytes_per_s: Any) -> Any:
    """bw = link if both ends sit in one scale-up domain (span ≤ D), else min(link, scale-out per GPU)

    A point-to-point send (a pipeline stage to the next) between ranks ``span`` apart: inside an
    NVLink board at the link's rate, across boards on the sender's own NIC (no aggregation: each
    GPU sends its own activations). The rates given are the achieved ones (rating · efficiency).
    Trap: NVLink speed for pipeline sends that leave the board: with TP 8 filling a board, every
    stage boundary is a NIC hop.
    Source: Megatron-LM rank order (tp fastest, then cp, ep, dp, pp); NVIDIA DGX H100 User Guide
    (one 400 Gb/s NIC per GPU).
    """
    return _where(span <= scale_up_domain, link_bytes_per_s + 0.0 * span,
                  _minimum(link_bytes_per_s + 0.0 * span, scale_out_bytes_per_s))


def ranks_per_domain(n_ranks: Any, *, stride: Any, scale_up_domain: Any) -> Any:
    """k = min(max(floor(D / stride), 1), n)

    Members of a group of n ranks, spaced ``stride`` ranks apart, that share one scale-up
    domain of D GPUs: a TP group (stride 1) packs min(t, D) into a domain; a data-parallel
    group strided by t · c has D / (t · c) members on each board, or one when t · c ≥ D.
    Trap: assuming one member per node for every group: with TP 1, all eight GPUs of a board
    belong to the same data-parallel group and share its eight NICs.
    Source: Megatron-LM rank order (tp fastest, then cp, ep, dp, pp).
    """
    per = stride * 0.0 + scale_up_domain
    return _minimum(_maximum((per // stride) + 0.0 * n_ranks, 1.0 + 0.0 * n_ranks), n_ranks + 0.0 * stride)


def ring_bus_bytes_per_s(n_ranks: Any, *, ranks_per_domain: Any, link_bytes_per_s: Any,
                         scale_out_bytes_per_s: Any) -> Any:
    """busbw = min(link, k · NIC · ((n − 1)/n) / ((N − 1)/N)),   N = n / k domains

    The bus bandwidth of a ring all-gather, reduce-scatter or all-reduce over n ranks, k in
    each scale-up domain: the rings run through NVLink inside a domain and cross to the next
    domain on k NICs at once (one ring per NIC), so the k members' NICs share the traffic that
    leaves the domain, (N − 1)/N of the buffer in all; a group inside one domain (N = 1) moves
    at the link's rate. With k = 1 it is one NIC per rank. The rates given are the achieved ones
    (rating · efficiency).
    Trap: one NIC per GPU as the bandwidth of a data-parallel all-gather whose ranks share a
    board: eight H100s on 400 Gb/s NICs reach ~380 GB/s of bus bandwidth across nodes, not 50.
    Source: ml-engineering network/README.md (B200, 4 nodes of 8 with 8x50 GB/s EFA: busbw
    381.8 GB/s; per-NIC rate = busbw · (N − 1)/(n − 1)); hisohara/ai-scripts (MI300X 2 nodes,
    8 NICs: 357 GB/s); nccl-tests PERFORMANCE.md (bus bandwidth).
    """
    domains = n_ranks / ranks_per_domain
    crosses = domains > 1.0
    share = _where(crosses, (domains - 1.0) / _where(crosses, domains, 1.0 + 0.0 * domains), 1.0 + 0.0 * domains)
    with_nics = ranks_per_domain * scale_out_bytes_per_s * ((n_ranks - 1.0) / n_ranks) / share
    return _where(crosses, _minimum(link_bytes_per_s + 0.0 * with_nics, with_nics), link_bytes_per_s + 0.0 * share)


def alltoall_bytes_per_s(n_ranks: Any, *, ranks_per_domain: Any, link_bytes_per_s: Any,
                         scale_out_bytes_per_s: Any) -> Any:
    """bw = min(link, NIC · (n − 1) / (n − k))

    The rate at which one rank's all-to-all traffic, (n − 1)/n of its buffer, leaves it: the
    share for the k − 1 peers in its domain rides the link, the share for the n − k others
    leaves on its own NIC, which sets the pace when the group spans domains.
    Trap: an expert-parallel group wider than the board: every token routed off the board
    crosses a NIC, with no aggregation across the board's GPUs as rings get.
    Source: Lepikhin et al. 2020, GShard (arXiv:2006.16668), section 2.2; DeepSeek-V3
    technical report (arXiv:2412.19437), section 3.2.2 (dispatch limited to 4 nodes for IB).
    """
    off = n_ranks - ranks_per_domain
    crosses = off > 0.0
    nic = scale_out_bytes_per_s * (n_ranks - 1.0) / _where(crosses, off, 1.0 + 0.0 * off)
    return _where(crosses, _minimum(link_bytes_per_s + 0.0 * nic, nic), link_bytes_per_s + 0.0 * off)


def collective_seconds(bytes_per_rank: Any, *, link_bytes_per_s: Any, efficiency: Any = 1.0,
                       latency_s: Any = 0.0, n_collectives: Any = 1.0) -> Any:
    """t = bytes_per_rank / (bw · η_coll) + n_collectives · latency

    bw is one direction of the link each rank sends on; η_coll the fraction of it a
    collective achieves (NCCL's bus bandwidth over the link rate); the latency is paid once
    per collective launched.
    Trap: a bidirectional link rating (NVLink's 900 GB/s) for one-way bytes halves the time.
    Source: Thakur et al. 2005 (ring collectives: α + β · bytes); nccl-tests PERFORMANCE.md
    (bus bandwidth).
    """
    return bytes_per_rank / (link_bytes_per_s * efficiency) + n_collectives * latency_s


def tp_bytes_per_layer(tokens: Any, *, d_model: float, tp: Any, full_recompute: Any = 0.0,
                       sequence_parallel: Any = 0.0, bytes_per_value: float = 2.0) -> Any:
    """bytes = (4 + 2 · full + SP) · 2 · (t − 1) / t · T · h · B   per layer, forward and backward

    Megatron TP all-reduces the layer's output twice in the forward (after attention and after
    the MLP) and twice in the backward; sequence parallelism replaces each all-reduce by a
    reduce-scatter and an all-gather (the same bytes) and all-gathers the two saved sharded
    inputs again in the backward (one all-reduce's worth); full recomputation repeats the
    forward's two.
    Trap: counting the forward's two only: the backward moves as much again.
    Source: Shoeybi et al. 2019, Megatron-LM (arXiv:1909.08053), Figure 4 (f and g operators);
    Korthikanti et al. 2022, section 4.2.2 (g and ḡ: same volume as the all-reduce).
    """
    n_allreduce = 4.0 + 2.0 * full_recompute + 1.0 * sequence_parallel
    return n_allreduce * 2.0 * (tp - 1.0) / tp * tokens * d_model * bytes_per_value


def p2p_bytes(tokens: Any, *, d_model: float, tp: Any = 1.0, bytes_per_value: float = 2.0) -> Any:
    """bytes = T · h · B / t   per micro-batch per stage boundary per direction

    The activation a stage sends forward (and its gradient backward), split over the TP ranks
    (Megatron's scatter-gather: each rank sends 1/t and the receiver all-gathers on NVLink).
    Trap: sending the whole tensor from every TP rank multiplies the pipeline traffic by t.
    Source: Narayanan et al. 2021, section 4.1 (scatter/gather communication optimisation).
    """
    return tokens * d_model * bytes_per_value / tp


def dp_bytes_per_rank(weight_bytes: Any, *, grad_bytes: Any, n_ranks: Any, zero: Any, n_microbatches: Any) -> Any:
    """bytes = (d − 1)/d · [2G (z = 0);  G + W (z = 1, 2);  m · (2W + G) (z = 3)]   per step

    The data-parallel traffic of one GPU over a step, from its unsharded stage weights W (at
    the compute precision) and gradients G (at the reduce precision): an all-reduce of the
    gradients; ZeRO 1-2 reduce-scatter them and all-gather the updated weights; ZeRO-3 / FSDP
    all-gathers the weights in the forward and again in the backward and reduce-scatters the
    gradients for every micro-batch.
    Trap: ZeRO-3 with gradient accumulation gathers the weights 2m times a step, not twice:
    at m = 16 it moves 33x ZeRO-1's bytes.
    Source: Rajbhandari et al. 2020, section 7 (Ψ for P_os and P_os+g, 1.5Ψ for P_os+g+p per
    step); PyTorch FSDP (Zhao et al. 2023, arXiv:2304.11277), section 3 (gather per forward
    and backward, reduce-scatter per backward).
    """
    per_step = _where(zero >= 3, n_microbatches * (2.0 * weight_bytes + grad_bytes),
                      _where(zero >= 1, grad_bytes + weight_bytes, 2.0 * grad_bytes))
    return (n_ranks - 1.0) / n_ranks * per_step


def cp_bytes_per_layer(tokens: Any, *, d_kv: float, kv_shards: Any, cp: Any, bytes_per_value: float = 2.0) -> Any:
    """bytes = 3 · (c − 1) · 2 · T · d_kv / ks · B   per layer per micro-batch, forward and backward

    Ring attention passes each rank's K and V chunk (T tokens) around the c ranks, c − 1 hops
    in the forward; the backward passes K and V again with their gradients (2x).
    Trap: full K/V width under GQA: Llama 3.1 70B's K and V are 8 heads, not 64.
    Source: Liu et al. 2023, Ring Attention (arXiv:2310.01889), section 3; Megatron-LM
    context parallelism (NVIDIA Megatron Core docs, "context parallel": P2P ring of KV).
    """
    return 3.0 * (cp - 1.0) * 2.0 * tokens * d_kv / kv_shards * bytes_per_value


def ep_bytes_per_layer(tokens: Any, *, d_model: float, top_k: float, ep: Any, tp: Any = 1.0,
                       full_recompute: Any = 0.0, bytes_per_value: float = 2.0) -> Any:
    """bytes = (4 + 2 · full) · (e − 1) / e · (T / t) · k · h · B   per MoE layer per micro-batch

    Each MoE layer dispatches every token to its k experts and combines the results (two
    all-to-alls forward, two backward, two more if recomputed); a rank keeps the 1/e of the
    traffic routed to its own experts, and sends the rest. With TP the tokens are
    sequence-sharded first (T / t per rank).
    Trap: forgetting the factor k: top-2 routing sends every token twice.
    Source: Lepikhin et al. 2020, GShard (arXiv:2006.16668), section 2.2 (dispatch and combine
    all-to-all); Megatron Core MoE (token dispatcher: all-to-all over the EP group).
    """
    return (4.0 + 2.0 * full_recompute) * (ep - 1.0) / ep * tokens / tp * top_k * d_model * bytes_per_value


def exposed_seconds(comm_s: Any, *, window_s: Any, overlap: Any) -> Any:
    """t_exposed = max(t_comm − overlap · t_window, 0)

    Communication that runs beside compute is hidden up to the fraction ``overlap`` of the
    compute window it can use (0: none, 1: perfectly); the rest is on the critical path.
    Trap: assuming perfect overlap: at scale the gradient reduce-scatter outlasts the last
    micro-batch's backward and the difference shows up in every step.
    Source: Li et al. 2020, PyTorch Distributed (arXiv:2006.15704), section 3.2 (bucketed
    all-reduce overlapped with the backward).
    """
    return _maximum(comm_s - overlap * window_s, 0.0 * comm_s)
