"""Choosing cells with array operations: each chunk's cheapest cells (argpartition) and Pareto
candidates (pruned by dominance), merged into the ranking (lexsort) and the front."""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas import capacity as cap
from napkin.formulas import cost as costf

from .request import PlanServeRequest

FITS, MEETS = 2, 3  # the grid's status codes (grid.FITS, grid.MEETS)


def cost(req: PlanServeRequest, *, tps: Any, n: Any, price: Any, output: Any,
         requests_per_s_per_replica: Any = None, rows: bool = True) -> dict[str, Any]:
    """Replicas, fleet $/h and $/M output of each cell.

    With a rate: the fewest replicas that carry it, each at most at the target utilisation of its
    capacity (or at the rate given per replica), and the fleet's hour over the rate's tokens.
    Without: one replica at its rate (default: the target utilisation of its capacity), so $/M is the
    replica's hour over the tokens it serves at that rate. ``rows=False``: replicas and $/M alone (the
    ranking's keys), not the figures a printed row adds.
    """
    import numpy as np

    lam_max = tps / output  # requests per second one replica completes at concurrency B, prefills included
    if req.rate is not None:
        if requests_per_s_per_replica is None:
            replicas = cap.replicas_for_rate(req.rate, requests_per_s_per_replica=lam_max,
                                             utilization=req.utilization)
        else:
            replicas = cap.replicas_for_rate(req.rate, requests_per_s_per_replica=requests_per_s_per_replica,
                                             utilization=1.0)
        replicas = np.maximum(replicas, 1.0)  # a vanishing rate still needs one replica
        fleet = replicas * n * price
        # every GPU-hour of the fleet over the output tokens the rate asks for
        usd = costf.usd_per_million_tokens(fleet, tokens_per_s=req.rate * output, utilization=1.0)
        if not rows:
            return {"replicas": replicas, "usd": usd}
        per_replica = req.rate / replicas
        per_gpu = req.rate * output / (replicas * n)  # what each GPU delivers at the target rate
    else:
        replicas = 1.0 + 0.0 * lam_max
        fleet = n * price
        if requests_per_s_per_replica is None:
            usd = costf.usd_per_million_tokens(fleet, tokens_per_s=tps, utilization=req.utilization)
            per_replica = req.utilization * lam_max
        else:
            per_replica = requests_per_s_per_replica
            usd = costf.usd_per_million_tokens(fleet, tokens_per_s=per_replica * output, utilization=1.0)
        if not rows:
            return {"replicas": replicas, "usd": usd}
        per_gpu = per_replica * output / n
    return {"replicas": replicas, "fleet": fleet, "usd": usd, "lam_max": lam_max, "per_replica": per_replica,
            "per_gpu": per_gpu, "utilization": per_replica / lam_max}


def cheapest(req: PlanServeRequest, chunk: Any, price: Any, output: Any, f: dict[str, Any], st: Any,
             keep: int) -> tuple[Any, float, Any]:
    """Chunk-local flat indices of the ``keep`` cells that meet the objectives first in the ranking's order
    ($/M, total GPUs, TPOT, then grid order), by np.partition on each key in turn (no sort); the lowest
    $/M of the cells left out (inf if none); and, when prompt or output lengths are axes, the cells at the
    lowest $/M of each (prompt, output) pair."""
    import numpy as np

    meets = st == MEETS
    workloads = st.shape[2] * st.shape[3] > 1
    if np.count_nonzero(meets) <= keep:
        idx = np.flatnonzero(meets)
        return idx, np.inf, idx if workloads else idx[:0]
    c = cost(req, tps=f["tps"], n=chunk.n, price=price, output=output, rows=False)
    usd = np.broadcast_to(c["usd"], st.shape)
    unpriced = np.finfo(float).max  # after every priced cell, before every cell that does not meet (inf)
    key = np.where(meets, np.where(np.isnan(usd), unpriced, usd), np.inf)
    total = lambda: np.broadcast_to(c["replicas"] * chunk.n, st.shape).reshape(-1)  # noqa: E731
    chosen, rest = first(key.reshape(-1), (total, lambda: f["tpot"].reshape(-1)), keep)
    each = np.empty(0, dtype=np.int64)
    if workloads:  # every cell at its (prompt, output) pair's lowest key
        low = key.min(axis=(0, 1, 4), keepdims=True)
        each = np.flatnonzero((key == low) & (key < np.inf))
    return chosen, (np.inf if rest >= unpriced else rest), each


def first(key: Any, ties: tuple, keep: int) -> tuple[Any, float]:
    """Positions of the ``keep`` smallest entries of ``key``, ties broken by the arrays ``ties()`` give in
    turn and then by position; and the smallest key left out. Exact, with at most one partition per key."""
    import numpy as np

    kth = kth_smallest(key, keep)
    chosen = [np.flatnonzero(key < kth)]
    keep -= len(chosen[0])
    cand = np.flatnonzero(key == kth)
    rest = kth if len(cand) > keep else float(np.min(key, where=key > kth, initial=np.inf))
    for tie in ties:
        if len(cand) <= keep:
            break
        v = tie()[cand]
        kth_v = kth_smallest(v, keep)
        below = cand[v < kth_v]
        chosen.append(below)
        keep -= len(below)
        cand = cand[v == kth_v]
    chosen.append(cand[:keep])
    return np.sort(np.concatenate(chosen)), float(rest)


