"""`compare`: ranking parts for one training job; guessed MFUs and list prices are said so."""

from __future__ import annotations

import pytest

from napkin import calculate, catalog
from napkin.errors import InputError

JOB = {"params": "7B", "tokens": "2T"}
ISSUE_EXAMPLE = {"gpu": "h100-sxm,h200,b200,mi300x", "mfu": "h100-sxm=0.40,b200=0.35",
                 "price": "h100-sxm=2.50,b200=4.50", **JOB}


def rows_of(r):
    return {row["gpu"]: row for row in r["ranking"]}


def test_the_issue_example_ranks_by_cost_per_token():
    r = calculate("compare", ISSUE_EXAMPLE)
    ranking = r["ranking"]
    costs = [row["usd_per_million_tokens"] for row in ranking]
    assert costs == sorted(costs)
    assert [row["rank"] for row in ranking] == [1, 2, 3, 4]
    assert r["baseline"] == "h100-sxm" and r["cheapest"] == ranking[0]["gpu"]
    # cheaper per token <=> more delivered FLOP per dollar (same goodput everywhere)
    value = [row["delivered_flops_per_usd"] for row in ranking]
    assert value == sorted(value, reverse=True)


def test_mfu_not_given_is_a_guess_and_the_output_says_to_measure():
    r = calculate("compare", ISSUE_EXAMPLE)
    rows = rows_of(r)
    assert [rows[k]["mfu_basis"] for k in ("h100-sxm", "h200", "b200", "mi300x")] == ["given", "guess", "given",
                                                                                      "guess"]
    assert rows["h200"]["mfu"] == 0.4
    (w,) = [w for w in r.warnings if w.code == "mfu-guessed"]
    assert "h200, mi300x" in w.message and "short measured trial on each candidate should replace it" in w.message
    assert "40% (guess)" in r.text()


def test_prices_not_given_are_dated_reference_prices_and_mixing_is_warned():
    r = calculate("compare", ISSUE_EXAMPLE)
    rows = rows_of(r)
    ref = catalog.table("prices")["gpu_hour"]["h200"]
    assert rows["h200"]["usd_per_gpu_hour"] == ref["usd_per_gpu_hour"]
    assert rows["h200"]["price_basis"] == f"reference list price, {ref['date']}"
    assert rows["b200"]["price_basis"] == "given"
    assert "mixed-prices" in [w.code for w in r.warnings]


def test_each_row_is_the_train_calculator_for_that_part():
    r = calculate("compare", ISSUE_EXAMPLE)
    t = calculate("train", {**JOB, "gpu": "b200", "mfu": 0.35, "price": 4.5})
    row = rows_of(r)["b200"]
    assert row["usd_per_million_tokens"] == pytest.approx(t["usd_per_million_tokens"]["marginal"])
    assert row["tokens_per_gpu_s"] == pytest.approx(t["tokens_per_gpu_s"])
    assert row["dense_flops_per_s"] == catalog.gpu("b200").peak("bf16")


def test_relative_value_against_the_first_part():
    r = calculate("compare", {**JOB, "gpu": "h100,b200", "mfu": "h100=0.4,b200=0.35", "price": "h100=2.5,b200=4.5"})
    rows = rows_of(r)
    h100, b200 = catalog.gpu("h100").peak("bf16"), catalog.gpu("b200").peak("bf16")
    assert rows["h100-sxm"]["relative_value"] == pytest.approx(0.4)
    assert rows["b200"]["relative_value"] == pytest.approx(b200 / h100 * 0.35 / 1.8)
    assert rows["b200"]["per_token_vs_baseline"] == pytest.approx(0.4 / rows["b200"]["relative_value"])


def test_aliases_match_across_options():
    r = calculate("compare", {**JOB, "gpu": "h100,b200", "mfu": "h100-sxm=0.45", "price": "H100=2,b200=4"})
    assert rows_of(r)["h100-sxm"]["mfu"] == 0.45


def test_a_peak_by_hand_overrides_the_catalog():
    r = calculate("compare", {**JOB, "gpu": "h100,b200", "peak": "b200=2P", "price": "h100=2,b200=4"})
    assert rows_of(r)["b200"]["dense_flops_per_s"] == 2e15


@pytest.mark.parametrize("raw,message", [
    ({"gpu": "h100,h200", "mfu": "b200=0.3"}, "mfu must name a part in --gpu; got b200=0.3"),
    ({"gpu": "h100,h10"}, "gpu is not in the catalog; got h10 (closest: h100-sxm"),
    ({"gpu": "h100,next", "peak": "next=2P"}, "price is required for next, a part given by hand"),
    ({"gpu": "h100,h100-sxm"}, "gpu is listed twice; got h100-sxm"),
    ({"gpu": "h100,b200", "mfu": "b200=35"}, "mfu[b200] must be in (0, 1]; got 35 (did you mean 0.35?)"),
    ({"gpu": "a100-sxm-80gb,h100", "precision": "fp8", "price": "a100-sxm-80gb=1,h100=2"},
     "precision is not supported by the A100"),
])
def test_bad_input_is_one_clear_error(raw, message):
    with pytest.raises(InputError) as exc:
        calculate("compare", {**JOB, **raw})
    assert str(exc.value).startswith(message)


def test_compare_chart():
    from napkin.calculators.compare import COMPARE

    r = calculate("compare", ISSUE_EXAMPLE)
    spec = COMPARE.charts(r)["cost-per-million"]
    assert [v["gpu"] for v in spec["data"]["values"]] == [row["gpu"] for row in r["ranking"]]


def test_rows_list_each_part_in_rank_order_for_the_page():
    r = calculate("compare", {**JOB, "gpu": "h100,next", "peak": "next=2.2P", "mfu": "h100=0.4",
                              "price": "h100=2.5,next=4.5"})
    rows = dict(r.rows())
    assert rows["1. next"] == "$0.06629/M at 40% MFU (guess), $4.50/h; -19.0% per token vs h100-sxm"
    assert rows["2. h100-sxm"] == "$0.08188/M at 40% MFU, $2.50/h; the baseline"


def test_a_part_with_no_reference_price_is_named_in_the_fix():
    """Review: the fix said `--price 2.50/h`, which prices every part alike (and warns so); the part is named now."""
    assert catalog.gpu_hour_price("l40s") is None  # the premise: the catalog lists no L40S rental price
    with pytest.raises(InputError) as e:
        calculate("compare", gpu="h100,l40s", params="7B", tokens="2T")
    assert str(e.value) == ("price is required for l40s: the catalog has no reference price for the L40S; got nothing "
                            "(give --price l40s=2.50 (your loaded $/GPU-hour for it))")
