"""`napkin train`, step by step: FLOPs, throughput, GPU-hours, the cluster, cost, energy and training state.

The arithmetic (:mod:`napkin.formulas.training`; Kaplan et al. 2020 for 6ND, Chowdhery et al. 2022 for MFU)::

    tokens_per_gpu_s = peak · MFU · goodput / flops_per_token
    gpu_hours        = D / tokens_per_gpu_s / 3600
    marginal_usd     = gpu_hours · usd_per_gpu_hour
    loaded_usd       = marginal · (1 + Σ overheads) + fixed (+ data)
"""

from __future__ import annotations

from typing import Any

from napkin.calculators.resolve import model_or_none, peak_of, resolve_params
from napkin.calculators.train.auto_goodput import resolve_goodput
from napkin.calculators.train.cluster import size_cluster
from napkin.calculators.train.energy import energy, thresholds
from napkin.calculators.train.inputs import (parse_goodput, resolve_flops_per_token, resolve_gpu, resolve_mfu,
                                             resolve_price, resolve_tokens)
from napkin.calculators.train.plans import label_stale, thaw_defaults
from napkin.calculators.train.report import TrainReport
from napkin.calculators.train.request import TrainRequest
from napkin.calculators.train.sensitivity import Inputs, sensitivity
from napkin.errors import InputError
from napkin.formulas import memory as mem, training as T
from napkin.hardware import Accelerator
from napkin.model import ModelSpec
from napkin.units import format as fmt


def run_train(req: TrainRequest) -> TrainReport:
    """The plan's Report; with ``vary``, the base plan's Report carrying the sweep (train/vary.py)."""
    if req.vary:
        from napkin.calculators.train.vary import run_vary

        return run_vary(req)
    return run_one(req)


def run_one(req: TrainRequest) -> TrainReport:
    """One training plan: every input resolved and recorded, then the steps from FLOPs to cost."""
    req, stale = thaw_defaults(req)
    if req.flops is not None and req.model is None and req.params is None:
        from napkin.calculators.train.budget import run_budget

        r = run_budget(req)
        label_stale(r, stale)
        return r
    m = model_or_none(req.model)
    r = TrainReport("Training cost", command="train")
    if m is not None:
        r.set("model", m.name)
    g = resolve_gpu(r, req)
    if req.gpus is not None and req.deadline is not None:
        raise InputError("deadline", fmt(req.deadline, "seconds"), "cannot be given with --gpus",
                         "give --gpus K for the wall time, or --deadline for the GPUs needed")
    goodput_in = parse_goodput(req.goodput)

    n = resolve_params(r, m, req.params, active=True)
    n_total = req.params if req.params is not None else m.params  # type: ignore[union-attr]
    fpt, attn = resolve_flops_per_token(r, m, n, req.flops_convention, req.seq_len)
    d, u = resolve_tokens(r, req, m, fpt)
    if req.flops is None:
        r.step("train_flops", "flops_per_token · D", value=fpt * d, unit="flops", flops_per_token=(fpt, "flops"),
               D=(d, "count"))
    else:
        r.set("train_flops", req.flops, "flops")

    if g is not None:
        r.set("gpu", g.key)
    r.set("precision", req.precision)
    peak = peak_of(r, g, req.precision, req.peak)
    r.set("dense_flops_per_s", peak, "flops_per_s")
    mfu = resolve_mfu(r, req, n, g, m)
    r.set("mfu", mfu, "fraction")
    goodput = resolve_goodput(r, req, goodput_in, d=d, peak=peak, mfu=mfu, fpt=fpt)
    r.set("goodput", goodput, "fraction")

    tps = r.step("tokens_per_gpu_s", "peak · MFU · goodput / flops_per_token",
                 value=T.tokens_per_gpu_s(peak, mfu=mfu, goodput=goodput, flops_per_token=fpt), unit="per_s",
                 peak=(peak, "flops_per_s"), MFU=(mfu, "fraction"), goodput=(goodput, "fraction"),
                 flops_per_token=(fpt, "flops"), cites=T.tokens_per_gpu_s)
    hours = r.step("gpu_hours", "D / tokens_per_gpu_s / 3600  (allocated GPU-hours of the final run)",
                   value=T.gpu_hours(d, tokens_per_gpu_s=tps), unit="count", D=(d, "count"),
                   tokens_per_gpu_s=(tps, "per_s"), cites=T.gpu_hours)
    n_used = size_cluster(r, req, d, tps, g)

    price, basis = resolve_price(r, req.price, g)
    r.set("price", price, "usd_per_hour")
    r.set("price_basis", basis)
    marginal, data = _cost(r, req, hours=hours, price=price, d=d, u=u)
    energy(r, req, g, hours, n_used)
    thresholds(r, fpt * d)
    _training_state(r, req, g, n_total, n_used)

    r.title = _title(m, n_total, d, g, req.precision, peak)
    label_stale(r, stale)
    if req.sensitivity:
        x = Inputs(params=n, attention_flops_per_token=attn, tokens=d, peak=peak, mfu=mfu, goodput=goodput,
                   price=price, overhead=dict(req.overhead), fixed_usd=req.fixed_usd, data_usd=data)
        r.set("sensitivity", sensitivity(x, seq_len=req.seq_len))
    return r


