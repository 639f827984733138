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


def test_prices_say_how_old_they_are(monkeypatch):
    r = calculate("bill", model="claude-sonnet-4", as_of="2026-08-12")
    assert r["price_age_days"] == 365
    assert any(w.code == "stale-prices" for w in r.warnings)
    assert not any(w.code == "stale-prices" for w in bill(model="claude-sonnet-4").warnings)
    today = calculate("bill", model="claude-sonnet-4")
    assert today["price_age_days"] == (dt.date(2026, 12, 1) - dt.date(2025, 8, 12)).days == 476  # NAPKIN_TODAY
    monkeypatch.delenv("NAPKIN_TODAY")  # unpinned, the clock's date
    assert calculate("bill", model="claude-sonnet-4")["price_age_days"] == (dt.date.today() - dt.date(2025, 8, 12)).days


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
    r = bill(model="claude-haiku-3.5", serve_model="llama-3.1-405b", self_hosted=True, gpu="h100", gpus=16, tp=16,
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
    assert str(exc.value) == f"calls must be in (0, {MAX_CALLS}]; got 1e30 (give at most {MAX_CALLS})"
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


# --------------------------------------------------------------------- reasoning tokens (issue 16)
def test_reasoning_tokens_bill_as_output_and_are_their_own_input():
    """o3 at $2/M in, $8/M out: 1,000 in, 300 shown, 2,000 of reasoning: the 2,300 generated tokens bill as output."""
    r = bill(model="o3", input=1000, output=300, reasoning=2000)
    assert r["output_usd"] == pytest.approx(2300 * 8e-6)
    assert r["usd"] == pytest.approx(1000 * 2e-6 + 2300 * 8e-6)
    (step,) = [s for s in r.steps if s.name == "output_usd"]
    assert step.formula == "(output + reasoning) · price_out / 1e6"
    assert any(n.startswith("2,000 reasoning tokens bill as output though the user never sees them: 87%")
               for n in r.notes)
    plain = bill(model="o3", input=1000, output=300)
    assert plain["usd"] == pytest.approx(1000 * 2e-6 + 300 * 8e-6)
    assert not any("reasoning" in n for n in plain.notes)


def test_reasoning_tokens_in_a_task_and_on_every_model():
    task = bill(model="claude-sonnet-4", input=4200, output=300, reasoning=700, calls=3, history_growth=2000)
    inputs = [4200, 6200, 8200]
    assert task["task_usd_without_cache"] == pytest.approx(sum(inputs) * 3e-6 + 3 * 1000 * 15e-6)
    assert task["task_output_tokens"] == 900 and task["task_reasoning_tokens"] == 2100
    rows = {x["model"]: x["usd"] for x in bill(compare=True, input=1000, output=300, reasoning=700)["compare"]}
    assert rows["claude-sonnet-4"] == pytest.approx(1000 * 3e-6 + 1000 * 15e-6)


def test_reasoning_tokens_are_generated_by_the_self_hosted_replica_too():
    r = bill(model="claude-sonnet-4", serve_model="llama-3.1-70b", self_hosted=True, gpu="h100", gpus=4,
             precision="fp8", price="2.50/h", reasoning=700)
    s = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=4, precision="fp8", prompt=1000, output=1000,
                  batch=64, price="2.50/h", utilization=1.0)
    assert r["self_hosted_tokens_per_s"] == s["tokens_per_s"]
    assert r["self_hosted_usd"] == pytest.approx(s["usd_per_request"], rel=1e-12)
    assert r["breakeven_tokens_per_month"] == pytest.approx(r["breakeven_requests_per_month"] * 2000)


# ------------------------------------------------------------- self-hosted: the serving model, and a verdict
def test_self_hosted_is_the_serve_calculators_model_and_capacity():
    """The replica's cost per request and its requests a month are serve's (the operator model, continuous
    batching with every prefill paid), composed through the registry: no second model of a replica's time."""
    r = bill(model="claude-sonnet-4", serve_model="llama-3.1-70b", self_hosted=True, gpu="h100", gpus=4,
             precision="fp8", price="2.50/h", utilization=0.5)
    s = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=4, precision="fp8", prompt=1000, output=300,
                  batch=64, price="2.50/h", utilization=0.5)
    assert r["self_hosted_scheduling"] == s["scheduling"] == "continuous"
    assert r["self_hosted_usd"] == pytest.approx(s["usd_per_request"], rel=1e-12)
    assert r["self_hosted_requests_per_s"] == s["requests_per_s"]
    assert r["self_hosted_requests_per_month"] == pytest.approx(s["requests_per_s"] * 8760 * 3600 / 12, rel=1e-12)
    assert r["self_hosted_error_bar"] == "tokens_per_s: " + s["error_bar"]["tokens_per_s"]
    # the utilization at which the replica costs what the API charges is the break-even's
    full = bill(model="claude-sonnet-4", serve_model="llama-3.1-70b", self_hosted=True, gpu="h100", gpus=4,
                precision="fp8", price="2.50/h")
    assert r["breakeven_utilization"] == pytest.approx(full["self_hosted_usd"] / r["usd"], rel=1e-12)


def test_a_prompt_cache_is_a_prefix_cache_on_the_replica():
    r = bill(model="claude-sonnet-4", serve_model="llama-3.1-70b", self_hosted=True, gpu="h100", gpus=4,
             price="2.50/h", cached=988)
    s = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=4, prompt=1000, output=300, batch=64,
                  cached_prefix=988, price="2.50/h", utilization=1.0)
    assert r["self_hosted_usd"] == pytest.approx(s["usd_per_request"], rel=1e-12)


