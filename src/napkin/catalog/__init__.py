"""Reviewed catalogs: accelerators, models, prices and default assumptions, each entry with its source.

Loaded with tomllib (kept in a precompiled copy: catalog.compiled) and validated into msgspec
Structs on first use. Names resolve case-insensitively through each entry's key and aliases; an
unknown name raises UnknownName with the closest matches, never a silent fallback.
"""

from __future__ import annotations

import datetime
import functools
import os
from typing import Any

import msgspec

from napkin.catalog import prices
from napkin.catalog.prices import (
    STALE_AFTER_DAYS,
    ApiPricePoint,
    GpuOffer,
    api_price_history,
    api_price_series,
    gpu_hour_offers,
    is_stale,
    latest_offers,
    price_age_days,
)
from napkin.errors import InputError, NapkinError, UnknownName
from napkin.hardware import Accelerator
from napkin.model import ModelSpec

__all__ = [
    "STALE_AFTER_DAYS", "ApiPricePoint", "Default", "GpuHourPrice", "GpuOffer", "api_price_history",
    "api_price_series", "catalog_rows", "default", "default_value", "defaults", "gpu", "gpu_hour_offers",
    "gpu_hour_price", "gpu_hour_prices", "gpus", "is_stale", "latest_offers", "model", "models",
    "price_age_days", "table",
]

HERE = os.path.dirname(os.path.abspath(__file__))  # a str: pathlib is not needed for a plain answer


def _norm(name: str) -> str:
    return str(name).strip().lower().replace("_", "-").replace(" ", "-")


@functools.cache
def table(name: str) -> dict[str, Any]:
    """The raw TOML table of a catalog file (``gpus``, ``models``, ``prices``), from its precompiled copy."""
    from napkin.catalog.compiled import load_toml

    return load_toml(os.path.join(HERE, f"{name}.toml"))


def _load(name: str, cls: type) -> dict[str, Any]:
    out = {}
    for key, entry in table(name).items():
        try:
            out[key] = msgspec.convert({**entry, "key": key}, cls)
        except (msgspec.ValidationError, InputError) as exc:  # a catalog bug, said plainly
            raise NapkinError(f"catalog {name}.toml entry [{key}]: {exc}") from None
    return out


@functools.cache
def gpus() -> dict[str, Accelerator]:
    return _load("gpus", Accelerator)


@functools.cache
def models() -> dict[str, ModelSpec]:
    return _load("models", ModelSpec)


def _index(entries: dict[str, Any]) -> dict[str, str]:
    idx = {}
    for key, e in entries.items():
        idx[_norm(key)] = key
        for a in getattr(e, "aliases", []):
            idx[_norm(a)] = key
    return idx


@functools.cache
def _gpu_index() -> dict[str, str]:
    return _index(gpus())


@functools.cache
def _model_index() -> dict[str, str]:
    return _index(models())


def gpu(name: str, field: str = "gpu") -> Accelerator:
    """An accelerator by key or alias (``h100``, ``H100-SXM``)."""
    key = _gpu_index().get(_norm(name))
    if key is None:
        raise UnknownName("gpu", name, list(gpus()), field=field)
    return gpus()[key]


def model(name: str, field: str = "model") -> ModelSpec:
    """A model by catalog key or alias, a Hugging Face config.json (file or folder), or a
    Hugging Face repo id (``org/name``) found in the local Hugging Face cache.

    Order: catalog name, then an existing path, then a repo id in the cache (never the
    network), then a path-looking name (which fails with the config.json error).
    """
    text = str(name)
    key = _model_index().get(_norm(text))
    if key is not None:
        return models()[key]
    from napkin.catalog import hf, hf_cache

    if _on_disk(text) or text.endswith(".json"):
        return hf.load_config(text, field=field)
    if hf_cache.is_repo_id(text):
        path = hf_cache.cached_config(text, field=field)
        return hf.spec_from_config(hf._read(path, field), path, field, name=text)
    if os.sep in text or "/" in text or text.endswith(".json"):
        return hf.load_config(text, field=field)
    raise UnknownName("model", text, list(models()), field=field)


