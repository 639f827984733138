"""A training plan's energy and power, read as household-years, and the compute thresholds it crosses.

Energy counts the GPU boards at TDP for the run's GPU-hours, times PUE (1.0 unless given);
power is the whole cluster at once, in watts (a megawatt figure for a large run). Household
years divide the energy by a US household's yearly electricity (EIA). A run's FLOPs beside the
thresholds that regulation has drawn are noted, with what each one is and whether it stands.
"""

from __future__ import annotations

import math
from typing import Any

from napkin import catalog
from napkin.calculators.resolve import given_or_default
from napkin.derivation import Report
from napkin.formulas import energy as en
from napkin.hardware import Accelerator
from napkin.units import KWH_J

# (FLOPs, what the line is, whether it stands) -- the run's own 6·N·D is compared with each
THRESHOLDS = (
    (1e25, "the EU AI Act's presumption of systemic risk for a general-purpose AI model (Regulation (EU) "
           "2024/1689, Article 51(2): cumulative training compute above 10^25 FLOPs; obligations apply from "
           "2 August 2025); it counts all the compute used to train the model, of which this run is a part"),
    (1e26, "the reporting line of the 2023 US executive order on AI (EO 14110, section 4.2, with the line of 4.2(b): models trained with "
           "more than 10^26 operations reported to the government); rescinded on 20 January 2025 (EO 14148), so "
           "it no longer applies"),
)


def energy(r: Report, req: Any, g: Accelerator | None, hours: float, n_gpus: int | None) -> None:
    """Energy of the final run with the GPUs at TDP, times PUE; the cluster's power; household-years."""
    if g is None or not g.tdp_watts:
        r.note("energy needs a catalog --gpu (its TDP)")
        return
    pue = given_or_default(r, "pue", req.pue, "energy_pue", given_note="as given")
    kwh = r.step("energy_kwh", "gpu_hours · TDP · PUE / 1000  (kWh)",
                 value=en.gpu_energy_kwh(hours, tdp_watts=g.tdp_watts, pue=pue), unit=None,
                 gpu_hours=(hours, "count"), TDP=(g.tdp_watts, "watts"), PUE=pue, cites=en.gpu_energy_kwh)
    if n_gpus is not None:
        r.step("cluster_power_w", "gpus · TDP · PUE", value=en.cluster_power_watts(n_gpus, tdp_watts=g.tdp_watts,
               pue=pue), unit="watts", gpus=n_gpus, TDP=(g.tdp_watts, "watts"), PUE=pue,
               cites=en.cluster_power_watts)
    house = catalog.default("household_energy_per_year")
    r.assume("household_energy_per_year", house.value, house.note, unit="joules", basis="catalog",
             source=house.source, replaced_by=house.replaced_by)
    r.step("energy_household_years", "energy_kwh / a US household's kWh in a year",
           value=en.household_years(kwh, kwh_per_household_year=house.value / KWH_J), unit="count",
           household_kwh_per_year=house.value / KWH_J, cites=en.household_years)
    r.note("energy counts the GPUs at TDP (an upper bound on board power) times PUE; host CPUs, network and "
           "storage are not in it")


def thresholds(r: Report, train_flops: float) -> None:
    """A note for each regulatory compute threshold the run's FLOPs cross."""
    from napkin.units import format as fmt

    for line, what in THRESHOLDS:
        if train_flops > line:
            r.note(f"training compute {fmt(train_flops, 'flops')} is above 10^{round(math.log10(line))} FLOP: {what}")
