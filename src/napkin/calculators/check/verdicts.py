"""The verdicts of `napkin check`: an implied MFU, a claimed cost beside its hours, a cost with no hours.

A verdict never overstates: each MFU is read on one part at that part's own price and peak,
and a price below the rental market is judged against the electricity alone of an owned GPU
(`napkin gpu-hour`'s PUE and $/kWh, from catalog/assumptions.toml).
"""

from __future__ import annotations

from typing import Any

from napkin import catalog
from napkin.calculators.resolve import warn_if_stale_price
from napkin.calculators.check.readings import Reading, catalog_readings, price_note
from napkin.calculators.check.request import (AGREE_WITHIN, MFU_PLAUSIBLE_MAX, PRODUCTION_MULTIPLE, VERDICTS,
                                              CheckRequest)
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import economics as econ
from napkin.units import format as fmt


# ---------------------------------------------------------------------------------- checks
def mfu_verdict(mfu: float, *, what: str, basis: str) -> tuple[str, str]:
    """Verdict on an implied MFU: inconsistent above 1, implausible above 0.6.

    The MFU is written as a percentage to the digits that tell it from 100% (100.4%, never "100%"
    beside "more than the dense peak").
    """
    shown, limit = fmt(mfu, "fraction"), fmt(MFU_PLAUSIBLE_MAX, "fraction")
    if mfu > 1.0:
        return "inconsistent", (f"{what} MFU {shown} {basis}: more than the GPUs' dense peak, "
                                "so 6·N·D cannot fit in it")
    if mfu > MFU_PLAUSIBLE_MAX:
        return "implausible", (f"{what} MFU {shown} {basis}: possible in principle, but no large "
                               f"dense run has published above ~{limit} "
                               "(Llama 3 405B sustained 38–43%)")
    return "consistent", f"{what} MFU {shown} {basis}, not above the ~{limit} that large runs reach"


def worst(checks: list[tuple[str, str]]) -> tuple[str, str]:
    """The worst verdict, with every check's reason (the worst first)."""
    ordered = sorted(checks, key=lambda c: -VERDICTS.index(c[0]))
    return ordered[0][0], "; ".join(reason for _, reason in ordered)


