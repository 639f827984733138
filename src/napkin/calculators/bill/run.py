"""The bill's run: one request's line items, an agent's task, every catalog model, and the self-hosted
alternative (self_hosted.py)."""

from __future__ import annotations

import datetime as dt

from napkin import catalog
from napkin.catalog.prices import today as prices_today
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import bill as billf

from .prices import ApiPrice, api_price, api_prices, bill_one, parse_date
from .request import BillRequest
from .self_hosted import self_hosted

STALE_DAYS = 180


def run_bill(req: BillRequest) -> Report:
    r = Report("API bill", command="bill")
    custom = req.input_price is not None or req.output_price is not None
    if custom and (req.input_price is None or req.output_price is None):
        raise InputError("input_price" if req.input_price is None else "output_price", "nothing", "is required",
                         "give both --input-price and --output-price")
    if req.cached + req.cache_write > req.input:
        extra = f" together with --cache-write {req.cache_write:,.0f}" if req.cache_write else ""
        raise InputError("cached", req.cached, f"exceeds the {req.input:,.0f} input tokens{extra}",
                         "cached and written tokens are part of the input")
    if req.model is None and not custom and not req.compare:
        raise InputError("model", "nothing", "is required", "give an API model (`napkin catalog prices`), "
                                                            "--input-price and --output-price, or --compare")
    today = parse_date(req.as_of, "as_of") if req.as_of else prices_today()
    if custom:
        p = ApiPrice("custom", req.model or "custom prices", "", req.input_price, req.output_price,  # type: ignore[arg-type]
                     req.input_price, req.input_price, 0.0, None, None, None, None, None,  # type: ignore[arg-type]
                     today.isoformat(), "given by hand", "", None, False, False)
        r.assume("usd_per_million_input", req.input_price, "given by hand", unit="usd_per_million", basis="given")
        r.assume("usd_per_million_output", req.output_price, "given by hand", unit="usd_per_million", basis="given")
    elif req.model is not None:
        p = api_price(req.model)
    else:
        p = None
    if p is not None:
        bill_request(r, req, p, today)
    if req.compare:
        compare_all(r, req, today)
    unused = [(k, v) for k, v in (("gpu", req.gpu), ("serve_model", req.serve_model)) if v is not None]
    if unused and not req.self_hosted:
        for k, v in unused:  # still names that must exist: a typo is not silently ignored
            (catalog.gpu if k == "gpu" else catalog.model)(v)
        r.note(f"--{', --'.join(k.replace('_', '-') for k, _ in unused)} used only with --self-hosted: not used here")
    if req.self_hosted:
        if p is None:
            raise InputError("model", "nothing", "is required with --self-hosted", "name the API model to compare")
        self_hosted(r, req, p)
    return r


def bill_request(r: Report, req: BillRequest, p: ApiPrice, today: dt.date) -> None:
    r.title = f"API bill: {p.name}" + (f" ({p.provider})" if p.provider else "")
    r.set("model", p.name)
    if p.provider:
        r.set("provider", p.provider)
    b = bill_one(p, input_tokens=req.input, output_tokens=req.output + req.reasoning, cached=req.cached,
                 cache_write=req.cache_write, batch=req.batch)
    pin, pout, pw, pr = b["prices"]
    r.set("tier", b["tier"])
    if b["tier"] != "standard":
        r.note(f"the input exceeds {p.lc_threshold:,.0f} tokens, so the whole request bills at the long-context "
               f"tier (${pin:g}/M in, ${pout:g}/M out): the KV cache of a long prompt is real estate")
    keep = 1.0 - (p.batch_discount if req.batch else 0.0)
    uncached = req.input - req.cached - req.cache_write
    r.step("input_usd", "(input − cached − cache_write) · price_in / 1e6", value=b["input_usd"], unit="usd",
           tokens=(uncached, "count"), price_in=(pin * keep, "usd_per_million"), cites=billf.api_request_usd)
    if req.cache_write:
        r.step("cache_write_usd", "cache_write · price_cache_write / 1e6", value=b["cache_write_usd"], unit="usd",
               tokens=(req.cache_write, "count"), price=(pw * keep, "usd_per_million"), cites=billf.api_request_usd)
        if not p.cache_write_published:
            r.note(f"{p.provider or p.name} publishes no cache-write premium: written tokens bill at the input price")
    if req.cached:
        r.step("cache_read_usd", "cached · price_cache_read / 1e6", value=b["cache_read_usd"], unit="usd",
               tokens=(req.cached, "count"), price=(pr * keep, "usd_per_million"), cites=billf.api_request_usd)
        if not p.cache_read_published:
            r.warn("no-cache-price", f"{p.name} has no published cache-read price: cached tokens bill at the input "
                                     "price here")
    if req.reasoning:
        r.step("output_usd", "(output + reasoning) · price_out / 1e6", value=b["output_usd"], unit="usd",
               output=(req.output, "count"), reasoning=(req.reasoning, "count"),
               price_out=(pout * keep, "usd_per_million"), cites=billf.api_request_usd)
        r.note(f"{req.reasoning:,.0f} reasoning tokens bill as output though the user never sees them: "
               f"{req.reasoning / (req.output + req.reasoning):.0%} of the output bill")
    else:
        r.step("output_usd", "output · price_out / 1e6", value=b["output_usd"], unit="usd",
               tokens=(req.output, "count"), price_out=(pout * keep, "usd_per_million"), cites=billf.api_request_usd)
    r.step("usd", "input_usd + cache_write_usd + cache_read_usd + output_usd", value=b["usd"], unit="usd",
           cites=billf.api_request_usd)
    if req.batch:
        if p.batch_discount:
            r.note(f"batch API: {p.batch_discount:.0%} off, for results within 24 hours")
        else:
            r.warn("no-batch-discount", f"{p.provider or p.name} publishes no batch discount: the bill is the "
                                        "standard price")
    if p.key != "custom":
        age = (today - parse_date(p.date, "date")).days
        r.set("price_date", p.date)
        if age >= 0:
            r.set("price_age_days", age, "count")
        else:  # no negative age: the catalog holds one dated price, and on this date it was not yet in force
            r.warn("price-not-yet-listed", f"the catalog price of {p.name} is dated {p.date}, {-age} days after "
                                           f"--as-of {today.isoformat()}: it was not in force then, so this bill is at "
                                           f"the {p.date} price, not the one of {today.isoformat()} (give "
                                           "--input-price and --output-price for that date's prices)")
        r.set("price_source", p.source)
        if age > STALE_DAYS:
            r.warn("stale-prices", f"these prices are {age} days old ({p.date}): check {p.source}")
        if p.note:
            r.note(p.note)
    if req.calls > 1 or req.history_growth:
        agent_task(r, req, p)