def _on_disk(text: str) -> bool:
    """Whether ``text`` names something on disk (a broken or looping symlink too); a name the file
    system refuses (over 255 bytes) counts, so that loading it says why."""
    from pathlib import Path

    try:
        os.lstat(Path(text).expanduser())
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return False
    except OSError:
        return True
    return True


class Default(msgspec.Struct, kw_only=True, frozen=True):
    """A default assumption (catalog/assumptions.toml): what napkin takes when an input is not given."""

    key: str
    value: float | str
    unit: str
    meaning: str
    note: str  # the words on the assumption line
    source: str
    replaced_by: str


@functools.cache
def defaults() -> dict[str, Default]:
    """Every default assumption, by key."""
    return _load("assumptions", Default)


def default(key: str) -> Default:
    """One default assumption by key; an unknown key is a bug in napkin, said plainly."""
    entry = defaults().get(key)
    if entry is None:
        raise UnknownName("default assumption", key, list(defaults()))
    return entry


def default_value(key: str) -> Any:
    """The value of a default assumption (a float, or a name for ``unit = "name"``)."""
    return default(key).value


class GpuHourPrice(msgspec.Struct, kw_only=True, frozen=True):
    """A dated reference price of one GPU-hour (catalog/prices.toml, [gpu_hour.<gpu key>])."""

    key: str  # the gpus.toml key
    usd_per_gpu_hour: float
    date: str
    source: str
    low_usd_per_gpu_hour: float | None = None  # the lowest price the entry's own source documents
    note: str = ""

    @property
    def low(self) -> float:
        """The lowest documented price, or the reference price when the source gives no range."""
        return self.low_usd_per_gpu_hour if self.low_usd_per_gpu_hour is not None else self.usd_per_gpu_hour

    def age_days(self, on: "datetime.date | None" = None) -> int:
        """Days from this price's date to ``on`` (today when not given); see catalog.is_stale."""
        return price_age_days(self.date, on)


@functools.cache
def gpu_hour_prices() -> dict[str, GpuHourPrice]:
    """The dated reference GPU-hour price of every accelerator that has one, by gpus.toml key."""
    out = {}
    for key, entry in table("prices").get("gpu_hour", {}).items():
        try:
            out[key] = msgspec.convert({**entry, "key": key}, GpuHourPrice)
        except msgspec.ValidationError as exc:
            raise NapkinError(f"catalog prices.toml entry [gpu_hour.{key}]: {exc}") from None
    return out


def gpu_hour_price(key: str) -> GpuHourPrice | None:
    """The dated reference price of one GPU-hour of the accelerator ``key`` (a gpus.toml key), or None."""
    return gpu_hour_prices().get(key)


def catalog_rows(which: str) -> list[dict[str, Any]]:
    """Every entry of a catalog as plain data (base units), with its key and source."""
    if which == "gpus":
        return [msgspec.to_builtins(g) for g in gpus().values()]
    if which == "models":
        out = []
        for m in models().values():
            d = msgspec.to_builtins(m)
            d["params"] = m.params
            d["active_params"] = m.active_params
            d["checkpoint_params"] = m.checkpoint_params  # with a shipped vision encoder
            d["quantized_params"] = m.quantized_params()  # held at weight_precision
            d["kv_bytes_per_token_bf16"] = m.kv_bytes_per_token(2.0)
            out.append(d)
        return out
    if which == "prices":  # the reference GPU-hour and current API prices (the dated offers: "offers")
        out = []
        for section, entries in table("prices").items():
            if isinstance(entries, dict):
                for key, entry in entries.items():
                    out.append({"kind": section, "key": key, **entry})
        return out
    if which == "offers":
        return prices.offer_rows()
    if which == "api_history":
        return prices.api_history_rows()
    raise InputError("table", which, "must be gpus, models, prices, offers or api_history")
