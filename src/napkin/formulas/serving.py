"""Serving: what a step reads and computes, tensor and pipeline parallelism, batching,
speculative decoding, the ridge and replica money.

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

The time of a step is not here: it is the sum of its operators, each on its own roofline
(:mod:`napkin.formulas.operators`), and which tokens ride in a step is the scheduler's
(:mod:`napkin.formulas.scheduling`). ``napkin serve``, ``napkin plan serve``, ``napkin
journey`` and ``napkin bill --self-hosted`` all time their steps there.
"""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas._array import is_scalar as _scalar
from napkin.formulas._array import maximum as _maximum
from napkin.formulas._array import where as _where
from napkin.units import HOUR, MILLION

ALLREDUCES_PER_LAYER = 2.0  # Megatron TP: one after attention, one after the MLP
ACTIVATION_BYTES = 2.0  # bf16 activations travel in the all-reduce whatever the weight format


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
    Source: DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv:2412.19437): 671B
    parameters, 37B activated per token, 8 of 256 routed experts; the expected share of
    experts some token picks is the coupon-collector fraction 1 − (1 − k/E)^B.
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
    Source: Kwon et al. 2023, vLLM / PagedAttention (arXiv:2309.06180), section 2: the KV
    cache grows with every sequence's context and bounds the batch.
    """
    room = usable_bytes_per_gpu - weights_bytes_per_gpu - shared_kv_bytes_per_gpu
    return _maximum(room // kv_bytes_per_sequence_per_gpu, 0.0 * room)


def engine_buffer_bytes(step_tokens: Any, *, d_attn: float, factor: float, floor_bytes: float,
                        collective_bytes: float, context_bytes: float) -> Any:
    """buffers = max(2 · T · d_attn · c(TP), floor) + collective(TP) + context

    What an engine holds per GPU outside weights and KV: activation buffers sized at build time
    for a step of T tokens (its max_num_tokens; 2 bytes per fp16 value, c(TP) live values per
    token and attention width, fewer as TP shards them), the collective library's buffers, and
    the CUDA context with its library workspaces.
    Trap: forgetting them where the KV budget is a fraction of what is *left*: on two 80 GB
    GPUs holding Llama 3.1 70B in fp16, they are 1.8 GB of the 14.4 GB left per GPU.
    Source: NVIDIA AI Configurator's TensorRT-LLM memory model (ai-dynamo/aiconfigurator,
    sdk/backends/trtllm_backend.py and systems/*.yaml, read 2026-12-07); TensorRT-LLM, Memory
    Usage of TensorRT-LLM (docs/source/reference/memory.md): activation memory is fixed at
    build time, close to max number of input tokens times a constant.
    """
    return _maximum(2.0 * step_tokens * d_attn * factor, floor_bytes + 0.0 * step_tokens) \
        + collective_bytes + context_bytes


def usable_of_free(memory_bytes: Any, *, weights_bytes_per_gpu: Any, buffer_bytes: Any, fraction: Any) -> Any:
    """usable = weights + f · (memory − weights − buffers)

    An engine that gives the KV cache a fraction f of the memory *free after loading*
    (TensorRT-LLM's kv_cache_free_gpu_mem_fraction, default 0.9) leaves weights and KV this
    much; one that takes a fraction of the *total* (vLLM's gpu_memory_utilization, SGLang's
    mem_fraction_static) leaves memory · f.
    Trap: reading TensorRT-LLM's 0.9 as vLLM's: for Llama 3.1 70B in fp16 on two 80 GB GPUs,
    0.9 of the total leaves 5.9 GB per GPU for KV, 0.9 of what is free after loading 11.4 GB:
    18 sequences of 2,000 tokens against 34.
    Source: TensorRT-LLM, Memory Usage of TensorRT-LLM (docs/source/reference/memory.md, C++
    runtime: the KV cache takes freeGpuMemoryFraction of the free memory); NVIDIA AI
    Configurator, sdk/memory.py kv_cache_budget_bytes (of free for TensorRT-LLM, of total for
    vLLM and SGLang).
    """
    return weights_bytes_per_gpu + fraction * (memory_bytes - weights_bytes_per_gpu - buffer_bytes)


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
    Source: Kaplan et al. 2020 (arXiv:2001.08361), table 1 (2N per token plus 2 · L · ctx · d);
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
    Source: Kaplan et al. 2020 (arXiv:2001.08361), table 1 (the attention term of the
    forward pass); Chowdhery et al. 2022, PaLM (arXiv:2204.02311), appendix B; Mistral 7B (arXiv:2310.06825), section 2 sliding window; Gemma 2 (arXiv:2408.00118),
    section 2, alternating local (4096) and global layers.
    """
    half = 0.5 if causal else 1.0
    full = 4.0 * n_layers * d_attn * new_tokens * (cached_tokens + half * new_tokens)
    cut = 4.0 * d_attn * window_layers * attention_pairs_beyond_window(
        new_tokens, cached_tokens=cached_tokens, window_tokens=window_tokens, causal=causal)
    return full - cut


# ------------------------------------------------------------------ communication
def tp_link_bytes_per_s(tp: Any, *, scale_up_domain: Any, link_bytes_per_s_per_direction: Any,
                        scale_out_bytes_per_s_per_gpu: Any, host_link_bytes_per_s_per_direction: Any = None,
                        host_link_domain: Any = None) -> Any:
    """link = scale-up (tp ≤ domain);  min(link, host) (tp ≤ host domain);  else min(link, host, scale-out)

    The bandwidth one rank of a tensor-parallel ring all-reduce gets, one direction. Within
    the scale-up domain (8 GPUs on an HGX board, 72 in an NVL72 rack) every hop is NVLink;
    bridged PCIe cards (a pair) reach the other cards of their server over PCIe (the host link);
    a group larger than that must cross the scale-out network, and a ring moves as fast as its
    slowest hop, so every rank's 2·(tp − 1)/tp · message waits on it.
    Trap: pricing TP 16 on H100s at NVLink speed (450 GB/s per direction): two HGX boards
    talk over one 400 Gb/s NIC per GPU, 50 GB/s, 9x slower, on every one of the 2 · L
    all-reduces of every decode step; or TP 4 on bridged A100 PCIe cards at the NIC's 50 GB/s,
    when their traffic beyond the pair crosses PCIe Gen4 (32 GB/s; nccl-tests: 20 GB/s bus bandwidth).
    Source: ring all-reduce (Patarasuk and Yuan 2009: bandwidth term set by the slowest
    link); NVIDIA DGX H100 User Guide (one 400 Gb/s ConnectX-7 per GPU); scale-up domain
    sizes and host links in catalog/gpus.toml (scale_up_source, host_link_source).
    """
    beyond = _minimum(link_bytes_per_s_per_direction, scale_out_bytes_per_s_per_gpu)
    if host_link_bytes_per_s_per_direction is None:
        return _where(tp <= scale_up_domain, link_bytes_per_s_per_direction, beyond)
    host = _minimum(link_bytes_per_s_per_direction, host_link_bytes_per_s_per_direction)
    return _where(tp <= scale_up_domain, link_bytes_per_s_per_direction,
                  _where(tp <= host_link_domain, host, _minimum(host, beyond)))


# ------------------------------------------------------------------------ time
def microbatch(batch: Any, *, pp: Any) -> Any:
    """b = max(B / pp, 1): sequences per pipeline micro-batch

    Trap: with fewer sequences than stages, stages idle; the pipeline adds no throughput.
    Source: GPipe (Huang et al. 2019) micro-batching.
    """
    return _maximum(batch / pp, 1.0 + 0.0 * batch)


def request_latency_seconds(ttft_s: Any, *, tpot_s: Any, output_tokens: Any) -> Any:
    """latency = TTFT + (output − 1) · TPOT

    The prefill emits the first token; each later one costs a decode step.
    Trap: output · TPOT double-counts the first token.
    Source: the TTFT / TPOT split of serving benchmarks (e.g. MLPerf Inference's LLM
    latency constraints): 200 ms + 299 × 30 ms ≈ 9.2 s for 300 tokens.
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
    Decoding" (arXiv:2211.17192), eq. 1 (2-3x speed-ups with an output identical to the target's).
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


# ------------------------------------------------------------------- the ridge
def compute_bound_batch(step_seconds_parts: Any, *, limit: int = 1 << 24) -> float | None:
    """B* = the smallest batch whose decode step spends at least as long computing as streaming

    ``step_seconds_parts(B) -> (memory_s, compute_s)`` for one batch. For a dense model at
    short context this is about the ridge point (peak / bandwidth) times the bytes per
    parameter over 2. Found by bisection; None when the KV read grows as fast as the
    compute, so no batch is compute-bound.
    Trap: quoting the ridge alone: KV reads grow with the batch too, pushing B* up, and at
    long context they keep the step memory-bound at any batch.
    Source: Williams et al. 2009 (the ridge of the roofline); Kwon et al. 2023, vLLM
    (arXiv:2309.06180), on decode throughput growing with the batch until compute binds.
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


# ------------------------------------------------------------------------ money
def usd_per_million_input_tokens(replica_usd_per_hour: Any, *, prefill_s: Any, prompt_tokens: Any,
                                 utilization: Any = 1.0) -> Any:
    """usd_per_M_in = (replica $/h / 3600) · t_prefill / prompt / utilization · 1e6

    The replica time one request's prefill takes (in a batch, the time it adds to the steps it
    rides in), paid by the prompt's tokens: what an input token costs the owner of the GPUs. The
    rest of the replica's time is the output tokens' bill, so prompt · in + output · out is the
    cost of a request.
    Trap: pricing input like output: a prefill processes thousands of tokens in the time a
    decode step emits one per sequence, so input is several times cheaper to serve; and the
    idle-replica TTFT as that time (a prompt in a busy batch shares its steps).
    Source: the cost-per-token arithmetic of API pricing (input several times cheaper than
    output, e.g. Anthropic's $3 in / $15 out per million for Claude Sonnet 4).
    """
    return replica_usd_per_hour / HOUR * prefill_s / prompt_tokens / utilization * MILLION


def usd_per_million_output_tokens(replica_usd_per_hour: Any, *, tokens_per_s: Any, prefill_s: Any,
                                  output_tokens: Any, utilization: Any = 1.0) -> Any:
    """usd_per_M_out = (replica $/h / 3600) · (output / tokens_per_s − t_prefill) / output / utilization · 1e6

    A request holds the replica for output / tokens_per_s seconds (its share of the batch's
    time); what its prefill took is the input tokens' bill, the rest the output tokens'.
    Trap: replica $/h over tokens/s charges the prompts to the output tokens too: at 2,048 in /
    128 out that is most of the bill.
    Source: the same split as API pricing (input and output priced apart).
    """
    held = output_tokens / tokens_per_s - prefill_s
    return replica_usd_per_hour / HOUR * held / output_tokens / utilization * MILLION
