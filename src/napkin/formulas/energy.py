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
