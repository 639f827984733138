"""The plan's report: the ranking (at the target load, or at each configuration's highest rate),
the Pareto front at capacity, the shared assumptions and the model's simplifications."""

from __future__ import annotations

from typing import Any

from napkin import catalog, units
from napkin.calculators import replica as rep
from napkin.calculators import resolve
from napkin.calculators.steps import kv_window_note
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import serving as sv

from . import grid as gr
from . import confirm, select, tail
from .evaluate import evaluate
from .request import PlanServeRequest, _scale_out, objectives
from .rows import Points, bounds, cells, row

SIMPLIFICATIONS = (
    "no queueing beyond the utilisation target: each replica's steady state at its batch (continuous batching, "
    "prompt chunks riding in decode steps), TTFT with no queue (`napkin serve --rate` simulates the queue)",
    "a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces over its NVLink-class link at the "
    "bus bandwidth the family's published sweep measured for each message size (one-shot where faster), bridged PCIe "
    "cards beyond their pair and cards with no NVLink over PCIe at its fitted fraction and measured step time, a "
    "larger group at the "
    "scale-out bandwidth; GPUs beyond the TP degree are "
    "pipeline stages, and their hops are not costed",
)

TAIL_SIMPLIFICATIONS = (
    "the p99 screen is a queueing approximation (an upper bound by construction: each part at its own p99), and only "
    "the configurations listed with sim columns ran through the load simulation; both model continuous batching "
    "with the same operator steps",
) + SIMPLIFICATIONS[1:]

LABELS = {"ttft": "TTFT", "tpot": "TPOT", "ttft_p99": "TTFT p99", "tpot_p99": "TPOT p99"}


def describe(obj: dict[str, float]) -> str:
    """The objectives as the title states them: 'TTFT <= 500 ms, TPOT p99 <= 50 ms'."""
    return ", ".join(f"{LABELS[k]} <= {units.format(v, 'seconds')}" for k, v in obj.items())


def run_plan_serve(req: PlanServeRequest) -> Report:
    r = Report("Plan serve", command="plan serve")
    low = min(req.prompt) if isinstance(req.prompt, list) else req.prompt
    if req.cached_prefix >= low:
        raise InputError("cached_prefix", req.cached_prefix, f"must be less than the prompt ({low:g} tokens)")
    resolve.kv_budget_given_once(req)
    obj = objectives(req)
    p99 = "ttft_p99" in obj or "tpot_p99" in obj
    if p99 and req.host_per_request:
        raise InputError("host_per_request", units.format(req.host_per_request, "seconds"), "is not simulated under load",
                         "drop --host-per-request with --ttft-p99 or --tpot-p99 (the p99 ranking runs the load "
                         "simulation); mean objectives count it")
    g = evaluate(req, r, objectives=obj, keep=tail.SCREEN_PER_CHUNK if p99 else req.top)
    ax, m = g.axes, g.model
    longest = float(ax.prompt.max() + ax.output.max())
    kv_window_note(r, m, longest)  # KV bytes above are capped by any sliding window
    if m.max_context and longest > m.max_context:
        r.warn("context-too-long", f"{ax.prompt.max():,.0f} prompt + {ax.output.max():,.0f} output tokens exceed "
                                   f"{m.name}'s {m.max_context:,}-token context window; the plan below is what it "
                                   "would cost if it did not")
    rate = f"{req.rate:g} requests/s" if req.rate is not None else "the highest rate per replica"
    r.title = f"Plan serve {m.name}: {rate}, {describe(obj)}"
    r.set("model", m.name)
    r.set("configurations", g.counts["configurations"], "count")
    r.set("valid_configurations", g.counts["valid"], "count")
    r.set("fitting_configurations", g.counts["fitting"], "count")
    if p99:
        tail_ranking(r, req, g, obj)
    else:
        r.set("meeting_slo", g.counts["meeting"], "count")
        ranking(r, req, g, obj)
    pareto(r, req, g)
    assumptions(r, req, g)
    return r


def several(g: gr.Grid) -> bool:
    """Whether prompt or output length is an axis of the grid (the rows then say which)."""
    return len(g.axes.prompt) > 1 or len(g.axes.output) > 1


def ranked(req: PlanServeRequest, g: gr.Grid, flat: Any, top: int, **extra: Any) -> tuple[dict[str, Any], Any]:
    """The cells' figures and the order of the ``top`` cheapest of them."""
    c = cells(req, g, flat)
    c.update(extra)
    order = select.rank({"usd": c["usd"], "total_gpus": c["replicas"] * c["gpus"], "tpot": c["tpot"]}, c["flat"], top)
    return c, order


def rows_of(req: PlanServeRequest, g: gr.Grid, c: dict[str, Any], order: Any, *, at_load: bool = True) -> list[dict]:
    import numpy as np

    sub = {k: (v[order] if isinstance(v, np.ndarray) and v.shape == c["flat"].shape else v) for k, v in c.items()}
    return [row(g, sub, i, b, at_load=at_load, axes=several(g)) for i, b in enumerate(bounds(req, g, sub))]


