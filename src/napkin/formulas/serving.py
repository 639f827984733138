"""Serving: prefill and decode on the roofline, tensor and pipeline parallelism, batching,
speculative decoding and replica capacity.

Every function here takes floats or numpy arrays (the planner sweeps them over a grid of
GPU type x GPUs per replica x TP degree x batch), so none branches on a value: maxima are
``np.maximum`` (imported only when an array arrives), a switch is a multiplication by a
boolean. Symbols:

    B  sequences decoding together (batch)     T  prompt tokens         ctx  tokens held
    tp tensor-parallel degree                   pp pipeline stages       n   GPUs = tp · pp
    L  layers        d  model width            h_kv KV heads            E, k  experts, routed per token

Conventions, stated once: a decode step advances every sequence by one token and reads
the active weights once plus every sequence's KV cache; tensor parallelism costs two
all-reduces per layer per step (after attention and after the MLP, Megatron-LM); pipeline
stages run one after another for a given sequence, so they add memory, not speed, to
a single token.
"""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas._array import is_scalar as _scalar
from napkin.formulas._array import maximum as _maximum
from napkin.formulas._array import where as _where
from napkin.units import GIGA, MILLION

ALLREDUCES_PER_LAYER = 2.0  # Megatron TP: one after attention, one after the MLP
ACTIVATION_BYTES = 2.0  # bf16 activations travel in the all-reduce whatever the weight format
# One 400 Gb/s NIC per GPU, one direction: 50 GB/s. NVIDIA DGX H100 User Guide, "Network
# Modules": eight ConnectX-7 InfiniBand NDR ports, one per GPU (the HGX reference design).
SCALE_OUT_BYTES_PER_S_PER_GPU = 400 * GIGA / 8  # 400 Gb/s in bytes


