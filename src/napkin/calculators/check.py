"""``napkin check``: hold a published training cost or GPU-hour figure against 6·N·D.

Seed 002's method: the compute for one run at a stated (or reference) MFU and price;
the MFU or price that would make the claim true; a verdict that never overstates; and
the list of what a production cost adds beyond one run's compute.

Every MFU is read on one part at that part's own price and peak. A cost claim alone is read
on the part named with ``--gpu`` (at ``--price``, else the lowest price its catalog source
documents); when no part is named, it says nothing of the hardware, so its verdict is read on
the most favourable part in the catalog at its lowest documented price, the default GPU's
figure at its own price beside it. A cost claim with hours (claimed GPU-hours, or GPUs × days)
is also judged against what those hours cost: a rate below the rental market is possible
(owned hardware at cost, a negotiated rate), one below an owned GPU's electricity is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators import gpu_hour as GH
from napkin.derivation import Report
from napkin.errors import InputError, NapkinError
from napkin.formulas import economics as econ
from napkin.formulas import flops as fl
from napkin.request import field
from napkin.units import DAY, HOUR, format as fmt

S = msgspec.Struct

DEFAULT_GPU = "h100-sxm"
REFERENCE_MFU = 0.40
# Above this no large dense run has published a sustained MFU (Llama 3 405B: 38–43%;
# PaLM 540B: 46%); between it and 1 a claim is implausible, above 1 impossible.
MFU_PLAUSIBLE_MAX = 0.60
# GPU-hours from GPUs × days agree with a claimed figure within this fraction.
AGREE_WITHIN = 0.10
# Seed 001's illustrative overheads (experiments 0.60 + lost 0.15 + eval 0.05 + idle 0.20)
# double the final run's compute before data and people: a model's cost is at least that.
PRODUCTION_MULTIPLE = 2.0

VERDICTS = ("consistent", "plausible only as one final run's compute", "implausible", "inconsistent")

# What a production cost adds to one run's compute (seed 002, "What that number leaves out").
OMITTED = ["failed and abandoned runs", "ablations", "data pipeline", "post-training", "salaries"]


# ----------------------------------------------------------------------- catalog prices
def gpu_hour_prices() -> dict[str, dict[str, Any]]:
    """The catalog's reference GPU-hour prices by GPU key (empty if the table is absent)."""
    try:
        table = catalog.table("prices")
    except FileNotFoundError:
        return {}
    return {k: v for k, v in table.get("gpu_hour", {}).items()
            if isinstance(v, dict) and "usd_per_gpu_hour" in v}


def reference_price(gpu_key: str) -> dict[str, Any] | None:
    """The catalog entry for this GPU's hour (usd_per_gpu_hour, date, source), or None."""
    return gpu_hour_prices().get(gpu_key)


def low_price(entry: dict[str, Any]) -> float:
    """The lowest price the entry documents (its list price if it gives no low end)."""
    return float(entry.get("low_usd_per_gpu_hour", entry["usd_per_gpu_hour"]))


@dataclass(frozen=True)
class Reading:
    """One part at one price: the hours a claimed cost buys there, and their peak."""

    key: str
    name: str
    peak: float
    price: float
    basis: str  # how the price was chosen, in words


def catalog_readings(precision: str) -> list[Reading]:
    """Every priced catalog part with a dense peak at ``precision``, at its lowest documented price."""
    out = []
    for key, entry in gpu_hour_prices().items():
        try:
            g = catalog.gpu(key)
            peak = g.peak(precision)
        except NapkinError:
            continue
        out.append(Reading(g.key, g.name, peak, low_price(entry), "the lowest price its catalog source documents"))
    return out


def _price_note(key: str, entry: dict[str, Any]) -> str:
    date = entry.get("date", "undated")
    return f"catalog reference for {key} ({date}; {entry.get('source', 'no source')})"


