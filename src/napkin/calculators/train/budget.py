"""`napkin train --flops C`: a compute budget read as time, GPU-hours, cost and energy.

With no model and no tokens, the budget itself is the work: each GPU does peak · MFU ·
goodput FLOPs in a second of paid time, so

    gpu_hours = C / (peak · MFU · goodput) / 3600
    wall_s    = gpu_hours · 3600 / gpus      (or the GPUs a --deadline needs)

With --params (or --model) the budget is read as tokens instead (D = C / flops_per_token) and
the plan is the usual one (train/run.py).
"""

from __future__ import annotations

from napkin.calculators.resolve import peak_of
from napkin.calculators.train.auto_goodput import resolve_goodput
from napkin.calculators.train.cluster import size_cluster
from napkin.calculators.train.energy import energy, thresholds
from napkin.calculators.train.inputs import parse_goodput, resolve_gpu, resolve_mfu, resolve_price
from napkin.calculators.train.report import TrainReport
from napkin.calculators.train.request import TrainRequest
from napkin.errors import InputError
from napkin.formulas import training as T
from napkin.units import format as fmt


def run_budget(req: TrainRequest) -> TrainReport:
    """A FLOP budget with no model: its GPU-hours, cluster, wall time, cost, energy and thresholds."""
    for name, unit in (("tokens", "count"), ("unique_tokens", "count"), ("epochs", "number"), ("seq_len", "count"),
                       ("mfu_convention", None), ("data_usd", "usd")):
        if (value := getattr(req, name)) is not None:
            raise InputError(name, fmt(value, unit) if unit else value, "needs a model, and --flops without --params "
                             "or --model is a budget of FLOPs alone", "give --params N (the budget is then read as "
                             f"tokens), or drop --{name.replace('_', '-')}")
    if req.sensitivity:
        raise InputError("sensitivity", "yes", "moves loaded $/M tokens, and a budget of FLOPs alone has no tokens",
                         "give --params N with --flops (the budget is then read as tokens)")
    if req.gpus is not None and req.deadline is not None:
        raise InputError("deadline", fmt(req.deadline, "seconds"), "cannot be given with --gpus",
                         "give --gpus K for the wall time, or --deadline for the GPUs needed")
    r = TrainReport(f"Training budget: {fmt(req.flops, 'flops')}", command="train")
    c = req.flops
    r.set("train_flops", c, "flops")
    g = resolve_gpu(r, req)
    if g is not None:
        r.set("gpu", g.key)
    r.set("precision", req.precision)
    peak = peak_of(r, g, req.precision, req.peak)
    r.set("dense_flops_per_s", peak, "flops_per_s")
    mfu = resolve_mfu(r, req, 0.0, g)
    r.set("mfu", mfu, "fraction")
    goodput = resolve_goodput(r, req, parse_goodput(req.goodput), d=c, peak=peak, mfu=mfu, fpt=1.0)
    r.set("goodput", goodput, "fraction")
    rate = r.step("flops_per_gpu_s", "peak · MFU · goodput  (model FLOPs per paid GPU-second)",
                  value=T.tokens_per_gpu_s(peak, mfu=mfu, goodput=goodput, flops_per_token=1.0), unit="flops_per_s",
                  peak=(peak, "flops_per_s"), MFU=(mfu, "fraction"), goodput=(goodput, "fraction"),
                  cites=T.tokens_per_gpu_s)
    hours = r.step("gpu_hours", "C / flops_per_gpu_s / 3600  (allocated GPU-hours)",
                   value=T.gpu_hours(c, tokens_per_gpu_s=rate), unit="count", C=(c, "flops"),
                   flops_per_gpu_s=(rate, "flops_per_s"), cites=T.gpu_hours)
    n_used = size_cluster(r, req, c, rate, g, work="C", rate="flops_per_gpu_s")
    price, basis = resolve_price(r, req.price, g)
    r.set("price", price, "usd_per_hour")
    r.set("price_basis", basis)
    marginal = r.step("marginal_usd", "gpu_hours · price", value=T.marginal_usd(hours, usd_per_gpu_hour=price),
                      unit="usd", gpu_hours=(hours, "count"), price=(price, "usd_per_hour"), cites=T.marginal_usd)
    overheads = sum(req.overhead.values())
    r.step("loaded_usd", "marginal · (1 + Σ overheads) + fixed",
           value=T.loaded_usd(marginal, overhead_multiplier=overheads, fixed_usd=req.fixed_usd), unit="usd",
           marginal=(marginal, "usd"), **{"Σ overheads": overheads}, fixed=(req.fixed_usd, "usd"), cites=T.loaded_usd)
    energy(r, req, g, hours, n_used)
    thresholds(r, c)
    r.note("a budget of FLOPs alone: give --params N (or --model) to read it as tokens, D = C / 6N, and a "
           "cost per million tokens")
    return r
