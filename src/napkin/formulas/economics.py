"""Money beyond the final run: the loaded GPU-hour, the useful spot hour, amortisation
over served tokens, and what a published claim implies about MFU and price.

Every function takes floats or numpy arrays (no ``if`` on values).
"""

from __future__ import annotations

from typing import Any

from napkin.units import HOUR, KWH_J, MILLION, YEAR

HOURS_PER_YEAR = YEAR / HOUR  # 8,760


# ------------------------------------------------------------------ the loaded GPU-hour
def capital_usd_per_hour(capex_usd: Any, *, years: Any, residual_fraction: Any = 0.0) -> Any:
    """capital/h = capex · (1 − residual) / (years · 8,760 h)

    Straight-line depreciation over every calendar hour of the GPU's life.
    Trap: spreading capex over the hours the GPU is busy only, or over a life longer
    than the part stays competitive (3–5 years is usual); no cost of capital is included.
    Source: reasoning: straight-line depreciation of the purchase over every hour of the service
    life.
    """
    return capex_usd * (1.0 - residual_fraction) / (years * HOURS_PER_YEAR)


def power_usd_per_hour(watts: Any, *, pue: Any, usd_per_kwh: Any) -> Any:
    """power/h = watts · 1 h / 3.6e6 J/kWh · PUE · $/kWh

    PUE (power usage effectiveness) scales the GPU's draw to the facility's, cooling included.
    Trap: the GPU's TDP alone; the host (CPUs, NICs, fans) adds roughly as much again per
    GPU in a server, and cooling adds PUE − 1 on top.
    Source: The Green Grid, White Paper 49, PUE: A Comprehensive Examination of the Metric (2012); 1
    kWh = 3.6e6 J; TDP from the part's datasheet (H100 SXM: 700 W).
    """
    return watts * HOUR / KWH_J * pue * usd_per_kwh


def per_year_usd_per_hour(usd_per_year: Any) -> Any:
    """cost/h = usd_per_gpu_year / 8,760 h

    Facility, networking, support, storage: yearly costs per GPU spread over every hour.
    Trap: leaving them out; list prices without them understate the loaded hour.
    Source: reasoning: a yearly cost spread over its 8,760 hours.
    """
    return usd_per_year / HOURS_PER_YEAR


def loaded_usd_per_gpu_hour(usd_per_calendar_hour: Any, *, utilization: Any) -> Any:
    """usd_per_used_hour = usd_per_calendar_hour / utilisation

    The fleet is paid for every hour of the year; only the used hours carry work.
    Trap: pricing a used hour at the calendar rate; at 80% utilisation every useful
    hour costs 25% more.
    Source: reasoning: the year's hours are paid for whether they carry work or not; e.g. at 80%
    utilisation a used hour costs 1 / 0.8 = 1.25 calendar hours.
    """
    return usd_per_calendar_hour / utilization


def useful_usd_per_hour(usd_per_hour: Any, *, goodput: Any) -> Any:
    """useful $/h = price / goodput

    Preemptible capacity is cheaper per hour but loses work to preemptions and restarts;
    the hour that makes progress is what a run buys.
    Trap: comparing a spot list price with an on-demand one directly.
    Source: reasoning: only the hours that make progress buy training; e.g. $1.20/h at goodput 0.7
    is $1.71 per useful hour.
    """
    return usd_per_hour / goodput


def breakeven_utilization(utilization: Any, *, owned_usd_per_hour: Any, rental_usd_per_hour: Any) -> Any:
    """u* = u · owned / rental   (the utilisation at which an owned hour costs what a rented one does)

    The owned used hour is the calendar cost over utilisation, so it equals the rental price
    at u* = calendar cost / rental = u · owned / rental, for an owned price figured at u.
    Above 1, owning costs more even fully used.
    Trap: comparing the owned price at 100% utilisation with a rental price: idle hours are
    paid for too, and a fleet that is 60% busy pays 1.67 calendar hours per used one.
    Source: reasoning: loaded_usd_per_gpu_hour solved for the utilisation at the rental price.
    """
    return utilization * (owned_usd_per_hour / rental_usd_per_hour)


