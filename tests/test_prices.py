"""The dated price catalog: GPU-hour offers by provider (on-demand, committed, spot) and API token
prices kept as a history, each with its date and source; the reference prices the calculators
use are unchanged; a price's age is counted against issue 16's 180-day rule.

Golden values are what the cited sources state (prices.toml names each one).
"""

from __future__ import annotations

import datetime as dt

import pytest

from napkin import catalog
from napkin.catalog import prices
from napkin.errors import InputError, UnknownName

OFFERS = prices.gpu_offers()
POINTS = prices.api_price_points()
RENTED = ["a100-sxm-80gb", "h100-sxm", "h200", "b200", "gb200", "l40s", "mi300x", "tpu-v6e"]


# ------------------------------------------------------------------------- GPU-hour offers
@pytest.mark.parametrize("i", range(len(OFFERS)))
def test_every_offer_is_dated_sourced_and_plausible(i):
    o = OFFERS[i]
    assert o.gpu in catalog.gpus()
    assert o.kind in prices.OFFER_KINDS and o.provider.strip() and o.product.strip()
    assert 0.1 <= o.usd_per_gpu_hour <= 20
    assert dt.date(2021, 1, 1) <= prices.parse_date(o.date) <= dt.date(2027, 1, 1)
    assert "http" in o.source
    if o.via:
        assert "http" in o.via
    if o.kind == "committed":
        assert o.term.strip()
    if o.high_usd_per_gpu_hour is not None:
        assert o.high_usd_per_gpu_hour > o.usd_per_gpu_hour


@pytest.mark.parametrize("o", [o for o in OFFERS if o.usd_per_instance_hour], ids=lambda o: f"{o.provider}-{o.product}")
def test_instance_prices_divide_into_the_per_gpu_figure(o):
    """A price quoted per instance (CoreWeave's 8x HGX H100 at $49.24/h) is per GPU / GPU count."""
    assert o.gpus_per_instance and o.usd_per_gpu_hour == pytest.approx(o.usd_per_instance_hour / o.gpus_per_instance,
                                                                        abs=5e-5)


@pytest.mark.parametrize("key", RENTED)
def test_publicly_rented_parts_have_offers(key):
    assert prices.gpu_hour_offers(key)


@pytest.mark.parametrize("key", ["a100-sxm-80gb", "h100-sxm", "h200", "b200"])
def test_main_parts_are_priced_by_several_providers_hyperscaler_and_neocloud(key):
    providers = {o.provider for o in prices.gpu_hour_offers(key, "on-demand")}
    assert len(providers) >= 4
    assert providers & {"AWS", "Google Cloud", "Microsoft Azure", "CoreWeave"}
    assert providers & {"Lambda", "RunPod", "Hyperstack", "Crusoe", "Nebius", "Vast.ai"}


def test_committed_and_spot_offers_exist():
    assert {o.term for o in prices.gpu_hour_offers("tpu-v6e", "committed")} == {"1 year", "3 years"}
    assert prices.gpu_hour_offers("h100-sxm", "committed") and prices.gpu_hour_offers("h100-sxm", "spot")


def test_offer_anchors():
    """As the sources state them: Trillium at GA $2.70 / $1.89 (1 yr) / $1.22 (3 yr) per chip-hour;
    AWS p5.48xlarge $55.04/h for 8 H100 = $6.88; CoreWeave GB200 NVL72 $42.00/h for 4 GPUs."""
    v6e = {o.kind + o.term: o.usd_per_gpu_hour for o in prices.gpu_hour_offers("trillium")}
    assert v6e == {"on-demand": 2.70, "committed1 year": 1.89, "committed3 years": 1.22}
    aws = [o for o in prices.gpu_hour_offers("h100") if o.provider == "AWS"]
    assert [(o.usd_per_instance_hour, o.usd_per_gpu_hour, o.date) for o in aws] == [(55.04, 6.88, "2026-11-09")]
    gb = prices.gpu_hour_offers("gb200")[0]
    assert (gb.provider, gb.usd_per_gpu_hour, gb.gpus_per_instance) == ("CoreWeave", 10.50, 4)


def test_offers_are_cheapest_first_and_filter_by_kind():
    offers = prices.gpu_hour_offers("h200")
    assert [o.usd_per_gpu_hour for o in offers] == sorted(o.usd_per_gpu_hour for o in offers)
    assert all(o.kind == "spot" for o in prices.gpu_hour_offers("h200", "spot"))
    with pytest.raises(InputError, match="kind"):
        prices.gpu_hour_offers("h200", "reserved")
    with pytest.raises(UnknownName):
        prices.gpu_hour_offers("h300")
    assert prices.gpu_hour_offers("rtx-4090") == []  # a known part nobody in the catalog prices


def test_repeated_observations_keep_history_and_latest_keeps_the_newest():
    """RunPod's H100 Secure Cloud was $3.29 (2026-08-19), $3.49 (09-25), $3.99 (10-19)."""
    secure = [o for o in prices.gpu_hour_offers("h100-sxm") if o.product == "H100 SXM, Secure Cloud"]
    assert sorted((o.date, o.usd_per_gpu_hour) for o in secure) == [
        ("2026-08-19", 3.29), ("2026-09-25", 3.49), ("2026-10-19", 3.99)]
    latest = [o for o in prices.latest_offers("h100-sxm") if o.product == "H100 SXM, Secure Cloud"]
    assert [(o.date, o.usd_per_gpu_hour) for o in latest] == [("2026-10-19", 3.99)]