def ranking(r: Report, req: PlanServeRequest, g: gr.Grid, obj: dict[str, float]) -> None:
    """The configurations that meet the objectives, cheapest first, and the best of them; else why none does."""
    c, order = ranked(req, g, g.picks, req.top)
    rows = rows_of(req, g, c, order)
    if req.rate is None:
        for x, i in zip(rows, order):
            x["requests_per_s_per_replica"] = float(c["per_replica"][i])
    r.set("ranking", rows)
    if not rows:
        nothing(r, req, g, obj)
        return
    if several(g):
        r.set("best_per_workload", per_workload(req, g))
    if req.rate is not None:
        r.note(f"ranking: each row at the target load ({req.rate:g} requests/s): tok/s/GPU = rate · output / "
               "total GPUs, what a GPU delivers ($/M follows from it); TPOT = a step of the full batch with the prompt "
               "chunks of the requests that replace finished ones (the replica at capacity: an upper bound)")
    else:
        r.note(f"ranking: each row is one replica at its highest rate within the objectives: "
               f"{req.utilization:.0%} of its steady-state capacity (the utilisation target; raise --utilization to "
               "load it more); $/M = the replica's hour over the tokens it serves at that rate")
    best(r, req, g, rows[0])


def tail_ranking(r: Report, req: PlanServeRequest, g: gr.Grid, obj: dict[str, float]) -> None:
    """The ranking under p99 objectives: screened on the grid, simulated cheapest first (confirm.py)."""
    rows = confirm.plan(r, req, g, obj, axes=several(g))
    r.set("ranking", rows)
    if not rows:
        nothing(r, req, g, obj)
        return
    sims = [x for x in rows if x["simulated_ttft_p99_s"] is not None]
    r.note(f"p99 objectives: each configuration at the highest rate per replica (within {req.utilization:.0%} of its "
           "capacity, the utilisation target) whose screened p99s meet them: TPOT p99 <= the steady state with every "
           "slot busy (a bound at any load), TTFT p99 = the M/M/c wait for one of the batch's slots (Erlang C) + a "
           "prompt step + the chunked prefill + the prompts that arrive with it; "
           + (f"the cheapest then ran through `napkin serve --rate`'s simulation (seeded Poisson arrivals, same "
              f"inputs; sim columns): {len(sims)} of them meet{'s' if len(sims) == 1 else ''} the objectives there"
              if req.confirm else
              "none simulated (--confirm 0)"))
    if req.confirm and not sims:
        r.warn("not-simulated", "no configuration the screen passed was confirmed by the simulation within its "
                                f"{confirm.MAX_SIMULATIONS} runs: the rows are the screen's alone")
    b = sims[0] if sims else rows[0]
    best(r, req, g, b)
    r.set("best_ttft_p99_s", b["simulated_ttft_p99_s"] if b in sims else b["ttft_p99_s"], "seconds")
    r.set("best_tpot_p99_s", b["simulated_tpot_p99_s"] if b in sims else b["tpot_p99_s"], "seconds")


def per_workload(req: PlanServeRequest, g: gr.Grid) -> list[dict]:
    """The cheapest configuration for each (prompt, output) pair of the grid, in the grid's order."""
    import numpy as np

    c, order = ranked(req, g, g.per_workload, len(g.per_workload))
    _, _, i, j, _ = np.unravel_index(c["flat"][order], g.axes.shape)
    pair = i * len(g.axes.output) + j
    _, first = np.unique(pair, return_index=True)  # by pair: the first (cheapest) row of each
    firsts = order[first]
    rows = rows_of(req, g, c, firsts)
    if req.rate is None:
        for x, k in zip(rows, firsts):
            x["requests_per_s_per_replica"] = float(c["per_replica"][k])
    return rows