def agent_task(r: Report, req: BillRequest, p: ApiPrice) -> None:
    """A loop of calls re-sending a growing history: the task's cost with and without caching."""
    inputs = billf.agent_loop_inputs(req.input, history_growth=req.history_growth, calls=req.calls)
    total_in = r.step("task_input_tokens", "Σ (input + i · growth), i = 0 .. calls − 1", value=float(sum(inputs)),
                      unit="count", input=(req.input, "count"), growth=(req.history_growth, "count"),
                      calls=req.calls, cites=billf.agent_loop_inputs)
    out = req.output + req.reasoning
    plain = sum(bill_one(p, input_tokens=x, output_tokens=out, cached=0.0, cache_write=0.0,
                         batch=req.batch)["usd"] for x in inputs)
    r.step("task_usd_without_cache", "Σ bill(input_i, output), every token at the input price", value=plain,
           unit="usd")
    cached_total = 0.0
    rows = []
    for i, x in enumerate(inputs):
        read = req.cached if i == 0 else inputs[i - 1]
        write = x - read
        b = bill_one(p, input_tokens=x, output_tokens=out, cached=read, cache_write=write, batch=req.batch)
        cached_total += b["usd"]
        rows.append({"call": i + 1, "input_tokens": x, "cache_read_tokens": read, "cache_write_tokens": write,
                     "usd": b["usd"]})
    r.step("task_usd_with_cache", "Σ bill(read = input_{i−1}, write = growth, output)", value=cached_total,
           unit="usd", note="each call reads the previous call's prompt from the cache and writes what is new")
    if plain > 0:
        r.step("cache_saving", "1 − with_cache / without_cache", value=1.0 - cached_total / plain, unit="fraction")
    r.set("task_calls", rows)
    r.set("task_output_tokens", req.output * req.calls, "count")
    if req.reasoning:
        r.set("task_reasoning_tokens", req.reasoning * req.calls, "count")
    r.note(f"an agent's honest unit is the task: {req.calls} calls re-send {total_in:,.0f} input tokens in all, "
           f"{total_in / max(req.input, 1):.1f}x the first prompt")


def compare_all(r: Report, req: BillRequest, today: dt.date) -> None:
    rows = []
    for p in api_prices().values():
        b = bill_one(p, input_tokens=req.input, output_tokens=req.output + req.reasoning, cached=req.cached,
                     cache_write=req.cache_write, batch=req.batch)
        age = (today - parse_date(p.date, "date")).days
        rows.append({"model": p.key, "provider": p.provider, "usd": b["usd"], "tier": b["tier"], "date": p.date,
                     **({"age_days": age} if age >= 0 else {})})  # no age before the price existed: see the warning
    rows.sort(key=lambda x: x["usd"])
    later = [x["model"] for x in rows if "age_days" not in x]
    if later:
        r.warn("price-not-yet-listed", f"{len(later)} of {len(rows)} catalog prices are dated after --as-of "
                                       f"{today.isoformat()} ({', '.join(later)}): they were not in force then, so "
                                       "their age shows as '-' and their bills are at their own, later dates")
    if not r.title.startswith("API bill:"):
        r.title = "API bill: every catalog model"
    r.set("compare", rows)
    if rows:
        r.set("cheapest", rows[0]["model"])
        r.step("spread", "dearest / cheapest", value=rows[-1]["usd"] / rows[0]["usd"] if rows[0]["usd"] else 0.0,
               unit="number", note="the same request, priced by every catalog model")
    r.note("the cheapest model is not the same answer: routing spends dear tokens only where cheap ones fail")
