"""Money: GPU-hours to dollars, fleet price to dollars per million tokens."""

from __future__ import annotations

from napkin.units import HOUR, MILLION


def usd_per_million_tokens(fleet_usd_per_hour: float, *, tokens_per_s: float, utilization: float) -> float:
    """usd_per_M = (fleet_usd_per_hour / 3600) / (tokens_per_s · utilization) · 1e6

    Trap: quoting a number without utilisation; bursty traffic doubles or triples it.
    Source: reasoning: the fleet's price per hour over the tokens it serves in an hour at that
    utilisation; e.g. 8 × H100 at $2.50/h serving 2,000 tokens/s: $2.78/M at 100%, $6.94/M at 40%.
    """
    return fleet_usd_per_hour / HOUR / (tokens_per_s * utilization) * MILLION

