"""Collective communication."""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple


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
    return bytes_per_rank / link_bytes_per_s_per_direction + ring_latency_seconds(n_ranks, hop_latency_s=latency_s)


def ring_latency_seconds(n_ranks: Any, *, hop_latency_s: Any) -> Any:
    """α = 2 · (n − 1) · α_hop

    A ring all-reduce passes its chunks round the ring 2(n − 1) times (a reduce-scatter, then an
    all-gather), each step waiting on the one before; at a small message the steps' fixed time is
    all there is. Over PCIe a step costs microseconds (a transfer through the root complex, often
    across sockets), so 8 cards' smallest all-reduce takes 42-54 us where an NVSwitch board's takes 13.
    Trap: one fixed latency for every TP degree over PCIe: it grows with the ring (8 B on 2, 4 and
    8 PCIe Gen4 cards: 9, 19-21 and 42-54 us).
    Source: Thakur, Rabenseifner & Gropp 2005 (IJHPCA 19(1)), the ring's 2(n − 1) steps; the step
    time from nccl-tests on PCIe servers (catalog/efficiency.toml [pcie]); e.g. 8 cards at 3.2 us a
    step: 14 · 3.2 = 44.8 us.
    """
    return 2.0 * (n_ranks - 1.0) * hop_latency_s


CURVE_LOG2_BYTES = tuple(range(15, 35))  # the sizes a measured all-reduce curve is tabulated at: 32 KiB .. 16 GiB
_SWEEP_RANKS = 8.0  # the sweeps are measured on one full 8-GPU board


def padded_curve(busbw: Any) -> tuple[float, ...]:
    """B'_i = S_i / min_{j ≥ i} (S_j / B_j): a measured bus-bandwidth sweep whose times never fall with size

    A message can be padded to any larger measured size, so an all-reduce of S bytes takes at most the
    time measured for any size ≥ S: the time is the running minimum from the largest size down. It
    removes measurement noise where a sweep's time dips as the size grows (8 x A100: 101.9 us at 1 MiB,
    101.4 us at 2 MiB), which would make a larger batch's step faster.
    Trap: interpolating a noisy sweep as it stands, so that the model rewards a bigger message.
    Source: the sweeps in catalog/efficiency.toml (nccl-tests: time = 2(n − 1)/n · S / busbw).
    """
    sizes = [2.0 ** k for k in CURVE_LOG2_BYTES]
    times = [s / b for s, b in zip(sizes, busbw)]
    for i in range(len(times) - 2, -1, -1):
        times[i] = min(times[i], times[i + 1])
    return tuple(s / t for s, t in zip(sizes, times))


def _segments(curve: Any, n_ranks: Any, latency_s: Any, link_bytes_per_s: Any) -> tuple[Any, Any]:
    """(intercept, slope) of the ring's time t = a + b · S on each size segment: below 32 KiB (the smallest
    measured time), between each pair of measured sizes (linear in S), beyond 16 GiB (the last bandwidth).
    A row whose sweep is NaN (none published) gets the α-β ring, α + 2(n − 1)/n · S / r, on every segment."""
    import numpy as np

    c = np.asarray(curve, dtype=float)
    sizes = np.exp2(np.array(CURVE_LOG2_BYTES, dtype=float))
    ring8 = 2.0 * (_SWEEP_RANKS - 1.0) / _SWEEP_RANKS * sizes
    t = ring8 / c  # the measured times at 8 ranks, never faster than the link's large-message rate
    t = np.maximum(t, ring8 / np.asarray(link_bytes_per_s, dtype=float)[..., None])
    slope = np.diff(t, axis=-1) / np.diff(sizes)
    lead = np.zeros(c.shape[:-1] + (1,))
    a = np.concatenate([t[..., :1], t[..., :-1] - slope * sizes[:-1], lead], axis=-1)
    b = np.concatenate([lead, slope, t[..., -1:] / sizes[-1]], axis=-1)
    scale = np.asarray((2.0 * (n_ranks - 1.0) / n_ranks) / (2.0 * (_SWEEP_RANKS - 1.0) / _SWEEP_RANKS))[..., None]
    none = np.isnan(c).any(axis=-1, keepdims=True)  # a row without a sweep
    if not none.any():
        return a * scale, b * scale
    a = np.where(none, np.asarray(latency_s)[..., None], a * scale)
    b = np.where(none, np.asarray(2.0 * (n_ranks - 1.0) / n_ranks / link_bytes_per_s)[..., None], b * scale)
    return a, b


