"""Each part read at its own price and its own peak: the catalog's dated GPU-hour prices as readings."""

from __future__ import annotations

from dataclasses import dataclass

from napkin import catalog
from napkin.catalog import GpuHourPrice
from napkin.errors import NapkinError


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
    for key, entry in catalog.gpu_hour_prices().items():
        try:
            g = catalog.gpu(key)
            peak = g.peak(precision)
        except NapkinError:
            continue
        out.append(Reading(g.key, g.name, peak, entry.low, "the lowest price its catalog source documents"))
    return out


def price_note(key: str, entry: GpuHourPrice) -> str:
    """The assumption line of a catalog GPU-hour price: its part, date and source."""
    return f"catalog reference for {key} ({entry.date}; {entry.source})"
