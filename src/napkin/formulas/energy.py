"""Energy of a training run from GPU-hours, board power and facility overhead."""

from __future__ import annotations

from napkin.units import KILO


def gpu_energy_kwh(gpu_hours: float, *, tdp_watts: float, pue: float = 1.0) -> float:
    """energy_kwh = gpu_hours · TDP · PUE / 1000

    TDP (the board's rated power) is an upper bound assumption for what a GPU draws:
    real training averages below it, while the host CPUs, memory, network and storage
    around it (not counted here) draw more. PUE scales IT power to facility power
    (cooling, conversion losses); 1.0 counts the GPUs alone.
    Trap: energy figures vary by orders of magnitude because of what they include; say
    what this one counts (GPU boards at TDP, times PUE) next to the number.
    Source: The Green Grid, White Paper 49, PUE: A Comprehensive Examination of the Metric (2012),
    PUE = total facility power / IT equipment power; TDP from the part's datasheet.
    """
    return gpu_hours * tdp_watts * pue / KILO


def cluster_power_watts(n_gpus: float, *, tdp_watts: float, pue: float = 1.0) -> float:
    """power_W = n_gpus · TDP · PUE

    The power a cluster draws with every GPU at its rated board power, times PUE for the
    facility around it (1.0: the boards alone).
    Trap: a megawatt figure is a power, not an energy; the energy is this power times the
    hours it runs. Host CPUs, network and storage add to it (not counted).
    Source: The Green Grid, White Paper 49 (2012), PUE; TDP from the part's datasheet.
    """
    return n_gpus * tdp_watts * pue


def household_years(energy_kwh: float, *, kwh_per_household_year: float) -> float:
    """household_years = energy_kWh / kWh one household uses in a year

    Trap: households differ by country and climate several times over (the US average is
    about three times the EU's), so the figure names whose households it counts.
    Source: U.S. Energy Information Administration, FAQ "How much electricity does an
    American home use?" (10,715 kWh per residential customer in 2020).
    """
    return energy_kwh / kwh_per_household_year
