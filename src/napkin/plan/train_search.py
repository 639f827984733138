"""The search of `napkin plan train`: every valid combination of degrees as one numpy grid, ranked.

The degrees (tp, pp, cp, ep, dp) that multiply to a cluster size and divide the model (heads,
layers, sequence, experts) are listed first, one row each; the options (ZeRO stage,
recomputation, micro-batch, interleave, sequence parallelism) are the grid's other axes.
``evaluate`` broadcasts over the grid; the top configurations are found with ``argpartition``
and ordered by a total order (seconds per token, then memory, then the degrees), so a grid
split into chunks (a thread pool, a dask cluster) gives exactly the ranking of one process.
Only the printed rows become Python objects.
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


def best_of(score: np.ndarray, memory: np.ndarray, keys: np.ndarray, top: int) -> np.ndarray:
    """Indices of the ``top`` candidates in the total order (score, memory, keys...), best first."""
    order = np.lexsort(tuple(keys[:, j] for j in range(keys.shape[1] - 1, -1, -1)) + (memory, score))
    return order[:top]


def search_chunk(S: TrainSetup, n_gpus: int, degrees: np.ndarray, space: Space, top: int,
                 by_cost: bool = False) -> dict[str, Any]:
    """Evaluate one chunk of degree rows over every option; its ``top`` configurations and its counts.

    The score is seconds per sequence (the inverse of throughput), or GPU-seconds per sequence
    (the cost at one price) when ``by_cost`` compares cluster sizes.
    A module-level function of picklable arguments, so a thread, a process or a dask worker runs it.
    """
    if not len(degrees):
        return {"n_gpus": n_gpus, "keys": np.zeros((0, 1 + len(KEY_COLUMNS))), "score": np.zeros(0),
                "memory": np.zeros(0), "evaluated": 0, "valid": 0, "feasible": 0, "least_memory": math.inf,
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
        cut = np.partition(score, k - 1)[k - 1]
        cand = np.flatnonzero(score <= cut)  # every tie at the cut, so chunking cannot change the order
    else:
        cand = np.zeros(0, dtype=np.intp)
    keys = _key_rows(g, shape, cand)
    chosen = best_of(score[cand], total[cand], keys, k)
    valid_mask = np.broadcast_to(e["valid"], shape)
    least = math.inf
    least_key = None
    if not feasible and valid_mask.any():  # nothing fits: say how close the leanest configuration comes
        masked = np.where(valid_mask, np.broadcast_to(e["memory"]["total"], shape), np.inf).ravel()
        i = int(np.argmin(masked))
        least = float(masked[i])
        least_key = [n_gpus] + [float(x) for x in _key_rows(g, shape, np.array([i]))[0]]
    return {"n_gpus": n_gpus, "keys": np.column_stack([np.full(len(chosen), float(n_gpus)), keys[chosen]]),
            "score": score[cand][chosen], "memory": total[cand][chosen], "evaluated": int(np.prod(shape)),
            "valid": int(np.count_nonzero(valid_mask)), "feasible": feasible, "least_memory": least,
            "least_memory_key": least_key}


def merge(parts: list[dict[str, Any]], top: int) -> dict[str, Any]:
    """The chunks' candidates in the same total order: the global top of the union of the chunks' tops."""
    keys = np.concatenate([p["keys"] for p in parts]) if parts else np.zeros((0, 1 + len(KEY_COLUMNS)))
    score = np.concatenate([p["score"] for p in parts]) if parts else np.zeros(0)
    total = np.concatenate([p["memory"] for p in parts]) if parts else np.zeros(0)
    order = best_of(score, total, keys, top)
    leanest = min(parts, key=lambda p: p["least_memory"]) if parts else None
    return {"keys": keys[order], "score": score[order], "evaluated": sum(p["evaluated"] for p in parts),
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
