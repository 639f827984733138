"""The grid: every (GPU, precision) x GPUs per replica x TP degree x batch at once, on numpy arrays,
through the decode and prefill steps of formulas.serving; in this process or split over an executor."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from napkin import catalog
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import capacity as cap
from napkin.formulas import cost as costf
from napkin.formulas import flops
from napkin.formulas import serving as sv
from napkin.hardware import bytes_per_value

from .request import PlanServeRequest, _scale_out


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
            listed = catalog.gpu_hour_price(g.key)
            if listed is not None:
                price = listed.usd_per_gpu_hour
                # basis "reference": a dated list price stood in for the user's, so the footer's assumed: line shows it
                r.assume(f"price[{g.key}]", price, f"catalog list price of {listed.date}: pass --price "
                                                   f"{g.key}=X for yours", unit="usd_per_hour", basis="reference",
                         source=listed.source)
            else:
                r.note(f"no price for the {g.name}: its configurations are listed by throughput but not ranked by cost")
        for p in req.precision:
            cp = resolve.compute_precision(g, p)
            if cp is None:
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


def _axes(req: PlanServeRequest, hw: list[dict]) -> tuple[dict[str, Any], Any, Any, Any, Any]:
    """(hardware columns, has a link, GPUs per replica, TP degree, batch) as broadcastable 4-d arrays."""
    import numpy as np

    H = {k: np.array([h[k] for h in hw], dtype=float)[:, None, None, None]
         for k in ("peak", "bw", "mem", "link", "b_w", "price", "domain")}
    has_link = np.array([h["has_link"] for h in hw])[:, None, None, None]
    sizes = [2**i for i in range(7) if 2**i <= req.max_gpus]
    n = np.array(sizes, dtype=float)[None, :, None, None]
    t = np.array(sizes, dtype=float)[None, None, :, None]
    B = np.array(sorted(set(req.batch)), dtype=float)[None, None, None, :]
    return H, has_link, n, t, B


def evaluate_grid(req: PlanServeRequest, r: Report | None = None) -> dict[str, Any]:
    """Every configuration's figures as numpy arrays of shape (hardware, gpus, tp, batch)."""
    import numpy as np

    r = r or Report("plan")
    m = catalog.model(req.model)
    hw = _hardware(req, r)
    H, has_link, n, t, B = _axes(req, hw)
    with np.errstate(divide="ignore", invalid="ignore"):
        valid = ((t <= n) & (np.mod(n, t) == 0) & (np.mod(m.n_heads, t) == 0) & ((t == 1) | has_link)
                 & (n / t <= m.n_layers))
        pp = np.maximum(n / t, 1.0)
        shards = sv.kv_shards(t, n_kv_heads=m.n_kv_heads, latent=m.attention == "mla")
        # a TP group beyond the scale-up domain all-reduces over the scale-out network
        link = sv.tp_link_bytes_per_s(t, scale_up_domain=H["domain"], link_bytes_per_s_per_direction=H["link"],
                                      scale_out_bytes_per_s_per_gpu=_scale_out(req))
        kv_tok = m.kv_bytes_per_token(bytes_per_value(req.kv_precision, "kv_precision"))
        ctx_max = req.prompt + req.output
        prefix = min(req.cached_prefix, req.prompt - 1)
        W = m.params * H["b_w"]
        # one sequence's own tokens and the shared prefix, each capped by a sliding window if the model has one
        kv_gpu = kv_tok * (m.kv_shared_prefix_tokens(prefix, ctx_max) + B * m.kv_held_tokens(ctx_max - prefix)) / (
            pp * shards)
        fits = W / n + kv_gpu <= H["mem"] * req.usable
        # prefill (TP shortens it; pipeline stages take turns), attention capped by any window as in `napkin serve`
        new = req.prompt - prefix
        pf = flops.prefill_flops(m.active_params, prompt_tokens=new, attention_flops=sv.prefill_attention_flops(
            m.n_layers, d_attn=m.d_attn, new_tokens=new, cached_tokens=prefix, **m.window()))
        ttft = sv.step_seconds(sv.prefill_step_parts(
            pf, weights_bytes=W, tp=t, n_layers=m.n_layers, d_model=m.d_model, new_tokens=new,
            memory_bytes_per_s=H["bw"], dense_flops_per_s=H["peak"], bandwidth_efficiency=req.bandwidth_efficiency,
            compute_efficiency=req.mfu, link_bytes_per_s_per_direction=link, allreduce_latency_s=req.allreduce_latency))
        # decode: the serve calculator's step formula, on arrays
        ctx_avg = req.prompt + req.output / 2.0
        shared_p, routed_p = m.moe_split()
        e, k = m.routing
        parts = sv.decode_step_parts(
            B, tp=t, pp=pp, n_layers=m.n_layers, d_model=m.d_model, shared_weight_bytes=shared_p * H["b_w"],
            routed_weight_bytes=routed_p * H["b_w"], n_experts=e, n_active_experts=k,
            kv_read_bytes_per_sequence=kv_tok * m.kv_held_tokens(ctx_avg), kv_shards=shards,
            flops_per_token=sv.decode_flops_per_token(m.active_params, n_layers=m.n_layers, d_attn=m.d_attn,
                                                      context_tokens=ctx_avg, **m.window()),
            memory_bytes_per_s=H["bw"], dense_flops_per_s=H["peak"], bandwidth_efficiency=req.bandwidth_efficiency,
            compute_efficiency=req.mfu, link_bytes_per_s_per_direction=link, allreduce_latency_s=req.allreduce_latency)
        tpot = sv.step_seconds(parts, pp=pp)
        a = _at_load(req, ttft=ttft, tpot=tpot, B=B, n=n)
        interference = a.pop("interference")  # share of each second spent prefilling, pausing decode
        ok = valid & fits & (ttft <= req.ttft) & (a["tpot_at_load_s"] <= req.tpot) & (interference < 1.0)
        beyond = (t > H["domain"]) & (link < H["link"])  # all-reduces priced at the scale-out bandwidth
        fleet = a["replicas"] * n * H["price"]
        # every GPU-hour of the fleet over the output tokens the rate asks for
        usd_m = costf.usd_per_million_tokens(fleet, tokens_per_s=req.rate * req.output, utilization=1.0)
    shape = np.broadcast_shapes(valid.shape, B.shape, H["peak"].shape)
    bc = {k: np.broadcast_to(v, shape) for k, v in {
        "valid": valid, "fits": fits, "ok": ok, "ttft_s": ttft, "tpot_s": tpot, **a, "fleet_usd_per_hour": fleet,
        "beyond_scale_up": beyond, "usd_per_million_output_tokens": usd_m, "gpus": n, "tp": t, "pp": pp, "batch": B,
        "bound_compute": parts.compute_s > parts.memory_s,
        "bound_comm": parts.comm_s > np.maximum(parts.memory_s, parts.compute_s)}.items()}
    bc["hw"] = np.broadcast_to(np.arange(len(hw))[:, None, None, None], shape)
    return {"arrays": bc, "hardware": hw, "model": m, "configurations": int(np.prod(shape)),
            "valid_configurations": int(bc["valid"].sum())}


def _at_load(req: PlanServeRequest, *, ttft: Any, tpot: Any, B: Any, n: Any) -> dict[str, Any]:
    """Each configuration at the target rate: replicas, TPOT stretched by the prefill pauses, tokens/s."""
    tps = B / tpot
    lam_max = cap.replica_request_rate(B, output_tokens=req.output, tpot_s=tpot, prefill_s=ttft)
    replicas = cap.replicas_for_rate(req.rate, requests_per_s_per_replica=lam_max, utilization=req.utilization)
    per_rep = req.rate / replicas
    return {"tpot_at_load_s": cap.tpot_under_prefills(tpot, requests_per_s=per_rep, prefill_s=ttft),
            "tokens_per_s": tps, "tokens_per_s_per_gpu": tps / n, "replicas": replicas,
            # what each GPU delivers at the target rate
            "tokens_per_s_per_gpu_at_load": req.rate * req.output / (replicas * n),
            "replica_utilization": per_rep / lam_max, "interference": per_rep * ttft}


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
