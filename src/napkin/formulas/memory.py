"""Bytes: weights, KV cache, training state."""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas._array import maximum as _maximum

# Static training state per parameter, mixed precision with Adam (ZeRO, Rajbhandari et al. 2020, section 3.1):
TRAINING_BYTES_PER_PARAM = {
    "bf16 weights": 2.0,
    "bf16 gradients": 2.0,
    "fp32 master weights": 4.0,
    "Adam m (fp32)": 4.0,
    "Adam v (fp32)": 4.0,
}


def weights_bytes(n_params: float, *, bytes_per_param: float) -> float:
    """weights_bytes = N · bytes_per_param

    Trap: "16 GB" for a 7B model in fp16: 16 is bits per parameter, not gigabytes (14 GB);
    int4 is half a byte, never an integer division of bits by 8.
    Source: the storage width of each format (bf16 and fp16: 2 bytes; fp8: 1; int4: half a byte);
    e.g. 70.6B parameters in bf16 are 141 GB.
    """
    return n_params * bytes_per_param


def served_weights_bytes(n_params: Any, *, n_embedding_head: Any, bytes_per_param: Any, n_mlp: Any = 0.0,
                         mlp_bytes_per_param: Any = None) -> Any:
    """weights_bytes = (N − N_eh − N_mlp) · b + N_mlp · b_mlp + N_eh · max(b, 2)

    An engine that quantizes a 16-bit checkpoint (fp8, int8, int4, fp4) quantizes its linear
    layers: the embedding table (a lookup, not a matmul) and the LM head stay 16-bit. N_eh is
    the embedding and the LM head (tied: the embedding alone); N_mlp the MLP or expert weights
    held at their own b_mlp (0 when they share b). At 16 bits or more this is N · b.
    Trap: N · 1 byte for Llama 3.1 8B in fp8, 8.03 GB; its 1.05B embedding and head parameters
    stay at 2 bytes, 9.08 GB, and the head is read at 2 bytes a weight every step.
    Source: vLLM documentation, FP8 W8A8 (v0.5.4, docs.vllm.ai/en/v0.5.4/quantization/fp8.html):
    online fp8 quantization quantizes "all Linear modules (except for the final lm_head)";
    llm-compressor FP8_DYNAMIC recipes (targets Linear, ignore lm_head), e.g.
    huggingface.co/RedHatAI/Llama-3.2-90B-Vision-Instruct-FP8-dynamic, recipe.yaml.
    """
    b_mlp = bytes_per_param if mlp_bytes_per_param is None else mlp_bytes_per_param
    return ((n_params - n_embedding_head - n_mlp) * bytes_per_param + n_mlp * b_mlp
            + n_embedding_head * _maximum(bytes_per_param, 2.0))


def kv_bytes_per_token(n_layers: float, *, n_kv_heads: float, head_dim: float, bytes_per_value: float) -> float:
    """kv_bytes_per_token = 2 · L · h_kv · d_h · bytes

    The 2 is K and V.
    Trap: the query-head count instead of the KV heads (64 vs 8 on Llama 3.1 70B) is 8x too high.
    Source: Ainslie et al. 2023, GQA (arXiv:2305.13245): keys and values for each of the h_kv heads;
    Llama 3.1 70B's config (80 layers, 8 KV heads, head dim 128) gives 2 × 80 × 8 × 128 × 2 =
    327,680 B in bf16.
    """
    return 2.0 * n_layers * n_kv_heads * head_dim * bytes_per_value


def kv_bytes_per_token_mla(n_layers: float, *, kv_lora_rank: float, qk_rope_head_dim: float,
                           bytes_per_value: float) -> float:
    """MLA: kv_bytes_per_token = L · (latent + rope) · bytes, no factor of 2

    Trap: applying the GQA formula to MLA heads (128 heads on DeepSeek-V3) is ~60x too high.
    Source: DeepSeek-AI 2024, DeepSeek-V2 (arXiv:2405.04434), section 2.1: MLA caches the compressed
    latent and the decoupled RoPE key; DeepSeek-V3's config (61 layers, kv_lora_rank 512, rope dim
    64) gives 61 × 576 × 2 = 70,272 B.
    """
    return n_layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_value


