"""The screened configurations under the load simulation of `napkin serve --rate`, cheapest first,
and the report of a plan with p99 objectives."""

from __future__ import annotations

import heapq
import math
from typing import Any

from napkin import units
from napkin.derivation import Report

from . import grid as gr
from . import select, tail
from .request import PlanServeRequest

MAX_SIMULATIONS = 24  # at most this many runs of the simulation per plan


def simulate(req: PlanServeRequest, g: gr.Grid, x: dict[str, Any]) -> dict[str, float]:
    """`napkin serve --rate` on one configuration at its rate per replica (composed through the registry)."""
    from napkin import calculators

    h = g.axes.hw[int(x["hw"])]
    rep = calculators.get("serve")(
        model=req.model, gpu=h["key"], gpus=int(x["gpus"]), tp=int(x["tp"]), precision=h["precision"],
        kv_precision=req.kv_precision, prompt=float(x["prompt"]), output=float(x["output"]), batch=int(x["batch"]),
        chunk=req.chunk, cached_prefix=req.cached_prefix, rate=float(x["per_replica"]),
        **({"usable": req.usable} if req.kv_free_fraction is None else {"kv_free_fraction": req.kv_free_fraction}),
        gemm_efficiency=req.gemm_efficiency, bandwidth_efficiency=req.bandwidth_efficiency,
        allreduce_latency=req.allreduce_latency, scale_out_bandwidth=req.scale_out_bandwidth)
    return {"ttft_p99": rep["ttft_p99_s"], "tpot_p99": rep["tpot_p99_s"], "requests": rep["simulated_requests"]}


def meets(sim: dict[str, float], obj: dict[str, float]) -> bool:
    return all(sim[k] <= obj[k] for k in ("ttft_p99", "tpot_p99") if k in obj)


def slower(req: PlanServeRequest, x: dict[str, Any]) -> dict[str, Any]:
    """The same configuration at a lower rate per replica: one more replica, or LOWER of its rate."""
    import numpy as np

    lam = req.rate / (x["replicas"] + 1.0) if req.rate is not None else x["per_replica"] * tail.LOWER
    y = dict(x)
    y.update({k: float(np.asarray(v)) for k, v in select.cost(
        req, tps=x["tps"], n=x["gpus"], price=x["price"], output=x["output"],
        requests_per_s_per_replica=np.asarray(lam)).items()})
    return y


def confirm(req: PlanServeRequest, g: gr.Grid, s: dict[str, Any], obj: dict[str, float]) -> tuple[list, int, list]:
    """(rows in cost order, each with its simulation or None; simulations run; configurations rejected)."""
    size = len(s["flat"])
    heap = []
    for i in range(size):
        x = {k: (v[i] if hasattr(v, "shape") and v.shape[:1] == (size,) else v) for k, v in s.items()}
        heapq.heappush(heap, (_key(x), i, 0, x))
    done: list[tuple[dict, dict | None]] = []
    rejected = []
    runs = confirmed = last = 0
    while heap and not (len(done) >= req.top and (confirmed >= req.confirm or runs >= MAX_SIMULATIONS)):
        key, i, tries, x = heapq.heappop(heap)
        # the simulation runs a replica as one TP group: a pipeline (PP > 1) is screened only
        if x["pp"] > 1 or confirmed >= req.confirm or runs >= MAX_SIMULATIONS:
            done.append((x, None))
            continue
        sim = simulate(req, g, x)
        runs += 1
        if meets(sim, obj):
            done.append((x, sim))
            confirmed += 1
            last = len(done)
            continue
        rejected.append((x, sim))
        if tries < tail.RETRIES:
            y = slower(req, x)
            y["ttft_p99"] = float(tail.ttft_quantile(_one(y), tail_detail(req, g, y), y["per_replica"])[0])
            heapq.heappush(heap, (_key(y), i, tries + 1, y))
    return done[:max(req.top, last)], runs, rejected


def _key(x: dict[str, Any]) -> tuple:
    usd = float(x["usd"])
    return (math.isnan(usd), 0.0 if math.isnan(usd) else usd, float(x["replicas"] * x["gpus"]), float(x["tpot"]),
            int(x["flat"]))


def _one(x: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    return {k: (np.asarray([v]) if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) else v)
            for k, v in x.items()}


def tail_detail(req: PlanServeRequest, g: gr.Grid, x: dict[str, Any]) -> dict[str, Any]:
    from .rows import detail

    return detail(req, g, _one(x))


def row(g: gr.Grid, x: dict[str, Any], sim: dict | None, *, axes: bool) -> dict:
    h = g.axes.hw[int(x["hw"])]
    usd = float(x["usd"])
    out: dict[str, Any] = {"gpu": h["key"], "precision": h["precision"], "gpus": int(x["gpus"]), "tp": int(x["tp"]),
                           "pp": int(x["pp"]), "batch": int(x["batch"])}
    if axes:
        out.update(prompt=float(x["prompt"]), output=float(x["output"]))
    out.update({
        "replicas": int(x["replicas"]), "total_gpus": int(x["replicas"] * x["gpus"]),
        "requests_per_s_per_replica": float(x["per_replica"]), "ttft_s": float(x["ttft"]),
        "ttft_p99_s": float(x["ttft_p99"]), "tpot_p99_s": float(x["tpot_p99"]),
        "simulated_ttft_p99_s": None if sim is None else float(sim["ttft_p99"]),
        "simulated_tpot_p99_s": None if sim is None else float(sim["tpot_p99"]),
        "tokens_per_s_per_gpu": float(x["per_gpu"]), "tp_beyond_scale_up": bool(x["beyond"]),
        "fleet_usd_per_hour": float(x["fleet"]) if not math.isnan(usd) else None,
        "usd_per_million_tokens_all_in": usd if not math.isnan(usd) else None, "bound": str(x["bound"])})
    return out


def plan(r: Report, req: PlanServeRequest, g: gr.Grid, obj: dict[str, float], *, axes: bool) -> list[dict]:
    """The ranking under p99 objectives: screened, then simulated cheapest first; the rows and the notes."""
    r.set("meeting_mean_objectives", g.counts["meeting"], "count")
    if not len(g.picks):
        r.set("screened_configurations", 0, "count")
        return []
    s, screened, certain = tail.screen(req, g, obj, req.top + req.confirm * (tail.RETRIES + 1))
    r.set("screened_configurations", screened, "count")
    if not certain:
        r.note(f"the screen read the {screened:,} configurations cheapest by their steady state (up to "
               f"{tail.SCREEN_PER_CHUNK} per chunk of the grid); cheaper ones under the p99 objectives may lie beyond")
    done, runs, rejected = confirm(req, g, s, obj) if len(s["flat"]) else ([], 0, [])
    r.set("simulated_configurations", runs, "count")
    rows = [row(g, x, sim, axes=axes) for x, sim in done]
    if any(x["pp"] > 1 for x, _ in done):
        r.note("PP > 1 rows are screened only: the simulation (`napkin serve --rate`) runs a replica as one TP group, "
               "without its pipeline stages")
    sec = lambda v: units.format(float(v), "seconds")  # noqa: E731
    for x, sim in rejected:
        h = g.axes.hw[int(x["hw"])]
        r.note(f"the simulation rejected {int(x['replicas'])} x {int(x['gpus'])} {h['key']} ({h['precision']}, TP {int(x['tp'])}, batch "
               f"{int(x['batch'])}) at {x['per_replica']:.3g} requests/s per replica: TTFT p99 {sec(sim['ttft_p99'])}, "
               f"TPOT p99 {sec(sim['tpot_p99'])}; tried again at a lower rate")
    return rows
