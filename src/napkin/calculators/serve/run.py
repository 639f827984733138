"""The serve calculator's run: the rooms in order (set-up, fit, prefill, decode, the scheduler,
speculative decoding, throughput and latency, load, disaggregation, money, error bar, waterfall),
each writing its steps into one Report."""

from __future__ import annotations

import math

from napkin.calculators import replica as rep
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import scheduling as sch
from napkin.formulas import serving as sv
from napkin.units import format as _fmt

from .decode import bound_of, compute_bound, decode_step, workload
from .disaggregate import disaggregated
from .errorbar import error_bar
from .heads import check_heads
from .inputs import Setup, setup
from .load import under_load
from .memory import fit
from .prefill import prefill
from .price import price_lines
from .request import ServeRequest
from .schedule import schedule
from .speculative import speculative
from .waterfall import run_waterfall


def header(r: Report, s: Setup, req: ServeRequest) -> None:
    """Title, the replica echoed, and the checks of the model against the request."""
    m, g = s.m, s.g
    r.title = f"Serve {m.name} on {s.gpus} x {g.name}" + (f" (TP {s.tp} x PP {s.pp})" if s.pp > 1 else f" (TP {s.tp})")
    if req.cached_prefix >= req.prompt:
        raise InputError("cached_prefix", req.cached_prefix, f"must be less than the prompt ({req.prompt:g} tokens)",
                         "at least one prompt token is computed")
    r.set("model", m.name)
    r.set("gpu", g.name)
    r.set("gpus", s.gpus, "count")
    r.set("tp", s.tp, "count")
    if s.pp > 1:
        r.set("pp", s.pp, "count")
    r.set("batch", req.batch, "count")
    check_heads(r, m)
    if m.key.startswith("hf:") and m.note:
        r.note(m.note)  # how the config was read (an absent key, a bias not counted): the loader's words
    if m.max_context and req.prompt + req.output > m.max_context:
        r.warn("context-too-long", f"{req.prompt:,.0f} prompt + {req.output:,.0f} output tokens exceed {m.name}'s "
                                   f"{m.max_context:,}-token context window; the figures below are what it would "
                                   "cost if it did not")


def run_serve(req: ServeRequest) -> Report:
    r = Report("Serve", command="serve")
    s = setup(req, r)
    header(r, s, req)
    memory = fit(r, s, req)
    prefill_s, far = prefill(r, s, req)
    c = workload(r, s, req, memory)
    sched = schedule(r, s, req, c)
    r.set("bound", "host" if sched.host_bound else bound_of(decode_step(s, req.batch, c)))
    compute_bound(r, s, c, max_batch=memory.max_batch)
    warn_far(r, s, far)
    tpot = sched.tpot_s
    if memory.draft is not None:
        speedup = speculative(r, s, req, memory.draft, c, sched.decode_step_s)
        r.set("tpot_without_draft_s", tpot, "seconds")
        tpot = tpot / speedup
    tpot = r.step("tpot_s", "the step each decoding sequence waits per token" +
                  (" / spec_speedup" if memory.draft is not None else ""), value=tpot, unit="seconds")
    r.step("tokens_per_s_per_sequence", "1 / tpot_s", value=1.0 / tpot, unit="per_s")
    latency = r.step("request_latency_s", "ttft_s + (output − 1) · tpot_s",
                     value=float(sv.request_latency_seconds(sched.ttft_s, tpot_s=tpot, output_tokens=req.output)),
                     unit="seconds", output=(req.output, "count"), cites=sv.request_latency_seconds)
    if req.scheduling == "static":
        tps = r.step("tokens_per_s", "batch · output / request_latency_s", unit="per_s", batch=req.batch,
                     value=float(sch.static_tokens_per_s(req.batch, output_tokens=req.output, latency_s=latency)),
                     cites=sch.static_tokens_per_s)
    else:
        tps = r.step("tokens_per_s", "decode_sequences / tpot_s", value=sched.decode_seqs / tpot, unit="per_s",
                     decode_sequences=(sched.decode_seqs, "count"))
    r.step("requests_per_s", "tokens_per_s / output", value=tps / req.output, unit="per_s")
    if req.scheduling != "static":
        loaded = req.rate is not None or req.trace is not None
        r.note(f"{req.scheduling} batching, steady state at {req.batch:,} sequence{'s' * (req.batch != 1)} in flight: "
               "every request's prefill is paid in the same GPU time as the decoding; no queue " +
               ("(the load simulation's figures have the queue)" if loaded else "(give --rate for latency under load)"))
    r.set("dense_flops_per_s", s.peak, "flops_per_s")
    r.set("memory_bytes_per_s", s.bw, "bytes_per_s")
    if req.rate is not None or req.trace is not None:
        under_load(r, s, req, c, memory)
    if req.disaggregate:
        disaggregated(r, s, req, c, prefill_s)
    price_lines(r, req, s, tps, sched)
    error_bar(r, s, req)
    if req.waterfall:
        run_waterfall(r, req)
    return r


def warn_far(r: Report, s: Setup, far: bool) -> None:
    g = s.g
    if far:
        r.warn("beyond-scale-up-domain",
               f"TP {s.tp} spans {math.ceil(s.tp / g.scale_up_domain)} scale-up domains of {g.scale_up_domain} "
               f"{g.name} ({g.link_name}): its all-reduces cross "
               f"{rep.tp_path(g, s.tp, rate=s.link, scale_out=s.scale_out)}, not "
               f"{_fmt(g.link_bytes_per_s_per_direction, 'bytes_per_s')}; "
               f"keep TP within {g.scale_up_domain} GPUs and use pipeline stages across domains")
    if s.pp > 1:
        r.note(f"{s.pp} pipeline stages hold more memory but a token passes them in turn: they add throughput only "
               f"with at least {s.pp} micro-batches in flight")
