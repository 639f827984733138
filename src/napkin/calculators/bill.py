"""An API bill from the dated price catalog: one request, every model, an agent's task, and
the self-hosted alternative with its break-even volume.

Prices live in ``catalog/prices.toml`` under ``[api.<model>]``, each with the date it was
in force and the provider's page; the bill says how old they are. The receipt of one request
(1,000 tokens in, 300 out at $3 / $15 per million: $0.0075) is the golden case.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.catalog.prices import today as prices_today
from napkin.derivation import Report
from napkin.errors import InputError, UnknownName
from napkin.formulas import bill as billf
from napkin.request import field
from napkin.units import HOUR, MILLION, YEAR

S = msgspec.Struct

STALE_DAYS = 180
MONTH_S = YEAR / 12


MAX_CALLS = 10_000  # each call is priced on its own (tiers move with its length): a task is a loop, not a fleet


class BillRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str | None, field("name", "API model in the price catalog (`napkin catalog prices`)",
                                       positional=True)] = None
    input: Annotated[float, field("count", "input tokens of the request (the whole prompt)", ge=0)] = 1000.0
    output: Annotated[float, field("count", "output tokens (reasoning tokens count as output)", ge=0)] = 300.0
    cached: Annotated[float, field("count", "input tokens read from the provider's prompt cache", ge=0)] = 0.0
    cache_write: Annotated[float, field("count", "input tokens written to the prompt cache by this request",
                                        ge=0)] = 0.0
    batch: Annotated[bool, field("bool", "use the provider's batch API discount")] = False
    compare: Annotated[bool, field("bool", "bill the same request on every catalog model")] = False
    calls: Annotated[int, field("int", "calls in an agent's task (each re-sends the growing history)", gt=0,
                                le=MAX_CALLS)] = 1
    history_growth: Annotated[float, field("count", "tokens the history grows by per call", ge=0)] = 0.0
    input_price: Annotated[float | None, field("usd_per_million", "input price by hand (instead of the catalog)",
                                               ge=0)] = None
    output_price: Annotated[float | None, field("usd_per_million", "output price by hand (instead of the catalog)",
                                                ge=0)] = None
    self_hosted: Annotated[bool, field("bool", "put the serving calculator's cost beside the API's")] = False
    serve_model: Annotated[str | None, field("name", "open model to self-host (default: the API model's weights)")] = None
    gpu: Annotated[str | None, field("name", "accelerator for --self-hosted")] = None
    gpus: Annotated[int | None, field("int", "GPUs per self-hosted replica", gt=0)] = None
    tp: Annotated[int | None, field("int", "tensor-parallel degree of the self-hosted replica", gt=0)] = None
    precision: Annotated[str, field("precision", "weight precision of the self-hosted model")] = "bf16"
    price: Annotated[float | None, field("usd_per_hour", "price of one GPU-hour for --self-hosted", gt=0)] = None
    utilization: Annotated[float, field("fraction", "fraction of the hour the self-hosted replica generates")] = 1.0
    concurrency: Annotated[int | None, field("int", "sequences the self-hosted replica decodes together "
                                                    "(default: the most that fit, at most 64)", gt=0)] = None
    as_of: Annotated[str | None, field("text", "date to age the prices from, YYYY-MM-DD (default: today)")] = None


@dataclass(frozen=True)
class ApiPrice:
    key: str
    name: str
    provider: str
    input: float
    output: float
    cache_write: float
    cache_read: float
    batch_discount: float
    lc_threshold: float | None
    lc_input: float | None
    lc_output: float | None
    lc_cache_write: float | None
    lc_cache_read: float | None
    date: str
    source: str
    note: str
    open_weights_model: str | None
    cache_write_published: bool
    cache_read_published: bool

    def tier(self, input_tokens: float) -> tuple[str, float, float, float, float]:
        """(tier name, input, output, cache write, cache read) prices for a request of this input."""
        if self.lc_threshold is not None and input_tokens > self.lc_threshold:
            scale = (self.lc_input or self.input) / self.input if self.input else 1.0
            return (f"long context (> {self.lc_threshold:,.0f} input tokens)", self.lc_input or self.input,
                    self.lc_output or self.output,
                    self.lc_cache_write if self.lc_cache_write is not None else self.cache_write * scale,
                    self.lc_cache_read if self.lc_cache_read is not None else self.cache_read * scale)
        return "standard", self.input, self.output, self.cache_write, self.cache_read


def api_prices() -> dict[str, ApiPrice]:
    out = {}
    for key, e in catalog.table("prices").get("api", {}).items():
        inp = float(e["usd_per_million_input"])
        out[key] = ApiPrice(
            key=key, name=e.get("name", key), provider=e.get("provider", ""), input=inp,
            output=float(e["usd_per_million_output"]),
            cache_write=float(e.get("usd_per_million_cache_write", inp)),
            cache_read=float(e.get("usd_per_million_cache_read", inp)),
            batch_discount=float(e.get("batch_discount", 0.0)),
            lc_threshold=e.get("long_context_threshold_tokens"),
            lc_input=e.get("long_context_usd_per_million_input"),
            lc_output=e.get("long_context_usd_per_million_output"),
            lc_cache_write=e.get("long_context_usd_per_million_cache_write"),
            lc_cache_read=e.get("long_context_usd_per_million_cache_read"),
            date=str(e["date"]), source=e["source"], note=e.get("note", ""),
            open_weights_model=e.get("open_weights_model"),
            cache_write_published="usd_per_million_cache_write" in e,
            cache_read_published="usd_per_million_cache_read" in e)
    return out


def api_price(name: str) -> ApiPrice:
    prices = api_prices()
    norm = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    for key, e in catalog.table("prices").get("api", {}).items():
        if norm == key or norm in [a.lower() for a in e.get("aliases", [])]:
            return prices[key]
    raise UnknownName("API model", name, list(prices), field="model")


def parse_date(text: str, field_name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(field_name, text, "is not a date", "write YYYY-MM-DD") from None


def bill_one(p: ApiPrice, *, input_tokens: float, output_tokens: float, cached: float, cache_write: float,
             batch: bool) -> dict[str, Any]:
    tier, pin, pout, pw, pr = p.tier(input_tokens)
    items = billf.api_request_usd(uncached_tokens=input_tokens - cached - cache_write, cache_write_tokens=cache_write,
                               cache_read_tokens=cached, output_tokens=output_tokens, usd_per_million_input=pin,
                               usd_per_million_cache_write=pw, usd_per_million_cache_read=pr,
                               usd_per_million_output=pout, batch_discount=p.batch_discount if batch else 0.0)
    return {"tier": tier, "prices": (pin, pout, pw, pr), **items}


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
    b = bill_one(p, input_tokens=req.input, output_tokens=req.output, cached=req.cached,
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
    plain = sum(bill_one(p, input_tokens=x, output_tokens=req.output, cached=0.0, cache_write=0.0,
                         batch=req.batch)["usd"] for x in inputs)
    r.step("task_usd_without_cache", "Σ bill(input_i, output), every token at the input price", value=plain,
           unit="usd")
    cached_total = 0.0
    rows = []
    for i, x in enumerate(inputs):
        read = req.cached if i == 0 else inputs[i - 1]
        write = x - read
        b = bill_one(p, input_tokens=x, output_tokens=req.output, cached=read, cache_write=write, batch=req.batch)
        cached_total += b["usd"]
        rows.append({"call": i + 1, "input_tokens": x, "cache_read_tokens": read, "cache_write_tokens": write,
                     "usd": b["usd"]})
    r.step("task_usd_with_cache", "Σ bill(read = input_{i−1}, write = growth, output)", value=cached_total,
           unit="usd", note="each call reads the previous call's prompt from the cache and writes what is new")
    if plain > 0:
        r.step("cache_saving", "1 − with_cache / without_cache", value=1.0 - cached_total / plain, unit="fraction")
    r.set("task_calls", rows)
    r.set("task_output_tokens", req.output * req.calls, "count")
    r.note(f"an agent's honest unit is the task: {req.calls} calls re-send {total_in:,.0f} input tokens in all, "
           f"{total_in / max(req.input, 1):.1f}x the first prompt")


def compare_all(r: Report, req: BillRequest, today: dt.date) -> None:
    rows = []
    for p in api_prices().values():
        b = bill_one(p, input_tokens=req.input, output_tokens=req.output, cached=req.cached,
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


def self_hosted(r: Report, req: BillRequest, p: ApiPrice) -> None:
    """The serving calculator's cost for the same request, and the monthly break-even volume."""
    from napkin import calculators

    serve = calculators.get("serve")  # composed through the registry: bill does not reach into serve
    model = req.serve_model or p.open_weights_model
    if model is None:
        raise InputError("serve_model", "nothing", f"is required: {p.name} has no open weights to self-host",
                         "give --serve-model with an open model, e.g. llama-3.1-70b")
    if req.gpu is None:
        raise InputError("gpu", "nothing", "is required with --self-hosted", "give --gpu h100 (and --gpus N)")
    base = dict(model=model, gpu=req.gpu, gpus=req.gpus, tp=req.tp, precision=req.precision,
                prompt=max(req.input, 1.0), output=max(req.output, 1.0), price=req.price,
                utilization=req.utilization)
    probe = serve.run(serve.request(**base, batch=1))
    mb = int(probe["max_batch"])
    r.set("self_hosted_model", probe["model"])
    if req.serve_model and p.open_weights_model is None:
        what = "the priced API model" if p.key == "custom" else p.name
        r.note(f"{probe['model']} is not {what}: the comparison is of cost, not of answer quality")
    r.set("self_hosted_replica", f"{probe['gpus']} x {probe['gpu']}")
    if mb < 1:
        r.set("self_hosted_fits", False)
        r.warn("self-hosted-does-not-fit", f"{probe['model']} does not fit on {probe['gpus']} x {probe['gpu']}: "
                                           "add --gpus or quantise (--precision fp8)")
        return
    conc = req.concurrency if req.concurrency is not None else min(64, mb)
    sub = serve.run(serve.request(**base, batch=conc))
    for w in sub.warnings:  # what the serving calculator says of this replica (context, TP span, fit, ...)
        r.warn(w.code, "self-hosted: " + w.message)
    r.set("self_hosted_fits", bool(sub["fits"]))
    r.set("self_hosted_concurrency", conc, "count")
    if req.concurrency is None:
        r.assume("concurrency", conc, f"the most sequences that fit ({mb}), at most 64", unit="count")
    r.set("self_hosted_tokens_per_s", sub["tokens_per_s"], "per_s")
    if req.price is None:
        r.note("no --price for the self-hosted GPUs: no self-hosted $ figures or break-even")
        return
    p_in, p_out = sub["usd_per_million_input_tokens"], sub["usd_per_million_output_tokens"]
    r.set("self_hosted_usd_per_million_input", p_in, "usd_per_million")
    r.set("self_hosted_usd_per_million_output", p_out, "usd_per_million")
    own = r.step("self_hosted_usd", "input · $/M_in + output · $/M_out (serving calculator, at the utilization)",
                 value=(req.input * p_in + req.output * p_out) / MILLION, unit="usd",
                 utilization=req.utilization)
    api_usd = r.get("usd")
    replica_s = sub["ttft_s"] + req.output / sub["tokens_per_s"]
    fleet = sub["replica_usd_per_hour"]
    month = r.step("self_hosted_usd_per_month", "replica $/h · hours in a month (always on)",
                   value=fleet * MONTH_S / HOUR, unit="usd", replica=(fleet, "usd_per_hour"))
    cap = r.step("self_hosted_requests_per_month", "month / (ttft + output / tokens_per_s)", value=MONTH_S / replica_s,
                 unit="count", replica_s_per_request=(replica_s, "seconds"))
    if not api_usd:
        r.note("no break-even volume: the API bill for this request is $0, so no volume of it pays for a replica")
        return
    be = month / api_usd
    if be > cap:  # no breakeven_* keys: there is no such volume, and the note says why
        r.note(f"no break-even volume: self-hosting never pays here, since even at full load "
               f"({cap:,.0f} requests a month) one replica costs ${month / cap:.4g} a request, more than the API's "
               f"${api_usd:.4g}; the API is cheaper at every volume")
        return
    r.step("breakeven_requests_per_month", "self_hosted_usd_per_month / api usd per request", value=be, unit="count",
           api_usd=(api_usd, "usd"))
    r.step("breakeven_tokens_per_month", "breakeven_requests · (input + output)", value=be * (req.input + req.output),
           unit="count")
    r.step("breakeven_utilization", "breakeven_requests / self_hosted_requests_per_month", value=be / cap,
           unit="fraction", note="how busy one always-on replica is at the break-even volume")
    r.note(f"below {be:,.0f} requests a month the API is cheaper: a rented replica costs ${month:,.0f} a month "
           f"whether or not it is busy (own cost per request here ${own:.4g} at {req.utilization:.0%} utilization)")


BILL = Calculator(
    "bill", BillRequest, run_bill, "API bill",
    "The bill for one request or an agent's task from a dated price catalog; every model; the self-hosted "
    "alternative and its break-even volume.",
    establishes="the list-price cost of a request, a task and the volume where self-hosting pays",
    needs_measuring="real token counts (usage fields of the API response), cache hit rates, and current prices "
                    "from the provider's page",
)
