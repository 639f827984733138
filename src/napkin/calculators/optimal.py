"""``napkin optimal``: the compute-optimal split of a training budget, and what over-training buys.

For a budget C and a tokens-per-parameter ratio r: N = sqrt(C / (6·r)), D = r·N.
For a planned run: how far it is from that split, and (at a daily serving volume) the
lifetime serving compute of both choices beside their training compute: over-training
spends training compute to buy a model that is cheaper to serve.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators.resolve import assume_default
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import flops as fl
from napkin.formulas import scaling as sc
from napkin.formulas import training as T
from napkin.request import field
from napkin.units import DAY, YEAR, format as fmt

S = msgspec.Struct

_default = catalog.default_value  # catalog/assumptions.toml


class OptimalRequest(S, kw_only=True, forbid_unknown_fields=True):
    flops: Annotated[float | None, field("flops", "training compute budget C (e.g. 3.8e25)", gt=0)] = None
    gpus: Annotated[int | None, field("int", "GPUs, to size the budget as GPUs × days × peak × MFU", gt=0)] = None
    days: Annotated[float | None, field("number", "days on those GPUs (with --gpus)", gt=0, unit="d")] = None
    gpu: Annotated[str | None, field("name", "accelerator for a GPUs × days budget (default "
                                             f"{_default('default_gpu')})")] = None
    precision: Annotated[str, field("precision", "training precision of the dense peak")] = "bf16"
    mfu: Annotated[float | None, field("fraction", "MFU for a GPUs × days budget (default "
                                                  f"{_default('reference_mfu'):.0%})")] = None
    goodput: Annotated[float, field("fraction", "fraction of the days making progress")] = 1.0
    ratio: Annotated[float, field("number", "target tokens per parameter (Chinchilla: 20)", gt=0,
                                  unit="tokens/param")] = \
        sc.CHINCHILLA_TOKENS_PER_PARAM
    params: Annotated[float | None, field("count", "a planned run's parameters N (active for MoE)", gt=0)] = None
    tokens: Annotated[float | None, field("count", "a planned run's training tokens D", gt=0)] = None
    model: Annotated[str | None, field("name", "catalog model as the planned run (its active parameters and "
                                       "published tokens)")] = None
    per_day: Annotated[float | None, field("count", "tokens the model will serve per day", gt=0)] = None
    years: Annotated[float | None, field("number", "years the model will serve (default "
                                                    f"{_default('serving_life_years'):g})",
                                         gt=0, unit="y")] = None


def _planned(r: Report, req: OptimalRequest) -> tuple[float | None, float | None]:
    n, d = req.params, req.tokens
    if req.model is not None:
        m = catalog.model(req.model)
        if n is None:
            n = m.active_params
            if m.is_moe:
                r.note(f"{m.name} is a mixture of experts: N is its {fmt(n, 'count')} active parameters")
        if d is None and m.training_tokens:
            d = r.assume("tokens", m.training_tokens, f"{m.name}'s published training tokens", unit="count",
                         basis="catalog")
    if (n is None) != (d is None):
        raise InputError("tokens" if d is None else "params", "nothing", "is required for a planned run",
                         "give both --params N and --tokens D (or --model)")
    return n, d


def _budget(r: Report, req: OptimalRequest, planned_flops: float | None) -> float:
    if (req.gpus is None) != (req.days is None):
        missing = "days" if req.days is None else "gpus"
        raise InputError(missing, "nothing", "is required with --" + ("gpus" if missing == "days" else "days"),
                         "give both --gpus N and --days N")
    if req.flops is not None and req.gpus is not None:
        raise InputError("gpus", req.gpus, "conflicts with --flops", "give the budget one way")
    if req.flops is not None:
        if req.gpu is not None:  # a name that must exist, though only GPUs × days uses it
            r.note(f"--gpu {catalog.gpu(req.gpu).key} is not used: it sizes a GPUs × days budget, and --flops "
                   "gives the budget")
        return r.set("train_flops", req.flops, "flops")
    if req.gpus is not None:
        g = catalog.gpu(req.gpu or _default("default_gpu"))
        if req.gpu is None:
            assume_default(r, "gpu", "default_gpu")
        peak = g.peak(req.precision)
        r.assume("dense_flops_per_s", peak, f"{g.name} dense {req.precision} peak ({g.source})",
                 unit="flops_per_s", basis="catalog")
        if req.mfu is None:
            mfu = assume_default(r, "mfu", "reference_mfu", note="reference MFU of a large dense run",
                                 basis="reference")
        else:
            mfu = r.assume("mfu", req.mfu, "given", unit="fraction", basis="given")
        return r.step("train_flops", "GPUs · days · 86,400 s · peak · MFU · goodput",
                      value=T.budget_flops(req.gpus * req.days * DAY, dense_flops_per_s=peak, mfu=mfu,
                                           goodput=req.goodput), unit="flops",
                      GPUs=req.gpus, days=req.days, peak=(peak, "flops_per_s"), MFU=mfu, goodput=req.goodput,
                      cites=T.budget_flops)
    if planned_flops is not None:
        r.note("budget: the planned run's own 6·N·D")
        return r.set("train_flops", planned_flops, "flops")
    raise InputError("flops", "nothing", "is required: give a compute budget",
                     "--flops 3.8e25, --gpus N --days N, or a planned run --params N --tokens D")


def run_optimal(req: OptimalRequest) -> Report:
    r = Report("Compute-optimal split", command="optimal")
    if req.mfu is not None and req.gpus is None:
        raise InputError("mfu", req.mfu, "only applies to a GPUs × days budget", "give --gpus and --days, or drop --mfu")
    n, d = _planned(r, req)
    planned_flops = fl.train_flops(n, n_tokens=d) if n is not None else None
    c = _budget(r, req, planned_flops)
    ratio = req.ratio
    r.assume("ratio", ratio, "Chinchilla's ~20 tokens per parameter (Hoffmann et al. 2022)" if ratio == 20
             else "given", unit="number", basis="reference" if ratio == 20 else "given")
    n_opt = r.step("optimal_params", "sqrt(C / (6 · r))", value=sc.compute_optimal_params(c, tokens_per_param=ratio),
                   unit="count", C=(c, "flops"), r=ratio, cites=sc.compute_optimal_params)
    r.step("optimal_tokens", "r · N*", value=sc.compute_optimal_tokens(c, tokens_per_param=ratio),
           unit="count", r=ratio, **{"N*": (n_opt, "count")}, cites=sc.compute_optimal_tokens)
    r.title = f"Compute-optimal split of {fmt(c, 'flops')} at {ratio:g} tokens per parameter"
    if n is None:
        if req.per_day is not None:
            raise InputError("per_day", req.per_day, "needs a planned run to compare",
                             "give --params N --tokens D (or --model)")
        return r
    r.set("params", n, "count")
    r.set("tokens", d, "count")
    if req.flops is not None or req.gpus is not None:
        r.step("planned_train_flops", "6 · N · D", value=planned_flops, unit="flops", N=(n, "count"), D=(d, "count"),
               cites=fl.train_flops)
        if abs(planned_flops - c) / c > 0.01:
            r.note(f"the planned run uses {planned_flops / c:.2f}× the budget; the split above is for the budget")
    tpp = r.step("tokens_per_param", "D / N", value=sc.tokens_per_param(d, n_params=n), unit="number",
                 cites=sc.tokens_per_param)
    r.step("tokens_at_ratio", "r · N  (what the ratio asks for this N)", value=ratio * n, unit="count")
    over = r.step("overtraining_factor", "(D / N) / r", value=sc.overtraining_factor(d, n_params=n,
                  target_tokens_per_param=ratio), unit="number", r=ratio, cites=sc.overtraining_factor)
    if abs(over - 1) <= 0.01:  # within 1% of the ratio: Chinchilla's own 70B on 1.4T is 19.98 tokens a parameter
        r.note(f"at the compute-optimal ratio: {tpp:.3g} tokens per parameter against {ratio:g}")
    elif over > 1:
        r.note(f"over-trained {over:.3g}× past {ratio:g}:1: a smaller model, trained longer, that needs "
               f"{n_opt / n:.3g}× less compute per served token than the budget's optimum")
    elif over < 1:
        r.note(f"under-trained: {tpp:.3g} tokens per parameter is below {ratio:g}; the budget buys a lower loss "
               "as a smaller model on more tokens")
    if req.per_day is None:
        return r
    years = req.years if req.years is not None else assume_default(r, "years", "serving_life_years")
    served = r.step("served_tokens", "per_day · 365 · years", value=req.per_day * years * YEAR / DAY, unit="count",
                    per_day=(req.per_day, "count"), years=years)
    s_plan = r.step("serving_flops", "2 · N · served", value=sc.serving_flops(n, served_tokens=served), unit="flops",
                    N=(n, "count"), cites=sc.serving_flops)
    s_opt = r.step("optimal_serving_flops", "2 · N* · served", value=sc.serving_flops(n_opt, served_tokens=served),
                   unit="flops", **{"N*": (n_opt, "count")}, cites=sc.serving_flops)
    life_plan = r.step("lifetime_flops", "planned training + serving", value=planned_flops + s_plan, unit="flops")
    life_opt = r.step("optimal_lifetime_flops", "C + optimal serving", value=c + s_opt, unit="flops")
    r.step("lifetime_saving_flops", "optimal_lifetime − lifetime  (positive: the planned run costs less overall)",
           value=life_opt - life_plan, unit="flops")
    if abs(planned_flops - c) / c <= 0.01:
        r.note("both choices cost the same training compute; at that compute the compute-optimal model reaches a "
               "lower loss, so this compares compute, not quality")
    return r


OPTIMAL = Calculator(
    "optimal", OptimalRequest, run_optimal, "Compute-optimal split",
    "Compute-optimal parameters and tokens for a budget; over-training and lifetime serving compute.",
    establishes="the parameter/token split a budget affords at a ratio, and the serving compute each choice commits to",
    needs_measuring="the ratio for your data and architecture, from your own scaling runs",
)