def measured_ring_seconds(message_bytes: Any, *, n_ranks: Any, curve: Any, latency_s: Any = math.nan,
                          link_bytes_per_s: Any = math.inf) -> Any:
    """t(S) = (2(n − 1)/n) / (2 · 7/8) · t₈(S),  t₈ linear in S between the sizes the 8-GPU sweep measured

    The ring all-reduce's time for S bytes over n ranks from the family's published sweep: its measured
    time at the nearest sizes (32 KiB, 64 KiB, ... 16 GiB), linear in S between them, the 32 KiB time
    below (a latency floor) and the 16 GiB bandwidth beyond; scaled to n ranks by the ring's volume
    (bus bandwidth is what nccl-tests defines to be independent of n). Each measured time is held at
    or above the link's large-message rate r (a sweep with NVLink SHARP beats the ring figure at large
    sizes; a TP group's kernels do not). Rows of a NaN sweep (arrays:
    the planner's GPUs without one) get the α-β ring, α + 2(n − 1)/n · S / r.
    Trap: the large-message figure (78% of NVLink on A100) for a decode all-reduce of a few MiB, which
    nccl-tests measures at 20-50% of it (8 x A100: 133.5 us for 8 MiB, not 63 us).
    Source: nccl-tests doc/PERFORMANCE.md (busbw = algbw · 2(n − 1)/n); the sweeps and their sources in
    catalog/efficiency.toml.
    """
    lo, hi = CURVE_LOG2_BYTES[0], CURVE_LOG2_BYTES[-1]
    factor = (2.0 * (n_ranks - 1.0) / n_ranks) / (2.0 * (_SWEEP_RANKS - 1.0) / _SWEEP_RANKS)
    if isinstance(message_bytes, (int, float)) and isinstance(curve, (tuple, list)):
        sizes = [2.0 ** k for k in CURVE_LOG2_BYTES]
        ring8 = [2.0 * (_SWEEP_RANKS - 1.0) / _SWEEP_RANKS * x for x in sizes]
        t = [max(v / b, v / link_bytes_per_s) for v, b in zip(ring8, curve)]  # never faster than the link's rate
        s = float(message_bytes)
        if s <= sizes[0]:
            return factor * t[0]
        if s >= sizes[-1]:
            return factor * t[-1] * s / sizes[-1]
        i = min(max(math.frexp(s)[1] - 1 - lo, 0), hi - lo - 1)
        return factor * (t[i] + (t[i + 1] - t[i]) * (s - sizes[i]) / (sizes[i + 1] - sizes[i]))
    import numpy as np

    a, b = _segments(curve, n_ranks, latency_s, link_bytes_per_s)
    s = np.asarray(message_bytes, dtype=float)
    idx = np.clip(np.frexp(s)[1] - (1 + lo - 1), 0, hi - lo + 1)  # 0: below 32 KiB, 1..19: between, 20: beyond
    idx = np.where(s <= 2.0 ** lo, 0, idx)
    if a.ndim == 1:
        return a[idx] + b[idx] * s
    lead = (1,) * max(a.ndim - 1 - idx.ndim, 0)  # S may have fewer axes than the rows: align them
    idx = np.reshape(idx, lead + idx.shape)[..., None]
    s = np.reshape(s, lead + s.shape)
    return np.take_along_axis(a, idx, -1)[..., 0] + np.take_along_axis(b, idx, -1)[..., 0] * s


class RowSweeps(NamedTuple):
    """The planner's hardware rows as the all-reduce sees them: each row's kind (a distinct link, latency and
    sweep), and per kind the ring's segments (:func:`_segments`), so a grid is timed once per kind."""

    inverse: Any  # (H,): each row's kind
    a: Any  # (U, 21) intercepts of the ring's time on each size segment
    b: Any  # (U, 21) slopes
    links: Any  # (U,) large-message bus bandwidth r
    latencies: Any  # (U,) α
    n_ranks: float


def row_sweeps(links: Any, latencies: Any, curves: Any, *, n_ranks: float) -> RowSweeps:
    """kinds = distinct (r, α, sweep) among H rows;  t_row(S) = t_kind(row)(S)  (each kind's ring as :func:`_segments`)

    The planner's rows (GPU types and precisions) share a handful of links, latencies and sweeps, so the
    all-reduce of a grid is timed once per kind and gathered to the rows (:func:`tp_allreduce_seconds` takes
    the result as its ``curve``). ``curves`` is (H, 20), NaN where a row has no sweep.
    Trap: timing every row against every message, the grid's largest operator for a handful of distinct rows.
    Source: the same formulas as :func:`tp_allreduce_seconds`; the sweeps in catalog/efficiency.toml.
    """
    import numpy as np

    links, latencies = np.asarray(links, dtype=float), np.asarray(latencies, dtype=float)
    curves = np.asarray(curves, dtype=float)
    first: dict[tuple, int] = {}  # each kind's number, in the order its first row comes
    kinds: list[int] = []  # the first row of each kind
    keys: list[tuple] = []
    inverse = []
    for i in range(len(links)):
        key = (float(links[i]), float(latencies[i]), curves[i].tobytes())
        if key not in first:
            first[key] = len(kinds)
            kinds.append(i)
            keys.append(key)
        inverse.append(first[key])
    a, b = _kind_segments(tuple(keys), float(n_ranks))
    return RowSweeps(np.array(inverse), a, b, links[kinds], latencies[kinds], float(n_ranks))


