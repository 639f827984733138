"""`napkin gpu-hour`: the loaded GPU-hour from capital, power, yearly costs and utilisation; spot per useful hour."""

from __future__ import annotations

import pytest

from napkin import calculate
from napkin.errors import InputError
from napkin.formulas import economics as econ

HOURS_PER_YEAR = 8760


def test_capital_power_and_yearly_costs_by_hand():
    r = calculate("gpu-hour", capex="30000", years=4, residual="10%", gpu="h100", pue=1.3, usd_per_kwh=0.08,
                  per_gpu_year=["facility=2000", "network=1500", "support=1000"], utilization=0.8)
    capital = 30000 * 0.9 / (4 * HOURS_PER_YEAR)       # $0.7705/h
    power = 700 / 1000 * 1.3 * 0.08                     # $0.0728/h at the H100's 700 W TDP
    yearly = 4500 / HOURS_PER_YEAR
    assert r["usd_per_calendar_hour"] == pytest.approx(capital + power + yearly)
    assert r["usd_per_gpu_hour"] == pytest.approx((capital + power + yearly) / 0.8)
    b = r["breakdown_usd_per_gpu_hour"]
    assert list(b) == ["capital", "power", "facility", "network", "support"]
    assert b["capital"] == pytest.approx(capital / 0.8)
    assert b["power"] == pytest.approx(power / 0.8)
    assert sum(b.values()) == pytest.approx(r["usd_per_gpu_hour"])
    # idle hours are paid for too: a quarter more per used hour at 80%
    assert r["idle_usd_per_gpu_hour"] == pytest.approx(r["usd_per_gpu_hour"] * 0.2)


def test_compared_with_a_rental_price():
    r = calculate("gpu-hour", capex="30000", gpu="h100", utilization=0.8, vs="2.50/h")
    assert r["owned_over_rental"] == pytest.approx(r["usd_per_gpu_hour"] / 2.5)
    assert r["cheaper"] == ("owning" if r["usd_per_gpu_hour"] < 2.5 else "renting")
    # at the break-even utilisation the owned hour costs the rental price
    be = r["breakeven_utilization"]
    assert r["usd_per_calendar_hour"] / be == pytest.approx(2.5)


def test_watts_override_the_catalog_tdp():
    a = calculate("gpu-hour", capex="30000", watts="1.2kW")
    assert {x.name: x.value for x in a.assumptions}["watts"] == 1200
    assert a["breakdown_usd_per_gpu_hour"]["power"] == pytest.approx(1.2 * 1.3 * 0.08)


def test_defaults_are_stated_assumptions():
    r = calculate("gpu-hour", capex="30000", gpu="h100")
    basis = {a.name: (a.value, a.basis) for a in r.assumptions}
    assert basis["years"] == (4.0, "assumed")
    assert basis["pue"] == (1.3, "assumed")
    assert basis["usd_per_kwh"] == (0.08, "assumed")
    assert basis["utilization"] == (1.0, "assumed")
    given = calculate("gpu-hour", capex="30000", gpu="h100", years=4)
    assert {a.name: a.basis for a in given.assumptions}["years"] == "given"


def test_spot_priced_per_useful_hour():
    """Seed 001: preemptible capacity is cheaper per hour but loses goodput; price the useful hour."""
    r = calculate("gpu-hour", spot="1.20/h", goodput=0.7, vs="2.50/h")
    assert r["spot_useful_usd_per_gpu_hour"] == pytest.approx(1.2 / 0.7)
    assert r["spot_over_on_demand"] == pytest.approx(1.2 / 0.7 / 2.5)
    assert r["spot_breakeven_goodput"] == pytest.approx(1.2 / 2.5)
    assert econ.useful_usd_per_hour(1.2, goodput=r["spot_breakeven_goodput"]) == pytest.approx(2.5)


def test_spot_against_the_owned_hour():
    r = calculate("gpu-hour", capex="30000", gpu="h100", spot="1.20/h", goodput=0.7)
    assert r["spot_over_owned"] == pytest.approx(1.2 / 0.7 / r["usd_per_gpu_hour"])


@pytest.mark.parametrize("raw, field, words", [
    ({}, "capex", "is required"),
    ({"capex": "30000"}, "watts", "is required for power"),
    ({"capex": "30000", "gpu": "h100", "utilization": 80}, "utilization", "did you mean 0.80?"),
    ({"capex": "30000", "gpu": "h100", "residual": 1}, "residual", "must be in [0, 1)"),
    ({"capex": "30000", "gpu": "h100", "pue": 0.9}, "pue", "must be >= 1"),
    ({"spot": "1.2/h"}, "goodput", "is required with --spot"),
    ({"capex": "30000", "gpu": "h100", "goodput": 0.7}, "goodput", "needs --spot"),
    ({"capex": "30000", "gpu": "h100", "per_gpu_year": "power=100"}, "per_gpu_year[power]", "repeats a cost"),
    ({"capex": "30000", "gpu": "h100", "per_gpu_year": "network"}, "per_gpu_year", "must be NAME=VALUE"),
    ({"capex": "30000", "gpu": "h100", "vs": "2.5/M"}, "vs", "expected an hourly price"),
])
def test_bad_input_names_the_field(raw, field, words):
    with pytest.raises(InputError) as e:
        calculate("gpu-hour", raw)
    assert e.value.field == field
    assert words in str(e.value)


def test_two_yearly_costs_with_the_same_name_are_named_as_such():
    """Found in review: Network=100 and network=5 were refused with a hint about capital and power."""
    with pytest.raises(InputError) as e:
        calculate("gpu-hour", capex="30000", gpu="h100", per_gpu_year={"Network": "100", "network": "5"})
    assert str(e.value) == ("per_gpu_year[network]: names the same cost as Network (names are compared ignoring "
                            "case, spaces and dashes); got 5 (give network once, adding up the parts if both apply)")
