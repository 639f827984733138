"""The self-hosted alternative: the serve calculator's cost of the same request (composed through the
registry, so the operator model every serving answer uses), the monthly break-even volume, and the
verdict on the vendor's price at this utilization."""

from __future__ import annotations

from napkin.derivation import Report
from napkin.errors import InputError
from napkin.units import HOUR, MILLION, YEAR

from .prices import ApiPrice
from .request import BillRequest

MONTH_S = YEAR / 12


def self_hosted(r: Report, req: BillRequest, p: ApiPrice) -> None:
    """The serving calculator's cost for the same request, the monthly break-even volume, and the verdict."""
    from napkin import calculators

    serve = calculators.get("serve")  # composed through the registry: bill does not reach into serve
    model = req.serve_model or p.open_weights_model
    if model is None:
        raise InputError("serve_model", "nothing", f"is required: {p.name} has no open weights to self-host",
                         "give --serve-model with an open model, e.g. llama-3.1-70b")
    if req.gpu is None:
        raise InputError("gpu", "nothing", "is required with --self-hosted", "give --gpu h100 (and --gpus N)")
    prompt = max(req.input, 1.0)
    base = dict(model=model, gpu=req.gpu, gpus=req.gpus, tp=req.tp, precision=req.precision, prompt=prompt,
                output=max(req.output + req.reasoning, 1.0), price=req.price, utilization=req.utilization)
    if req.cached:  # the provider's prompt cache is a prefix cache on the replica: those tokens skip the prefill
        base["cached_prefix"] = min(req.cached, prompt - 1.0)
    probe = serve.run(serve.request(**base, batch=1))
    mb = int(probe["max_batch"])
    r.set("self_hosted_model", probe["model"])
    if req.serve_model and p.open_weights_model is None:
        what = "the priced API model" if p.key == "custom" else p.name
        r.note(f"{probe['model']} is not {what}: the comparison is of cost, not of answer quality")
    tp = int(probe["tp"])
    replica = f"{probe['gpus']} x {probe['gpu']}" + (f" (TP {tp} x {int(probe['gpus']) // tp} stages)"
                                                     if tp < int(probe["gpus"]) else "")
    r.set("self_hosted_replica", replica)
    if mb < 1:
        r.set("self_hosted_fits", False)
        r.warn("self-hosted-does-not-fit", f"{probe['model']} does not fit on {replica}: "
                                           "add --gpus or quantise (--precision fp8)")
        return
    conc = req.concurrency if req.concurrency is not None else min(64, mb)
    sub = serve.run(serve.request(**base, batch=conc))
    for w in sub.warnings:  # what the serving calculator says of this replica (context, TP span, fit, ...)
        r.warn(w.code, "self-hosted: " + w.message)
    for n in sub.notes:  # how serve split the GPUs when --tp was not given
        if n.startswith("--gpus ") and "scale-up domain" in n:
            r.note("self-hosted: " + n)
    r.set("self_hosted_fits", bool(sub["fits"]))
    r.set("self_hosted_concurrency", conc, "count")
    if req.concurrency is None:
        r.assume("concurrency", conc, f"the most sequences that fit ({mb}), at most 64", unit="count")
    r.set("self_hosted_scheduling", sub["scheduling"])
    r.set("self_hosted_tokens_per_s", sub["tokens_per_s"], "per_s")
    r.set("self_hosted_requests_per_s", sub["requests_per_s"], "per_s")
    bar = sub.get("error_bar", {}).get("tokens_per_s")
    if bar:
        r.set("self_hosted_error_bar", f"tokens_per_s: {bar}")
    if req.price is None:
        r.note("no --price for the self-hosted GPUs: no self-hosted $ figures, break-even or verdict")
        return
    own = self_hosted_cost(r, req, sub)
    api_usd = r.get("usd")
    fleet = sub["replica_usd_per_hour"]
    month = r.step("self_hosted_usd_per_month", "replica $/h · hours in a month (always on)",
                   value=fleet * MONTH_S / HOUR, unit="usd", replica=(fleet, "usd_per_hour"))
    cap = r.step("self_hosted_requests_per_month", "requests_per_s · seconds in a month  (always busy)",
                 value=sub["requests_per_s"] * MONTH_S, unit="count",
                 requests_per_s=(sub["requests_per_s"], "per_s"))
    breakeven(r, req, api_usd, month, cap, own)
    verdict(r, req, p, api_usd, own, probe["model"], replica)


def self_hosted_cost(r: Report, req: BillRequest, sub: Report) -> float:
    """What the request costs on the replica: serve's prices per input and output token, at the utilization."""
    p_in, p_out = sub["usd_per_million_input_tokens"], sub["usd_per_million_output_tokens"]
    r.set("self_hosted_usd_per_million_input", p_in, "usd_per_million")
    r.set("self_hosted_usd_per_million_output", p_out, "usd_per_million")
    out = req.output + req.reasoning
    return r.step("self_hosted_usd", "input · $/M_in + " + ("(output + reasoning)" if req.reasoning else "output") +
                  " · $/M_out  (napkin serve's cost of the request, at the utilization)",
                  value=(req.input * p_in + out * p_out) / MILLION, unit="usd", utilization=req.utilization)


def breakeven(r: Report, req: BillRequest, api_usd: float, month: float, cap: float, own: float) -> None:
    """The monthly volume at which an always-on replica costs what the API would, if there is one."""
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
    r.step("breakeven_tokens_per_month", "breakeven_requests · (input + output" +
           (" + reasoning)" if req.reasoning else ")"), value=be * (req.input + req.output + req.reasoning),
           unit="count")
    r.step("breakeven_utilization", "breakeven_requests / self_hosted_requests_per_month", value=be / cap,
           unit="fraction", note="how busy one always-on replica is at the break-even volume")
    r.note(f"below {be:,.0f} requests a month the API is cheaper: a rented replica costs ${month:,.0f} a month "
           f"whether or not it is busy (own cost per request here ${own:.4g} at {req.utilization:.0%} utilization)")


def verdict(r: Report, req: BillRequest, p: ApiPrice, api_usd: float, own: float, model: str, replica: str) -> None:
    """The last word: is the vendor's price above or below what the same request costs self-hosted here?"""
    ratio = r.step("price_over_self_hosted", "usd / self_hosted_usd", value=api_usd / own, unit="number",
                   note=f"at {req.utilization:.0%} utilization")
    above = api_usd > own
    r.set("verdict", "above" if above else "below")
    head = (f"verdict: {p.name}'s price is {'above' if above else 'below'} the self-hosted cost at this "
            f"utilization: ${api_usd:.4g} a request, {ratio:.3g}x the ${own:.4g} it costs on {replica} "
            f"({model}) at {req.utilization:.0%} busy")
    if above:
        r.note(head + "; the difference is the vendor's margin and the idle hours it carries, or a better model "
                      "than the one self-hosted")
    else:
        r.note(head + "; the vendor sells under this replica's cost: subsidised, or on better hardware, software or "
                      "a smaller model than this")
