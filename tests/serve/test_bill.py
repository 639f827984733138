"""`napkin bill`: line items, tiers, batch, the agent's task, every model, self-hosting, the catalog."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from napkin import calculate, catalog


def bill(**kw):
    return calculate("bill", as_of="2025-10-01", **kw)


def test_cached_receipt_line_items():
    """The seed's receipt with the 988-token system prompt read from cache at $0.30/M."""
    r = bill(model="claude-sonnet-4", input=1000, output=300, cached=988)
    assert r["input_usd"] == pytest.approx(12 * 3e-6)
    assert r["cache_read_usd"] == pytest.approx(988 * 0.30e-6)
    assert r["usd"] == pytest.approx(12 * 3e-6 + 988 * 0.3e-6 + 300 * 15e-6)


def test_cache_write_premium():
    r = bill(model="claude-sonnet-4", input=1000, output=0, cache_write=988)
    assert r["cache_write_usd"] == pytest.approx(988 * 3.75e-6)
    o = bill(model="gpt-4o", input=1000, output=0, cache_write=988)  # OpenAI: no write premium
    assert o["cache_write_usd"] == pytest.approx(988 * 2.5e-6)


@pytest.mark.parametrize("model,inp,out,usd", [
    ("claude-sonnet-4", 250_000, 2_000, 250_000 * 6e-6 + 2_000 * 22.5e-6),  # whole request at the >200k tier
    ("claude-sonnet-4", 200_000, 2_000, 200_000 * 3e-6 + 2_000 * 15e-6),  # at the threshold: standard
    ("gemini-2.5-pro", 300_000, 0, 0.75),  # 300k x $2.50/M
])
def test_long_context_tiers(model, inp, out, usd):
    r = bill(model=model, input=inp, output=out)
    assert r["usd"] == pytest.approx(usd)
    assert (r["tier"] != "standard") == (inp > 200_000)


def test_batch_discount_and_its_absence():
    full = bill(model="claude-sonnet-4")
    half = bill(model="claude-sonnet-4", batch=True)
    assert half["usd"] == pytest.approx(full["usd"] / 2)
    ds = bill(model="deepseek-v3", batch=True)
    assert ds["usd"] == pytest.approx(bill(model="deepseek-v3")["usd"])
    assert any(w.code == "no-batch-discount" for w in ds.warnings)


def test_agent_task_with_and_without_caching():
    r = bill(model="claude-sonnet-4", input=4200, output=300, calls=7, history_growth=2000)
    inputs = [4200 + 2000 * i for i in range(7)]
    assert r["task_input_tokens"] == sum(inputs)
    assert r["task_usd_without_cache"] == pytest.approx(sum(inputs) * 3e-6 + 7 * 300 * 15e-6)
    cached = 4200 * 3.75e-6 + sum(prev * 0.3e-6 + 2000 * 3.75e-6 for prev in inputs[:-1]) + 7 * 300 * 15e-6
    assert r["task_usd_with_cache"] == pytest.approx(cached)
    assert r["cache_saving"] == pytest.approx(1 - cached / r["task_usd_without_cache"])


def test_prices_say_how_old_they_are():
    r = calculate("bill", model="claude-sonnet-4", as_of="2026-08-12")
    assert r["price_age_days"] == 365
    assert any(w.code == "stale-prices" for w in r.warnings)
    assert not any(w.code == "stale-prices" for w in bill(model="claude-sonnet-4").warnings)
    today = calculate("bill", model="claude-sonnet-4")
    assert today["price_age_days"] == (dt.date.today() - dt.date(2025, 8, 12)).days


def test_compare_lists_every_catalog_model_cheapest_first():
    r = bill(compare=True)
    rows = r["compare"]
    assert {x["model"] for x in rows} == set(catalog.table("prices")["api"])
    assert [x["usd"] for x in rows] == sorted(x["usd"] for x in rows)
    assert r["cheapest"] == rows[0]["model"]


def test_self_hosted_break_even():
    r = bill(model="claude-sonnet-4", serve_model="llama-3.1-70b", self_hosted=True, gpu="h100", gpus=4,
             price="2.50/h")
    month = r["self_hosted_usd_per_month"]
    assert month == pytest.approx(4 * 2.5 * 8760 / 12)
    assert r["breakeven_requests_per_month"] * r["usd"] == pytest.approx(month)
    assert 0 < r["breakeven_utilization"] <= 1
    assert r["breakeven_tokens_per_month"] == pytest.approx(r["breakeven_requests_per_month"] * 1300)


def test_self_hosted_without_price_gives_throughput_not_dollars():
    r = bill(model="deepseek-v3", self_hosted=True, gpu="h200", gpus=8, precision="fp8")
    assert r["self_hosted_model"] == "DeepSeek-V3"  # the API entry names its open weights
    assert r["self_hosted_tokens_per_s"] > 0
    assert "self_hosted_usd" not in r.results