def usd_for_hours(r: Report, req: CheckRequest, g: Any, *, hours: float, hours_what: str, price: float | None,
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
        ref = catalog.gpu_hour_price(g.key)
        low = ref.low if ref is not None else price
        low_words = f"{fmt(low, 'usd_per_hour')}, the lowest {g.name} price its catalog source documents"
    listed.append(f"price {fmt(price, 'usd_per_hour')}" + (" (given)" if req.price is not None else
                                                          f" ({g.key} catalog list), lowest documented "
                                                          f"{fmt(low, 'usd_per_hour')}"))
    multiple = r.step("claimed_over_implied_usd", "claimed_usd / implied_usd", value=req.claimed_usd / implied_usd,
                      unit="number", claimed_usd=(req.claimed_usd, "usd"), implied_usd=(implied_usd, "usd"))
    cost = f"what {hours_what} cost at {fmt(price, 'usd_per_hour')} ({fmt(implied_usd, 'usd')})"
    if multiple >= PRODUCTION_MULTIPLE:
        return "consistent", (f"the claimed cost is {multiple:.1f}× {cost}: room for the experiments and lost work "
                              "that at least double one run (see omitted)")
    if req.claimed_usd >= hours * low * (1 - AGREE_WITHIN):
        return ("plausible only as one final run's compute",
                f"the claimed cost is {multiple:.2f}× {cost}: it pays for those hours and leaves nothing for what "
                "a production cost adds (see omitted)")
    per_hour = req.claimed_usd / hours
    floor = power_floor(r, g)
    if floor is not None and per_hour < floor:
        return "implausible", (f"the claimed cost pays {fmt(per_hour, 'usd_per_hour')} for {hours_what}, less than "
                               f"the electricity alone of an owned {g.name} ({fmt(floor, 'usd_per_hour')}: TDP at "
                               f"`napkin gpu-hour`'s PUE {catalog.default_value('pue'):g} and "
                               f"{fmt(catalog.default_value('usd_per_kwh'), 'usd_per_kwh')}): the hours cannot have "
                               "cost that little; the figure leaves the hardware out, or the hours were not paid for")
    return ("plausible only as one final run's compute",
            f"the claimed cost pays {fmt(per_hour, 'usd_per_hour')} for {hours_what}, below {low_words}: it fits hours "
            "bought below the rental market (owned hardware at cost, see `napkin gpu-hour`, or a negotiated rate), "
            "and leaves nothing for what a production cost adds (see omitted)")


def power_floor(r: Report, g: Any) -> float | None:
    """The least an owned GPU-hour can cost: its electricity at TDP (`napkin gpu-hour`'s defaults).

    Capital, facility and networking come on top; the catalog has no purchase prices, so the
    floor is the part of the owned hour that needs only the catalog's TDP, and never overstates.
    """
    if not g.tdp_watts:
        return None
    pue, kwh = catalog.default_value("pue"), catalog.default_value("usd_per_kwh")
    return r.step("power_floor_usd_per_gpu_hour", "TDP · PUE · $/kWh per hour  (an owned hour's electricity alone)",
                  value=econ.power_usd_per_hour(g.tdp_watts, pue=pue, usd_per_kwh=kwh),
                  unit="usd_per_hour", TDP=(g.tdp_watts, "watts"), PUE=pue, usd_per_kwh=(kwh, "usd_per_kwh"),
                  cites=econ.power_usd_per_hour)


def usd_alone(r: Report, req: CheckRequest, g: Any, *, c: float, peak: float, price: float | None, mfu: float,
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
                            note=f"{g.name} at its own price", cites=econ.implied_mfu)
    # the verdict's reading: the price given pins it; a named GPU at the lowest price its catalog source
    # documents; with neither, the most favourable part in the catalog (never overstate)
    readings = catalog_readings(req.precision)
    best = min(readings, key=lambda x: x.price / x.peak) if readings else None
    if req.price is not None:
        v = Reading(g.key, g.name, peak, req.price, "given")
        v_words = f"on {g.name} at {fmt(req.price, 'usd_per_hour')} (given)"
    elif req.gpu is not None:
        entry = catalog.gpu_hour_price(g.key)
        if entry is None:
            raise InputError("price", "nothing", f"is required to judge the claimed cost on the {g.name}: the "
                             "catalog has no GPU-hour price for it",
                             "give --price 2/h, or drop --gpu to read the claim on the most favourable catalog part")
        v = Reading(g.key, g.name, peak, entry.low, "the lowest price its catalog source documents")
        v_words = f"on {g.name} (as named) at {fmt(v.price, 'usd_per_hour')} ({v.basis})"
    elif best is not None:
        v = best
        v_words = (f"on {best.name} (the most favourable part in the catalog) at "
                   f"{fmt(best.price, 'usd_per_hour')} ({best.basis})")
    else:
        raise InputError("price", "nothing", "is required: the catalog has no GPU-hour prices",
                         "give --price 2.50/h")
    if v.basis != "given" and v.key in catalog.gpu_hour_prices():
        warn_if_stale_price(r, catalog.gpu_hour_prices()[v.key], f"the {v.name}")
    # the most favourable catalog reading, beside the verdict's when it reads the claim more generously
    if best is not None and best is not v and best.price / best.peak >= v.price / v.peak:
        best = None  # the verdict's reading is already the more generous: nothing to add
    if best is not None:
        _most_favourable(r, best, c=c, claimed=claimed, goodput=goodput)
    listed.insert(0, f"{v.name} dense {req.precision} peak {fmt(v.peak, 'flops_per_s')}")
    listed.append(f"price {fmt(v.price, 'usd_per_hour')} for {v.name}" + (" (given)" if v.basis == "given"
                                                                            else f", {v.basis}"))
    vmfu = econ.implied_mfu_for_usd(c, claimed_usd=claimed, usd_per_gpu_hour=v.price, dense_flops_per_s=v.peak,
                                    goodput=goodput)
    if chosen_mfu is None or v.key != g.key or v.price != price:  # the verdict's own figure, in the table too
        r.step("verdict_implied_mfu", "C · price / (claimed_usd · 3600 s/h · peak · goodput)", value=vmfu,
               unit="fraction", C=(c, "flops"), price=(v.price, "usd_per_hour"), claimed_usd=(claimed, "usd"),
               peak=(v.peak, "flops_per_s"), goodput=goodput, note=f"the verdict's reading: {v_words}",
               cites=econ.implied_mfu_for_usd)
    verdict, reason = mfu_verdict(vmfu, what="the claimed cost needs", basis=v_words)
    if verdict == "consistent":
        one_run = econ.gpu_hours_for_flops(c, dense_flops_per_s=v.peak, mfu=mfu, goodput=goodput) * v.price
        multiple = r.step("claimed_over_compute", "claimed_usd / (one run at MFU, on the verdict's part and price)",
                          value=claimed / one_run, unit="number", compute=(one_run, "usd"), MFU=mfu,
                          note=f"{v.name} at {fmt(v.price, 'usd_per_hour')}")
        listed.append(f"MFU {fmt(mfu, 'fraction')} ({'given' if req.mfu is not None else 'reference'})")
        if multiple >= PRODUCTION_MULTIPLE:
            verdict = "consistent"
            reason = (f"{reason}, and the claim is {multiple:.1f}× one run's compute there at MFU "
                      f"{fmt(mfu, 'fraction')}: room for the experiments and lost work that at least double it "
                      "(see omitted)")
        else:
            verdict = "plausible only as one final run's compute"
            reason = (f"{reason}, but it is {multiple:.2f}× one run's compute there at MFU {fmt(mfu, 'fraction')}: "
                      "it leaves nothing for what a production cost adds (see omitted)")
    if chosen_mfu is not None and (v.key != g.key or v.price != price):
        reason += (f"; on {g.name} at its own {fmt(price, 'usd_per_hour')} it would need MFU "
                   f"{fmt(chosen_mfu, 'fraction')}")
    if best is not None and best is not v:
        best_mfu = econ.implied_mfu_for_usd(c, claimed_usd=claimed, usd_per_gpu_hour=best.price,
                                            dense_flops_per_s=best.peak, goodput=goodput)
        if best_mfu < vmfu:
            reason += (f"; the most favourable catalog reading, {best.name} at {fmt(best.price, 'usd_per_hour')} "
                       f"({best.basis}), would need MFU {fmt(best_mfu, 'fraction')}")
    return verdict, reason


def _most_favourable(r: Report, best: Reading, *, c: float, claimed: float, goodput: float) -> None:
    """The most favourable catalog reading of a claimed cost: its part, price and the MFU it needs there."""
    r.set("most_favourable_gpu", best.key)
    r.set("most_favourable_usd_per_gpu_hour", best.price, "usd_per_hour")
    r.assume("most_favourable_usd_per_gpu_hour", best.price,
             f"{best.key}: {best.basis}: " + price_note(best.key, catalog.gpu_hour_prices()[best.key]),
             unit="usd_per_hour", basis="catalog")
    r.step("most_favourable_implied_mfu", "C · price / (claimed_usd · 3600 s/h · peak · goodput)",
           value=econ.implied_mfu_for_usd(c, claimed_usd=claimed, usd_per_gpu_hour=best.price,
                                          dense_flops_per_s=best.peak, goodput=goodput),
           unit="fraction", C=(c, "flops"), price=(best.price, "usd_per_hour"), claimed_usd=(claimed, "usd"),
           peak=(best.peak, "flops_per_s"), goodput=goodput, note=f"{best.name}, {best.basis}",
           cites=econ.implied_mfu_for_usd)
