"""p99 objectives under Poisson load: screened on the grid by a queueing approximation, confirmed by
the load simulation of `napkin serve --rate` on the cheapest few.

The screen, for a replica whose batch B is its number of sequence slots, at λ requests per second:
- TPOT p99 <= its steady state with every slot busy. A request's TPOT averages the steps of its
  output; with every slot busy those are the steady state's steps, and fewer sequences only make
  them shorter, so this bounds the TPOT of every request at any rate.
- TTFT p99 <= scheduling.loaded_ttft_quantile_seconds: the M/M/c wait for one of the B slots
  (Erlang C, each slot held S = B / λ_max), the step in progress, the chunked prefill, and the
  prompts that arrive with it.
A configuration's rate is the highest λ within the utilisation target (utilisation x λ_max) at which
its TTFT p99 meets the objective (TTFT p99 grows with λ: bisection). With --rate its replicas are
⌈rate / λ⌉; without, $/M is the replica's hour over the tokens it serves at λ.

The screen never makes a configuration cheaper than its steady state at the utilisation target, so
the cells are screened in that order until the next can no longer beat the ones found (branch and
bound). The cheapest screened configurations are then simulated (`napkin serve --rate`, the same
inputs, seeded), cheapest first; one the simulation finds over an objective is tried again at a
lower rate (one more replica, or 80% of the rate) in its place in the order.
"""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas import scheduling as sch

from . import grid as gr
from . import select
from .request import PlanServeRequest
from .rows import cells, detail

QUANTILE = 0.99
SCREEN_PER_CHUNK = 64  # cells per chunk handed to the screen (its branch and bound reads them cheapest first)
SCREEN_BATCH = 128
BISECTIONS = 40
RETRIES = 3  # lower-rate tries of one configuration the simulation rejected
LOWER = 0.8  # without --rate, a rejected configuration is tried again at this share of its rate


def take(c: dict[str, Any], idx: Any) -> dict[str, Any]:
    import numpy as np

    size = len(c["flat"])
    return {k: (v[idx] if isinstance(v, np.ndarray) and v.shape[:1] == (size,) else v) for k, v in c.items()}


def ttft_quantile(c: dict[str, Any], d: dict[str, Any], lam: Any) -> Any:
    """The screen's TTFT p99 of each cell at λ requests per second per replica."""
    service = c["batch"] / c["lam_max"]  # Little's law at capacity: each request holds its slot B / λ_max
    busy = sch.erlang_c(c["batch"], offered_load=lam * service)
    wait = sch.wait_quantile_seconds(busy, servers=c["batch"], service_s=service, rate_per_s=lam, quantile=QUANTILE)
    step = d["chunk"]  # a step that carries a prompt chunk: the longest a new request waits for one to end
    others = sch.poisson_quantile(lam * step, quantile=QUANTILE)
    return sch.loaded_ttft_quantile_seconds(c["ttft"], step_s=step, decode_step_s=d["decode"], n_chunks=d["n_chunks"],
                                            wait_s=wait, co_arrivals=others)


def highest_rate(c: dict[str, Any], d: dict[str, Any], target: float | None, cap: Any) -> Any:
    """The highest λ <= cap whose TTFT p99 meets ``target`` (0 where none does)."""
    import numpy as np

    if target is None:
        return cap
    lo = np.zeros_like(cap)
    hi = cap.copy()
    whole = ttft_quantile(c, d, cap) <= target
    some = ttft_quantile(c, d, cap * 1e-12) <= target
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2.0
        ok = ttft_quantile(c, d, mid) <= target
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(whole, cap, np.where(some, lo, 0.0))


def screen_batch(req: PlanServeRequest, g: gr.Grid, c: dict[str, Any], obj: dict[str, float]) -> dict[str, Any]:
    """Each cell's rate under the p99 objectives, its cost there, and its screened TTFT and TPOT p99."""
    import numpy as np

    d = detail(req, g, c)
    lam = highest_rate(c, d, obj.get("ttft_p99"), req.utilization * c["lam_max"])
    s = dict(c)
    s.update(select.cost(req, tps=c["tps"], n=c["gpus"], price=c["price"], output=c["output"],
                         requests_per_s_per_replica=np.maximum(lam, 1e-300)))
    s["ttft_p99"] = ttft_quantile(c, d, s["per_replica"])
    s["tpot_p99"] = c["tpot"]  # the steady state with every slot busy: a bound at any rate
    s["feasible"] = lam > 0
    comm = d["comm"] > np.maximum(d["memory"], d["compute"])
    s["bound"] = np.where(comm, "communication", np.where(d["compute"] > d["memory"], "compute", "bandwidth"))
    return s


def screen(req: PlanServeRequest, g: gr.Grid, obj: dict[str, float], top: int) -> tuple[dict[str, Any], int, bool]:
    """The screened cells that meet the objectives, cheapest first; how many were screened; and whether the
    cheapest ``top`` are certain (no cell left unscreened could be cheaper)."""
    import numpy as np

    c = cells(req, g, g.picks)
    c = take(c, select.rank(_keys(c), c["flat"], len(c["flat"])))  # by the steady state at the utilisation target
    parts: list[dict[str, Any]] = []
    done, size = 0, len(c["flat"])
    certain = False
    while done < size and not certain:
        part = screen_batch(req, g, take(c, slice(done, done + SCREEN_BATCH)), obj)
        parts.append(take(part, np.flatnonzero(part["feasible"])))
        done = min(done + SCREEN_BATCH, size)
        certain = _certain(_join(parts), top, _usd(c["usd"][done]) if done < size else g.cut)
    found = _join(parts)
    return take(found, select.rank(_keys(found), found["flat"], len(found["flat"]))), done, certain


def _usd(x: float) -> float:
    return math.inf if math.isnan(x) else float(x)


def _certain(found: dict[str, Any], top: int, next_usd: float) -> bool:
    """Whether the ``top`` cheapest found cost less than any cell not screened can (its steady-state $/M)."""
    import numpy as np

    if len(found["flat"]) < top:
        return next_usd == math.inf
    usd = np.sort(np.where(np.isnan(found["usd"]), np.inf, found["usd"]))
    return bool(usd[top - 1] < next_usd)


def _keys(c: dict[str, Any]) -> dict[str, Any]:
    return {"usd": c["usd"], "total_gpus": c["replicas"] * c["gpus"], "tpot": c["tpot"]}


def _join(parts: list[dict[str, Any]]) -> dict[str, Any]:
    import numpy as np

    return {k: np.concatenate([p[k] for p in parts]) if isinstance(parts[0][k], np.ndarray) else parts[0][k]
            for k in parts[0]}
