"""API prices from the dated catalog (``catalog/prices.toml`` ``[api.<model>]``) and one request's bill at them."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from napkin import catalog
from napkin.errors import InputError, UnknownName
from napkin.formulas import bill as billf


@dataclass(frozen=True)
class ApiPrice:
    key: str
    name: str
    provider: str
    input: float
    output: float
    cache_write: float
    cache_read: float
    batch_discount: float
    lc_threshold: float | None
    lc_input: float | None
    lc_output: float | None
    lc_cache_write: float | None
    lc_cache_read: float | None
    date: str
    source: str
    note: str
    open_weights_model: str | None
    cache_write_published: bool
    cache_read_published: bool

    def tier(self, input_tokens: float) -> tuple[str, float, float, float, float]:
        """(tier name, input, output, cache write, cache read) prices for a request of this input."""
        if self.lc_threshold is not None and input_tokens > self.lc_threshold:
            scale = (self.lc_input or self.input) / self.input if self.input else 1.0
            return (f"long context (> {self.lc_threshold:,.0f} input tokens)", self.lc_input or self.input,
                    self.lc_output or self.output,
                    self.lc_cache_write if self.lc_cache_write is not None else self.cache_write * scale,
                    self.lc_cache_read if self.lc_cache_read is not None else self.cache_read * scale)
        return "standard", self.input, self.output, self.cache_write, self.cache_read


def api_prices() -> dict[str, ApiPrice]:
    out = {}
    for key, e in catalog.table("prices").get("api", {}).items():
        inp = float(e["usd_per_million_input"])
        out[key] = ApiPrice(
            key=key, name=e.get("name", key), provider=e.get("provider", ""), input=inp,
            output=float(e["usd_per_million_output"]),
            cache_write=float(e.get("usd_per_million_cache_write", inp)),
            cache_read=float(e.get("usd_per_million_cache_read", inp)),
            batch_discount=float(e.get("batch_discount", 0.0)),
            lc_threshold=e.get("long_context_threshold_tokens"),
            lc_input=e.get("long_context_usd_per_million_input"),
            lc_output=e.get("long_context_usd_per_million_output"),
            lc_cache_write=e.get("long_context_usd_per_million_cache_write"),
            lc_cache_read=e.get("long_context_usd_per_million_cache_read"),
            date=str(e["date"]), source=e["source"], note=e.get("note", ""),
            open_weights_model=e.get("open_weights_model"),
            cache_write_published="usd_per_million_cache_write" in e,
            cache_read_published="usd_per_million_cache_read" in e)
    return out


def api_price(name: str) -> ApiPrice:
    prices = api_prices()
    norm = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    for key, e in catalog.table("prices").get("api", {}).items():
        if norm == key or norm in [a.lower() for a in e.get("aliases", [])]:
            return prices[key]
    raise UnknownName("API model", name, list(prices), field="model")


def parse_date(text: str, field_name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(field_name, text, "is not a date", "write YYYY-MM-DD") from None


def bill_one(p: ApiPrice, *, input_tokens: float, output_tokens: float, cached: float, cache_write: float,
             batch: bool) -> dict[str, Any]:
    tier, pin, pout, pw, pr = p.tier(input_tokens)
    items = billf.api_request_usd(uncached_tokens=input_tokens - cached - cache_write, cache_write_tokens=cache_write,
                               cache_read_tokens=cached, output_tokens=output_tokens, usd_per_million_input=pin,
                               usd_per_million_cache_write=pw, usd_per_million_cache_read=pr,
                               usd_per_million_output=pout, batch_discount=p.batch_discount if batch else 0.0)
    return {"tier": tier, "prices": (pin, pout, pw, pr), **items}