def kth_smallest(v: Any, k: int) -> Any:
    """The k-th smallest entry of ``v`` (1-based): the minimum when at least k entries equal it (a grid's $/M
    ties often: it depends on the replicas, GPUs and price, not the batch), else by np.partition."""
    import numpy as np

    low = v.min()
    if np.count_nonzero(v == low) >= k:  # (a NaN minimum equals nothing: partition, which puts NaN last)
        return low
    return np.partition(v, k - 1)[k - 1]


class Front:
    """The exact Pareto front (tokens/s per user x, per GPU y) of every cell added so far.

    Each chunk's cells are first tested against a staircase of real points (the front so far and the
    front of every 61st cell of the chunk): a cell below it is strictly dominated, so it is on no front
    and dropping it changes no other cell's verdict; the few left are merged by an exact sort.
    """

    STRIDE = 61  # the chunk's sample whose front starts the staircase
    BUCKETS = 4096  # resolution of the staircase along x (coarser only keeps more cells: never a wrong drop)

    def __init__(self) -> None:
        import numpy as np

        self.flat, self.x, self.y = np.empty(0, dtype=np.int64), np.empty(0), np.empty(0)

    def add_chunk(self, f: dict[str, Any], fits: Any, n: Any, to_grid: Any) -> None:
        """The chunk's cells that fit (mask ``fits``), with TPOT and tokens/s in ``f`` and GPUs ``n``."""
        import numpy as np

        fit = fits.reshape(-1)
        if not fit.any():
            return
        x = (1.0 / f["tpot"]).reshape(-1)  # tokens/s per user
        y = np.broadcast_to(f["tps"] / n, fits.shape).reshape(-1)  # tokens/s per GPU
        sample = np.flatnonzero(fit[::self.STRIDE]) * self.STRIDE
        start = pareto_front(x[sample], y[sample])
        px, py = np.concatenate((self.x, x[sample][start])), np.concatenate((self.y, y[sample][start]))
        keep = np.flatnonzero(self._clear(x, y, px, py) & fit)
        self.merge(to_grid(keep), x[keep], y[keep])

    def _clear(self, x: Any, y: Any, px: Any, py: Any) -> Any:
        """Whether no staircase point has a larger x (a higher bucket) and at least the same y."""
        import numpy as np

        lo, hi = float(x.min()), float(x.max())  # NaN if any x is
        finite = math.isfinite(hi - lo)
        if not finite:  # an infinite or undefined x (a degenerate request): span the finite ones
            ok = x[np.isfinite(x)]
            lo, hi = (float(ok.min()), float(ok.max())) if ok.size else (0.0, 0.0)
        scale = (self.BUCKETS - 1) / (hi - lo) if hi > lo else 0.0
        top = np.full(self.BUCKETS + 1, -np.inf)
        np.maximum.at(top, self._bucket(px, lo, scale, undefined=0), py)  # an undefined point dominates nothing
        above = np.maximum.accumulate(top[::-1])[::-1][1:]  # best y in the buckets above each one
        # every x in [lo, hi]: its bucket as it stands; else clipped, an undefined cell kept
        at = ((x - lo) * scale).astype(np.int64) if finite else self._bucket(x, lo, scale, undefined=self.BUCKETS - 1)
        return above[at] < y

    def _bucket(self, v: Any, lo: float, scale: float, *, undefined: int) -> Any:
        """Each value's bucket along x (monotone in x, clipped to the staircase; NaN to ``undefined``)."""
        import numpy as np

        with np.errstate(invalid="ignore"):  # inf * 0 when every finite x is the same
            b = (v - lo) * scale
        b = np.nan_to_num(b, copy=False, nan=undefined, posinf=self.BUCKETS - 1, neginf=0)
        return np.clip(b, 0, self.BUCKETS - 1, out=b).astype(np.int64)

    def merge(self, flat: Any, x: Any, y: Any) -> None:
        import numpy as np

        f, xs, ys = (np.concatenate(v) for v in ((self.flat, flat), (self.x, x), (self.y, y)))
        order = np.argsort(f, kind="stable")  # grid order, which the front's ties keep
        f, xs, ys = f[order], xs[order], ys[order]
        keep = np.sort(pareto_front(xs, ys))
        self.flat, self.x, self.y = f[keep], xs[keep], ys[keep]


def pareto_front(x: Any, y: Any) -> Any:
    """Indices of the points no other point beats on both x and y (larger is better), by x descending.

    Trap: ranking by one axis: the best tokens/s per GPU serves each user slowly, and the
    reverse; the front is the set of honest choices.
    Source: the throughput-interactivity curves of serving benchmarks (e.g. MLPerf, InferenceMAX).
    """
    import numpy as np

    order = np.lexsort((-y, -x))
    ys = y[order]
    best_before = np.concatenate(([-np.inf], np.maximum.accumulate(ys)[:-1]))
    return order[ys > best_before]


def rank(keys: dict[str, Any], flat: Any, top: int) -> Any:
    """The ``top`` cells by (unpriced last, $/M, total GPUs, TPOT), ties in grid order (lexsort is stable)."""
    import numpy as np

    usd = keys["usd"]
    order = np.lexsort((flat, keys["tpot"], keys["total_gpus"], np.where(np.isnan(usd), 0.0, usd), np.isnan(usd)))
    return order[:top]