@functools.lru_cache(maxsize=512)
def _kind_segments(keys: tuple, n_ranks: float) -> tuple[Any, Any]:
    """:func:`_segments` of the kinds (link, latency, sweep bytes), cached: a planner's chunks repeat them."""
    import numpy as np

    curves = np.array([np.frombuffer(c, dtype=float) for _, _, c in keys])
    a, b = _segments(curves, n_ranks, np.array([k[1] for k in keys]), np.array([k[0] for k in keys]))
    a.flags.writeable = False
    b.flags.writeable = False
    return a, b


def _by_row(message_bytes: Any, rows: RowSweeps, count: float = 1.0) -> Any:
    """tp_allreduce_seconds of every row, for messages whose leading axis is 1 (the rows' axis): evaluated once per
    kind of row on the messages, then gathered to the rows."""
    import numpy as np

    lo, hi = CURVE_LOG2_BYTES[0], CURVE_LOG2_BYTES[-1]
    s = np.asarray(message_bytes, dtype=float)
    n = rows.n_ranks
    if s.ndim and s.shape[0] == 1:  # the messages are the same on every row: once per kind, then gathered
        s = s[0]
        idx = np.clip(np.frexp(s)[1] - lo, 0, hi - lo + 1)  # 0 below 32 KiB, 20 beyond 16 GiB
        shape = (len(rows.links),) + (1,) * s.ndim
        ring = rows.a[:, idx] + rows.b[:, idx] * s  # the segments already hold the link's cap
        one_shot = rows.latencies.reshape(shape) + s * ((n - 1.0) / rows.links).reshape(shape)
        return (np.minimum(one_shot, ring) * (count * (s > 0)))[rows.inverse]  # no message, no collective
    # the messages differ by row (their leading axis is the rows'): each cell reads its own row's kind
    kind = rows.inverse.reshape((-1,) + (1,) * max(s.ndim - 1, 0))
    at = kind * rows.a.shape[-1] + np.clip(np.frexp(s)[1] - lo, 0, hi - lo + 1)
    ring = rows.a.ravel()[at] + rows.b.ravel()[at] * s
    return np.minimum(rows.latencies[kind] + (n - 1.0) * s / rows.links[kind], ring) * (count * (s > 0))


def tp_allreduce_seconds(message_bytes: Any, *, n_ranks: Any, link_bytes_per_s: Any, latency_s: Any,
                         curve: Any = None, count: float = 1.0) -> Any:
    """t = count · min(α + (n − 1) · S / r,  ring(S))   (0 for S = 0: no message, no collective)

    One tensor-parallel all-reduce of S bytes over n ranks, as serving engines run it: a one-shot
    kernel (every rank reads the other n − 1 buffers over the link, one latency α) for small
    messages, the ring beyond, whichever is faster. r is the link's large-message bus bandwidth
    (its one-direction rate times the achieved fraction), which the ring never beats; ring(S) is the
    family's measured sweep (:func:`measured_ring_seconds`, each measured time held at or above
    2(n − 1)/n · S / r), which already holds the ring's per-chunk latencies, or without one
    α + 2(n − 1)/n · S / r.
    Trap: the ring at its large-message bandwidth for decode-sized messages (1-16 MiB), 2-5x too fast
    on the published sweeps; or the ring alone for a few KiB, where a one-shot kernel takes ~α.
    Source: Patarasuk & Yuan 2009 (ring volume 2(n − 1)/n · S); the one-shot and two-shot custom
    all-reduce kernels of TensorRT-LLM, vLLM and SGLang (small messages one-shot, e.g. SGLang PR #2904:
    34 us for 1 MiB at TP 8 on H100); measured curves in catalog/efficiency.toml.
    """
    if isinstance(curve, RowSweeps):
        return _by_row(message_bytes, curve, count)
    volume = 2.0 * (n_ranks - 1.0) / n_ranks * message_bytes
    one_shot = latency_s + (n_ranks - 1.0) * message_bytes / link_bytes_per_s
    if curve is None:
        ring = latency_s + volume / link_bytes_per_s
    else:
        ring = measured_ring_seconds(message_bytes, n_ranks=n_ranks, curve=curve, latency_s=latency_s,
                                     link_bytes_per_s=link_bytes_per_s)
    if isinstance(ring, float) and isinstance(one_shot, float):
        return count * min(one_shot, ring) if message_bytes > 0 else 0.0  # no message, no collective
    import numpy as np

    return np.minimum(one_shot, ring) * (count * (np.asarray(message_bytes) > 0))