def test_every_api_price_is_dated_and_sourced():
    for key, e in catalog.table("prices")["api"].items():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", e["date"]), key
        assert e["source"].startswith("https://"), key
        assert e["provider"], key
        assert e["usd_per_million_output"] >= e["usd_per_million_input"] > 0, key
        assert 0 <= e.get("batch_discount", 0) < 1, key
        if "usd_per_million_cache_read" in e:
            assert e["usd_per_million_cache_read"] < e["usd_per_million_input"], key
    sonnet = catalog.table("prices")["api"]["claude-sonnet-4"]
    assert (sonnet["usd_per_million_input"], sonnet["usd_per_million_output"], sonnet["usd_per_million_cache_write"],
            sonnet["usd_per_million_cache_read"], sonnet["batch_discount"], sonnet["long_context_usd_per_million_input"],
            sonnet["long_context_usd_per_million_output"]) == (3.0, 15.0, 3.75, 0.30, 0.5, 6.0, 22.50)


def test_aliases_resolve():
    assert bill(model="claude-haiku")["model"] == "Claude Haiku 3.5"
    assert bill(model="deepseek-chat")["model"].startswith("DeepSeek-V3")


def test_no_break_even_is_said_in_words_not_a_null():
    """405B on 16 H100s at $5/h costs ~$0.014 a request even at full load, more than Claude Haiku 3.5's $0.002
    (1,000 in at $0.80/M + 300 out at $4/M): there is no break-even volume, so no breakeven_* key, and a note
    says why (the text printed `breakeven_requests_per_month None`)."""
    r = bill(model="claude-haiku-3.5", serve_model="llama-3.1-405b", self_hosted=True, gpu="h100", gpus=16,
             tp=8, price="5/h")
    assert r["usd"] == pytest.approx(1000 * 0.8e-6 + 300 * 4e-6)
    assert not any(k.startswith("breakeven") for k in r.results)
    assert None not in r.results.values()
    per_request = r["self_hosted_usd_per_month"] / r["self_hosted_requests_per_month"]
    assert per_request > r["usd"]
    assert any(n.startswith("no break-even volume: self-hosting never pays here") and f"${per_request:.4g}" in n
               for n in r.notes)


def test_self_hosted_carries_the_serving_warnings():
    r = bill(model="claude-haiku-3.5", serve_model="llama-3.1-405b", self_hosted=True, gpu="h100", gpus=16,
             price="5/h")
    assert any(w.code == "beyond-scale-up-domain" and w.message.startswith("self-hosted: TP 16") for w in r.warnings)


def test_as_of_before_the_price_date_warns_and_shows_no_negative_age():
    """Claude Sonnet 4's catalog price is dated 2025-08-12: on 2024-01-01 it was 589 days in the future."""
    r = calculate("bill", model="claude-sonnet-4", as_of="2024-01-01")
    assert "price_age_days" not in r.results
    msg = next(w.message for w in r.warnings if w.code == "price-not-yet-listed")
    assert "dated 2025-08-12, 589 days after --as-of 2024-01-01" in msg
    assert r["usd"] == pytest.approx(0.0075)  # still billed, at the dated price the warning names
    on_the_day = calculate("bill", model="claude-sonnet-4", as_of="2025-08-12")
    assert on_the_day["price_age_days"] == 0 and not on_the_day.warnings
    rows = calculate("bill", compare=True, as_of="2025-01-01")
    ages = {x["model"]: x.get("age_days") for x in rows["compare"]}
    assert ages["gpt-4o"] == 92 and ages["claude-sonnet-4"] is None  # 2024-10-01 + 92 days; 2025-08-12 later
    assert all(v is None or v >= 0 for v in ages.values())
    later = sum(v is None for v in ages.values())
    assert any(w.code == "price-not-yet-listed" and w.message.startswith(f"{later} of {len(ages)} catalog prices")
               for w in rows.warnings)


def test_an_agent_task_is_bounded_and_a_long_one_prints_its_ends(run_cli):
    """Found in review: `calls: 1e30` over the web API grew the server to 24 GB (one row per call).
    Calls are bounded; a long task's table prints its first and last calls, --json every one."""
    from napkin.calculators.bill import MAX_CALLS
    from napkin.errors import InputError

    with pytest.raises(InputError) as exc:
        calculate("bill", {"model": "claude-sonnet-4", "input": "1000", "output": "300", "calls": "1e30"})
    assert str(exc.value) == f"calls must be in (0, {MAX_CALLS}]; got 1e30"
    args = ("bill", "claude-sonnet-4", "--input", "1000", "--output", "300", "--calls", "100",
            "--history-growth", "500")
    out = run_cli(*args).stdout.splitlines()
    i = out.index("the agent's calls, with prompt caching:")
    table = out[i + 2:]
    assert [row.split()[0] for row in table[:35]] == [str(n) for n in range(1, 36)]
    assert table[35] == "  ... 60 rows more (--json lists all 100)"
    assert [row.split()[0] for row in table[36:]] == ["96", "97", "98", "99", "100"]
    rows = json.loads(run_cli(*args, "--json").stdout)["task_calls"]
    assert [r["call"] for r in rows] == list(range(1, 101))