# -------------------------------------------------------------------------------- request
class CheckRequest(S, kw_only=True, forbid_unknown_fields=True):
    params: Annotated[float | None, field("count", "parameters N (active parameters for MoE)", gt=0)] = None
    model: Annotated[str | None, field("name", "catalog model (instead of --params; MoE uses its active count)")] = None
    tokens: Annotated[float | None, field("count", "training tokens D (default: the catalog model's)", gt=0)] = None
    claimed_usd: Annotated[float | None, field("usd", "the published cost to check", gt=0)] = None
    claimed_gpu_hours: Annotated[float | None, field("count", "the published GPU-hours to check", gt=0)] = None
    gpus: Annotated[int | None, field("int", "GPUs the run used (with --days)", gt=0)] = None
    days: Annotated[float | None, field("number", "wall-clock days the GPUs ran (with --gpus)", gt=0, unit="d")] = None
    gpu: Annotated[str | None, field("name", f"accelerator (default {DEFAULT_GPU}, stated as an assumption)")] = None
    precision: Annotated[str, field("precision", "training precision of the dense peak")] = "bf16"
    mfu: Annotated[float | None, field("fraction", f"MFU of the run (default {REFERENCE_MFU}, a reference)")] = None
    goodput: Annotated[float | None, field("fraction", "fraction of paid time making progress (default 1: the most generous reading)")] = None
    price: Annotated[float | None, field("usd_per_hour", "price of one GPU-hour (default: the catalog's)", gt=0)] = None


# ---------------------------------------------------------------------------------- checks
def _mfu_verdict(mfu: float, *, what: str, basis: str) -> tuple[str, str]:
    """Verdict on an implied MFU: inconsistent above 1, implausible above 0.6."""
    if mfu > 1.0:
        return "inconsistent", (f"{what} MFU {mfu:.2f} {basis}: more than the GPUs' dense peak, "
                                "so 6·N·D cannot fit in it")
    if mfu > MFU_PLAUSIBLE_MAX:
        return "implausible", (f"{what} MFU {mfu:.2f} {basis}: possible in principle, but no large "
                               f"dense run has published above ~{MFU_PLAUSIBLE_MAX:.1f} "
                               "(Llama 3 405B sustained 0.38–0.43)")
    return "consistent", f"{what} MFU {mfu:.2f} {basis}, not above the ~{MFU_PLAUSIBLE_MAX:.1f} that large runs reach"


def _worst(checks: list[tuple[str, str]]) -> tuple[str, str]:
    """The worst verdict, with every check's reason (the worst first)."""
    ordered = sorted(checks, key=lambda c: -VERDICTS.index(c[0]))
    return ordered[0][0], "; ".join(reason for _, reason in ordered)


