"""Dated prices worth ranking with: GPU-hour offers by provider and API token prices over time.

catalog/prices.toml holds three kinds of entry:

    [gpu_hour.<gpu key>]  the reference list price the calculators use (catalog.gpu_hour_price)
    [[gpu_offer]]         one provider's price for one GPU-hour on one date: on-demand,
                          committed (a reservation or commitment of stated term) or spot
    [[api_price]]         one model's API list price on one date; a model seen at several
                          dates keeps each observation, so a $/M can be shown falling
    [api.<model>]         the current API price the bill calculator uses (bill.api_prices)

Every offer and observation records what its source states (per instance prices stay beside
the per-GPU figure), the date it states, the provider's page and, where the figure was read
in a price tracker or dataset, that tracker (``via``).

Trap: a price is a date, not a constant. GPU-hour list prices moved 20-40% in a year
(H100 on-demand at hyperscalers fell by about half in 2025) and API prices for a fixed
capability fell roughly tenfold a year; a price older than STALE_AFTER_DAYS deserves a
warning wherever it decides an answer (price_age_days, is_stale).
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from typing import Any

import msgspec

from napkin.errors import InputError, NapkinError, UnknownName

STALE_AFTER_DAYS = 180  # issue 16: prices older than this warn where they decide an answer
OFFER_KINDS = ("on-demand", "committed", "spot")


class GpuOffer(msgspec.Struct, kw_only=True, frozen=True):
    """One provider's price of one GPU-hour on one date ([[gpu_offer]] in prices.toml)."""

    gpu: str  # gpus.toml key
    provider: str
    product: str  # the provider's name for what is rented (instance type, tier)
    kind: str  # on-demand | committed | spot
    usd_per_gpu_hour: float
    date: str  # the date the source states the price (YYYY-MM-DD)
    source: str  # the provider's pricing page or API
    via: str = ""  # the tracker, dataset or article the figure was read in, when not the provider's page
    term: str = ""  # for committed offers: "1 year", "3 years", ...
    region: str = ""
    high_usd_per_gpu_hour: float | None = None  # the top of a range when the source states one
    usd_per_instance_hour: float | None = None  # when the source prices a whole instance ...
    gpus_per_instance: int | None = None  # ... of this many GPUs (per GPU = instance / gpus)
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in OFFER_KINDS:
            raise InputError("kind", self.kind, "must be on-demand, committed or spot")
        if self.kind == "committed" and not self.term:
            raise InputError("term", self.term, "is needed for a committed offer", "say how long the commitment runs")
        parse_date(self.date, "date")


class ApiPricePoint(msgspec.Struct, kw_only=True, frozen=True):
    """One model's API list price, USD per million tokens, on one date ([[api_price]])."""

    model: str  # the series it belongs to: an [api.<key>] key when one exists
    name: str
    provider: str
    usd_per_million_input: float
    usd_per_million_output: float
    date: str
    source: str
    via: str = ""
    lineage: str = ""  # a product line whose price is tracked over time (openai-flagship, ...)
    host: str = ""  # for open-weight models: the company serving it (Together, Groq, ...)
    note: str = ""

    def __post_init__(self) -> None:
        parse_date(self.date, "date")

    @property
    def blended_usd_per_million(self) -> float:
        """The mean of input and output prices, a16z's LLMflation convention."""
        return (self.usd_per_million_input + self.usd_per_million_output) / 2


def parse_date(text: str, field: str = "date") -> dt.date:
    """A YYYY-MM-DD date; InputError naming the field otherwise."""
    try:
        return dt.date.fromisoformat(str(text))
    except ValueError:
        raise InputError(field, text, "is not a date", "write YYYY-MM-DD") from None


def today() -> dt.date:
    """The date prices are aged from: today, or ``NAPKIN_TODAY`` (YYYY-MM-DD) when it is set.

    The variable pins the date so that outputs can be reproduced (the test suite and the
    README's sample outputs set it); a malformed value is an error naming it, never ignored.
    """
    pinned = os.environ.get("NAPKIN_TODAY", "").strip()
    return parse_date(pinned, "NAPKIN_TODAY") if pinned else dt.date.today()


def price_age_days(date: str, on: dt.date | None = None) -> int:
    """Days from a price's date to ``on`` (today when not given); negative for a future date."""
    return ((on or today()) - parse_date(date)).days


def is_stale(date: str, on: dt.date | None = None, max_age_days: int = STALE_AFTER_DAYS) -> bool:
    """True when a price is older than ``max_age_days`` on ``on`` (180 days: issue 16's rule)."""
    return price_age_days(date, on) > max_age_days


def _table() -> dict[str, Any]:
    from napkin.catalog import table

    return table("prices")