def _cost(r: TrainReport, req: TrainRequest, *, hours: float, price: float, d: float,
          u: float | None) -> tuple[float, float]:
    """Marginal and loaded cost, per million tokens on each one's denominator; (marginal, data spend)."""
    marginal = r.step("marginal_usd", "gpu_hours · price", value=T.marginal_usd(hours, usd_per_gpu_hour=price),
                      unit="usd", gpu_hours=(hours, "count"), price=(price, "usd_per_hour"), cites=T.marginal_usd)
    overhead_sum = sum(req.overhead.values())
    if req.overhead:
        r.set("overhead", dict(req.overhead))
        r.step("overhead_multiplier", "1 + " + " + ".join(req.overhead), value=1.0 + overhead_sum,
               unit="number", **{k: v for k, v in req.overhead.items()})
    else:
        r.note("no --overhead given: loaded equals marginal plus fixed spend; experiments, lost work, evaluation "
               "and idle capacity typically more than double it (give them as --overhead NAME=multiplier)")
    data = req.data_usd or 0.0
    if req.fixed_usd:
        r.set("fixed_usd", req.fixed_usd, "usd")
    if req.data_usd is not None:
        r.set("data_usd", req.data_usd, "usd")
    fixed_formula = " + fixed" + (" + data" if req.data_usd is not None else "")
    loaded = r.step("loaded_usd", "marginal · (1 + Σ overheads)" + fixed_formula,
                    value=T.loaded_usd(marginal, overhead_multiplier=overhead_sum, fixed_usd=req.fixed_usd + data),
                    unit="usd", marginal=(marginal, "usd"), **{"Σ overheads": overhead_sum},
                    fixed=(req.fixed_usd, "usd"),
                    **({"data": (data, "usd")} if req.data_usd is not None else {}), cites=T.loaded_usd)
    r.step("loaded_over_marginal", "loaded / marginal", value=loaded / marginal, unit="number")
    _per_million(r, req, marginal=marginal, loaded=loaded, data=data, d=d, u=u)
    return marginal, data


def _per_million(r: TrainReport, req: TrainRequest, *, marginal: float, loaded: float, data: float, d: float,
                 u: float | None) -> None:
    """$ per million tokens, each figure with its denominator named, and the cost breakdown."""
    per_m = {
        "marginal": r.step("usd_per_million_tokens.marginal", "marginal_usd / advanced_tokens · 1e6",
                           value=T.usd_per_million_tokens(marginal, n_tokens=d), unit="usd_per_million",
                           result=False, cites=T.usd_per_million_tokens),
        "loaded": r.step("usd_per_million_tokens.loaded", "loaded_usd / advanced_tokens · 1e6",
                         value=T.usd_per_million_tokens(loaded, n_tokens=d), unit="usd_per_million", result=False,
                         cites=T.usd_per_million_tokens),
    }
    denominators = {"marginal": "advanced tokens", "loaded": "advanced tokens"}
    if req.data_usd is not None:
        if u is None:
            u = d
            r.assume("unique_tokens", d, "no --unique-tokens: one epoch, so unique = advanced tokens", unit="count")
        per_m["data_per_unique"] = r.step("usd_per_million_tokens.data_per_unique", "data_usd / unique_tokens · 1e6",
                                          value=T.usd_per_million_tokens(data, n_tokens=u), unit="usd_per_million",
                                          unique_tokens=(u, "count"), result=False, cites=T.usd_per_million_tokens)
        denominators["data_per_unique"] = "unique tokens"
    r.set("usd_per_million_tokens", per_m)
    r.set("denominators", denominators)
    breakdown = {"final run": marginal}
    breakdown.update({k: marginal * v for k, v in req.overhead.items()})
    if req.fixed_usd:
        breakdown["fixed"] = req.fixed_usd
    if data:
        breakdown["data"] = data
    r.set("cost_breakdown_usd", breakdown)


def _training_state(r: TrainReport, req: TrainRequest, g: Accelerator | None, n_total: float,
                    n_used: int | None) -> None:
    """The static training state, the smallest cluster that holds it fully sharded, and whether --gpus does."""
    static = r.step("training_static_bytes", "N_total · 16  (bf16 weights 2 + grads 2 + fp32 master 4 + Adam 8)",
                    value=mem.training_static_bytes(n_total), unit="bytes", N_total=(n_total, "count"),
                    cites=mem.training_static_bytes)
    if g is None:
        return
    need_state = r.step("min_gpus_for_state", "ceil(static / (memory · usable)), fully sharded",
                        value=int(mem.min_gpus_for_state(static, memory_bytes=g.memory_bytes, usable=req.usable)),
                        unit="count", static=(static, "bytes"), memory=(g.memory_bytes, "bytes"),
                        usable=(req.usable, "fraction"), cites=mem.min_gpus_for_state)
    r.note("min_gpus_for_state is fully sharded (ZeRO-3/FSDP) static state only; activations are extra")
    if n_used is not None and n_used < need_state:
        r.warn("state-does-not-fit", f"{n_used:,} GPUs cannot hold the training state: it needs at least "
                                     f"{need_state:,} {g.name}s fully sharded, before activations")


def _title(m: ModelSpec | None, n: float, d: float, g: Accelerator | None, precision: str, peak: float) -> str:
    who = m.name if m is not None else f"{fmt(n, 'count')} params"
    on = g.name if g is not None else f"{fmt(peak, 'flops_per_s')} by hand"
    return f"Training: {who} on {fmt(d, 'count')} tokens, {on} {precision}"


def charts(report: Any) -> dict[str, dict]:
    from napkin.charts.train import train_charts

    return train_charts(report)
