"""The grid: every (GPU, precision) x GPUs per replica x TP degree x batch at once, on numpy arrays,
through the serve calculator's scheduler (formulas.scheduling) on the operator model
(formulas.operators); in this process or split over an executor."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from napkin import catalog
from napkin.calculators import replica as rep
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import capacity as cap
from napkin.formulas import cost as costf
from napkin.formulas import operators as op
from napkin.formulas import scheduling as sch
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
    """One row per (GPU, precision) with its peak, bandwidth, link, price and the operator model's rates."""
    prices = _prices(req)
    given = rep.Given(gemm=req.gemm_efficiency, bandwidth=req.bandwidth_efficiency,
                      allreduce_latency_s=req.allreduce_latency)
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
                resolve.warn_if_stale_price(r, listed, f"the {g.name}")
            else:
                r.note(f"no price for the {g.name}: its configurations are listed by throughput but not ranked by cost")
        for p in req.precision:
            cp = resolve.compute_precision(g, p)
            if cp is None:
                r.note(f"the {g.name} has no compute path for {p} weights: skipped")
                continue
            link = g.link_bytes_per_s_per_direction
            e = rep.efficiencies(g, cp, given=given)
            rates = rep.rates(g, e, compute_precision=cp)
            rows.append({"key": g.key, "name": g.name, "precision": p, "compute_precision": cp,
                         "peak": g.peak(cp), "bw": g.memory_bytes_per_s, "mem": rep.memory_capacity_bytes(g),
                         "link": link if link else math.inf, "has_link": link is not None,
                         "domain": g.scale_up_domain, "allreduce_bus": e.allreduce_bus,
                         "b_w": bytes_per_value(p), "price": price if price is not None else math.nan,
                         **{f"rate_{k}": v for k, v in rates._asdict().items() if k != "link_bytes_per_s"}})
    if not rows:
        raise InputError("gpu", ",".join(req.gpu), "leaves nothing to search", "give GPUs that support the precision")
    return rows


def _axes(req: PlanServeRequest, hw: list[dict]) -> tuple[dict[str, Any], Any, Any, Any, Any]:
    """(hardware columns, has a link, GPUs per replica, TP degree, batch) as broadcastable 4-d arrays."""
    import numpy as np

    keys = ["peak", "bw", "mem", "link", "b_w", "price", "domain", "allreduce_bus"] + [k for k in hw[0] if
                                                                                      k.startswith("rate_")]
    H = {k: np.array([h[k] for h in hw], dtype=float)[:, None, None, None] for k in keys}
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
        b_kv = bytes_per_value(req.kv_precision, "kv_precision")
        kv_tok = m.kv_bytes_per_token(b_kv)
        ctx_max = req.prompt + req.output
        prefix = min(req.cached_prefix, req.prompt - 1)
        W = m.params * H["b_w"]
        # one sequence's own tokens and the shared prefix, each capped by a sliding window if the model has one
        kv_gpu = kv_tok * (m.kv_shared_prefix_tokens(prefix, ctx_max) + B * m.kv_held_tokens(ctx_max - prefix)) / (
            pp * shards)
        fits = W / n + kv_gpu <= H["mem"] * req.usable
        rates = op.Rates(**{k[5:]: v for k, v in H.items() if k.startswith("rate_")},
                         link_bytes_per_s=link * H["allreduce_bus"])
        shapes = m.layer_shapes(t, kv_bytes_per_value=b_kv, bytes_per_weight=H["b_w"])
        f = steady_state(req, m, rates=rates, shapes=shapes, t=t, pp=pp, B=B, prefix=prefix)
        a = _at_load(req, ttft=f["ttft"], tpot=f["tpot"], tps=f["tps"], B=B, n=n)
        ok = valid & fits & (f["ttft"] <= req.ttft) & (a["tpot_at_load_s"] <= req.tpot)
        beyond = (t > H["domain"]) & (link < H["link"])  # all-reduces priced at the scale-out bandwidth
        fleet = a["replicas"] * n * H["price"]
        # every GPU-hour of the fleet over the output tokens the rate asks for
        usd_m = costf.usd_per_million_tokens(fleet, tokens_per_s=req.rate * req.output, utilization=1.0)
    shape = np.broadcast_shapes(valid.shape, B.shape, H["peak"].shape)
    bc = {k: np.broadcast_to(v, shape) for k, v in {
        "valid": valid, "fits": fits, "ok": ok, "ttft_s": f["ttft"], "tpot_s": f["tpot"], **a,
        "fleet_usd_per_hour": fleet, "beyond_scale_up": beyond, "usd_per_million_output_tokens": usd_m, "gpus": n,
        "tp": t, "pp": pp, "batch": B, "bound_compute": f["compute"] > f["memory"],
        "bound_comm": f["comm"] > np.maximum(f["memory"], f["compute"])}.items()}
    bc["hw"] = np.broadcast_to(np.arange(len(hw))[:, None, None, None], shape)
    return {"arrays": bc, "hardware": hw, "model": m, "configurations": int(np.prod(shape)),
            "valid_configurations": int(bc["valid"].sum())}


