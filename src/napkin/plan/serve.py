"""The serving capacity question: which GPUs, how many per replica, what TP degree, what batch
and how many replicas serve a request rate within TTFT and TPOT objectives at least cost?

The grid (hardware x GPUs per replica x TP degree x batch) is evaluated at once with numpy
broadcasting on the same formulas as ``napkin serve`` (:mod:`napkin.formulas.serving`,
through :func:`napkin.calculators.serve.stage_parts`); the replica count is then the
smallest that carries the rate at the target utilisation. Simplifications, stated in the
output: no queueing model beyond a utilisation target; static roofline efficiencies (one
MFU, one bandwidth efficiency for every GPU and batch); prefills run whole (no chunking)
and pause decoding; a TP group larger than the GPU's scale-up domain (8 on an HGX board)
runs its all-reduces at the scale-out bandwidth, and pipeline hops are not costed.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec

from napkin import catalog, units
from napkin.calculators import Calculator
from napkin.calculators.basics import kv_window_note
from napkin.calculators.serve import (
    DEFAULT_ALLREDUCE_LATENCY_S, DEFAULT_BANDWIDTH_EFFICIENCY, DEFAULT_MFU, Setup, catalog_gpu_hour,
    compute_precision_for, d_attn_of, moe_split, scale_out_of, stage_parts, window_of,
)
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import serving as sv
from napkin.hardware import bytes_per_value
from napkin.request import field
from napkin.units import HOUR, MILLION

S = msgspec.Struct

DEFAULT_GPUS = ["h100-sxm", "h200", "b200", "mi300x"]
DEFAULT_BATCHES = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
SIMPLIFICATIONS = (
    "no queueing model beyond the utilisation target: TTFT is the prefill on an idle replica",
    "static roofline efficiencies: one MFU and one bandwidth efficiency for every GPU, batch and TP degree",
    "prefills run whole and pause decoding (no chunked prefill); TPOT includes that pause at the target load",
    "a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces at its NVLink-class speed, a larger "
    "one at the scale-out bandwidth; GPUs beyond the TP degree are pipeline stages, and their hops are not costed",
)


class PlanServeRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog model or path to a Hugging Face config.json")]
    rate: Annotated[float, field("per_s", "requests per second to serve", gt=0)]
    prompt: Annotated[float, field("count", "prompt tokens per request", gt=0)] = 1000.0
    output: Annotated[float, field("count", "output tokens per request", ge=1)] = 300.0
    ttft: Annotated[float, field("seconds", "time-to-first-token objective", gt=0)] = 0.5
    tpot: Annotated[float, field("seconds", "time-per-output-token objective", gt=0)] = 0.05
    gpu: Annotated[list[str], field("name", "accelerators to consider")] = msgspec.field(
        default_factory=lambda: list(DEFAULT_GPUS))
    price: Annotated[dict[str, float], field("usd_per_hour", "price per GPU-hour by GPU (default: the catalog's)",
                                             example="h100-sxm=2.50,h200=3.50", gt=0)] = {}
    precision: Annotated[list[str], field("precision", "weight precisions to consider")] = msgspec.field(
        default_factory=lambda: ["bf16"])
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    max_gpus: Annotated[int, field("int", "most GPUs per replica (powers of two up to this)", gt=0, le=64)] = 8
    batch: Annotated[list[int], field("int", "batches to consider", gt=0)] = msgspec.field(
        default_factory=lambda: list(DEFAULT_BATCHES))
    cached_prefix: Annotated[float, field("count", "prompt tokens served from a prefix cache", ge=0)] = 0.0
    utilization: Annotated[float, field("fraction", "target utilisation of each replica (headroom for bursts)")] = 0.7
    mfu: Annotated[float, field("fraction", "fraction of dense peak prefill sustains")] = DEFAULT_MFU
    bandwidth_efficiency: Annotated[float, field("fraction", "fraction of memory bandwidth decode sustains")] = (
        DEFAULT_BANDWIDTH_EFFICIENCY)
    allreduce_latency: Annotated[float, field("seconds", "fixed cost of one TP all-reduce", ge=0)] = (
        DEFAULT_ALLREDUCE_LATENCY_S)
    scale_out_bandwidth: Annotated[float | None, field(
        "bytes_per_s", "per-GPU bandwidth, one direction, of a TP all-reduce that spans more GPUs than the "
        "scale-up domain (default 50 GB/s: one 400 Gb/s NIC per GPU)", gt=0)] = None
    usable: Annotated[float, field("fraction", "fraction of GPU memory for weights and KV")] = 0.9
    top: Annotated[int, field("int", "configurations to list", gt=0)] = 10
    executor: Annotated[str, field("choice", "evaluate in this process, a local pool, or dask.distributed "
                                             "(one chunk per GPU type)", choices=("none", "local", "dask"),
                                   cli_only=True)] = "none"
    scheduler: Annotated[str | None, field("text", "dask scheduler address, tcp://host:8786 "
                                                   "(default: a local in-process cluster)", cli_only=True)] = None
    workers: Annotated[int | None, field("int", "workers of the local pool or local dask cluster", gt=0,
                                         cli_only=True)] = None


def _prices(req: PlanServeRequest) -> dict[str, float]:
    """--price by catalog key; a key naming a GPU not searched, or one GPU twice (through an alias), is an error."""
    searched = {catalog.gpu(name).key: name for name in req.gpu}
    prices: dict[str, float] = {}
    given: dict[str, str] = {}
    for k, v in req.price.items():
        g = catalog.gpu(k, "price")
        pair = f"{k}={v:g}"
        if g.key in prices:
            raise InputError("price", pair, f"has the {g.name} twice (also as {given[g.key]})",
                             f"give one price for {g.key}")
        if g.key not in searched:
            raise InputError("price", pair, f"is for the {g.name}, which is not among the GPUs searched "
                                            f"({', '.join(searched)})",
                             f"add {g.key} to --gpu or drop its price")
        prices[g.key] = v
        given[g.key] = pair
    return prices


def _hardware(req: PlanServeRequest, r: Report) -> list[dict]:
    """One row per (GPU, precision) with its peak, bandwidth, link and price."""
    prices = _prices(req)
    rows = []
    for name in req.gpu:
        g = catalog.gpu(name)
        price = prices.get(g.key)
        if price is None:
            listed = catalog_gpu_hour(g.key)
            if listed is not None:
                price = listed[0]
                # basis "reference": a dated list price stood in for the user's, so the footer's assumed: line shows it
                r.assume(f"price[{g.key}]", price, f"catalog list price of {listed[1]}: pass --price "
                                                   f"{g.key}=X for yours", unit="usd_per_hour", basis="reference")
            else:
                r.note(f"no price for the {g.name}: its configurations are listed by throughput but not ranked by cost")
        for p in req.precision:
            try:
                cp = compute_precision_for(g, p)
            except InputError:
                r.note(f"the {g.name} has no compute path for {p} weights: skipped")
                continue
            link = g.link_bytes_per_s_per_direction
            rows.append({"key": g.key, "name": g.name, "precision": p, "compute_precision": cp,
                         "peak": g.peak(cp), "bw": g.memory_bytes_per_s, "mem": g.memory_bytes,
                         "link": link if link else math.inf, "has_link": link is not None,
                         "domain": g.scale_up_domain,
                         "b_w": bytes_per_value(p), "price": price if price is not None else math.nan})
    if not rows:
        raise InputError("gpu", ",".join(req.gpu), "leaves nothing to search", "give GPUs that support the precision")
    return rows


def evaluate_grid(req: PlanServeRequest, r: Report | None = None) -> dict[str, Any]:
    """Every configuration's figures as numpy arrays of shape (hardware, gpus, tp, batch)."""
    import numpy as np

    r = r or Report("plan")
    m = catalog.model(req.model)
    hw = _hardware(req, r)
    H = {k: np.array([h[k] for h in hw], dtype=float)[:, None, None, None]
         for k in ("peak", "bw", "mem", "link", "b_w", "price", "domain")}
    has_link = np.array([h["has_link"] for h in hw])[:, None, None, None]
    sizes = [2**i for i in range(7) if 2**i <= req.max_gpus]
    n = np.array(sizes, dtype=float)[None, :, None, None]
    t = np.array(sizes, dtype=float)[None, None, :, None]
    B = np.array(sorted(set(req.batch)), dtype=float)[None, None, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        valid = ((t <= n) & (np.mod(n, t) == 0) & (np.mod(m.n_heads, t) == 0) & ((t == 1) | has_link)
                 & (n / t <= m.n_layers))
        pp = np.maximum(n / t, 1.0)
        latent = m.attention == "mla"
        shards = sv.kv_shards(t, n_kv_heads=m.n_kv_heads, latent=latent)
        # a TP group beyond the scale-up domain all-reduces over the scale-out network
        link = sv.tp_link_bytes_per_s(t, scale_up_domain=H["domain"], link_bytes_per_s_per_direction=H["link"],
                                      scale_out_bytes_per_s_per_gpu=scale_out_of(req))
        b_kv = bytes_per_value(req.kv_precision, "kv_precision")
        kv_tok = m.kv_bytes_per_token(b_kv)
        ctx_max = req.prompt + req.output
        prefix = min(req.cached_prefix, req.prompt - 1)
        W = m.params * H["b_w"]
        w_gpu = W / n
        # one sequence's own tokens and the shared prefix, each capped by a sliding window if the model has one
        kv_gpu = kv_tok * (m.kv_shared_prefix_tokens(prefix, ctx_max) + B * m.kv_held_tokens(ctx_max - prefix)) / (
            pp * shards)
        cap = H["mem"] * req.usable
        fits = w_gpu + kv_gpu <= cap
        # prefill (TP shortens it; pipeline stages take turns)
        new = req.prompt - prefix
        d_attn = d_attn_of(m)
        # attention capped by any sliding window, as in `napkin serve`
        pf = 2.0 * m.active_params * new + sv.prefill_attention_flops(m.n_layers, d_attn=d_attn, new_tokens=new,
                                                                       cached_tokens=prefix, **window_of(m))
        pre_comm = sv.tp_comm_seconds(m.n_layers, message_bytes=new * m.d_model * sv.ACTIVATION_BYTES, tp=t,
                                      link_bytes_per_s_per_direction=link, latency_s=req.allreduce_latency)
        ttft = sv.prefill_seconds(pf, weights_bytes=W, n_gpus=t, dense_flops_per_s=H["peak"], mfu=req.mfu,
                                  memory_bytes_per_s=H["bw"], bandwidth_efficiency=req.bandwidth_efficiency,
                                  comm_s=pre_comm)
        # decode (the serve calculator's stage model, on arrays)
        ctx_avg = req.prompt + req.output / 2.0
        fpt = sv.decode_flops_per_token(m.active_params, n_layers=m.n_layers, d_attn=d_attn, context_tokens=ctx_avg,
                                        **window_of(m))
        shared_p, routed_p = moe_split(m)
        s = Setup(m, None, n, t, pp, "", "", H["b_w"], b_kv, H["peak"], H["bw"], link, req.mfu,  # type: ignore[arg-type]
                  req.bandwidth_efficiency, req.allreduce_latency)
        mem_s, comp_s, comm_s = stage_parts(s, B, shared_bytes=shared_p * H["b_w"], routed_bytes=routed_p * H["b_w"],
                                            kv_read_per_seq=kv_tok * m.kv_held_tokens(ctx_avg), flops_per_token=fpt,
                                            shards=shards)
        tpot = pp * (np.maximum(mem_s, comp_s) + comm_s)
        tps = B / tpot
        lam_max = sv.replica_request_rate(B, output_tokens=req.output, tpot_s=tpot, prefill_s=ttft)
        replicas = np.ceil(req.rate / (req.utilization * lam_max) - 1e-9)
        per_rep = req.rate / replicas
        interference = per_rep * ttft  # share of each second spent prefilling, pausing decode
        tpot_eff = tpot / np.maximum(1.0 - interference, 1e-9)
        ok = valid & fits & (ttft <= req.ttft) & (tpot_eff <= req.tpot) & (interference < 1.0)
        fleet = replicas * n * H["price"]
        per_gpu_at_load = req.rate * req.output / (replicas * n)  # what each GPU delivers at the target rate
        beyond = (t > H["domain"]) & (link < H["link"])  # all-reduces priced at the scale-out bandwidth
        usd_m = fleet / HOUR / (req.rate * req.output) * MILLION
    shape = np.broadcast_shapes(valid.shape, B.shape, H["peak"].shape)
    bc = {k: np.broadcast_to(v, shape) for k, v in {
        "valid": valid, "fits": fits, "ok": ok, "ttft_s": ttft, "tpot_s": tpot, "tpot_at_load_s": tpot_eff,
        "tokens_per_s": tps, "tokens_per_s_per_gpu": tps / n, "replicas": replicas, "fleet_usd_per_hour": fleet,
        "tokens_per_s_per_gpu_at_load": per_gpu_at_load, "beyond_scale_up": beyond,
        "usd_per_million_output_tokens": usd_m, "gpus": n, "tp": t, "pp": pp, "batch": B,
        "bound_compute": comp_s > mem_s, "bound_comm": comm_s > np.maximum(mem_s, comp_s),
        "replica_utilization": per_rep / lam_max}.items()}
    bc["hw"] = np.broadcast_to(np.arange(len(hw))[:, None, None, None], shape)
    return {"arrays": bc, "hardware": hw, "model": m, "configurations": int(np.prod(shape)),
            "valid_configurations": int(bc["valid"].sum())}


def _grid_chunk(req: PlanServeRequest) -> dict[str, Any]:
    """One chunk of the grid (a module-level function, so a process or a dask worker can run it)."""
    g = evaluate_grid(req)
    return {"arrays": {k: v.copy() for k, v in g["arrays"].items()}, "hardware": g["hardware"],
            "configurations": g["configurations"], "valid_configurations": g["valid_configurations"]}


def evaluate(req: PlanServeRequest, r: Report) -> dict[str, Any]:
    """The grid, in this process or split by GPU type over an executor and joined on the hardware axis."""
    import numpy as np

    from napkin.plan.executors import get_executor

    ex = get_executor(req.executor, address=req.scheduler, workers=req.workers)
    if ex is None:
        return evaluate_grid(req, r)
    _hardware(req, r)  # the price assumptions and notes, once, in this report
    try:
        prices = _prices(req)
        futures = [ex.submit(_grid_chunk, msgspec.structs.replace(
            req, gpu=[name], executor="none",
            price={k: v for k, v in prices.items() if k == catalog.gpu(name).key}))
            for name in dict.fromkeys(req.gpu)]
        parts = ex.gather(futures)
    finally:
        ex.close()
    hw: list[dict] = []
    arrays: dict[str, list] = {}
    for part in parts:
        offset = len(hw)
        hw += part["hardware"]
        for k, v in part["arrays"].items():
            arrays.setdefault(k, []).append(v + offset if k == "hw" else v)
    r.note(f"evaluated in {len(parts)} chunks on the {req.executor} executor")
    return {"arrays": {k: np.concatenate(v, axis=0) for k, v in arrays.items()}, "hardware": hw,
            "model": catalog.model(req.model), "configurations": sum(p["configurations"] for p in parts),
            "valid_configurations": sum(p["valid_configurations"] for p in parts)}


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
    import numpy as np

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
    ok = a["ok"]
    r.set("meeting_slo", int(ok.sum()), "count")
    idx = np.argwhere(ok)
    rows = [_row(a, hw, tuple(i)) for i in idx]
    rows.sort(key=lambda x: (x["usd_per_million_output_tokens"] is None, x["usd_per_million_output_tokens"] or 0.0,
                             x["total_gpus"], x["tpot_s"]))
    r.set("ranking", rows[: req.top])
    if rows:
        r.note(f"ranking: each row at the target load ({req.rate:g} requests/s): tok/s/GPU = rate · output / "
               "total GPUs, what a GPU delivers ($/M follows from it); TPOT = a full-batch decode step stretched by "
               "the prefill pauses at that rate (an upper bound)")
    if rows:
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
                   f"{units.format(scale_out_of(req), 'bytes_per_s')} per GPU")
    else:
        fit = a["valid"] & a["fits"]
        if not fit.any():
            r.warn("nothing-fits", f"no configuration holds {m.name} within {req.max_gpus} GPUs per replica: "
                                   "raise --max-gpus or lower the precision")
        else:
            sec = lambda x: units.format(float(x), "seconds")  # noqa: E731
            r.warn("no-config-meets-slo", f"nothing meets TTFT <= {sec(req.ttft)} and TPOT <= {sec(req.tpot)}; the "
                                          f"fastest TPOT that fits is {sec(a['tpot_s'][fit].min())} "
                                          f"and the fastest TTFT {sec(a['ttft_s'][fit].min())}")
    # Pareto front over everything that fits (SLOs aside): tokens/s per GPU against tokens/s per user
    fit_idx = np.argwhere(a["valid"] & a["fits"])
    if len(fit_idx):
        x = 1.0 / a["tpot_s"][tuple(fit_idx.T)]
        y = a["tokens_per_s_per_gpu"][tuple(fit_idx.T)]
        front = pareto_front(x, y)
        pts = []
        for j in front:
            i = tuple(fit_idx[j])
            pts.append(_row(a, hw, i, at_load=False))
        r.set("pareto_front", pts)
        cloud = [{"gpu": hw[int(a["hw"][tuple(i)])]["key"], "tokens_per_s_per_user": float(xv),
                  "tokens_per_s_per_gpu": float(yv)} for i, xv, yv in zip(fit_idx, x, y)]
        r.set("pareto_points", cloud)
        r.note("Pareto front: every column at capacity, each replica decoding a full batch with no prefills: "
               "tok/s/GPU = batch / TPOT / GPUs")
    far = a["valid"] & a["beyond_scale_up"]
    if far.any():
        domains = ", ".join(sorted({f"{hw[int(k)]['key']} {hw[int(k)]['domain']:g}" for k in a["hw"][far]}))
        r.assume("scale_out_bandwidth", scale_out_of(req),
                 f"per GPU, one direction, for TP groups beyond the scale-up domain ({domains} GPUs)" + (
                     "" if req.scale_out_bandwidth is not None else
                     ": one 400 Gb/s NIC per GPU (NVIDIA DGX H100 User Guide, Network Modules)"),
                 unit="bytes_per_s", basis="given" if req.scale_out_bandwidth is not None else "assumed")
    r.assume("utilization", req.utilization, "target load of each replica; the rest is headroom for bursts",
             unit="fraction")
    r.assume("mfu", req.mfu, "prefill and decode compute efficiency, the same on every GPU", unit="fraction")
    r.assume("bandwidth_efficiency", req.bandwidth_efficiency, "decode bandwidth efficiency, the same on every GPU",
             unit="fraction")
    for text in SIMPLIFICATIONS:
        r.note("simplification: " + text)
    return r


def _charts(report: Any) -> dict[str, dict]:
    from napkin.charts.serve import plan_charts

    return plan_charts(report)


PLAN_SERVE = Calculator(
    "plan-serve", PlanServeRequest, run_plan_serve, "Plan serving capacity",
    "Search GPU type, GPUs per replica, TP degree, batch and replicas for a request rate under TTFT/TPOT "
    "objectives; rank by cost per million output tokens; the throughput-interactivity Pareto front.",
    establishes="the cheapest configuration the roofline model says meets both objectives, and the trade-off curve",
    needs_measuring="real TTFT/TPOT under load (a load test at the chosen batch), queueing at the burst rate",
    charts=_charts,
)
