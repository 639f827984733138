"""``napkin gpu-hour``: the loaded price of one GPU-hour, the figure ``--price`` assumes.

Capital spread over the GPU's life, power at the facility's PUE, yearly per-GPU costs
(facility, networking, support), all divided by the fleet's utilisation because idle
hours are paid for too. Compared with a rental price, and with preemptible capacity
priced per useful hour (price over goodput).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators.resolve import given_or_default
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import economics as econ
from napkin.request import field
from napkin.units import format as fmt

S = msgspec.Struct

_default = catalog.default_value  # catalog/assumptions.toml


class GpuHourRequest(S, kw_only=True, forbid_unknown_fields=True):
    capex: Annotated[float | None, field("usd", "purchase price per GPU, its share of the server included", gt=0)] = None
    years: Annotated[float | None, field("number", f"depreciation life in years (default "
                                                            f"{_default('depreciation_years'):g})",
                                         gt=0, unit="y")] = None
    residual: Annotated[float | None, field("fraction", "resale value at the end of the life, as a fraction of "
                                            "capex (default 0)", ge=0, lt=1)] = None
    gpu: Annotated[str | None, field("name", "accelerator whose TDP sets the power draw")] = None
    watts: Annotated[float | None, field("watts", "power per GPU (instead of the catalog TDP), host share included",
                                         gt=0)] = None
    pue: Annotated[float | None, field("number", f"power usage effectiveness of the facility, >= 1 "
                                       f"(default {_default('pue'):g})", ge=1)] = None
    usd_per_kwh: Annotated[float | None, field("usd_per_kwh", f"electricity price (default "
                                                                      f"${_default('usd_per_kwh'):g}/kWh)",
                                               ge=0)] = None
    per_gpu_year: Annotated[dict[str, float], field("usd", "yearly costs per GPU as NAME=USD (facility, network, "
                                                    "support, storage)", ge=0, example="network=1500")] = {}
    utilization: Annotated[float | None, field("fraction", "fraction of the fleet's hours that carry work "
                                               "(default 1)")] = None
    vs: Annotated[float | None, field("usd_per_hour", "a rental price to compare with", gt=0)] = None
    spot: Annotated[float | None, field("usd_per_hour", "a preemptible (spot) price to price per useful hour",
                                        gt=0)] = None
    goodput: Annotated[float | None, field("fraction", "fraction of spot hours that make progress (with --spot)")] = None


def run_gpu_hour(req: GpuHourRequest) -> Report:
    r = Report("GPU-hour", command="gpu-hour")
    if req.capex is None and req.spot is None:
        raise InputError("capex", "nothing", "is required", "give --capex 30000 (owned) or --spot 1.20/h --goodput 0.7")
    if req.goodput is not None and req.spot is None:
        raise InputError("goodput", req.goodput, "needs --spot", "give --spot PRICE/h with --goodput")
    owned, util = None, 1.0
    if req.capex is not None:
        owned, util = _owned(r, req)
    if req.vs is not None:
        r.set("vs_usd_per_gpu_hour", req.vs, "usd_per_hour")
        if owned is not None:
            ratio = r.step("owned_over_rental", "usd_per_gpu_hour / vs", value=owned / req.vs, unit="number",
                           usd_per_gpu_hour=(owned, "usd_per_hour"), vs=(req.vs, "usd_per_hour"))
            cheaper = "owning" if ratio < 1 else "renting"
            r.set("cheaper", cheaper)
            be = r.step("breakeven_utilization", "utilisation · usd_per_gpu_hour / vs  (owned = rental)",
                        value=econ.breakeven_utilization(util, owned_usd_per_hour=owned, rental_usd_per_hour=req.vs),
                        unit="fraction", utilisation=util, cites=econ.breakeven_utilization)
            if be > 1:
                r.note(f"owning costs more than renting at {fmt(req.vs, 'usd_per_hour')} even fully used")
            else:
                r.note(f"owning beats {fmt(req.vs, 'usd_per_hour')} above {be:.0%} utilisation")
    if req.spot is not None:
        _spot(r, req, owned)
    return r


def _owned(r: Report, req: GpuHourRequest) -> tuple[float, float]:
    capex = req.capex
    r.set("capex_usd", capex, "usd")
    if req.watts is not None:
        watts = req.watts
        r.assume("watts", watts, "given", unit="watts", basis="given")
    elif req.gpu is not None:
        g = catalog.gpu(req.gpu)
        if g.tdp_watts is None:
            raise InputError("gpu", req.gpu, "has no TDP in the catalog", "give --watts 700W")
        watts = g.tdp_watts
        r.assume("watts", watts, f"{g.name} TDP ({g.source}); a server's host adds more per GPU: give --watts",
                 unit="watts", basis="catalog")
    else:
        raise InputError("watts", "nothing", "is required for power", "give --gpu NAME (its TDP) or --watts 700W")

    years = given_or_default(r, "years", req.years, "depreciation_years")
    if req.residual is None:
        residual = r.assume("residual", 0.0, "no resale value", unit="fraction", basis="assumed")
    else:
        residual = r.assume("residual", req.residual, "given", unit="fraction", basis="given")
    pue = given_or_default(r, "pue", req.pue)
    kwh = given_or_default(r, "usd_per_kwh", req.usd_per_kwh)
    util = given_or_default(r, "utilization", req.utilization, "owned_utilization")
    cap = r.step("capital_usd_per_hour", "capex · (1 − residual) / (years · 8,760 h)",
                 value=econ.capital_usd_per_hour(capex, years=years, residual_fraction=residual),
                 unit="usd_per_hour", result=False, capex=(capex, "usd"), residual=(residual, "fraction"), years=years,
                 cites=econ.capital_usd_per_hour)
    power = r.step("power_usd_per_hour", "watts · PUE · $/kWh per hour",
                   value=econ.power_usd_per_hour(watts, pue=pue, usd_per_kwh=kwh),
                   unit="usd_per_hour", result=False, watts=(watts, "watts"), PUE=pue, usd_per_kwh=(kwh, "usd_per_kwh"),
                   cites=econ.power_usd_per_hour)
    calendar = {"capital": cap, "power": power}
    named: dict[str, str] = {}  # key -> the name it was given as
    for name, usd_year in req.per_gpu_year.items():
        key = name.strip().lower().replace(" ", "_").replace("-", "_")
        if key in ("capital", "power"):
            raise InputError(f"per_gpu_year[{name}]", usd_year, "repeats a cost already counted",
                             "capital and power come from --capex and --watts; name the others differently")
        if key in named:
            raise InputError(f"per_gpu_year[{name}]", usd_year, f"names the same cost as {named[key]} (names are "
                             "compared ignoring case, spaces and dashes)",
                             f"give {key} once, adding up the parts if both apply")
        named[key] = name
        calendar[key] = r.step(f"{key}_usd_per_hour", "usd_per_gpu_year / 8,760 h",
                               value=econ.per_year_usd_per_hour(usd_year), unit="usd_per_hour", result=False,
                               usd_per_gpu_year=(usd_year, "usd"), cites=econ.per_year_usd_per_hour)
    if not req.per_gpu_year:
        r.note("no facility, networking or support costs given: add them with --per-gpu-year NAME=USD")
    total = r.step("usd_per_calendar_hour", " + ".join(calendar), value=sum(calendar.values()), unit="usd_per_hour")
    loaded = r.step("usd_per_gpu_hour", "usd_per_calendar_hour / utilisation",
                    value=econ.loaded_usd_per_gpu_hour(total, utilization=util), unit="usd_per_hour",
                    utilisation=util, cites=econ.loaded_usd_per_gpu_hour)
    r.set("breakdown_usd_per_gpu_hour", {k: v / util for k, v in calendar.items()}, "usd_per_hour")
    if util < 1.0:
        r.step("idle_usd_per_gpu_hour", "usd_per_gpu_hour − usd_per_calendar_hour  (idle hours, paid for too)",
               value=loaded - total, unit="usd_per_hour")
    r.note("power drawn at TDP every hour (an idle GPU draws less); no cost of capital: add financing with "
           "--per-gpu-year financing=USD")
    return loaded, util


def _spot(r: Report, req: GpuHourRequest, owned: float | None) -> None:
    if req.goodput is None:
        raise InputError("goodput", "nothing", "is required with --spot",
                         "give --goodput 0.7 (the fraction of spot hours that make progress; see `napkin goodput`)")
    r.set("spot_usd_per_gpu_hour", req.spot, "usd_per_hour")
    useful = r.step("spot_useful_usd_per_gpu_hour", "spot / goodput",
                    value=econ.useful_usd_per_hour(req.spot, goodput=req.goodput), unit="usd_per_hour",
                    spot=(req.spot, "usd_per_hour"), goodput=req.goodput, cites=econ.useful_usd_per_hour)
    r.assume("spot_goodput", req.goodput, "fraction of spot hours that make progress (preemptions, restarts)",
             unit="fraction", basis="given")
    rivals = []
    if req.vs is not None:
        rivals.append(("on-demand", req.vs, "the on-demand hour, taken as fully useful"))
    if owned is not None:
        rivals.append(("owned", owned, "the owned loaded hour"))
    for name, price, what in rivals:
        ratio = r.step(f"spot_over_{name.replace('-', '_')}", f"spot_useful_usd_per_gpu_hour / {what}",
                       value=useful / price, unit="number", price=(price, "usd_per_hour"))
        r.note(f"spot's useful hour is {abs(1 - ratio):.0%} {'cheaper' if ratio < 1 else 'dearer'} than {what}")
    if req.vs is not None:
        r.step("spot_breakeven_goodput", "spot / vs  (the goodput below which on-demand is cheaper)",
               value=econ.spot_breakeven_goodput(req.spot, on_demand_usd_per_hour=req.vs), unit="fraction",
               spot=(req.spot, "usd_per_hour"), vs=(req.vs, "usd_per_hour"), cites=econ.spot_breakeven_goodput)


GPU_HOUR = Calculator(
    "gpu-hour", GpuHourRequest, run_gpu_hour, "GPU-hour",
    "The loaded price of one GPU-hour from capital, power, yearly costs and utilisation; spot per useful hour.",
    establishes="what one used GPU-hour costs when every cost and every idle hour is counted",
    needs_measuring="the fleet's real utilisation and power draw, from the scheduler and the facility's meters",
)