def steady_state(req: PlanServeRequest, m: Any, *, rates: Any, shapes: Any, t: Any, pp: Any, B: Any,
                 prefix: float) -> dict[str, Any]:
    """TTFT, TPOT and tokens/s of continuous batching at concurrency B, on arrays: the serve calculator's
    scheduler (formulas.scheduling) on the operator model (formulas.operators)."""
    new = req.prompt - prefix
    held = m.kv_held_tokens(req.prompt + req.output / 2.0)
    window = float(sv.prefill_attention_flops(m.n_layers, d_attn=m.d_attn, new_tokens=new, cached_tokens=prefix,
                                              **m.window())) / (4.0 * m.n_layers * m.d_attn) / float(
        sch.prefill_pairs(new, cached_tokens=prefix))
    bd = sch.decode_sequences(B, prompt_tokens=req.prompt, output_tokens=req.output, chunk_tokens=req.chunk,
                              cached_tokens=prefix)
    c = sch.prefill_tokens_per_step(bd, prompt_tokens=req.prompt, output_tokens=req.output, cached_tokens=prefix)
    micro = sv.microbatch(bd, pp=pp) / bd

    def step(tokens: Any, pairs: Any, logits: Any) -> dict[str, Any]:
        return op.step_operators(tokens * micro, kv_tokens=bd * held * micro, prefill_pairs=pairs * window * micro,
                                 logits=logits * micro, shapes=shapes, rates=rates, tp=t)

    c, q = sch.prompt_steps(c, new_tokens=new, room=req.chunk - bd)
    mixed = step(bd + c, c / new * sch.prefill_pairs(new, cached_tokens=prefix), bd + c / new)
    decode = step(bd, 0.0 * bd, bd)
    tpot = sch.continuous_step_seconds(op.total_seconds(mixed), decode_step_s=op.total_seconds(decode),
                                       prefill_request_s=0.0, decode_seqs=bd, output_tokens=req.output,
                                       prompt_share=q)
    n, tokens, pairs = sch.prefill_chunk_plan(new, room=req.chunk - bd, cached_tokens=prefix)
    chunk = op.total_seconds(step(bd + tokens, pairs, bd + 1.0 / n))
    def mean(attr: str, names: tuple[str, ...]) -> Any:  # over the steps: a share q carry prompt tokens
        return sum(q * getattr(mixed[k], attr) + (1 - q) * getattr(decode[k], attr) for k in names)

    gemm = ("qkv", "attention_out", "mlp", "lm_head", "attention")
    return {"tpot": tpot, "tps": bd / tpot, "ttft": sch.continuous_ttft_seconds(chunk, n_chunks=n),
            "memory": mean("memory_s", gemm), "compute": mean("compute_s", gemm),
            "comm": mean("seconds", ("allreduce",))}


def _at_load(req: PlanServeRequest, *, ttft: Any, tpot: Any, tps: Any, B: Any, n: Any) -> dict[str, Any]:
    """Each configuration at the target rate: the replicas that carry it at the target utilisation."""
    lam_max = tps / req.output  # requests per second one replica completes at concurrency B, prefills included
    replicas = cap.replicas_for_rate(req.rate, requests_per_s_per_replica=lam_max, utilization=req.utilization)
    per_rep = req.rate / replicas
    return {"tpot_at_load_s": tpot, "tokens_per_s": tps, "tokens_per_s_per_gpu": tps / n, "replicas": replicas,
            # what each GPU delivers at the target rate
            "tokens_per_s_per_gpu_at_load": req.rate * req.output / (replicas * n),
            "replica_utilization": per_rep / lam_max}


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
