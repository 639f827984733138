"""Money: the replica's price per hour and its cost per million output and input tokens."""

from __future__ import annotations

from napkin import catalog
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.formulas import cost as costf
from napkin.formulas import serving as sv

from .inputs import Setup
from .request import ServeRequest


def price_lines(r: Report, req: ServeRequest, s: Setup, tps: float, ttft: float) -> None:
    if req.price is None:
        listed = catalog.gpu_hour_price(s.g.key)
        hint = (f"; the catalog lists the {s.g.name} at ${listed.usd_per_gpu_hour:g}/h ({listed.date}): "
                f"--price {listed.usd_per_gpu_hour:g}/h" if listed else "")
        r.note(f"no price given, so no $ figures: add --price 2.50/h (per GPU-hour){hint}")
        return
    r.assume("price", req.price, "per GPU-hour, as given", unit="usd_per_hour", basis="given")
    bursty = "; bursty traffic is often 30-60%"
    if req.utilization is None:
        d = catalog.default("serve_utilization")
        util = resolve.assume_default(r, "utilization", d.key, note=d.note + bursty, unit="fraction")
    else:
        util = r.assume("utilization", req.utilization, "fraction of the hour generating" + bursty, unit="fraction",
                        basis="given")
    fleet = r.step("replica_usd_per_hour", "gpus · price", value=s.gpus * req.price, unit="usd_per_hour",
                   gpus=s.gpus, price=(req.price, "usd_per_hour"))
    r.step("usd_per_million_output_tokens", "(replica $/h / 3600) / (tokens_per_s · utilization) · 1e6",
           value=costf.usd_per_million_tokens(fleet, tokens_per_s=tps, utilization=util),
           unit="usd_per_million", utilization=util, cites=costf.usd_per_million_tokens)
    r.step("usd_per_million_input_tokens", "(replica $/h / 3600) · ttft_s / prompt / utilization · 1e6",
           value=sv.usd_per_million_input_tokens(fleet, ttft_s=ttft, prompt_tokens=req.prompt, utilization=util),
           unit="usd_per_million", prompt=(req.prompt, "count"),
           note="the replica's time on one prompt's prefill, per prompt token", cites=sv.usd_per_million_input_tokens)