@functools.cache
def gpu_offers() -> tuple[GpuOffer, ...]:
    """Every dated GPU-hour offer in the catalog, in file order."""
    from napkin.catalog import gpus

    out = []
    for i, entry in enumerate(_table().get("gpu_offer", [])):
        try:
            offer = msgspec.convert(entry, GpuOffer)
        except (msgspec.ValidationError, InputError) as exc:
            raise NapkinError(f"catalog prices.toml [[gpu_offer]] #{i + 1}: {exc}") from None
        if offer.gpu not in gpus():
            raise NapkinError(f"catalog prices.toml [[gpu_offer]] #{i + 1}: gpu {offer.gpu!r} is not a gpus.toml key")
        out.append(offer)
    return tuple(out)


def gpu_hour_offers(name: str, kind: str | None = None) -> list[GpuOffer]:
    """The dated offers for one accelerator (a gpus.toml key or alias), cheapest first.

    ``kind`` keeps only on-demand, committed or spot offers. An unknown name raises
    UnknownName; a known part nobody prices publicly gives [].
    """
    from napkin.catalog import gpu

    key = gpu(name).key
    if kind is not None and kind not in OFFER_KINDS:
        raise InputError("kind", kind, "must be on-demand, committed or spot")
    found = [o for o in gpu_offers() if o.gpu == key and (kind is None or o.kind == kind)]
    return sorted(found, key=lambda o: (o.usd_per_gpu_hour, o.date))


def latest_offers(name: str, kind: str | None = None) -> list[GpuOffer]:
    """gpu_hour_offers keeping only each (provider, product, kind, term, region)'s newest observation."""
    newest: dict[tuple[str, ...], GpuOffer] = {}
    for o in gpu_hour_offers(name, kind):
        k = (o.provider, o.product, o.kind, o.term, o.region)
        if k not in newest or o.date > newest[k].date:
            newest[k] = o
    return sorted(newest.values(), key=lambda o: (o.usd_per_gpu_hour, o.date))


@functools.cache
def api_price_points() -> tuple[ApiPricePoint, ...]:
    """Every dated API price observation: the [[api_price]] history plus each current [api.*] entry."""
    out = []
    for i, entry in enumerate(_table().get("api_price", [])):
        try:
            out.append(msgspec.convert(entry, ApiPricePoint))
        except (msgspec.ValidationError, InputError) as exc:
            raise NapkinError(f"catalog prices.toml [[api_price]] #{i + 1}: {exc}") from None
    lineage_of = {p.model: p.lineage for p in out if p.lineage}
    for key, e in _table().get("api", {}).items():
        out.append(ApiPricePoint(model=key, name=e.get("name", key), provider=e.get("provider", ""),
                                 usd_per_million_input=float(e["usd_per_million_input"]),
                                 usd_per_million_output=float(e["usd_per_million_output"]),
                                 date=str(e["date"]), source=e["source"], lineage=lineage_of.get(key, ""),
                                 note="the current price napkin bill uses ([api." + key + "])"))
    return tuple(out)


def _api_key(name: str) -> str:
    norm = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    keys = {p.model for p in api_price_points()}
    if norm in keys:
        return norm
    for key, e in _table().get("api", {}).items():
        if norm in [a.lower() for a in e.get("aliases", [])]:
            return key
    raise UnknownName("API model", name, sorted(keys), field="model")


def api_price_history(name: str) -> list[ApiPricePoint]:
    """Every dated observation of one model's API price, oldest first (duplicates merged).

    ``name`` is an [api.<key>] key, one of its aliases, or a model key of the history.
    """
    key = _api_key(name)
    seen: dict[tuple[str, float, float], ApiPricePoint] = {}
    for p in api_price_points():
        if p.model == key:
            seen.setdefault((p.date, p.usd_per_million_input, p.usd_per_million_output), p)
    return sorted(seen.values(), key=lambda p: p.date)


def api_price_series(lineage: str) -> list[ApiPricePoint]:
    """Every observation of a product line (``openai-flagship``, ``mmlu-42-cheapest``, ...), oldest first."""
    found: dict[tuple[str, str, float, float], ApiPricePoint] = {}
    for p in api_price_points():
        if p.lineage == lineage:
            found.setdefault((p.model, p.date, p.usd_per_million_input, p.usd_per_million_output), p)
    if not found:
        known = sorted({p.lineage for p in api_price_points() if p.lineage})
        raise UnknownName("price lineage", lineage, known, field="lineage")
    return sorted(found.values(), key=lambda p: (p.date, p.model))


def offer_rows() -> list[dict[str, Any]]:
    """Every GPU-hour offer as plain data (for `napkin catalog` and --json)."""
    return [{"kind_of_entry": "gpu_offer", **msgspec.to_builtins(o)} for o in gpu_offers()]


def api_history_rows() -> list[dict[str, Any]]:
    """Every API price observation as plain data, oldest first."""
    return [msgspec.to_builtins(p) for p in sorted(api_price_points(), key=lambda p: (p.date, p.model))]
