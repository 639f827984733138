"""napkin.request: one Struct per calculator, parsed from unit strings with clear errors."""

from __future__ import annotations

from typing import Annotated

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.errors import InputError
from napkin.request import describe, field, parse_request, to_raw


class Demo(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    tokens: Annotated[float, field("count", "advanced tokens", gt=0)]
    mfu: Annotated[float, field("fraction", "model FLOPs utilisation")] = 0.4
    gpus: Annotated[list[str], field("name", "accelerators")] = []
    overhead: Annotated[dict[str, float], field("number", "multipliers", ge=0, example="experiments=0.6")] = {}
    deadline: Annotated[float | None, field("seconds", "wall-clock limit", gt=0)] = None
    kind: Annotated[str, field("choice", "convention", choices=("6N", "causal", "full"))] = "6N"
    quick: Annotated[bool, field("bool", "fast mode")] = False


def test_parses_units_lists_and_maps():
    req = parse_request(Demo, {"tokens": "2T", "mfu": "40%", "gpus": "h100,h200", "deadline": "3w",
                               "overhead": ["experiments=0.6", "lost=0.15"], "kind": "CAUSAL", "quick": "yes"})
    assert req == Demo(tokens=2e12, mfu=0.4, gpus=["h100", "h200"], overhead={"experiments": 0.6, "lost": 0.15},
                       deadline=21 * 86400.0, kind="causal", quick=True)


def test_numbers_and_mappings_from_json_or_toml():
    req = parse_request(Demo, {"tokens": 2e12, "overhead": {"eval": 0.05}, "gpus": ["b200"]})
    assert req.overhead == {"eval": 0.05} and req.gpus == ["b200"] and req.tokens == 2e12


@pytest.mark.parametrize("raw,message", [
    ({"tokens": "2T", "mfu": "40"}, "mfu must be in (0, 1]; got 40 (did you mean 0.40?)"),
    ({"tokens": "2T", "mfu": 0}, "mfu must be in (0, 1]; got 0"),
    ({"tokens": "0"}, "tokens must be > 0; got 0 (give a positive size)"),
    ({}, "tokens is required; got nothing (give --tokens)"),
    ({"tokens": "2T", "overhead": "experiments"}, "overhead must be NAME=VALUE; got experiments (e.g. experiments=0.6)"),
    ({"tokens": "2T", "overhead": "=1"}, "overhead has an empty name; got =1 (write NAME=VALUE)"),
    ({"tokens": "2T", "overhead": "eval=-1"}, "overhead[eval] must be >= 0; got -1"),
    ({"tokens": "2T", "kind": "half"}, "kind must be one of 6N, causal, full; got half"),
    ({"tokens": "2T", "mfuu": "0.4"}, "mfuu is not a field of this calculator; got 0.4 (did you mean mfu?)"),
    ({"tokens": "2T", "quick": "maybe"}, "quick must be true or false; got maybe"),
])
def test_errors_name_field_value_and_fix(raw, message):
    with pytest.raises(InputError) as exc:
        parse_request(Demo, raw)
    assert str(exc.value) == message


def test_empty_values_mean_not_given():
    assert parse_request(Demo, {"tokens": "1", "deadline": "", "gpus": []}).deadline is None


def test_describe_lists_units_and_bounds():
    d = {f["name"]: f for f in describe(Demo)}
    assert d["mfu"]["bounds"] == {"gt": 0.0, "le": 1.0}
    assert d["tokens"]["required"] is True and d["tokens"]["kind"] == "count"
    assert d["kind"]["choices"] == ["6N", "causal", "full"]
    assert d["overhead"]["container"] == "dict"


@settings(max_examples=50, deadline=None)
@given(t=st.floats(min_value=1, max_value=1e15), m=st.floats(min_value=0.01, max_value=1.0))
def test_to_raw_round_trips(t, m):
    req = parse_request(Demo, {"tokens": t, "mfu": m, "gpus": ["h100"]})
    assert parse_request(Demo, to_raw(req)) == req
