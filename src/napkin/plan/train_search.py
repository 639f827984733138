"""The search of `napkin plan train`: every valid combination of degrees as one numpy grid, ranked.

The degrees (tp, pp, cp, ep, dp) that multiply to a cluster size and divide the model (heads,
layers, sequence, experts) are listed first, one row each; the options (ZeRO stage,
recomputation, micro-batch, interleave, sequence parallelism) are the grid's other axes.
``evaluate`` broadcasts over the grid; the top configurations are found with ``argpartition``
and ordered by a total order (seconds per token, then memory, then the degrees), so a grid
split into chunks (a thread pool, a dask cluster) gives exactly the ranking of one process.
Layouts alike in both (a larger context-parallel degree with a proportionally larger
micro-batch often is: the same tokens per GPU, the same GEMMs and activations) are one
result: the simplest of them (the first in the degrees' order) stands for the rest, with
their number. Only the printed rows become Python objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from napkin.plan.train_eval import DEGREES, OPTIONS, evaluate
from napkin.plan.train_setup import TrainSetup

MICRO_BATCHES = (1, 2, 4, 8, 16, 32)
INTERLEAVES = (1, 2, 3, 4, 5, 6, 8)
KEY_COLUMNS = DEGREES + OPTIONS  # with the cluster size in front: unique per configuration


@dataclass(frozen=True)
class Space:
    """What the search may vary: each option's candidate values, and the degrees given (None: searched)."""

    fixed: dict[str, int | None]  # tp pp cp ep dp as given
    zero: tuple[int, ...]
    recompute: tuple[int, ...]
    micro_batch: tuple[int, ...]
    interleave: tuple[int, ...]
    sp: tuple[int, ...]
    tp_beyond_domain: bool  # TP beyond the scale-up domain (only when asked for by --tp)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def degree_rows(S: TrainSetup, n_gpus: int, space: Space) -> np.ndarray:
    """Every (tp, pp, cp, ep, dp) with tp · pp · cp · dp = n_gpus that the model and the cluster allow."""
    fx = space.fixed
    L, heads, kv = int(S.n_layers), int(S.n_heads), int(S.n_kv_heads)
    rows = []
    for tp in ([fx["tp"]] if fx["tp"] else _divisors(n_gpus)):
        if n_gpus % tp or heads % tp or (kv % tp and tp % kv):
            continue
        if tp > S.scale_up_domain and not space.tp_beyond_domain:
            continue
        for pp in ([fx["pp"]] if fx["pp"] else _divisors(n_gpus // tp)):
            if (n_gpus // tp) % pp or pp > L or (L % pp and not fx["pp"]):  # a given --pp may split unevenly
                continue
            rest = n_gpus // (tp * pp)
            for cp in ([fx["cp"]] if fx["cp"] else _divisors(rest)):
                if rest % cp or (cp > 1 and S.seq_len % (2 * cp)):
                    continue
                dp = rest // cp
                if fx["dp"] and dp != fx["dp"]:
                    continue
                for ep in ([fx["ep"]] if fx["ep"] else (_divisors(dp) if S.n_experts else [1])):
                    if dp % ep or (S.n_experts and int(S.n_experts) % ep) or (not S.n_experts and ep > 1):
                        continue
                    rows.append((tp, pp, cp, ep, dp))
    return np.array(rows, dtype=float).reshape(-1, len(DEGREES))


def grid(degrees: np.ndarray, space: Space) -> dict[str, np.ndarray]:
    """The degrees on axis 0 and each option on its own axis, shaped to broadcast."""
    axes = [np.array(getattr(space, k), dtype=float) for k in OPTIONS]
    nd = 1 + len(axes)
    out = {k: degrees[:, i].reshape((-1,) + (1,) * (nd - 1)) for i, k in enumerate(DEGREES)}
    for j, (k, a) in enumerate(zip(OPTIONS, axes)):
        shape = [1] * nd
        shape[j + 1] = len(a)
        out[k] = a.reshape(shape)
    return out


def _key_rows(g: dict[str, np.ndarray], shape: tuple, flat: np.ndarray) -> np.ndarray:
    """The configuration columns (tp ... sp) of the flat grid indices ``flat``."""
    idx = np.unravel_index(flat, shape)
    cols = []
    for k in KEY_COLUMNS:
        a = g[k]
        cols.append(np.broadcast_to(a, shape)[idx] if a.size > 1 else np.full(len(flat), float(a.ravel()[0])))
    return np.stack(cols, axis=1) if len(flat) else np.zeros((0, len(KEY_COLUMNS)))


ALIKE_BITS = 33  # score and memory agree to this many mantissa bits (about 10 digits): one result


def _alike(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to ALIKE_BITS of mantissa, so layouts whose figures differ only in the last bits of their
    arithmetic compare equal (inf stays inf)."""
    m, e = np.frexp(x)
    return np.ldexp(np.round(m * 2.0 ** ALIKE_BITS) / 2.0 ** ALIKE_BITS, e)


def best_of(score: np.ndarray, memory: np.ndarray, keys: np.ndarray, top: int,
            counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first row of each of the ``top`` best results, each result's number of layouts), best first.

    Rows are ordered by (score, memory, keys...); rows alike in score and memory are one result, which the
    first of them (the simplest: the smallest degrees) stands for. ``counts``: how many layouts each row
    already stands for (a chunk's results, merged)."""
    qs, qm = _alike(score), _alike(memory)
    order = np.lexsort(tuple(keys[:, j] for j in range(keys.shape[1] - 1, -1, -1)) + (qm, qs))
    if not len(order):
        return order, np.zeros(0, dtype=np.int64)
    s, m = qs[order], qm[order]
    head = np.ones(len(order), dtype=bool)
    head[1:] = (s[1:] != s[:-1]) | (m[1:] != m[:-1])
    starts = np.flatnonzero(head)
    each = np.ones(len(order), dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)[order]
    return order[starts[:top]], np.add.reduceat(each, starts)[:top]


def _cut(score: np.ndarray, feasible: int, k: int) -> float:
    """The score of the k-th best distinct result (every layout at or under it is a candidate, ties included,
    so chunking cannot change the results)."""
    qs = _alike(score)
    m = min(feasible, 32 * k)
    while True:
        head = np.unique(np.partition(qs, m - 1)[:m])
        if len(head) >= k or m == feasible:
            return float(head[min(k, len(head)) - 1])
        m = min(feasible, 4 * m)


def search_chunk(S: TrainSetup, n_gpus: int, degrees: np.ndarray, space: Space, top: int,
                 by_cost: bool = False) -> dict[str, Any]:
    """Evaluate one chunk of degree rows over every option; its ``top`` configurations and its counts.

    The score is seconds per sequence (the inverse of throughput), or GPU-seconds per sequence
    (the cost at one price) when ``by_cost`` compares cluster sizes.
    A module-level function of picklable arguments, so a thread, a process or a dask worker runs it.
    """
    if not len(degrees):
        return {"n_gpus": n_gpus, "keys": np.zeros((0, 1 + len(KEY_COLUMNS))), "score": np.zeros(0),
                "memory": np.zeros(0), "alike": np.zeros(0, dtype=np.int64), "evaluated": 0, "valid": 0,
                "feasible": 0, "least_memory": math.inf,
                "least_memory_key": None}
    g = grid(degrees, space)
    e = evaluate(S, **g)
    ok = e["valid"] & e["fits"]
    shape = ok.shape
    seconds_per_seq = e["step"] / e["config"]["batch"]  # configurations may round the batch differently
    score = np.where(ok, seconds_per_seq * (n_gpus if by_cost else 1.0), np.inf).ravel()
    total = np.broadcast_to(e["memory"]["total"], shape).ravel()
    feasible = int(np.count_nonzero(ok))
    k = min(top, feasible)
    if k:
        cand = np.flatnonzero(_alike(score) <= _cut(score, feasible, k))
    else:
        cand = np.zeros(0, dtype=np.intp)
    keys = _key_rows(g, shape, cand)
    chosen, alike = best_of(score[cand], total[cand], keys, k)
    valid_mask = np.broadcast_to(e["valid"], shape)
    least = math.inf
    least_key = None
    if not feasible and valid_mask.any():  # nothing fits: say how close the leanest configuration comes
        masked = np.where(valid_mask, np.broadcast_to(e["memory"]["total"], shape), np.inf).ravel()
        i = int(np.argmin(masked))
        least = float(masked[i])
        least_key = [n_gpus] + [float(x) for x in _key_rows(g, shape, np.array([i]))[0]]
    return {"n_gpus": n_gpus, "keys": np.column_stack([np.full(len(chosen), float(n_gpus)), keys[chosen]]),
            "score": score[cand][chosen], "memory": total[cand][chosen], "alike": alike,
            "evaluated": int(np.prod(shape)),
            "valid": int(np.count_nonzero(valid_mask)), "feasible": feasible, "least_memory": least,
            "least_memory_key": least_key}


def merge(parts: list[dict[str, Any]], top: int) -> dict[str, Any]:
    """The chunks' candidates in the same total order: the global top of the union of the chunks' tops."""
    keys = np.concatenate([p["keys"] for p in parts]) if parts else np.zeros((0, 1 + len(KEY_COLUMNS)))
    score = np.concatenate([p["score"] for p in parts]) if parts else np.zeros(0)
    total = np.concatenate([p["memory"] for p in parts]) if parts else np.zeros(0)
    counts = np.concatenate([p["alike"] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    order, alike = best_of(score, total, keys, top, counts)
    leanest = min(parts, key=lambda p: p["least_memory"]) if parts else None
    return {"keys": keys[order], "score": score[order], "alike": alike,
            "evaluated": sum(p["evaluated"] for p in parts),
            "valid": sum(p["valid"] for p in parts), "feasible": sum(p["feasible"] for p in parts),
            "least_memory": leanest["least_memory"] if leanest else math.inf,
            "least_memory_key": leanest["least_memory_key"] if leanest else None}


CHUNK_CONFIGS = 1 << 18  # configurations per chunk: large enough to amortise numpy's per-call cost


def chunks(S: TrainSetup, sizes: list[int], space: Space, *,
           configs: int = CHUNK_CONFIGS) -> list[tuple[int, np.ndarray]]:
    """(cluster size, degree rows) pieces of the whole search, about ``configs`` configurations each."""
    per_row = int(np.prod([len(getattr(space, k)) for k in OPTIONS]))
    rows_per_chunk = max(1, configs // per_row)
    out = []
    for n in sizes:
        rows = degree_rows(S, n, space)
        for i in range(0, max(len(rows), 1), rows_per_chunk):
            out.append((n, rows[i:i + rows_per_chunk]))
    return out