def _usd_for_hours(r: Report, req: CheckRequest, g: Any, *, hours: float, hours_what: str, price: float | None,
                   implied_usd: float | None, listed: list[str]) -> tuple[str, str] | None:
    """A claimed cost beside the hours it paid for: what those hours cost on this GPU.

    The hours are the chosen GPU's, so so is the price: the one given, else the catalog's
    list price for the cost and its lowest documented price for the verdict. A claim that pays
    less than that is plausible only as one run bought below the rental market (owned hardware
    at cost: `napkin gpu-hour`); implausible only below the electricity an owned GPU draws.
    """
    if price is None or implied_usd is None:
        r.note(f"no catalog price for {g.key}: give --price to judge the claimed cost against {hours_what}")
        return None
    if req.price is not None:
        low, low_words = req.price, f"{fmt(req.price, 'usd_per_hour')} (given)"
    else:
        low = low_price(reference_price(g.key) or {"usd_per_gpu_hour": price})
        low_words = f"{fmt(low, 'usd_per_hour')}, the lowest {g.name} price its catalog source documents"
    listed.append(f"price {fmt(price, 'usd_per_hour')}" + (" (given)" if req.price is not None else
                                                          f" ({g.key} catalog list), lowest documented "
                                                          f"{fmt(low, 'usd_per_hour')}"))
    multiple = r.step("claimed_over_implied_usd", "claimed_usd / implied_usd", value=req.claimed_usd / implied_usd,
                      unit="number", claimed_usd=(req.claimed_usd, "usd"), implied_usd=(implied_usd, "usd"))
    cost = f"what {hours_what} cost at {fmt(price, 'usd_per_hour')} ({fmt(implied_usd, 'usd')})"
    if multiple >= PRODUCTION_MULTIPLE:
        return "consistent", (f"the claimed cost is {multiple:.1f}× {cost}: room for the experiments and lost work "
                              "that at least double one run (seed 001)")
    if req.claimed_usd >= hours * low * (1 - AGREE_WITHIN):
        return ("plausible only as one final run's compute",
                f"the claimed cost is {multiple:.2f}× {cost}: it pays for those hours and leaves nothing for what "
                "a production cost adds (see omitted)")
    per_hour = req.claimed_usd / hours
    floor = _power_floor(r, g)
    if floor is not None and per_hour < floor:
        return "implausible", (f"the claimed cost pays {fmt(per_hour, 'usd_per_hour')} for {hours_what}, less than "
                               f"the electricity alone of an owned {g.name} ({fmt(floor, 'usd_per_hour')}: TDP at "
                               f"`napkin gpu-hour`'s PUE {GH.DEFAULT_PUE:g} and "
                               f"{fmt(GH.DEFAULT_USD_PER_KWH, 'usd_per_kwh')}): the hours cannot have cost that little; the figure leaves the hardware out, or "
                               "the hours were not paid for")
    return ("plausible only as one final run's compute",
            f"the claimed cost pays {fmt(per_hour, 'usd_per_hour')} for {hours_what}, below {low_words}: it fits hours "
            "bought below the rental market (owned hardware at cost, see `napkin gpu-hour`, or a negotiated rate), "
            "and leaves nothing for what a production cost adds (see omitted)")


def _power_floor(r: Report, g: Any) -> float | None:
    """The least an owned GPU-hour can cost: its electricity at TDP (`napkin gpu-hour`'s defaults).

    Capital, facility and networking come on top; the catalog has no purchase prices, so the
    floor is the part of the owned hour that needs only the catalog's TDP, and never overstates.
    """
    if not g.tdp_watts:
        return None
    return r.step("power_floor_usd_per_gpu_hour", "TDP · PUE · $/kWh per hour  (an owned hour's electricity alone)",
                  value=econ.power_usd_per_hour(g.tdp_watts, pue=GH.DEFAULT_PUE, usd_per_kwh=GH.DEFAULT_USD_PER_KWH),
                  unit="usd_per_hour", TDP=(g.tdp_watts, "watts"), PUE=GH.DEFAULT_PUE,
                  usd_per_kwh=(GH.DEFAULT_USD_PER_KWH, "usd_per_kwh"))


