"""The plan's report: the ranking at the target load, the Pareto front at capacity, the shared
assumptions and the model's simplifications."""

from __future__ import annotations

import math
from typing import Any

from napkin import units
from napkin.calculators import resolve
from napkin.calculators.steps import kv_window_note
from napkin.derivation import Report
from napkin.errors import InputError

from .grid import evaluate
from .request import PlanServeRequest, _scale_out

SIMPLIFICATIONS = (
    "no queueing beyond the utilisation target: each replica's steady state at its batch (continuous batching, "
    "prompt chunks riding in decode steps), TTFT with no queue (`napkin serve --rate` simulates the queue)",
    "a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces at its NVLink-class speed, a larger "
    "one at the scale-out bandwidth; GPUs beyond the TP degree are pipeline stages, and their hops are not costed",
)


def _row(a: dict, hw: list[dict], i: tuple, *, at_load: bool = True) -> dict:
    """One configuration's figures at one operating point, the same for every column: at the target
    load (the ranking: TPOT with the prefill pauses of the requests each replica takes, tokens/s per
    GPU what each GPU delivers) or at capacity (the Pareto front: a full batch decoding, no prefills,
    so tokens/s per GPU = batch / TPOT / GPUs)."""
    h = hw[int(a["hw"][i])]
    tpot = float(a["tpot_at_load_s"][i] if at_load else a["tpot_s"][i])
    per_gpu = float(a["tokens_per_s_per_gpu_at_load"][i] if at_load else a["tokens_per_s_per_gpu"][i])
    bound = "communication" if a["bound_comm"][i] else ("compute" if a["bound_compute"][i] else "bandwidth")
    usd = float(a["usd_per_million_output_tokens"][i])
    return {"gpu": h["key"], "precision": h["precision"], "gpus": int(a["gpus"][i]), "tp": int(a["tp"][i]),
            "pp": int(a["pp"][i]), "batch": int(a["batch"][i]), "replicas": int(a["replicas"][i]),
            "total_gpus": int(a["replicas"][i] * a["gpus"][i]),
            "ttft_s": float(a["ttft_s"][i]), "tpot_s": tpot, "tokens_per_s_per_gpu": per_gpu,
            "tokens_per_s_per_user": 1.0 / tpot, "operating_point": "target load" if at_load else "capacity",
            "tp_beyond_scale_up": bool(a["beyond_scale_up"][i]),
            "fleet_usd_per_hour": float(a["fleet_usd_per_hour"][i]) if not math.isnan(usd) else None,
            "usd_per_million_output_tokens": usd if not math.isnan(usd) else None, "bound": bound}


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


def run_plan_serve(req: PlanServeRequest) -> Report:
    r = Report("Plan serve", command="plan serve")
    if req.cached_prefix >= req.prompt:
        raise InputError("cached_prefix", req.cached_prefix, f"must be less than the prompt ({req.prompt:g} tokens)")
    g = evaluate(req, r)
    a, hw, m = g["arrays"], g["hardware"], g["model"]
    kv_window_note(r, m, req.prompt + req.output)  # KV bytes above are capped by any sliding window
    if m.max_context and req.prompt + req.output > m.max_context:
        r.warn("context-too-long", f"{req.prompt:,.0f} prompt + {req.output:,.0f} output tokens exceed {m.name}'s "
                                   f"{m.max_context:,}-token context window; the plan below is what it would cost "
                                   "if it did not")
    r.title = (f"Plan serve {m.name}: {req.rate:g} requests/s, TTFT <= {units.format(req.ttft, 'seconds')}, "
               f"TPOT <= {units.format(req.tpot, 'seconds')}")
    r.set("model", m.name)
    r.set("configurations", g["configurations"], "count")
    r.set("valid_configurations", g["valid_configurations"], "count")
    r.set("fitting_configurations", int((a["valid"] & a["fits"]).sum()), "count")
    r.set("meeting_slo", int(a["ok"].sum()), "count")
    ranking(r, req, a, hw, m)
    pareto(r, a, hw)
    assumptions(r, req, a, hw)
    return r