def kv_held_tokens(context_tokens: Any, *, window_tokens: float = math.inf,
                   window_layers_fraction: float = 0.0) -> Any:
    """held = c − (L_w / L) · max(c − W, 0)

    Tokens' worth of KV cache (at the all-layer kv_bytes_per_token) that one sequence of c
    tokens holds when L_w of the L layers attend over a sliding window of W tokens: those
    layers keep only the last W tokens. No window (W = ∞ or L_w = 0) gives c.
    Trap: multiplying kv_bytes_per_token by the whole context on a sliding-window model:
    Mistral 7B v0.1 (all 32 layers, W = 4096) at 32Ki tokens holds 4,096 tokens' worth,
    8x less; Gemma 2 (every other layer) at 8k holds 6,144, not 8,192.
    Source: Jiang et al. 2023, Mistral 7B (arXiv:2310.06825), section 2 "Rolling buffer
    cache"; Gemma Team 2024, Gemma 2 (arXiv:2408.00118), section 2 (local 4096 / global
    layers alternate); transformers Gemma2DecoderLayer (even layers slide).
    """
    return context_tokens - window_layers_fraction * _maximum(context_tokens - window_tokens, 0.0)


def kv_sequence_bytes(kv_bytes_per_token: float, *, context_tokens: Any, window_tokens: float = math.inf,
                      window_layers_fraction: float = 0.0) -> Any:
    """kv_bytes = kv_bytes_per_token · (c − (L_w / L) · max(c − W, 0))

    One sequence's KV cache at c tokens of context. Callers that already hold the held-token
    count (kv_held_tokens, for sizing a batch) multiply it by kv_bytes_per_token themselves:
    the same arithmetic.
    Trap: kv_bytes_per_token · c on a sliding-window model overstates the cache (see
    kv_held_tokens); on a model without one, this is exactly kv_bytes_per_token · c.
    Source: kv_held_tokens times kv_bytes_per_token; Pope et al. 2022, Efficiently Scaling
    Transformer Inference (arXiv:2211.05102), section 2 (the KV cache grows with context and batch).
    """
    return kv_bytes_per_token * kv_held_tokens(context_tokens, window_tokens=window_tokens,
                                               window_layers_fraction=window_layers_fraction)


def kv_shared_prefix_tokens(prefix_tokens: Any, *, context_tokens: Any, window_tokens: float = math.inf,
                            window_layers_fraction: float = 0.0) -> Any:
    """shared = p − (L_w / L) · max(p − max(W − (c − p), 0), 0)

    Tokens' worth of a cached prompt prefix of p tokens that a sequence at c tokens still
    reads, stored once for every sequence: full-attention layers keep all p; a sliding
    window of W keeps only the part of the prefix within the last W tokens. Each sequence's
    own tokens are kv_held_tokens(c − p).
    Trap: counting the shared prefix once per sequence (it is stored once), or in full on
    the window layers (once c − p ≥ W it has slid out of them).
    Source: follows from kv_held_tokens; prefix sharing as in vLLM's automatic prefix caching.
    """
    in_window = _maximum(window_tokens - (context_tokens - prefix_tokens), 0.0)
    return prefix_tokens - window_layers_fraction * _maximum(prefix_tokens - in_window, 0.0)


def kv_total_bytes(kv_bytes_per_token: float, *, context_tokens: float, n_sequences: float) -> float:
    """kv_total = kv_bytes_per_token · context · sequences

    Trap: the cache is per sequence: "fits for one user" and "fits for the launch" differ
    by the batch.
    Source: Pope et al. 2022, Efficiently Scaling Transformer Inference (arXiv:2211.05102), section
    2; e.g. Llama 3.1 70B, 8k context, 32 sequences: 85.9 GB = 80 GiB.
    """
    return kv_bytes_per_token * context_tokens * n_sequences


def training_static_bytes(n_params: float, *, bytes_per_param: float = 16.0) -> float:
    """static_bytes = N · 16 (bf16 weights 2 + grads 2 + fp32 master 4 + Adam m 4 + v 4)

    Trap: 2 bytes per parameter is inference; training is 8x that before activations.
    Source: Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), section 3.1: mixed-precision Adam
    holds 2 + 2 + 12 = 16 bytes per parameter; e.g. 70B: 1.12 TB.
    """
    return n_params * bytes_per_param


def min_gpus_for_state(static_bytes: float, *, memory_bytes: float, usable: float) -> float:
    """n = ceil(static_bytes / (memory_bytes · usable)), fully sharded

    Trap: activations are extra; this is a floor before a single activation. Returned as a
    float (infinity when the memory is too small to count GPUs); callers take int() of it.
    Source: Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), stage 3 partitions all 16 bytes per
    parameter across the ranks; e.g. 1.12 TB on 80 GB cards at 80% usable: 18 GPUs.
    """
    ratio = static_bytes / memory_bytes / usable  # two divisions: a tiny memory · usable gives inf, never 0
    return float(math.ceil(ratio - 1e-9)) if math.isfinite(ratio) else ratio
