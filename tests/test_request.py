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
    ({"tokens": "2T", "mfu": 0}, "mfu must be in (0, 1]; got 0 (give a positive number)"),
    ({"tokens": "0"}, "tokens must be > 0; got 0 (give a positive number)"),
    ({}, "tokens is required; got nothing (give --tokens)"),
    ({"tokens": "2T", "overhead": "experiments"}, "overhead must be NAME=VALUE; got experiments (e.g. experiments=0.6)"),
    ({"tokens": "2T", "overhead": "=1"}, "overhead has an empty name; got =1 (write NAME=VALUE)"),
    ({"tokens": "2T", "overhead": "eval=-1"}, "overhead[eval] must be >= 0; got -1 (give 0 or more)"),
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


# ------------------------------------------------------------- percent hints, lists, pairs
class Fractions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    usable: Annotated[float, field("fraction", "usable memory")] = 0.8
    cap: Annotated[float, field("fraction", "a fraction capped low", gt=0, le=0.3)] = 0.1
    served: Annotated[list[float], field("count", "served tokens")] = []
    price: Annotated[dict[str, float], field("usd_per_hour", "price per part")] = {}
    yearly: Annotated[dict[str, float], field("usd", "yearly costs")] = {}


@pytest.mark.parametrize("raw,message", [
    # the hint is the typed number read as a percentage, with the figures it needs
    ({"usable": "12.5"}, "usable must be in (0, 1]; got 12.5 (did you mean 0.125?)"),
    ({"usable": "1.5"}, "usable must be in (0, 1]; got 1.5 (did you mean 0.015?)"),
    ({"usable": "40"}, "usable must be in (0, 1]; got 40 (did you mean 0.40?)"),
    ({"usable": 80}, "usable must be in (0, 1]; got 80 (did you mean 0.80?)"),
    # 150% already is a percentage: no 0.01 (nor 0.015) hint
    ({"usable": "150%"}, "usable must be in (0, 1]; got 150% (give at most 100%)"),
    ({"usable": "101"}, "usable must be in (0, 1]; got 101 (give at most 100%)"),
    ({"usable": "1"}, None),
    # no hint that breaks the bounds too
    ({"cap": "40"}, "cap must be in (0, 0.3]; got 40 (give at most 30%)"),
    ({"cap": "25"}, "cap must be in (0, 0.3]; got 25 (did you mean 0.25?)"),
])
def test_percent_hint_only_when_it_helps(raw, message):
    if message is None:
        assert parse_request(Fractions, raw).usable == 1.0
        return
    with pytest.raises(InputError) as exc:
        parse_request(Fractions, raw)
    assert str(exc.value) == message


def test_lists_and_pairs_still_split_on_commas():
    req = parse_request(Fractions, {"served": "500B,50T", "price": "h100=2.50,b200=$4.50/h",
                                    "yearly": ["facility=$1,500,network=1,200.5", "support=300"]})
    assert req.served == [500e9, 50e12]
    assert req.price == {"h100": 2.5, "b200": 4.5}
    # a thousands group in a NAME=VALUE pair stays with its value
    assert req.yearly == {"facility": 1500.0, "network": 1200.5, "support": 300.0}


@pytest.mark.parametrize("raw,message", [
    # a decimal comma in a pair used to be read as the pair 2 and a stray "50"
    ({"price": "h100=2,50,b200=4.50"}, "price[h100] has a comma that is not a thousands separator; got 2,50 "
                                      "(write 2.50 for a decimal; commas may only separate thousands, as in 1,500)"),
    ({"price": "h100=2.50,b200"}, "price must be NAME=VALUE; got b200 (e.g. name=0.5)"),
    # a name given twice: the second used to replace the first without a word
    ({"yearly": ["facility=600", "facility=200"]}, "yearly has facility twice; got facility=200 (give facility "
                                                   "once, adding up the parts if both apply)"),
    ({"yearly": "facility=1,5000"}, "yearly[facility] has a comma that is not a thousands separator; got 1,5000 "
                                    "(write 1.5000 for a decimal; commas may only separate thousands, as in 1,500)"),
])
def test_pairs_refuse_a_decimal_comma(raw, message):
    with pytest.raises(InputError) as exc:
        parse_request(Fractions, raw)
    assert str(exc.value) == message


def test_an_input_with_a_default_is_given_only_when_it_differs(run_cli):
    """Found in review: `--usable 0.7` was listed under "assumed:"; the default is still an assumption."""
    import json

    def basis(*args, name):
        out = json.loads(run_cli(*args, "--json").stdout)
        return {a["name"]: a["basis"] for a in out["assumptions"]}[name]

    memory = ("memory", "--params", "7B", "--training", "--gpu", "h100")
    assert basis(*memory, name="usable") == "assumed"
    assert basis(*memory, "--usable", "0.7", name="usable") == "given"
    serve = ("serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8")
    assert basis(*serve, name="usable") == "assumed"
    assert basis(*serve, "--usable", "0.8", name="usable") == "given"
    # a measured figure of the GPU family is the catalog's, and a typed one is given
    assert basis(*serve, name="allreduce_latency") == "catalog"
    assert basis(*serve, "--allreduce-latency", "5us", name="allreduce_latency") == "given"
    assert basis("journey", "--system-tokens", "500", name="system_tokens") == "given"


def test_a_field_counted_in_days_takes_a_duration():
    """Review: `--days 54d` was refused while `--period 54d` worked; a days field reads 54d, 3w or a plain 54."""
    from napkin import calculate

    base = dict(params="70B", tokens="2T", gpus=2048, gpu="h100")
    plain = calculate("check", days="54", **base)
    assert calculate("check", days="54d", **base).to_dict() == plain.to_dict()
    weeks = calculate("optimal", gpus=1024, days="3w", gpu="h100")
    assert weeks["train_flops"] == pytest.approx(calculate("optimal", gpus=1024, days=21, gpu="h100")["train_flops"])
