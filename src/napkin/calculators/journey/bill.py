"""Rung 6, the bill: the API's price for the request, the node time it holds alone and batched, what
that costs the owner of the GPUs, and its energy against a published median prompt."""

from __future__ import annotations

from napkin import catalog
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.formulas import cost
from napkin.formulas import journey as jf
from napkin.units import HOUR

from .walk import Trip, Walk


def api_bill(r: Report, t: Trip, meter: float) -> float:
    """The API's list price for this request's tokens, and the FLOPs a dollar buys."""
    req, T = t.req, t.prompt_tokens
    resolve.assume_field(r, "price_in", req, "api_usd_per_million_input", basis="assumed")
    resolve.assume_field(r, "price_out", req, "api_usd_per_million_output", basis="assumed")
    r.step("input_usd", "prompt_tokens · price_in / 1e6", value=jf.api_bill_usd(
        T, output_tokens=0, usd_per_million_input=req.price_in, usd_per_million_output=0), unit="usd",
        prompt_tokens=(T, "count"), price_in=(req.price_in, "usd_per_million"), cites=jf.api_bill_usd)
    r.step("output_usd", "output_tokens · price_out / 1e6", value=jf.api_bill_usd(
        0, output_tokens=req.output_tokens, usd_per_million_input=0, usd_per_million_output=req.price_out),
        unit="usd", output_tokens=(req.output_tokens, "count"), price_out=(req.price_out, "usd_per_million"),
        cites=jf.api_bill_usd)
    usd = r.step("usd", "input_usd + output_usd", value=jf.api_bill_usd(
        T, output_tokens=req.output_tokens, usd_per_million_input=req.price_in,
        usd_per_million_output=req.price_out), unit="usd", cites=jf.api_bill_usd)
    if req.price_in > 0:
        r.step("output_over_input_price", "price_out / price_in", value=req.price_out / req.price_in, unit="number")
    if usd > 0:
        r.step("flops_per_usd", "Σ FLOPs / usd", value=meter / usd, unit="number", Σ=(meter, "flops"),
               usd=(usd, "usd"))
    return usd


def energy(r: Report, t: Trip, shared_s: float) -> None:
    """Every GPU at its TDP for the time held, alone and batched, against Google's median prompt."""
    g = t.g
    if not g.tdp_watts:
        r.note(f"no TDP for the {g.name} in the catalog: energy not estimated")
        return
    r.set("tdp_watts", g.tdp_watts, "watts")
    r.step("energy_alone_j", "gpus · TDP · answer_s  (alone on the node)",
           value=jf.energy_joules(t.answer_s, n_gpus=t.n_gpus, watts_per_gpu=g.tdp_watts), unit="joules",
           gpus=t.n_gpus, TDP=(g.tdp_watts, "watts"), answer_s=(t.answer_s, "seconds"), cites=jf.energy_joules)
    e_shared = r.step("energy_j", "gpus · TDP · shared_node_s  (batched)",
                      value=jf.energy_joules(shared_s, n_gpus=t.n_gpus, watts_per_gpu=g.tdp_watts), unit="joules",
                      gpus=t.n_gpus, TDP=(g.tdp_watts, "watts"), shared_node_s=(shared_s, "seconds"),
                      cites=jf.energy_joules)
    r.step("energy_over_google_median", "energy_j / 0.24 Wh",
           value=e_shared / catalog.default_value("median_prompt_energy_j"), unit="number")
    r.assume("power", g.tdp_watts, "every GPU at its rated power (TDP) for the time held: an upper bound; host "
             "CPUs, cooling (PUE) and idle capacity are left out", unit="watts", basis="catalog")


def bill(walk: Walk, t: Trip) -> None:
    req = t.req
    r = walk.start("bill")
    usd = api_bill(r, t, walk.meter)
    node_usd_h = t.node_usd_per_hour
    shared_s = r.step("shared_node_s", "output_tokens / batch_tokens_per_s  (the node time this request holds in "
                      "the batch, its prefill included)", value=req.output_tokens / t.batch_tokens_per_s,
                      unit="seconds", output_tokens=req.output_tokens, batch=req.batch)
    r.step("gpu_usd_alone", "node_usd_per_hour · answer_s / 3600", value=node_usd_h * t.answer_s / HOUR,
           unit="usd", answer_s=(t.answer_s, "seconds"))
    shared_usd = r.step("gpu_usd_shared", "node_usd_per_hour · shared_node_s / 3600",
                        value=node_usd_h * shared_s / HOUR, unit="usd")
    r.step("gpu_usd_per_million_tokens_all_in",
           "node $/h / 3600 / batch_tokens_per_s · 1e6  (at full use, prompts included)",
           value=cost.usd_per_million_tokens(node_usd_h, tokens_per_s=t.batch_tokens_per_s, utilization=1.0),
           unit="usd_per_million", batch_tokens_per_s=(t.batch_tokens_per_s, "per_s"),
           cites=cost.usd_per_million_tokens)
    if shared_usd > 0 and usd > 0:
        r.step("price_over_gpu_cost", "usd / gpu_usd_shared", value=usd / shared_usd, unit="number")
    energy(r, t, shared_s)
    r.note("money is arithmetic about FLOPs, not FLOPs: the meter does not move")
    walk.close("bill", r, 0.0)