def ranking(r: Report, req: PlanServeRequest, a: dict[str, Any], hw: list[dict], m: Any) -> None:
    """The configurations that meet both objectives, cheapest first, and the best of them; else why none does."""
    import numpy as np

    rows = [_row(a, hw, tuple(i)) for i in np.argwhere(a["ok"])]
    rows.sort(key=lambda x: (x["usd_per_million_output_tokens"] is None, x["usd_per_million_output_tokens"] or 0.0,
                             x["total_gpus"], x["tpot_s"]))
    r.set("ranking", rows[: req.top])
    if not rows:
        fit = a["valid"] & a["fits"]
        if not fit.any():
            r.warn("nothing-fits", f"no configuration holds {m.name} within {req.max_gpus} GPUs per replica: "
                                   "raise --max-gpus or lower the precision")
        else:
            sec = lambda x: units.format(float(x), "seconds")  # noqa: E731
            r.warn("no-config-meets-slo", f"nothing meets TTFT <= {sec(req.ttft)} and TPOT <= {sec(req.tpot)}; the "
                                          f"fastest TPOT that fits is {sec(a['tpot_s'][fit].min())} "
                                          f"and the fastest TTFT {sec(a['ttft_s'][fit].min())}")
        return
    r.note(f"ranking: each row at the target load ({req.rate:g} requests/s): tok/s/GPU = rate · output / "
           "total GPUs, what a GPU delivers ($/M follows from it); TPOT = a step of the full batch with the prompt "
           "chunks of the requests that replace finished ones (the replica at capacity: an upper bound)")
    best = rows[0]
    r.set("best", f"{best['replicas']} x {best['gpus']} {best['gpu']} ({best['precision']}, TP {best['tp']}"
                  + (f", PP {best['pp']}" if best["pp"] > 1 else "") + f", batch {best['batch']})")
    r.set("best_total_gpus", best["total_gpus"], "count")
    if best["usd_per_million_output_tokens"] is not None:
        r.set("best_fleet_usd_per_hour", best["fleet_usd_per_hour"], "usd_per_hour")
        r.set("best_usd_per_million_output_tokens", best["usd_per_million_output_tokens"], "usd_per_million")
    r.set("best_ttft_s", best["ttft_s"], "seconds")
    r.set("best_tpot_s", best["tpot_s"], "seconds")
    if best["tp_beyond_scale_up"]:
        domain = next(h["domain"] for h in hw if h["key"] == best["gpu"])
        r.note(f"the best configuration's TP {best['tp']} spans more than the {domain:g} GPUs of one scale-up "
               f"domain: its all-reduces are priced at the scale-out bandwidth, "
               f"{units.format(_scale_out(req), 'bytes_per_s')} per GPU")


def pareto(r: Report, a: dict[str, Any], hw: list[dict]) -> None:
    """The Pareto front over everything that fits (objectives aside): tokens/s per GPU against per user."""
    import numpy as np

    fit_idx = np.argwhere(a["valid"] & a["fits"])
    if not len(fit_idx):
        return
    x = 1.0 / a["tpot_s"][tuple(fit_idx.T)]
    y = a["tokens_per_s_per_gpu"][tuple(fit_idx.T)]
    r.set("pareto_front", [_row(a, hw, tuple(fit_idx[j]), at_load=False) for j in pareto_front(x, y)])
    r.set("pareto_points", [{"gpu": hw[int(a["hw"][tuple(i)])]["key"], "tokens_per_s_per_user": float(xv),
                             "tokens_per_s_per_gpu": float(yv)} for i, xv, yv in zip(fit_idx, x, y)])
    r.note("Pareto front: every column at capacity, each replica in the steady state of its batch, prompts "
           "included: tok/s/GPU = decoding sequences / TPOT / GPUs")


def assumptions(r: Report, req: PlanServeRequest, a: dict[str, Any], hw: list[dict]) -> None:
    """The assumptions every configuration shares, and the model's simplifications."""
    far = a["valid"] & a["beyond_scale_up"]
    if far.any():
        domains = ", ".join(sorted({f"{hw[int(k)]['key']} {hw[int(k)]['domain']:g}" for k in a["hw"][far]}))
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
            r.note(f"{name}: each GPU family's published measurement (catalog/efficiency.toml), with the fixed costs "
                   "fitted to published serving runs")
        else:
            r.assume(name, value, "given, applied to every GPU", unit="fraction", basis="given")
    for text in SIMPLIFICATIONS:
        r.note("simplification: " + text)
