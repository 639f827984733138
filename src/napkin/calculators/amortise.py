"""``napkin amortise``: spread the loaded training cost over the tokens a model will serve.

Two views of the same fact: the training bill added to every
million served tokens, and the served volume at which serving compute has matched
the training run (3·D tokens, since training costs 6N per token and serving 2N), in
years at a daily volume. The loaded cost is given, or planned by ``napkin train``.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from napkin import calculators, catalog
from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import economics as econ
from napkin.formulas import flops as fl
from napkin.formulas import scaling as sc
from napkin.request import field
from napkin.units import DAY, YEAR, format as fmt

S = msgspec.Struct

DAYS_PER_YEAR = YEAR / DAY
# fields passed through to `napkin train` when the loaded cost is planned, not given
TRAIN_FIELDS = ("model", "params", "tokens", "gpu", "precision", "mfu", "goodput", "price", "overhead", "fixed_usd")


class AmortiseRequest(S, kw_only=True, forbid_unknown_fields=True):
    training_usd: Annotated[float | None, field("usd", "loaded training cost (instead of planning it with the "
                                                "train options below)", gt=0)] = None
    served: Annotated[list[float], field("count", "lifetime served tokens; several to compare (500B,50T)",
                                         gt=0)] = []
    per_day: Annotated[list[float], field("count", "served tokens per day; several to compare (10B,120B)",
                                          gt=0)] = []
    years: Annotated[float | None, field("number", "years of serving at --per-day", gt=0, unit="y")] = None
    serving_usd_per_million: Annotated[float | None, field("usd_per_million", "serving cost per million tokens, "
                                                           "to add the training share to", ge=0)] = None
    model: Annotated[str | None, field("name", "catalog model: N (active) and its published tokens")] = None
    params: Annotated[float | None, field("count", "parameters N (active for MoE)", gt=0)] = None
    tokens: Annotated[float | None, field("count", "training tokens D", gt=0)] = None
    gpu: Annotated[str | None, field("name", "train plan: accelerator (default "
                                             f"{catalog.default_value('default_gpu')})")] = None
    precision: Annotated[str | None, field("precision", "train plan: training precision")] = None
    mfu: Annotated[float | None, field("fraction", f"train plan: MFU (default "
                                                        f"{catalog.default_value('training_mfu'):.0%}, assumed)")] = None
    goodput: Annotated[float | None, field("fraction", f"train plan: goodput (default "
                                                            f"{catalog.default_value('training_goodput'):.0%}, "
                                                            "assumed)")] = None
    price: Annotated[float | None, field("usd_per_hour", "train plan: loaded $/GPU-hour", gt=0)] = None
    overhead: Annotated[dict[str, float], field("number", "train plan: overhead multipliers on the final run",
                                                ge=0, example="experiments=0.6")] = {}
    fixed_usd: Annotated[float | None, field("usd", "train plan: fixed spend added once", ge=0)] = None


def _run_shape(r: Report, req: AmortiseRequest) -> tuple[float | None, float | None]:
    """N (active) and D of the training run, from --params/--tokens or the catalog model."""
    n, d = req.params, req.tokens
    if req.model is not None:
        m = catalog.model(req.model)
        n = n if n is not None else m.active_params
        if d is None and m.training_tokens:
            d = r.assume("tokens", m.training_tokens, f"{m.name}'s published training tokens", unit="count",
                         basis="catalog")
    return n, d


def _loaded_from_train(r: Report, req: AmortiseRequest) -> float:
    """Plan the run with `napkin train` (through the registry) and take its loaded cost, with its working."""
    raw: dict[str, Any] = {k: getattr(req, k) for k in TRAIN_FIELDS}
    raw = {k: v for k, v in raw.items() if v not in (None, {}, [])}
    if "goodput" in raw:
        raw["goodput"] = str(raw["goodput"])
    t = calculators.get("train")(raw)
    r.merge(t, prefix="train.")
    marginal = r.set("marginal_training_usd", t["marginal_usd"], "usd")
    loaded = r.step("training_usd", "napkin train: marginal · (1 + Σ overheads) + fixed", value=t["loaded_usd"],
                    unit="usd", marginal=(marginal, "usd"))
    if not req.overhead and req.fixed_usd is None:
        r.warn("marginal-only", "no --overhead or --fixed-usd: the training cost is the final run's marginal "
                                "compute, a lower bound; amortise the loaded cost")
    return loaded


def run_amortise(req: AmortiseRequest) -> Report:
    r = Report("Amortise training over served tokens", command="amortise")
    n, d = _run_shape(r, req)
    plan_given = [k for k in ("gpu", "precision", "mfu", "goodput", "price", "fixed_usd") if getattr(req, k) is not None]
    if req.overhead:
        plan_given.append("overhead")
    if req.training_usd is not None and plan_given:
        raise InputError(plan_given[0], getattr(req, plan_given[0]), "plans a training cost, but --training-usd "
                         "gives one", "drop one of them")
    if req.years is not None and not req.per_day:
        raise InputError("years", req.years, "needs --per-day", "give --per-day 10B with --years")
    # --served is the lifetime volume; --per-day · --years is another way to give it: never both
    if req.years is not None and req.served:
        raise InputError("years", req.years, "cannot be given with --served (both set the served tokens)",
                         "give --served 500B, or --per-day 10B --years 2")
    if req.per_day and req.served and d is None:  # no crossover to give years to
        raise InputError("per_day", ",".join(fmt(p, "count") for p in req.per_day),
                         "is unused: --served sets the served tokens and there is no --tokens for the crossover",
                         "drop --per-day, or give --tokens D (or --model) for the years to the crossover")

    # ---- the loaded training cost
    loaded = None
    if req.training_usd is not None:
        loaded = r.set("training_usd", req.training_usd, "usd")
        r.assume("training_usd", loaded, "taken as the loaded cost (everything spent to produce the model); "
                 "amortising the marginal run understates it", unit="usd", basis="given")
    elif n is not None and d is not None and (req.served or req.years is not None):
        loaded = _loaded_from_train(r, req)
    elif plan_given:  # a training plan was asked for: name what it still lacks
        if n is None or d is None:
            missing = "params" if n is None else "tokens"
            raise InputError(missing, "nothing", "is required to plan the training cost",
                             "give --params N --tokens D (or --model), or --training-usd")
        if req.per_day:
            raise InputError("years", "nothing", "is required to amortise the planned training cost over --per-day",
                             "give --years 2, or --served 500B")
        raise InputError("served", "nothing", "is required to amortise the planned training cost",
                         "give --served 500B, or --per-day 10B --years 2")

    # ---- the served tokens it is spread over
    served = list(req.served)
    if not served and req.per_day and req.years is not None:
        served = [r.step(f"served_tokens@{fmt(p, 'count')}/day", "per_day · 365 · years",
                         value=p * DAYS_PER_YEAR * req.years, unit="count", result=False,
                         per_day=(p, "count"), years=req.years) for p in req.per_day]
    if loaded is not None:
        if not served:
            raise InputError("served", "nothing", "is required to amortise a training cost",
                             "give --served 500B, or --per-day 10B --years 2")
        r.set("served_tokens", served, "count")
        if req.served and req.per_day:
            r.note("the cost is spread over --served; --per-day gives only the years to the crossover")
        per_m = []
        for s in served:
            per_m.append(r.step(f"amortised_usd_per_million@{fmt(s, 'count')}", "training_usd / served · 1e6",
                                value=econ.amortised_usd_per_million(loaded, served_tokens=s),
                                unit="usd_per_million", result=False, training_usd=(loaded, "usd"),
                                served=(s, "count"), cites=econ.amortised_usd_per_million))
        r.set("amortised_usd_per_million", per_m, "usd_per_million")
        if req.serving_usd_per_million is not None:
            r.set("serving_usd_per_million", req.serving_usd_per_million, "usd_per_million")
            r.set("total_usd_per_million", [req.serving_usd_per_million + a for a in per_m], "usd_per_million")

    # ---- the crossover: served tokens whose compute equals the training run's
    if d is not None:
        _crossover(r, req, n, d)
    elif loaded is None:
        raise InputError("tokens", "nothing", "is required: nothing to amortise or compare",
                         "give --training-usd with --served, or --params/--tokens (or --model) with --per-day")
    return r


def _crossover(r: Report, req: AmortiseRequest, n: float | None, d: float) -> None:
    """The served tokens whose compute equals the training run's (3·D), and the years to them at --per-day."""
    if n is not None:
        r.set("params", n, "count")
    r.set("tokens", d, "count")
    if n is not None:
        r.step("train_flops", "6 · N · D", value=fl.train_flops(n, n_tokens=d), unit="flops",
               N=(n, "count"), D=(d, "count"), cites=fl.train_flops)
    x = r.step("crossover_tokens", "6·N·D / (2·N) = 3 · D", value=sc.crossover_tokens(d), unit="count",
               D=(d, "count"), cites=sc.crossover_tokens)
    if req.per_day:
        r.set("per_day", list(req.per_day), "count")
        r.set("served_per_year_tokens", [p * DAYS_PER_YEAR for p in req.per_day], "count")
        years = [r.step(f"crossover_years@{fmt(p, 'count')}/day", "crossover_tokens / (per_day · 365)",
                        value=x / (p * DAYS_PER_YEAR), unit="number", result=False, per_day=(p, "count"))
                 for p in req.per_day]
        r.set("crossover_years", years, "number")
    r.note("serving compute counts 2·N per generated token; attention over the cache adds to it at long "
           "context, so the crossover comes sooner")


def amortise_charts(report: Any) -> dict[str, dict]:
    from napkin.charts.economics import crossover_chart

    d = report.to_dict() if hasattr(report, "to_dict") else dict(report)
    if "crossover_tokens" not in d:
        return {}
    return {"serving-vs-training": crossover_chart(d)}


AMORTISE = Calculator(
    "amortise", AmortiseRequest, run_amortise, "Amortise training",
    "Spread the loaded training cost over served tokens; when serving compute overtakes training compute.",
    establishes="what the training bill adds to each million served tokens, and when serving has cost as much "
                "compute as training",
    needs_measuring="the tokens the model will really serve, from traffic forecasts and then from logs",
    charts=amortise_charts,
)
