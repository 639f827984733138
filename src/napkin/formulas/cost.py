"""Money: GPU-hours to dollars, fleet price to dollars per million tokens."""

from __future__ import annotations

from napkin.units import HOUR, MILLION


def usd_per_million_tokens(fleet_usd_per_hour: float, *, tokens_per_s: float, utilization: float) -> float:
    """usd_per_M = (fleet_usd_per_hour / 3600) / (tokens_per_s · utilization) · 1e6

    Trap: quoting a number without utilisation; bursty traffic doubles or triples it.
    Source: seed 004 (8 × H100 at $2.50/h, 2,000 tokens/s: $2.78/M at 100%, $6.94/M at 40%).
    """
    return fleet_usd_per_hour / HOUR / (tokens_per_s * utilization) * MILLION


def gpu_hours(gpu_seconds: float) -> float:
    """gpu_hours = gpu_seconds / 3600

    Trap: busy instead of allocated GPU time; you pay for the GPU that waits on a straggler.
    Source: seed 001, "Allocated, not busy".
    """
    return gpu_seconds / HOUR


def usd(gpu_hours: float, *, usd_per_gpu_hour: float) -> float:
    """usd = gpu_hours · usd_per_gpu_hour

    Trap: a list price instead of a loaded one understates the cost.
    Source: seed 001, "marginal_usd = gpu_hours × usd_per_gpu_hour".
    """
    return gpu_hours * usd_per_gpu_hour