def test_a_bad_offer_is_refused_plainly():
    with pytest.raises(InputError, match="kind"):
        prices.GpuOffer(gpu="h100-sxm", provider="x", product="y", kind="reserved", usd_per_gpu_hour=1.0,
                        date="2026-01-01", source="https://x")
    with pytest.raises(InputError, match="term"):
        prices.GpuOffer(gpu="h100-sxm", provider="x", product="y", kind="committed", usd_per_gpu_hour=1.0,
                        date="2026-01-01", source="https://x")
    with pytest.raises(InputError, match="YYYY-MM-DD"):
        prices.GpuOffer(gpu="h100-sxm", provider="x", product="y", kind="spot", usd_per_gpu_hour=1.0,
                        date="May 2026", source="https://x")


# ------------------------------------------------------------------------- reference prices
def test_reference_gpu_hour_prices_keep_their_meaning():
    """The [gpu_hour.*] entries the calculators read today are unchanged (their outputs do not move)."""
    ref = {k: (p.usd_per_gpu_hour, p.low, p.date) for k, p in catalog.gpu_hour_prices().items()}
    assert ref == {
        "h100-sxm": (2.95, 2.79, "2026-05-20"), "h200": (4.00, 2.50, "2026-05-01"),
        "a100-sxm-80gb": (1.30, 1.10, "2026-05-01"), "b200": (5.25, 4.50, "2026-03-11"),
        "mi300x": (1.99, 1.50, "2026-05-18"),
    }
    assert catalog.gpu_hour_price("h100-sxm").age_days(dt.date(2026, 12, 1)) == 195


def test_catalog_rows_prices_are_the_reference_and_api_entries_only():
    rows = catalog.catalog_rows("prices")
    assert {r["kind"] for r in rows} == {"gpu_hour", "api"}
    assert len(catalog.catalog_rows("offers")) == len(OFFERS)
    history = catalog.catalog_rows("api_history")
    assert [r["date"] for r in history] == sorted(r["date"] for r in history)


# ------------------------------------------------------------------------- API price history
@pytest.mark.parametrize("i", range(len(POINTS)))
def test_every_api_observation_is_dated_and_sourced(i):
    p = POINTS[i]
    assert p.model.strip() and p.name.strip() and p.provider.strip()
    assert 0 < p.usd_per_million_input <= p.usd_per_million_output <= 700
    assert dt.date(2021, 1, 1) <= prices.parse_date(p.date) <= dt.date(2027, 1, 1)
    assert "http" in p.source


def test_gpt4o_history_falls_and_includes_the_current_entry():
    hist = prices.api_price_history("gpt-4o-2024-08-06")  # an alias of [api.gpt-4o]
    assert [(p.date, p.usd_per_million_input, p.usd_per_million_output) for p in hist] == [
        ("2024-05-13", 5.0, 15.0), ("2024-08-06", 2.5, 10.0), ("2024-10-01", 2.5, 10.0)]


def test_price_cuts_are_kept_as_observations():
    """o3's 80% cut (2025-06-10), Claude 3.5 Haiku's ($1/$5 to $0.80/$4), DeepSeek's end of promotion."""
    assert [(p.usd_per_million_input, p.usd_per_million_output) for p in prices.api_price_history("o3")] == [
        (10.0, 40.0), (2.0, 8.0)]
    haiku = prices.api_price_history("claude-haiku-3.5")  # the current [api.*] entry re-observes $0.80 later
    assert [(p.date, p.usd_per_million_input) for p in haiku] == [
        ("2024-11-04", 1.0), ("2024-12-05", 0.8), ("2025-05-22", 0.8)]
    assert [p.usd_per_million_input for p in prices.api_price_history("deepseek-chat")] == [0.14, 0.27, 0.56]


def test_gpt4_class_price_fell_an_order_of_magnitude():
    """Seed 003's LLMflation: OpenAI's flagship from GPT-4 ($30/$60, 2023-03) to GPT-4.1 ($2/$8, 2025-04),
    a blended 45/5 = 9x; the cheapest MMLU-42 model fell 1,000x in three years (a16z)."""
    series = {p.model: p for p in prices.api_price_series("openai-flagship")}
    assert series["gpt-4"].blended_usd_per_million / series["gpt-4.1"].blended_usd_per_million == 9.0
    mmlu42 = prices.api_price_series("mmlu-42-cheapest")
    assert [p.date[:7] for p in mmlu42] == ["2021-11", "2024-11"]
    assert mmlu42[0].blended_usd_per_million / mmlu42[-1].blended_usd_per_million == pytest.approx(1000)


def test_providers_covered():
    providers = {p.provider.split(" (")[0] for p in POINTS}
    assert {"OpenAI", "Anthropic", "Google", "DeepSeek", "Mistral AI", "Meta"} <= providers
    assert {p.host for p in POINTS if p.host} >= {"Together AI", "Groq", "DeepInfra"}


def test_unknown_api_model_and_lineage_are_named():
    with pytest.raises(UnknownName, match="API model"):
        prices.api_price_history("gpt-9")
    with pytest.raises(UnknownName, match="price lineage"):
        prices.api_price_series("openai-giant")


# ------------------------------------------------------------------------- age
@pytest.mark.parametrize("date, on, days, stale", [
    ("2026-05-20", dt.date(2026, 12, 1), 195, True),
    ("2026-06-04", dt.date(2026, 12, 1), 180, False),  # exactly 180 days is not older than 180
    ("2026-06-03", dt.date(2026, 12, 1), 181, True),
    ("2026-11-09", dt.date(2026, 12, 1), 22, False),
])
def test_price_age(date, on, days, stale):
    assert prices.price_age_days(date, on) == days
    assert prices.is_stale(date, on) is stale
    assert prices.STALE_AFTER_DAYS == 180


def test_age_of_a_bad_date_is_an_input_error():
    with pytest.raises(InputError, match="YYYY-MM-DD"):
        prices.price_age_days("2026-13-01")