def _ceil(x: Any) -> Any:
    return -((-x) // 1)


def _minimum(a: Any, b: Any) -> Any:
    if _scalar(a, b):
        return min(a, b)
    import numpy as np

    return np.minimum(a, b)


# ------------------------------------------------------------------------ memory
def moe_weights_read_bytes(batch: Any, *, shared_bytes: float, routed_bytes: float,
                           n_experts: float, n_active_experts: float) -> Any:
    """bytes = shared + routed · (1 − (1 − k/E)^B)

    The weights one decode step must read: everything every token touches (attention,
    dense layers, shared experts, embeddings) plus the routed experts that at least one
    of the B tokens picked, under uniform routing. At B = 1 this is the active weight;
    as B grows it tends to the total. A dense model has routed_bytes = 0.
    Trap: reading only the active parameters at every batch: DeepSeek-V3 at batch 64
    touches ~87% of its 256 experts per layer, so a batched step moves like a 671B model.
    Source: seed 004 ("moves like a 37B model for compute, and like a 671B model for
    memory"); the expected number of distinct experts is the coupon-collector fraction.
    """
    return shared_bytes + routed_bytes * (1.0 - (1.0 - n_active_experts / n_experts) ** batch)


def kv_shards(tp: Any, *, n_kv_heads: float, latent: bool = False) -> Any:
    """ways the KV cache is split = h_kv / ceil(h_kv / tp)   (1 for MLA's shared latent)

    Each tensor-parallel rank keeps whole KV heads; with more ranks than KV heads a head is
    copied onto several ranks. MLA caches one latent per token that every head reads, so
    tensor parallelism replicates it on every rank.
    Trap: dividing the KV cache by tp when tp > h_kv: Llama 3.1 70B (8 KV heads) on 16-way TP
    keeps each head twice, and MLA is not split by heads at all.
    Source: Megatron-LM / vLLM head partitioning; DeepSeek-V3 MLA (one latent per token).
    """
    if latent:
        return 1.0 + 0.0 * tp
    return n_kv_heads / _ceil(n_kv_heads / tp)


def kv_replication(tp: Any, *, n_kv_heads: float, latent: bool = False) -> Any:
    """replication = tp / kv_shards   (1 when tp divides h_kv; tp for MLA)

    Trap: the KV memory of the replicas is real memory: it lowers the batch that fits.
    Source: follows from kv_shards.
    """
    return tp / kv_shards(tp, n_kv_heads=n_kv_heads, latent=latent)


def max_batch(usable_bytes_per_gpu: Any, *, weights_bytes_per_gpu: Any, shared_kv_bytes_per_gpu: Any,
              kv_bytes_per_sequence_per_gpu: Any) -> Any:
    """B_max = floor((usable − weights − shared KV) / KV per sequence), at least 0

    Trap: the cache is per sequence: "fits for one user" and "fits for the launch" differ by B.
    Source: seed 004, "kv_total = kv_bytes_per_token × context × concurrent_sequences".
    """
    room = usable_bytes_per_gpu - weights_bytes_per_gpu - shared_kv_bytes_per_gpu
    return _maximum(room // kv_bytes_per_sequence_per_gpu, 0.0 * room)


# ------------------------------------------------------------------------ FLOPs
def decode_flops_per_token(active_params: Any, *, n_layers: float, d_attn: float, context_tokens: Any,
                           attention: bool = True, window_tokens: Any = math.inf, window_layers: Any = 0.0) -> Any:
    """flops_per_token = 2 · N_active + 4 · d_attn · ((L − L_w) · ctx + L_w · min(ctx, W))
                       = 2 · N_active + 4 · L · d_attn · ctx − 4 · L_w · d_attn · max(ctx − W, 0)

    One new query attends to every cached key (QKᵀ) and value (AV) it can see: 2 · d_attn
    each per key per layer. No causal halving: the single new row sees its whole span. L_w of
    the L layers attend over a sliding window of the last W tokens (W = ∞, L_w = 0: none), so
    they see min(ctx, W) keys; with W ≥ ctx this is exactly 2 · N_active + 4 · L · d_attn · ctx.
    Trap: total instead of active parameters for MoE; the attention term at long context
    (70B at 128k context: +0.34 TFLOP per token over the 2N of 0.14 TFLOP); and the full
    context on sliding-window layers: Mistral 7B at 32k context is 16.6 GFLOP per token,
    not 31.5.
    Source: seed 004, "flops_per_token ≈ 2 × active_params"; Kaplan et al. 2020, table 1;
    Jiang et al. 2023, Mistral 7B (arXiv:2310.06825), section 2 "Sliding Window Attention"
    (each layer attends to at most W = 4096 previous tokens); Gemma Team 2024, Gemma 2
    (arXiv:2408.00118), section 2 (local sliding-window layers of 4096 alternate with global ones).
    """
    full = 4.0 * n_layers * d_attn * context_tokens
    beyond = 4.0 * window_layers * d_attn * _maximum(context_tokens - window_tokens, 0.0 * context_tokens)
    return 2.0 * active_params + (full - beyond) * float(attention)


def attention_pairs_beyond_window(new_tokens: Any, *, cached_tokens: Any = 0.0, window_tokens: Any = math.inf,
                                  causal: bool = True) -> Any:
    """pairs cut = [max(P + T − W, 0)² − max(P − W, 0)²] / 2   (causal);  T · max(P + T − W, 0)   (full)

    Query-key pairs of a prefill of T new tokens after P cached ones that a sliding window
    of W tokens removes from one layer: the new token at position x sees min(x, W) keys
    instead of x, so the cut is ∫ max(x − W, 0) dx over x from P to P + T (the continuous
    form of the sum, like T · (P + T/2) for the full causal count). Under the full
    (no causal mask) convention each query counts min(P + T, W) keys instead of P + T.
    Zero when W ≥ P + T.
    Trap: the square of the prompt on window layers: past W the pairs grow linearly in T
    (T · W − W²/2), not as T²/2.
    Source: Jiang et al. 2023, Mistral 7B (arXiv:2310.06825), section 2 (token i attends to
    tokens i − W … i); Gemma 2 (arXiv:2408.00118), section 2.
    """
    zero = 0.0 * new_tokens
    if not causal:
        return new_tokens * _maximum(cached_tokens + new_tokens - window_tokens, zero)
    end = _maximum(cached_tokens + new_tokens - window_tokens, zero)
    start = _maximum(cached_tokens - window_tokens, zero)
    return 0.5 * (end * end - start * start)


def prefill_attention_flops(n_layers: float, *, d_attn: float, new_tokens: Any, cached_tokens: Any = 0.0,
                            causal: bool = True, window_tokens: Any = math.inf, window_layers: Any = 0.0) -> Any:
    """attention FLOPs = 4 · d · ((L − L_w) · T · (P + T/2) + L_w · Σ_{i=P+1..P+T} min(i, W))   (causal)
                       = 4 · d · (L · T · (P + T/2) − L_w · [max(P+T−W, 0)² − max(P−W, 0)²] / 2)

    Each new token scores against the P cached tokens and, under the causal mask, half of
    the new ones on average (QKᵀ and AV: 2 · 2 · d per pair). With P = 0 this is the
    2 · L · T² · d of a plain causal prefill; ``causal=False`` counts the full square. L_w of
    the L layers attend over a sliding window of W tokens (see attention_pairs_beyond_window);
    with W ≥ P + T (or none: W = ∞, L_w = 0) this is exactly 4 · L · d · T · (P + T/2).
    Trap: 2·N·T alone ignores this term, which grows with T²: at 100k tokens on a 405B
    model it adds half again to the 2N figure; and the opposite error on a sliding-window
    model: Mistral 7B at a 32k prompt is 64.3 TFLOP of attention, not 268.
    Source: seed 003, "Where 2N bends"; seed 001, "ignoring attention at long context";
    Mistral 7B (arXiv:2310.06825), section 2 sliding window; Gemma 2 (arXiv:2408.00118),
    section 2, alternating local (4096) and global layers.
    """
    half = 0.5 if causal else 1.0
    full = 4.0 * n_layers * d_attn * new_tokens * (cached_tokens + half * new_tokens)
    cut = 4.0 * d_attn * window_layers * attention_pairs_beyond_window(
        new_tokens, cached_tokens=cached_tokens, window_tokens=window_tokens, causal=causal)
    return full - cut


# ------------------------------------------------------------------ communication
def tp_allreduce_seconds(message_bytes: Any, *, tp: Any, link_bytes_per_s_per_direction: Any,
                         latency_s: float) -> Any:
    """t = 2 · (tp − 1) / tp · message / one-direction bandwidth + latency   (0 when tp = 1)

    One all-reduce of a tensor-parallel group: the ring's volume per rank over one
    direction of the link, plus a fixed cost per collective (launch, synchronisation).
    Trap: at decode the message is tiny (B · d · 2 bytes: 16 KB for 70B at batch 1) so
    the latency, not the bandwidth, is the cost; and one-way bytes go over one direction
    of the link (450 GB/s of NVLink's 900).
    Source: seed 004 ring all-reduce; per-collective latency as in nccl-tests.
    """
    volume = 2.0 * (tp - 1.0) / tp * message_bytes
    return volume / link_bytes_per_s_per_direction + latency_s * (tp > 1)


def tp_link_bytes_per_s(tp: Any, *, scale_up_domain: Any, link_bytes_per_s_per_direction: Any,
                        scale_out_bytes_per_s_per_gpu: Any = SCALE_OUT_BYTES_PER_S_PER_GPU) -> Any:
    """link = scale-up link   if tp ≤ domain,   else min(scale-up link, scale-out per GPU)

    The bandwidth one rank of a tensor-parallel ring all-reduce gets, one direction. Within
    the scale-up domain (8 GPUs on an HGX board, 72 in an NVL72 rack) every hop is NVLink;
    a group larger than the domain must cross the scale-out network, and a ring moves as
    fast as its slowest hop, so every rank's 2·(tp − 1)/tp · message waits on the NIC.
    Trap: pricing TP 16 on H100s at NVLink speed (450 GB/s per direction): two HGX boards
    talk over one 400 Gb/s NIC per GPU, 50 GB/s, 9x slower, on every one of the 2 · L
    all-reduces of every decode step.
    Source: ring all-reduce (Patarasuk and Yuan 2009: bandwidth term set by the slowest
    link); NVIDIA DGX H100 User Guide (one 400 Gb/s ConnectX-7 per GPU); scale-up domain
    sizes in catalog/gpus.toml (scale_up_source).
    """
    return _where(tp <= scale_up_domain, link_bytes_per_s_per_direction,
                  _minimum(link_bytes_per_s_per_direction, scale_out_bytes_per_s_per_gpu))


def tp_comm_seconds(n_layers: Any, *, message_bytes: Any, tp: Any, link_bytes_per_s_per_direction: Any,
                    latency_s: float, allreduces_per_layer: float = ALLREDUCES_PER_LAYER) -> Any:
    """t_comm = L · 2 · t_allreduce(B · d · bytes)   per forward pass (decode step or prefill)

    Trap: forgetting it: 70B on 8 GPUs pays 160 all-reduces per token; at ~10 µs each
    that is 1.6 ms on a 5 ms step.
    Source: Megatron-LM (Shoeybi et al. 2019): two all-reduces per layer in the forward pass.
    """
    return n_layers * allreduces_per_layer * tp_allreduce_seconds(
        message_bytes, tp=tp, link_bytes_per_s_per_direction=link_bytes_per_s_per_direction,
        latency_s=latency_s)


# ------------------------------------------------------------------------ time
def roofline_seconds(bytes_moved: Any, *, flops: Any, memory_bytes_per_s: Any, dense_flops_per_s: Any,
                     bandwidth_efficiency: Any = 1.0, compute_efficiency: Any = 1.0) -> Any:
    """t = max(bytes / (bandwidth · η_bw), FLOPs / (peak · η_compute))

    Trap: adding the two times: a kernel streams and computes at once; only the larger binds.
    Source: Williams et al. 2009 (roofline); seed 004.
    """
    return _maximum(bytes_moved / (memory_bytes_per_s * bandwidth_efficiency),
                    flops / (dense_flops_per_s * compute_efficiency))


def decode_step_seconds(bytes_per_gpu: Any, *, flops_per_gpu: Any, memory_bytes_per_s: Any,
                        dense_flops_per_s: Any, bandwidth_efficiency: Any = 1.0, compute_efficiency: Any = 1.0,
                        comm_s: Any = 0.0, pp: Any = 1.0) -> Any:
    """t_step = pp · (max(bytes_gpu / (bw · η_bw), flops_gpu / (peak · η_c)) + t_comm)

    bytes_gpu and flops_gpu are one pipeline stage's share on one GPU for its micro-batch,
    t_comm that stage's tensor-parallel all-reduces. A token passes the pp stages in turn.
    Trap: expecting tensor cores to help at small batch: the bytes term binds until the
    batch reaches the ridge (~295 sequences for bf16 on an H100).
    Source: seed 004, "tokens_per_second ≈ batch × bandwidth ÷ (active_weight_bytes +
    batch × kv_bytes_per_sequence)", with the compute roof and TP communication added.
    """
    return pp * (roofline_seconds(bytes_per_gpu, flops=flops_per_gpu, memory_bytes_per_s=memory_bytes_per_s,
                                  dense_flops_per_s=dense_flops_per_s,
                                  bandwidth_efficiency=bandwidth_efficiency,
                                  compute_efficiency=compute_efficiency) + comm_s)


def microbatch(batch: Any, *, pp: Any) -> Any:
    """b = max(B / pp, 1): sequences per pipeline micro-batch

    Trap: with fewer sequences than stages, stages idle; the pipeline adds no throughput.
    Source: GPipe (Huang et al. 2019) micro-batching.
    """
    return _maximum(batch / pp, 1.0 + 0.0 * batch)


def prefill_seconds(prefill_flops: Any, *, weights_bytes: Any, n_gpus: Any, dense_flops_per_s: Any, mfu: Any,
                    memory_bytes_per_s: Any, bandwidth_efficiency: Any = 1.0, comm_s: Any = 0.0) -> Any:
    """t_prefill = max(FLOPs / (n · peak · MFU), weights / (n · bw · η_bw)) + t_comm

    n is the tensor-parallel degree: pipeline stages take turns and do not shorten it.
    Trap: the sparse peak (2x) halves the answer; so does a peak at fp8 when the kernel
    computes in bf16 (int4 weights are dequantised to bf16 before the matmul).
    Source: seed 003 (8.1e14 FLOPs / 6.3 PFLOP/s ≈ 129 ms); seed 004 (70B, 8k: 1.2 s at
    100% of one H100).
    """
    return roofline_seconds(weights_bytes / n_gpus, flops=prefill_flops / n_gpus,
                            memory_bytes_per_s=memory_bytes_per_s, dense_flops_per_s=dense_flops_per_s,
                            bandwidth_efficiency=bandwidth_efficiency, compute_efficiency=mfu) + comm_s


def request_latency_seconds(ttft_s: Any, *, tpot_s: Any, output_tokens: Any) -> Any:
    """latency = TTFT + (output − 1) · TPOT

    The prefill emits the first token; each later one costs a decode step.
    Trap: output · TPOT double-counts the first token.
    Source: seed 003 (200 ms + 299 × 30 ms ≈ 9.3 s).
    """
    return ttft_s + (output_tokens - 1.0) * tpot_s


# ------------------------------------------------------------- speculative decoding
def speculative_tokens_per_pass(acceptance: Any, *, draft_tokens: int) -> Any:
    """E[tokens per verification] = (1 − a^(k+1)) / (1 − a)   (k + 1 when a = 1)

    The target model checks k drafted tokens in one pass; the first rejection ends the run
    and the pass still yields the target's own token there. Summed as 1 + a + ... + a^k,
    which is the closed form without its 0/0 at a = 1.
    Trap: k · a: it ignores that one rejection discards every later draft token.
    Source: Leviathan et al. 2023, "Fast Inference from Transformers via Speculative
    Decoding", eq. 1; seed 003 (2-3x, identical output).
    """
    total = 0.0 * acceptance
    for i in range(int(draft_tokens) + 1):
        total = total + acceptance**i
    return total


def speculative_pass_seconds(draft_step_s: Any, *, draft_tokens: int, verify_step_s: Any) -> Any:
    """t_pass = k · t_draft_step + t_verify

    Trap: a verification pass of k + 1 tokens per sequence costs one decode step only while
    the step is memory-bound; at a large batch its FLOPs are (k + 1) times a step's.
    Source: Leviathan et al. 2023, section 3.
    """
    return draft_tokens * draft_step_s + verify_step_s


# ------------------------------------------------------------------- capacity
def replica_request_rate(batch: Any, *, output_tokens: Any, tpot_s: Any, prefill_s: Any) -> Any:
    """λ_max = B / (output · TPOT + B · t_prefill)   requests per second one replica sustains

    B slots each hold a request for output · TPOT of decoding; every admitted request's
    prefill pauses all decoding for t_prefill (no chunked prefill).
    Trap: B / (output · TPOT) alone forgets that prefills steal decode time.
    Source: Little's law over the decode slots; Orca (Yu et al. 2022) continuous batching.
    """
    return batch / (output_tokens * tpot_s + batch * prefill_s)


def compute_bound_batch(step_seconds_parts: Any, *, limit: int = 1 << 24) -> float | None:
    """B* = the smallest batch whose decode step spends at least as long computing as streaming

    ``step_seconds_parts(B) -> (memory_s, compute_s)`` for one batch. For a dense model at
    short context this is about the ridge point (peak / bandwidth) times the bytes per
    parameter over 2. Found by bisection; None when the KV read grows as fast as the
    compute, so no batch is compute-bound.
    Trap: quoting the ridge alone: KV reads grow with the batch too, pushing B* up, and at
    long context they keep the step memory-bound at any batch.
    Source: seed 004 ridge; "How big can the decode batch get before the step becomes
    compute-bound?" (seed 000).
    """
    def crossed(b: int) -> bool:
        mem, comp = step_seconds_parts(float(b))
        return comp >= mem

    if crossed(1):
        return 1.0
    if not crossed(limit):
        return None
    lo, hi = 1, limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if crossed(mid):
            hi = mid
        else:
            lo = mid
    return float(hi)


# --------------------------------------------------------------------- API bills
def api_request_usd(*, uncached_tokens: float, cache_write_tokens: float, cache_read_tokens: float,
                    output_tokens: float, usd_per_million_input: float, usd_per_million_cache_write: float,
                    usd_per_million_cache_read: float, usd_per_million_output: float,
                    batch_discount: float = 0.0) -> dict[str, float]:
    """usd = (u · p_in + w · p_write + c · p_read + o · p_out) / 1e6 · (1 − batch discount)

    Each input token falls in exactly one category: uncached, written to the cache, or read
    from it. Returns the line items and their total.
    Trap: billing cached tokens again as input (they are instead of input, not as well); and
    quoting output at the input price: output is 4-8x dearer because decode holds the GPUs
    serially (seed 003, "the roofline, invoiced").
    Source: seed 003 receipt (1,000 in at $3/M + 300 out at $15/M = $0.0075); provider
    pricing pages for cache write and read.
    """
    keep = 1.0 - batch_discount
    items = {
        "input_usd": uncached_tokens * usd_per_million_input / MILLION * keep,
        "cache_write_usd": cache_write_tokens * usd_per_million_cache_write / MILLION * keep,
        "cache_read_usd": cache_read_tokens * usd_per_million_cache_read / MILLION * keep,
        "output_usd": output_tokens * usd_per_million_output / MILLION * keep,
    }
    items["usd"] = sum(items.values())
    return items


def agent_loop_inputs(input_tokens: float, *, history_growth: float, calls: int) -> list[float]:
    """input of call i = input + i · growth   (i = 0 .. calls − 1)

    An agent re-sends its whole history on every call, so the task's input tokens grow as
    calls · input + growth · calls · (calls − 1) / 2: quadratic in the number of calls.
    Trap: $/token hides this; the honest unit for agents is $/task.
    Source: seed 003, "$/token is the wrong unit for agents".
    """
    return [input_tokens + i * history_growth for i in range(int(calls))]