def test_the_verdict_says_above_when_the_vendor_charges_more_than_the_replica_costs():
    r = bill(model="claude-sonnet-4", serve_model="llama-3.1-70b", self_hosted=True, gpu="h100", gpus=4,
             precision="fp8", price="2.50/h")
    assert r["verdict"] == "above"
    assert r["price_over_self_hosted"] == pytest.approx(r["usd"] / r["self_hosted_usd"], rel=1e-12)
    assert r["price_over_self_hosted"] > 1
    assert r.notes[-1].startswith("verdict: Claude Sonnet 4's price is above the self-hosted cost at this "
                                  "utilization: $0.0075 a request, ")


def test_the_verdict_says_below_when_the_vendor_sells_under_the_replicas_cost(run_cli):
    """Claude Haiku 3.5 bills $0.002 a request; 405B on 16 H100s at $5/h costs more even always busy."""
    r = bill(model="claude-haiku-3.5", serve_model="llama-3.1-405b", self_hosted=True, gpu="h100", gpus=16, tp=8,
             price="5/h")
    assert r["verdict"] == "below" and r["price_over_self_hosted"] < 1
    assert r.notes[-1].endswith("the vendor sells under this replica's cost: subsidised, or on better hardware, "
                                "software or a smaller model than this")
    out = run_cli("bill", "claude-haiku-3.5", "--self-hosted", "--serve-model", "llama-3.1-405b", "--gpu", "h100",
                  "--gpus", "16", "--tp", "8", "--price", "5/h", "--as-of", "2025-10-01").stdout
    assert out.splitlines()[-1].startswith("note: verdict: Claude Haiku 3.5's price is below the self-hosted cost")


def test_no_price_no_verdict():
    r = bill(model="deepseek-v3", self_hosted=True, gpu="h200", gpus=8, precision="fp8")
    assert "verdict" not in r.results
    assert r.notes[-1] == "no --price for the self-hosted GPUs: no self-hosted $ figures, break-even or verdict"


SELF_HOSTED_ARGS = ("bill", "claude-sonnet-4", "--reasoning", "700", "--self-hosted", "--serve-model",
                    "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--precision", "fp8", "--price", "2.50/h",
                    "--utilization", "0.5", "--as-of", "2025-10-01")
SELF_HOSTED = (
    'API bill: Claude Sonnet 4 (Anthropic)\n'
    '  model                               Claude Sonnet 4\n'
    '  provider                            Anthropic\n'
    '  tier                                standard\n'
    '  input_usd                           $0.003\n'
    '  output_usd                          $0.015\n'
    '  usd                                 $0.018\n'
    '  price_date                          2025-08-12\n'
    '  price_age_days                      50\n'
    '  price_source                        https://docs.anthropic.com/en/docs/about-claude/pricing\n'
    '  self_hosted_model                   Llama 3.1 70B\n'
    '  self_hosted_replica                 4 x H100 SXM\n'
    '  self_hosted_fits                    yes\n'
    '  self_hosted_concurrency             64\n'
    '  self_hosted_scheduling              continuous\n'
    '  self_hosted_tokens_per_s            2719/s\n'
    '  self_hosted_requests_per_s          2.719/s\n'
    '  self_hosted_error_bar               tokens_per_s: median error 7% (max 175%) on 205 published multi-GPU H100 dense-model points, out of sample\n'
    '  self_hosted_usd_per_million_input   $0.3006/M\n'
    '  self_hosted_usd_per_million_output  $1.743/M\n'
    '  self_hosted_usd                     $0.002043\n'
    '  self_hosted_usd_per_month           $7,300\n'
    '  self_hosted_requests_per_month      7.146M\n'
    '  breakeven_requests_per_month        405.6k\n'
    '  breakeven_tokens_per_month          811.1M\n'
    '  breakeven_utilization               5.68%\n'
    '  price_over_self_hosted              8.81\n'
    '  verdict                             above\n'
    'assumed: concurrency = 64\n'
    'note: 700 reasoning tokens bill as output though the user never sees them: 70% of the output bill\n'
    'note: 5-minute cache writes (1-hour writes are $6/M). Long-context tier from the 1M-token context beta of 2025-08-12; the long-context cache prices are the standard 1.25x and 0.1x multipliers on $6, as the pricing page says they stack, not separately listed.\n'
    'note: Llama 3.1 70B is not Claude Sonnet 4: the comparison is of cost, not of answer quality\n'
    'note: below 405,556 requests a month the API is cheaper: a rented replica costs $7,300 a month whether or not it is busy (own cost per request here $0.002043 at 50% utilization)\n'
    "note: verdict: Claude Sonnet 4's price is above the self-hosted cost at this utilization: $0.018 a request, 8.81x the $0.002043 it costs on 4 x H100 SXM (Llama 3.1 70B) at 50% busy; the difference is the vendor's margin and the idle hours it carries, or a better model than the one self-hosted\n"
)


def test_self_hosted_exact_output(run_cli):
    assert run_cli(*SELF_HOSTED_ARGS).stdout == SELF_HOSTED


def test_self_hosted_says_how_the_gpus_are_split():
    r = bill(model="gpt-4o", self_hosted=True, serve_model="llama-3.1-405b", gpu="h100", gpus=16, price="2.5/h")
    assert r["self_hosted_replica"] == "16 x H100 SXM (TP 8 x 2 stages)"
    assert any(n.startswith("self-hosted: --gpus 16 spans more than one scale-up domain of 8") for n in r.notes)
