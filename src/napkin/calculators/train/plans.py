"""Plan files of `napkin train`: what ``--save`` writes, and how a saved plan's defaults read back.

A plan records every input, defaults frozen at the values they resolved to and listed in
``assumed``. Read back, a frozen default that is still today's resolves as a default again
(same label, source and warning); one that is no longer today's keeps the plan's value and
is labelled as the plan's default, with today's beside it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from napkin import catalog
from napkin.calculators.train.inputs import parse_goodput
from napkin.calculators.train.request import TrainRequest
from napkin.derivation import Report
from napkin.errors import InputError, NapkinError
from napkin.request import fields, write_config
from napkin.units import fmt_auto
from napkin.units import format as fmt

PLAN_DEFAULTS = ("gpu", "mfu", "goodput", "price", "pue")  # inputs a plan file freezes when they were defaults


def _today_defaults(req: Any) -> dict[str, Any]:
    """What each input a plan can freeze (its ``assumed`` list) defaults to now, for this request."""
    default = catalog.default_value
    out: dict[str, Any] = {"mfu": default("training_mfu") if req.calibration is None else None,
                           "goodput": default("training_goodput"), "pue": default("energy_pue")}
    g = None
    if req.peak is None:
        out["gpu"] = catalog.gpu(default("default_gpu")).key
        try:
            g = catalog.gpu(req.gpu or default("default_gpu"))
        except NapkinError:
            g = None
    if req.peak is not None and req.gpu is None:
        out["price"] = default("illustrative_usd_per_gpu_hour")
    elif g is not None:
        ref = catalog.gpu_hour_price(g.key)
        out["price"] = ref.usd_per_gpu_hour if ref else None
    return out


def _same(name: str, frozen: Any, today: Any) -> bool:
    if today is None or frozen is None:
        return False
    if name == "gpu":
        try:
            return catalog.gpu(str(frozen)).key == today
        except NapkinError:
            return False
    if name == "goodput":
        try:
            frozen = parse_goodput(frozen)
        except InputError:
            return False
    return isinstance(frozen, (int, float)) and float(frozen) == float(today)


def thaw_defaults(req: TrainRequest) -> tuple[TrainRequest, dict[str, Any]]:
    """A saved plan froze its defaults at the values they took and listed them in ``assumed``.

    Where a frozen value is still today's default, it is dropped, so it resolves as a default
    again with the same label, note, date, source and warning as when the plan was saved.
    Returns the request and the defaults frozen at a value that is no longer today's (name ->
    today's default), which keep the plan's value and are labelled as the plan's defaults.
    """
    if not req.assumed:
        return req, {}
    today = _today_defaults(req)
    thawed, stale = {}, {}
    inputs = {f.name for f in fields(type(req))}
    for name in req.assumed:
        if name not in inputs:  # --save writes input names only: this plan was edited or damaged
            raise InputError("assumed", name, "is not an input of napkin train",
                             "list the inputs the plan took from defaults, or drop the line")
        if name not in today or getattr(req, name, None) is None:
            continue
        if name == "goodput" and str(req.goodput).strip().lower() == "auto":
            continue  # derived from failure rates: not a default
        if _same(name, getattr(req, name), today[name]):
            thawed[name] = None
        else:
            stale[name] = today[name]
    return msgspec.structs.replace(req, **thawed), stale


def label_stale(r: Report, stale: dict[str, Any]) -> None:
    """Defaults a plan froze at values that are no longer today's: still defaults, not given."""
    kinds = {"mfu": "fraction", "goodput": "fraction", "price": "usd_per_hour", "pue": "number", "gpu": None}
    for a in list(r.assumptions):
        if a.name not in stale:
            continue
        today = stale[a.name]
        now = "" if today is None else f"; today's default is {fmt_auto(today, kinds.get(a.name))}"
        if a.name == "price":
            r.assume("price", a.value, f"the reference price when the plan was saved{now}; not a loaded price",
                     unit=a.unit, basis="reference")
            r.set("price_basis", "reference price, as saved in the plan")
            r.warn("list-price", f"the plan's price {fmt(a.value, 'usd_per_hour')} was a reference list price when "
                                 f"it was saved{now}; give --price with your loaded rate (`napkin gpu-hour`)")
        else:
            r.assume(a.name, a.value, f"a default when the plan was saved{now}; not a measurement", unit=a.unit,
                     basis="assumed")
    if "gpu" in stale and not any(a.name == "gpu" for a in r.assumptions) and r.results.get("gpu"):
        r.assume("gpu", r.results["gpu"], f"a default when the plan was saved; today's is {stale['gpu']}",
                 basis="assumed")



def plan_values(req: Any, report: Any) -> tuple[dict[str, Any], list[str]]:
    """Every input of the plan, defaults frozen at the values they resolved to, and which were defaults."""
    from napkin.calculators.train.vary import base_request
    from napkin.request import fields, to_raw

    req = base_request(req)  # a sweep's base run: the cluster size it was planned at
    given = to_raw(req)
    resolved: dict[str, Any] = {}
    for a in report.assumptions:
        if a.name in PLAN_DEFAULTS and a.name not in given:
            if a.name == "goodput" and req.goodput is not None:
                continue  # --goodput auto stays auto
            resolved[a.name] = a.value
    defaults = {a.name: f"{a.name} ({a.basis}): {a.note}" for a in report.assumptions
                if a.name in PLAN_DEFAULTS and a.basis in ("assumed", "reference")}
    for name in req.assumed:  # carried from the plan it was read from
        if name not in defaults:
            defaults[name] = f"{name}: a default when the plan was first saved"
    out = {}
    for info in fields(type(req)):
        if info.name in ("assumed", "vary"):
            continue
        if info.name in given:
            out[info.name] = given[info.name]
        elif info.name in resolved:
            out[info.name] = resolved[info.name]
        elif info.name in ("precision", "flops_convention"):
            out[info.name] = getattr(req, info.name)
    if isinstance(out.get("goodput"), str) and out["goodput"].lower() != "auto":
        out["goodput"] = float(out["goodput"]) if out["goodput"].replace(".", "", 1).isdigit() else out["goodput"]
    if defaults:
        out["assumed"] = sorted(defaults)
    return out, [defaults[k] for k in sorted(defaults)]


def save_plan(path: str, req: Any, report: Any) -> None:
    """Write the plan (every input) as TOML that `--config` reads back; defaults are listed in comments."""
    values, defaults = plan_values(req, report)
    trailer = ["# inputs that were defaults when planned (replace them with measurements):",
               *(f"#   {line}" for line in defaults)] if defaults else []
    write_config(path, values, command="train", trailer=trailer)