def _usd_alone(r: Report, req: CheckRequest, g: Any, *, c: float, peak: float, price: float | None, mfu: float,
               goodput: float, listed: list[str]) -> tuple[str, str]:
    """A claimed cost with no hours: the MFU it needs, each part read at its own price and peak."""
    claimed = req.claimed_usd
    chosen_mfu = None
    if price is not None:
        hours = r.step("implied_gpu_hours", "claimed_usd / price", value=claimed / price, unit="count",
                       claimed_usd=(claimed, "usd"), price=(price, "usd_per_hour"))
        chosen_mfu = r.step("implied_mfu", "C / (implied_gpu_hours · 3600 s/h · peak · goodput)",
                            value=econ.implied_mfu(c, gpu_hours=hours, dense_flops_per_s=peak, goodput=goodput),
                            unit="fraction", C=(c, "flops"), peak=(peak, "flops_per_s"), goodput=goodput,
                            note=f"{g.name} at its own price")
    # the verdict's reading: the price given pins it; a named GPU at the lowest price its catalog source
    # documents; with neither, the most favourable part in the catalog (never overstate)
    readings = catalog_readings(req.precision)
    best = min(readings, key=lambda x: x.price / x.peak) if readings else None
    if req.price is not None:
        v = Reading(g.key, g.name, peak, req.price, "given")
        v_words = f"on {g.name} at {fmt(req.price, 'usd_per_hour')} (given)"
    elif req.gpu is not None:
        entry = reference_price(g.key)
        if entry is None:
            raise InputError("price", "nothing", f"is required to judge the claimed cost on the {g.name}: the "
                             "catalog has no GPU-hour price for it",
                             "give --price 2/h, or drop --gpu to read the claim on the most favourable catalog part")
        v = Reading(g.key, g.name, peak, low_price(entry), "the lowest price its catalog source documents")
        v_words = f"on {g.name} (as named) at {fmt(v.price, 'usd_per_hour')} ({v.basis})"
    elif best is not None:
        v = best
        v_words = (f"on {best.name} (the most favourable part in the catalog) at "
                   f"{fmt(best.price, 'usd_per_hour')} ({best.basis})")
    else:
        raise InputError("price", "nothing", "is required: the catalog has no GPU-hour prices",
                         "give --price 2.50/h")
    # the most favourable catalog reading, beside the verdict's when it reads the claim more generously
    if best is not None and best is not v and best.price / best.peak >= v.price / v.peak:
        best = None  # the verdict's reading is already the more generous: nothing to add
    if best is not None:
        r.set("most_favourable_gpu", best.key)
        r.set("most_favourable_usd_per_gpu_hour", best.price, "usd_per_hour")
        r.assume("most_favourable_usd_per_gpu_hour", best.price,
                 f"{best.key}: {best.basis}: " + _price_note(best.key, reference_price(best.key) or {}),
                 unit="usd_per_hour", basis="catalog")
        r.step("most_favourable_implied_mfu", "C · price / (claimed_usd · 3600 s/h · peak · goodput)",
               value=econ.implied_mfu_for_usd(c, claimed_usd=claimed, usd_per_gpu_hour=best.price,
                                              dense_flops_per_s=best.peak, goodput=goodput),
               unit="fraction", C=(c, "flops"), price=(best.price, "usd_per_hour"), claimed_usd=(claimed, "usd"),
               peak=(best.peak, "flops_per_s"), goodput=goodput, note=f"{best.name}, {best.basis}")
    listed.insert(0, f"{v.name} dense {req.precision} peak {fmt(v.peak, 'flops_per_s')}")
    listed.append(f"price {fmt(v.price, 'usd_per_hour')} for {v.name}" + (" (given)" if v.basis == "given"
                                                                            else f", {v.basis}"))
    vmfu = econ.implied_mfu_for_usd(c, claimed_usd=claimed, usd_per_gpu_hour=v.price, dense_flops_per_s=v.peak,
                                    goodput=goodput)
    verdict, reason = _mfu_verdict(vmfu, what="the claimed cost needs", basis=v_words)
    if verdict == "consistent":
        one_run = econ.gpu_hours_for_flops(c, dense_flops_per_s=v.peak, mfu=mfu, goodput=goodput) * v.price
        multiple = r.step("claimed_over_compute", "claimed_usd / (one run at MFU, on the verdict's part and price)",
                          value=claimed / one_run, unit="number", compute=(one_run, "usd"), MFU=mfu,
                          note=f"{v.name} at {fmt(v.price, 'usd_per_hour')}")
        listed.append(f"MFU {mfu:.2f} ({'given' if req.mfu is not None else 'reference'})")
        if multiple >= PRODUCTION_MULTIPLE:
            verdict = "consistent"
            reason = (f"{reason}, and the claim is {multiple:.1f}× one run's compute there at MFU {mfu:.2f}: room "
                      "for the experiments and lost work that at least double it (seed 001)")
        else:
            verdict = "plausible only as one final run's compute"
            reason = (f"{reason}, but it is {multiple:.2f}× one run's compute there at MFU {mfu:.2f}: it leaves "
                      "nothing for what a production cost adds (see omitted)")
    if chosen_mfu is not None and (v.key != g.key or v.price != price):
        reason += f"; on {g.name} at its own {fmt(price, 'usd_per_hour')} it would need MFU {chosen_mfu:.2f}"
    if best is not None and best is not v:
        best_mfu = econ.implied_mfu_for_usd(c, claimed_usd=claimed, usd_per_gpu_hour=best.price,
                                            dense_flops_per_s=best.peak, goodput=goodput)
        if best_mfu < vmfu:
            reason += (f"; the most favourable catalog reading, {best.name} at {fmt(best.price, 'usd_per_hour')} "
                       f"({best.basis}), would need MFU {best_mfu:.2f}")
    return verdict, reason


