"""Bytes: weights, KV cache, training state."""

from __future__ import annotations

import math

# Static training state per parameter, mixed precision with Adam (seed 004):
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
    Source: seed 004, "weights_bytes = params × bytes_per_param" (70.6B bf16 = 141 GB).
    """
    return n_params * bytes_per_param


def kv_bytes_per_token(n_layers: float, *, n_kv_heads: float, head_dim: float, bytes_per_value: float) -> float:
    """kv_bytes_per_token = 2 · L · h_kv · d_h · bytes

    The 2 is K and V.
    Trap: the query-head count instead of the KV heads (64 vs 8 on Llama 3.1 70B) is 8x too high.
    Source: seed 004 (Llama 3.1 70B bf16: 2 × 80 × 8 × 128 × 2 = 327,680 B).
    """
    return 2.0 * n_layers * n_kv_heads * head_dim * bytes_per_value


def kv_bytes_per_token_mla(n_layers: float, *, kv_lora_rank: float, qk_rope_head_dim: float,
                           bytes_per_value: float) -> float:
    """MLA: kv_bytes_per_token = L · (latent + rope) · bytes, no factor of 2

    Trap: applying the GQA formula to MLA heads (128 heads on DeepSeek-V3) is ~60x too high.
    Source: seed 004 (DeepSeek-V3: 61 × 576 × 2 = 70,272 B).
    """
    return n_layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_value


def kv_total_bytes(kv_bytes_per_token: float, *, context_tokens: float, n_sequences: float) -> float:
    """kv_total = kv_bytes_per_token · context · sequences

    Trap: the cache is per sequence: "fits for one user" and "fits for the launch" differ
    by the batch.
    Source: seed 004 (70B, 8k, 32 sequences = 85.9 GB = 80 GiB).
    """
    return kv_bytes_per_token * context_tokens * n_sequences


def training_static_bytes(n_params: float, *, bytes_per_param: float = 16.0) -> float:
    """static_bytes = N · 16 (bf16 weights 2 + grads 2 + fp32 master 4 + Adam m 4 + v 4)

    Trap: 2 bytes per parameter is inference; training is 8x that before activations.
    Source: seed 004 (70B: 1.12 TB of static state).
    """
    return n_params * bytes_per_param


def min_gpus_for_state(static_bytes: float, *, memory_bytes: float, usable: float) -> float:
    """n = ceil(static_bytes / (memory_bytes · usable)), fully sharded

    Trap: activations are extra; this is a floor before a single activation.
    Source: seed 004 (1.12 TB on 80 GB cards at 80% usable: 18 GPUs).
    """
    return float(math.ceil(static_bytes / (memory_bytes * usable) - 1e-9))
