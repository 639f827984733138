"""The roofline: ridge point, attainable throughput, decode at the bandwidth floor."""

from __future__ import annotations


def ridge_flops_per_byte(dense_flops_per_s: float, *, memory_bytes_per_s: float) -> float:
    """ridge = peak / memory_bandwidth

    Trap: a kernel below the ridge is memory-bound by construction, not badly written.
    Source: Williams, Waterman & Patterson 2009, Roofline: An Insightful Visual Performance Model
    for Multicore Architectures (CACM 52(4)); e.g. H100 SXM: 989e12 / 3.35e12 ≈ 295 FLOP/byte.
    """
    return dense_flops_per_s / memory_bytes_per_s


def attainable_flops_per_s(intensity_flops_per_byte: float, *, dense_flops_per_s: float,
                           memory_bytes_per_s: float) -> float:
    """attainable = min(peak, intensity · bandwidth)

    Trap: expecting tensor cores to help at batch-1 decode (intensity ≈ 1): it attains
    ~0.34% of an H100's peak.
    Source: Williams, Waterman & Patterson 2009, Roofline (CACM 52(4)).
    """
    attained = intensity_flops_per_byte * memory_bytes_per_s
    if isinstance(attained, float) and isinstance(dense_flops_per_s, (int, float)):
        return min(dense_flops_per_s, attained)  # scalar path: no numpy import for one call
    import numpy as np

    return np.minimum(dense_flops_per_s, attained)


def decode_tokens_per_s(batch: float, *, memory_bytes_per_s: float, weights_bytes: float,
                        kv_bytes_per_sequence: float) -> float:
    """tokens/s ≈ batch · bandwidth / (active_weight_bytes + batch · kv_bytes_per_sequence)

    Every decode step reads all active weights once plus each sequence's KV cache and
    emits one token per sequence. A memory-bound ceiling: compute is not counted here.
    Trap: tensor cores do not help at batch 1; the only lever is bytes per token.
    Source: Pope et al. 2022, Efficiently Scaling Transformer Inference (arXiv:2211.05102), section
    2 (small-batch decode is bound by memory bandwidth); e.g. 70B in bf16 on one H100 at batch 1:
    3.35e12 / 1.41e11 ≈ 24 tokens/s.
    """
    return batch * memory_bytes_per_s / (weights_bytes + batch * kv_bytes_per_sequence)


def weight_read_seconds(weights_bytes: float, *, memory_bytes_per_s: float, n_gpus: float = 1.0) -> float:
    """t = weights_bytes / (n_gpus · bandwidth): one read of every weight, sharded

    Trap: forgetting the shards read in parallel; or that this is the floor of one decode step.
    Source: Pope et al. 2022 (arXiv:2211.05102), section 2; e.g. 405 GB over 8 H100s at 3.35 TB/s ≈
    15 ms.
    """
    return weights_bytes / (n_gpus * memory_bytes_per_s)