def run_check(req: CheckRequest) -> Report:
    r = Report("Check", command="check")
    checks: list[tuple[str, str]] = []
    listed: list[str] = []  # the assumptions the verdict rests on, in words

    # ---- what was given: the model, the claim, the span
    n = None
    if req.params is not None:
        n = req.params
        if req.model is not None:  # still a name that must exist: a typo is not silently ignored
            given = catalog.model(req.model)
            r.note(f"--params {fmt(n, 'count')} replaces {given.name}'s {fmt(given.active_params, 'count')} "
                   f"{'active ' if given.is_moe else ''}parameters")
    elif req.model is not None:
        m = catalog.model(req.model)
        n = m.active_params
        if m.is_moe:
            r.note(f"{m.name} is a mixture of experts: 6·N·D uses its {fmt(n, 'count')} active parameters, "
                   f"not its {fmt(m.params, 'count')} total")
    d = req.tokens
    if d is None and req.model is not None and n is not None:
        d = catalog.model(req.model).training_tokens or None
        if d:
            r.assume("tokens", d, "the catalog model's published training tokens", unit="count", basis="catalog")
    if (n is None) != (d is None):
        raise InputError("tokens" if d is None else "params", "nothing", "is required",
                         "give both --params N (or --model) and --tokens D")
    if (req.gpus is None) != (req.days is None):
        missing = "days" if req.days is None else "gpus"
        raise InputError(missing, "nothing", "is required with --" + ("gpus" if missing == "days" else "days"),
                         "give both --gpus N and --days N")
    if n is not None:
        r.set("params", n, "count")
        r.set("tokens", d, "count")
    if req.claimed_usd is not None:
        r.set("claimed_usd", req.claimed_usd, "usd")
    if req.claimed_gpu_hours is not None:
        r.set("claimed_gpu_hours", req.claimed_gpu_hours, "count")

    # ---- GPU-hours from GPUs × days, and their agreement with a claimed figure
    span_hours = None
    if req.gpus is not None and req.days is not None:
        r.set("gpus", req.gpus, "count")
        r.set("wall_s", req.days * DAY, "seconds")
        span_hours = r.step("gpu_hours_from_span", "GPUs · days · 24 h",
                            value=econ.gpu_hours_from_span(req.gpus, seconds=req.days * DAY), unit="count",
                            GPUs=req.gpus, days=req.days)
        listed.append(f"{req.gpus:,} GPUs allocated for all {req.days:g} days")
    if span_hours is not None and req.claimed_gpu_hours is not None:
        ratio = r.step("claimed_over_span", "claimed_gpu_hours / gpu_hours_from_span",
                       value=req.claimed_gpu_hours / span_hours, unit="number",
                       claimed_gpu_hours=(req.claimed_gpu_hours, "count"), gpu_hours_from_span=(span_hours, "count"))
        agree = abs(ratio - 1.0) <= AGREE_WITHIN
        r.set("gpu_hours_agree", agree)
        listed.append(f"agreement within {AGREE_WITHIN:.0%}")
        if agree:
            checks.append(("consistent", f"the claimed GPU-hours are {ratio:.2f}× GPUs × days"))
        elif ratio > 1:
            checks.append(("inconsistent",
                           f"the claimed GPU-hours are {ratio:.2f}× what {req.gpus:,} GPUs supply in {req.days:g} "
                           "days: the two figures cannot describe the same span of one run (the run was longer, "
                           "or used more GPUs, than stated)"))
        else:
            checks.append(("consistent",
                           f"the claimed GPU-hours are {ratio:.2f}× GPUs × days: possible if GPUs sat idle or "
                           "the run took part of the span"))

    if n is None:
        if span_hours is None or req.claimed_gpu_hours is None:
            raise InputError("params", "nothing", "is required to check a cost",
                             "give --params N and --tokens D, or --gpus N --days N --claimed-gpu-hours H")
        if req.claimed_usd is not None:
            raise InputError("params", "nothing", "is required to check --claimed-usd",
                             "give --params N and --tokens D")
    else:
        g = catalog.gpu(req.gpu or DEFAULT_GPU)
        if req.gpu is None:
            r.assume("gpu", g.key, "no --gpu given: the reference accelerator", basis="assumed")
        r.set("gpu", g.key)
        c = r.step("train_flops", "6 · N · D", value=fl.train_flops(n, n_tokens=d), unit="flops",
                   N=(n, "count"), D=(d, "count"))
        peak = g.peak(req.precision)
        r.assume("dense_flops_per_s", peak, f"{g.name} dense {req.precision} peak ({g.source})",
                 unit="flops_per_s", basis="catalog")
        mfu = req.mfu if req.mfu is not None else REFERENCE_MFU
        if req.mfu is None:
            r.assume("mfu", mfu, "reference MFU of a large dense run (Llama 3 405B: 0.38–0.43), not the claim's own",
                     unit="fraction", basis="reference")
        else:
            r.assume("mfu", mfu, "given", unit="fraction", basis="given")
        goodput = req.goodput if req.goodput is not None else 1.0
        if req.goodput is None:
            r.assume("goodput", goodput, "every paid hour makes progress: the most generous reading of a claim",
                     unit="fraction", basis="assumed")
        else:
            r.assume("goodput", goodput, "given", unit="fraction", basis="given")
            listed.append(f"goodput {goodput:.2f}")
        if goodput == 1.0:
            listed.append("every paid hour productive (goodput 1)")

        price = req.price
        if price is None:
            ref = reference_price(g.key)
            if ref is not None:
                price = float(ref["usd_per_gpu_hour"])
                r.assume("price", price, _price_note(g.key, ref), unit="usd_per_hour", basis="catalog")
        else:
            r.assume("price", price, "given", unit="usd_per_hour", basis="given")

        gh = r.step("gpu_hours_at_mfu", "C / (peak · MFU · goodput · 3600 s/h)",
                    value=econ.gpu_hours_for_flops(c, dense_flops_per_s=peak, mfu=mfu, goodput=goodput),
                    unit="count", C=(c, "flops"), peak=(peak, "flops_per_s"), MFU=mfu, goodput=goodput)
        if price is not None:
            r.step("compute_usd", "gpu_hours_at_mfu · price", value=gh * price, unit="usd",
                   price=(price, "usd_per_hour"))

        hours = req.claimed_gpu_hours if req.claimed_gpu_hours is not None else span_hours
        if hours is not None:
            listed.insert(0, f"{g.name} dense {req.precision} peak {fmt(peak, 'flops_per_s')}")
            source = "claimed_gpu_hours" if req.claimed_gpu_hours is not None else "gpu_hours_from_span"
            what = "the claimed GPU-hours need" if req.claimed_gpu_hours is not None else "GPUs × days need"
            imfu = r.step("implied_mfu", f"C / ({source} · 3600 s/h · peak · goodput)",
                          value=econ.implied_mfu(c, gpu_hours=hours, dense_flops_per_s=peak, goodput=goodput),
                          unit="fraction", C=(c, "flops"), gpu_hours=(hours, "count"), peak=(peak, "flops_per_s"),
                          goodput=goodput)
            checks.append(_mfu_verdict(imfu, what=what, basis=f"on {g.name} at {req.precision}"))
            if imfu < 0.2:
                r.note(f"implied MFU {imfu:.2f} is low: the hours cover more than this run's 6·N·D "
                       "(other runs, idle capacity, long restarts) or the run was inefficient")
            implied_usd = None
            if price is not None:
                implied_usd = r.step("implied_usd", f"{source} · price", value=hours * price, unit="usd",
                                     price=(price, "usd_per_hour"))
            if req.precision in ("bf16", "fp16") and g.supports("fp8"):
                r.note(f"MFU against the {req.precision} peak; a run that computed in fp8 has twice the peak and "
                       "half this MFU (--precision fp8)")
            if req.claimed_usd is not None:
                r.step("implied_usd_per_gpu_hour", f"claimed_usd / {source}",
                       value=econ.implied_usd_per_gpu_hour(req.claimed_usd, gpu_hours=hours), unit="usd_per_hour")
                hours_what = ("the claimed GPU-hours" if req.claimed_gpu_hours is not None
                              else f"{req.gpus:,} GPUs for {req.days:g} days")
                check = _usd_for_hours(r, req, g, hours=hours, hours_what=hours_what, price=price,
                                       implied_usd=implied_usd, listed=listed)
                if check is not None:
                    checks.append(check)
        elif req.claimed_usd is not None:
            r.step("implied_usd_per_gpu_hour", "claimed_usd / gpu_hours_at_mfu",
                   value=econ.implied_usd_per_gpu_hour(req.claimed_usd, gpu_hours=gh), unit="usd_per_hour",
                   claimed_usd=(req.claimed_usd, "usd"), MFU=mfu)
            checks.append(_usd_alone(r, req, g, c=c, peak=peak, price=price, mfu=mfu, goodput=goodput,
                                     listed=listed))

    if not checks:
        raise InputError("claimed_usd", "nothing", "is required: there is no claim to check",
                         "give --claimed-usd, --claimed-gpu-hours, or --gpus and --days")
    verdict, reason = _worst(checks)
    r.set("verdict", verdict)
    r.set("verdict_reason", reason)
    r.set("verdict_assumptions", listed)
    r.set("omitted", list(OMITTED))
    r.title = _title(n, d, req)
    return r


def _title(n: float | None, d: float | None, req: CheckRequest) -> str:
    parts = []
    if n is not None and d is not None:
        parts.append(f"{fmt(n, 'count')} params on {fmt(d, 'count')} tokens")
    if req.gpus is not None and req.days is not None:
        parts.append(f"{req.gpus:,} GPUs for {req.days:g} days")
    claims = []
    if req.claimed_usd is not None:
        claims.append(fmt(req.claimed_usd, "usd"))
    if req.claimed_gpu_hours is not None:
        claims.append(f"{fmt(req.claimed_gpu_hours, 'count')} GPU-hours")
    head = "Check: " + ", ".join(parts)
    return head + (f"; claimed {' and '.join(claims)}" if claims else "")


CHECK = Calculator(
    "check", CheckRequest, run_check, "Check a claim",
    "Check a published training cost or GPU-hour figure against 6·N·D: implied MFU and price, and a verdict.",
    establishes="whether a published figure can be one run's compute, and the MFU or price it implies",
    needs_measuring="the run's own MFU, goodput and price, which only its authors know",
)