def best(r: Report, req: PlanServeRequest, g: gr.Grid, b: dict) -> None:
    where = f", prompt {b['prompt']:,.0f}, output {b['output']:,.0f}" if "prompt" in b else ""
    r.set("best", f"{b['replicas']} x {b['gpus']} {b['gpu']} ({b['precision']}, TP {b['tp']}"
                  + (f", PP {b['pp']}" if b["pp"] > 1 else "") + f", batch {b['batch']}{where})")
    r.set("best_total_gpus", b["total_gpus"], "count")
    if "requests_per_s_per_replica" in b:
        r.set("best_requests_per_s_per_replica", b["requests_per_s_per_replica"], "per_s")
    if b["usd_per_million_tokens_all_in"] is not None:
        r.set("best_fleet_usd_per_hour", b["fleet_usd_per_hour"], "usd_per_hour")
        r.set("best_usd_per_million_tokens_all_in", b["usd_per_million_tokens_all_in"], "usd_per_million")
        r.note("$/M all-in: the fleet's hour over the output tokens it serves, each with its prompt's prefill, as "
               "`napkin serve` gives usd_per_million_tokens_all_in (its usd_per_million_output_tokens leaves the "
               "prefill to usd_per_million_input_tokens)")
    r.set("best_ttft_s", b["ttft_s"], "seconds")
    if "tpot_s" in b:
        r.set("best_tpot_s", b["tpot_s"], "seconds")
    by_hand = (req.gemm_efficiency, req.bandwidth_efficiency, req.allreduce_latency, req.host_per_request)
    bar = rep.error_bars(catalog.gpu(b["gpu"]), b["gpus"], moe=g.model.is_moe)  # the best one's family, size, kind
    if bar and all(v is None for v in by_hand):  # efficiencies by hand: not the validated model
        r.set("best_error_bar", bar)
    if b["tp_beyond_scale_up"]:
        gpu = catalog.gpu(b["gpu"])
        rate = float(sv.tp_link_bytes_per_s(b["tp"], scale_up_domain=gpu.scale_up_domain,
                                            link_bytes_per_s_per_direction=gpu.link_bytes_per_s_per_direction,
                                            scale_out_bytes_per_s_per_gpu=_scale_out(req),
                                            host_link_bytes_per_s_per_direction=gpu.host_link_bytes_per_s_per_direction,
                                            host_link_domain=gpu.host_link_domain))
        r.note(f"the best configuration's TP {b['tp']} spans more than the {gpu.scale_up_domain:g} GPUs of one "
               f"scale-up domain: its all-reduces are priced as crossing "
               f"{rep.tp_path(gpu, b['tp'], rate=rate, scale_out=_scale_out(req))}")


def nothing(r: Report, req: PlanServeRequest, g: gr.Grid, obj: dict[str, float]) -> None:
    """Why no configuration meets the objectives: none fits, or the fastest that fit are too slow."""
    fit = g.status >= gr.FITS
    if not fit.any():
        r.warn("nothing-fits", f"no configuration holds {g.model.name} within {req.max_gpus} GPUs per replica: "
                               "raise --max-gpus or lower the precision")
        return
    sec = lambda x: units.format(float(x), "seconds")  # noqa: E731
    goals = " and ".join(f"{LABELS[k]} <= {sec(v)}" for k, v in obj.items())
    r.warn("no-config-meets-slo", f"nothing meets {goals}; the fastest TPOT that fits is {sec(g.tpot[fit].min())} "
                                  f"and the fastest TTFT {sec(g.ttft[fit].min())}")


def pareto(r: Report, req: PlanServeRequest, g: gr.Grid) -> None:
    """The Pareto front over everything that fits (objectives aside): tokens/s per GPU against per user."""
    if not g.counts["fitting"]:
        return
    c = cells(req, g, g.front.flat)
    keep = select.pareto_front(g.front.x, g.front.y)  # the front's own order: tokens/s per user descending
    r.set("pareto_front", rows_of(req, g, c, keep, at_load=False))
    r.set("pareto_points", Points(g))
    r.note("Pareto front: every column at capacity, each replica in the steady state of its batch, prompts "
           "included: tok/s/GPU = decoding sequences / TPOT / GPUs")


def assumptions(r: Report, req: PlanServeRequest, g: gr.Grid) -> None:
    """The assumptions every configuration shares, and the model's simplifications."""
    hw = g.axes.hw
    # a valid TP group beyond a GPU's scale-up domain, whose all-reduces then run at the scale-out bandwidth
    far = [i for i, h in enumerate(hw) for _, t in g.axes.pairs
           if t > max(h["domain"], h["host_domain"]) and h["has_link"] and _scale_out(req) < h["link"]]
    if far:
        domains = ", ".join(sorted({f"{hw[i]['key']} {hw[i]['domain']:g}" for i in far}))
        where = f"per GPU, one direction, for TP groups beyond the scale-up domain ({domains} GPUs)"
        if req.scale_out_bandwidth is None:
            resolve.assume_default(r, "scale_out_bandwidth", "scale_out_bytes_per_s_per_gpu", unit="bytes_per_s",
                                   note=where + ": one 400 Gb/s NIC per GPU (NVIDIA DGX H100 User Guide, Network "
                                                "Modules)")
        else:
            r.assume("scale_out_bandwidth", req.scale_out_bandwidth, where, unit="bytes_per_s", basis="given")
    # always "assumed": the planner applies one figure to every GPU it searches, given or not
    resolve.assume_field(r, "utilization", req, "plan_serve_utilization", basis="assumed")
    for name, value in (("gemm_efficiency", req.gemm_efficiency), ("bandwidth_efficiency", req.bandwidth_efficiency)):
        if value is None:
            r.note(f"{name}: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs "
                   "fitted to published serving runs")
        else:
            r.assume(name, value, "given, applied to every GPU", unit="fraction", basis="given")
    if req.host_per_request:
        r.assume("host_per_request", req.host_per_request, "given, for every GPU: host time per request in a step; "
                 "a step lasts the longer of the GPU's work and the host's", unit="seconds", basis="given")
    p99 = "ttft_p99" in objectives(req) or "tpot_p99" in objectives(req)
    for text in (TAIL_SIMPLIFICATIONS if p99 else SIMPLIFICATIONS):
        r.note("simplification: " + text)
