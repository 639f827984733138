"""Collective communication."""

from __future__ import annotations


def ring_allreduce_bytes_per_rank(buffer_bytes: float, *, n_ranks: float) -> float:
    """bytes_per_rank = 2 · (n − 1) / n · buffer

    A reduce-scatter then an all-gather, each moving (n−1)/n of the buffer per rank.
    Trap: it does not get cheaper per rank with more ranks: it tends to 2 · buffer.
    Source: Patarasuk & Yuan 2009, Bandwidth optimal all-reduce algorithms for clusters of
    workstations (JPDC 69(2)); e.g. 141 GB across 8 ranks: 247 GB sent per rank.
    """
    return 2.0 * (n_ranks - 1.0) / n_ranks * buffer_bytes


def allreduce_seconds(bytes_per_rank: float, *, link_bytes_per_s_per_direction: float,
                      n_ranks: float = 2.0, latency_s: float = 0.0) -> float:
    """t ≈ bytes_per_rank / one-direction bandwidth + 2 · (n − 1) · latency

    Trap: dividing one-way bytes by a bidirectional rating (NVLink's 900 GB/s) halves
    the answer; use 450 GB/s one way.
    Source: Patarasuk & Yuan 2009 (JPDC 69(2)); Thakur, Rabenseifner & Gropp 2005, Optimization of
    Collective Communication Operations in MPICH (IJHPCA 19(1)), the ring's 2(n − 1) steps; e.g. 247
    GB / 450 GB/s ≈ 0.55 s.
    """
    return bytes_per_rank / link_bytes_per_s_per_direction + 2.0 * (n_ranks - 1.0) * latency_s
