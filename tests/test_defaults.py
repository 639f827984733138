"""Default assumptions are sourced data (catalog/assumptions.toml), typed and complete."""

from __future__ import annotations

import pytest

from napkin import catalog, units
from napkin.calculators.resolve import assume_default, given_or_default
from napkin.derivation import Report


@pytest.mark.parametrize("key", sorted(catalog.defaults()))
def test_every_default_says_what_it_is_where_it_comes_from_and_what_replaces_it(key: str) -> None:
    d = catalog.default(key)
    assert d.meaning and d.note and d.source and d.replaced_by
    assert d.unit in units.KINDS or d.unit == "name"
    if d.unit == "name":
        assert isinstance(d.value, str)
    else:
        assert isinstance(d.value, float) and d.value > 0
    assert "seed" not in d.source.lower(), "a source names a real publication or the reasoning, not the seeds"


def test_fractions_are_fractions() -> None:
    for d in catalog.defaults().values():
        if d.unit == "fraction":
            assert 0 < d.value <= 1, d.key


def test_an_unknown_default_is_named() -> None:
    with pytest.raises(KeyError, match="unknown default assumption 'training_mfuu'; closest: training_mfu"):
        catalog.default("training_mfuu")


def test_a_default_is_recorded_with_its_source() -> None:
    r = Report("t")
    assert assume_default(r, "mfu", "training_mfu") == 0.40
    a = r.assumptions[0]
    assert (a.name, a.basis, a.unit) == ("mfu", "assumed", "fraction")
    assert a.note == catalog.default("training_mfu").note
    assert "Llama 3" in a.source and "napkin mfu" in a.replaced_by
    assert "source: Dubey et al. 2024" in r.explain(cite=True)
    assert "source:" not in r.explain()
    assert given_or_default(r, "pue", 1.1) == 1.1 and r.assumptions[-1].basis == "given"
    assert given_or_default(r, "pue", None) == 1.3 and r.assumptions[-1].basis == "assumed"


def test_gpu_hour_prices_are_typed_and_dated() -> None:
    p = catalog.gpu_hour_price("h100-sxm")
    assert p is not None and p.key == "h100-sxm" and p.usd_per_gpu_hour > 0 and len(p.date) == 10
    assert p.low <= p.usd_per_gpu_hour
    assert catalog.gpu_hour_price("no-such-gpu") is None
    for key in catalog.gpu_hour_prices():
        catalog.gpu(key)  # every priced key is a catalog accelerator