def spot_breakeven_goodput(spot_usd_per_hour: Any, *, on_demand_usd_per_hour: Any) -> Any:
    """goodput* = spot / on-demand   (below it, preemptible hours cost more per useful hour)

    A preemptible hour at goodput g costs spot / g per useful hour; an on-demand hour,
    taken as fully useful, costs its price. They are equal at g = spot / on-demand.
    Trap: taking the spot discount at face value when preemptions cut goodput below it.
    Source: reasoning: useful_usd_per_hour set equal to the on-demand price.
    """
    return spot_usd_per_hour / on_demand_usd_per_hour


# --------------------------------------------------------------------------- amortisation
def amortised_usd_per_million(training_usd: Any, *, served_tokens: Any) -> Any:
    """amortised $/M served = loaded training cost / served tokens · 1e6

    Trap: amortising the marginal (final-run) cost; the loaded figure is what was spent.
    Source: reasoning: the training bill over the tokens served, per million; e.g. $387,679 over
    500B served tokens: $0.78/M, over 50T: under a cent.
    """
    return training_usd / served_tokens * MILLION


# -------------------------------------------------------------------------- checking claims
def gpu_hours_for_flops(train_flops: Any, *, dense_flops_per_s: Any, mfu: Any, goodput: Any = 1.0) -> Any:
    """gpu_hours = C / (peak · MFU · goodput · 3600)

    Trap: a sparse or wrong-precision peak, which makes the hours look half as many.
    Source: Narayanan et al. 2021 (arXiv:2104.04473), section 5.1 (time = FLOPs / (GPUs · achieved
    FLOP/s)), in GPU-hours.
    """
    return train_flops / (dense_flops_per_s * mfu * goodput * HOUR)


def gpu_hours_from_span(n_gpus: Any, *, seconds: Any) -> Any:
    """gpu_hours = GPUs · wall seconds / 3600

    Trap: allocated GPUs are paid for whether or not each one is busy.
    Source: reasoning: allocated GPUs times the wall clock; e.g. Dubey et al. 2024
    (arXiv:2407.21783), section 3.3.4: 16,384 H100s over a 54-day snapshot.
    """
    return n_gpus * seconds / HOUR


def implied_mfu(train_flops: Any, *, gpu_hours: Any, dense_flops_per_s: Any, goodput: Any = 1.0) -> Any:
    """MFU_implied = C / (gpu_hours · 3600 · peak · goodput)

    The MFU the claimed hours would need while the job makes progress. With goodput 1
    it is the average over every paid hour, restarts included: a lower bound on the
    MFU of the running job.
    Trap: above 1 the claim is impossible at that peak; above ~0.6 nobody has published
    a large dense run sustaining it (Llama 3 405B: 38–43%).
    Source: Chowdhery et al. 2022, PaLM (arXiv:2204.02311), appendix B, solved for MFU; Dubey et al.
    2024 (arXiv:2407.21783), table 4: 38-43% on Llama 3 405B.
    """
    return train_flops / (gpu_hours * HOUR * dense_flops_per_s * goodput)


def implied_usd_per_gpu_hour(claimed_usd: Any, *, gpu_hours: Any) -> Any:
    """price_implied = claimed_usd / gpu_hours

    Trap: comparing it with an on-demand list price; owned or reserved capacity is cheaper
    per hour and a loaded price is dearer.
    Source: reasoning: the claimed cost over the hours it paid for.
    """
    return claimed_usd / gpu_hours


def implied_mfu_for_usd(train_flops: Any, *, claimed_usd: Any, usd_per_gpu_hour: Any, dense_flops_per_s: Any,
                        goodput: Any = 1.0) -> Any:
    """MFU_implied = C · price / (claimed_usd · 3600 · peak · goodput)

    The MFU a claimed cost needs on one part: the hours the money buys at that part's
    price (claimed_usd / price), each delivering that part's peak.
    Trap: pairing one part's price with another part's peak (the cheapest hour in a
    catalog is an old GPU's, whose FLOP/s are a third of a new one's).
    Source: implied_mfu over the hours the money buys at that part's price (claimed_usd / price);
    Chowdhery et al. 2022 (arXiv:2204.02311), appendix B.
    """
    return implied_mfu(train_flops, gpu_hours=claimed_usd / usd_per_gpu_hour, dense_flops_per_s=dense_flops_per_s,
                       goodput=goodput)
