"""Money: the replica's price per hour, what a request costs, and that cost split between its
prompt tokens (the replica time its prefill takes) and its output tokens (the rest)."""

from __future__ import annotations

from napkin import catalog
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.formulas import cost as costf
from napkin.formulas import serving as sv
from napkin.units import format as fmt

from .inputs import Setup
from .request import ServeRequest
from .schedule import Schedule


def price_lines(r: Report, req: ServeRequest, s: Setup, tps: float, sched: Schedule) -> None:
    if req.price is None:
        listed = catalog.gpu_hour_price(s.g.key)
        hint = (f"; the catalog lists the {s.g.name} at ${listed.usd_per_gpu_hour:g}/h ({listed.date}): "
                f"--price {listed.usd_per_gpu_hour:g}/h" if listed else "")
        r.note(f"no price given, so no $ figures: add --price 2.50/h (per GPU-hour){hint}")
        return
    r.assume("price", req.price, "per GPU-hour, as given", unit="usd_per_hour", basis="given")
    bursty = "; bursty traffic is often 30-60%"
    achieved = r.results.get("achieved_tokens_per_s")  # the simulated load (--rate)
    # the simulation's load gives the busy share only where it ran the steady state's workload: Poisson arrivals
    # of --prompt/--output (not a trace's lengths), one TP group (no pipeline stages), a queue that does not grow
    grows = any(w.code == "over-capacity" for w in r.warnings)
    like = req.trace is None and s.pp == 1 and not grows
    if req.utilization is None and achieved is not None and like:
        util = r.step("utilization", "min(1, achieved_tokens_per_s / tokens_per_s)", value=min(1.0, achieved / tps),
                      unit="fraction", note="the simulated load: the tokens the replica served over its steady-state "
                      "capacity, so each $/M pays for the tokens served", achieved_tokens_per_s=(achieved, "per_s"),
                      tokens_per_s=(tps, "per_s"))
    elif req.utilization is None and achieved is not None and grows:
        util = r.assume("utilization", 1.0, "the queue grows at the offered rate: every hour busy", unit="fraction",
                        basis="assumed")
    elif req.utilization is None:
        d = catalog.default("serve_utilization")
        util = resolve.assume_default(r, "utilization", d.key, note=d.note + bursty, unit="fraction")
        r.warn("every-hour-busy", f"no --utilization: the $/M figures assume every paid hour is busy "
                                  f"({fmt(util, 'fraction')}); an hour the replica sits idle still costs, so at 40% "
                                  f"busy they are {util / 0.4:.3g}x; give --utilization")
    else:
        util = r.assume("utilization", req.utilization, "fraction of the hour generating" + bursty, unit="fraction",
                        basis="given")
    fleet = r.step("replica_usd_per_hour", "gpus · price", value=s.gpus * req.price, unit="usd_per_hour",
                   gpus=s.gpus, price=(req.price, "usd_per_hour"))
    r.step("usd_per_request", "(replica $/h / 3600) · output / tokens_per_s / utilization",
           value=fleet / 3600.0 * req.output / tps / util, unit="usd", output=(req.output, "count"))
    r.step("usd_per_million_output_tokens", "(replica $/h / 3600) · (output / tokens_per_s − prefill_per_request_s) "
           "/ output / utilization · 1e6",
           value=float(sv.usd_per_million_output_tokens(fleet, tokens_per_s=tps, prefill_s=sched.prefill_request_s,
                                                        output_tokens=req.output, utilization=util)),
           unit="usd_per_million", prefill_per_request_s=(sched.prefill_request_s, "seconds"), utilization=util,
           cites=sv.usd_per_million_output_tokens)
    r.step("usd_per_million_input_tokens", "(replica $/h / 3600) · prefill_per_request_s / prompt / utilization · 1e6",
           value=float(sv.usd_per_million_input_tokens(fleet, prefill_s=sched.prefill_request_s,
                                                       prompt_tokens=req.prompt, utilization=util)),
           unit="usd_per_million", prompt=(req.prompt, "count"),
           note="the replica time one request's prefill takes, per prompt token", cites=sv.usd_per_million_input_tokens)
    r.step("usd_per_million_tokens_all_in", "(replica $/h / 3600) / (tokens_per_s · utilization) · 1e6",
           value=costf.usd_per_million_tokens(fleet, tokens_per_s=tps, utilization=util), unit="usd_per_million",
           note="per output token, its prompt included", cites=costf.usd_per_million_tokens)
