"""The serve calculator's run: the rooms in order (set-up, fit, prefill, decode, speculative
decoding, throughput and latency, money, waterfall), each writing its steps into one Report."""

from __future__ import annotations

from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import serving as sv

from .decode import decode, workload
from .heads import check_heads
from .inputs import Setup, setup
from .memory import fit
from .prefill import prefill
from .price import price_lines
from .request import ServeRequest
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
    ttft, far = prefill(r, s, req, memory.weights_bytes)
    target = workload(r, s, req, memory)
    step_s = decode(r, s, req, target, far=far, max_batch=memory.max_batch)
    tpot = step_s
    if memory.draft is not None:
        tpot = speculative(r, s, req, memory.draft, target, step_s)
    tpot = r.step("tpot_s", "decode_step_s" if memory.draft is None else "spec_pass_s / spec_tokens_per_pass",
                  value=tpot, unit="seconds")
    r.step("tokens_per_s_per_sequence", "1 / tpot_s", value=1.0 / tpot, unit="per_s")
    tps = r.step("tokens_per_s", "batch / tpot_s", value=req.batch / tpot, unit="per_s", batch=req.batch)
    r.step("request_latency_s", "ttft_s + (output − 1) · tpot_s",
           value=float(sv.request_latency_seconds(ttft, tpot_s=tpot, output_tokens=req.output)), unit="seconds",
           output=(req.output, "count"), cites=sv.request_latency_seconds)
    r.set("dense_flops_per_s", s.peak, "flops_per_s")
    r.set("memory_bytes_per_s", s.bw, "bytes_per_s")
    price_lines(r, req, s, tps, ttft)
    if req.waterfall:
        run_waterfall(r, req)
    return r
