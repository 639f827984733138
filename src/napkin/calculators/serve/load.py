"""Latency under load: the replica simulated at a request rate (or on a trace of real requests).

A seeded discrete-event simulation of the request's scheduler (formulas.simulation) on the
replica's operator model: requests arrive, wait for one of the --batch slots, are prefilled
(chunks riding in decode steps, or prefill steps of their own), decode, and leave. The first
tenth of the requests warms the replica up and is not counted.
"""

from __future__ import annotations

from typing import Any

from napkin import catalog
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import simulation as sim
from napkin.units import format as _fmt

from .decode import Context
from .inputs import Setup
from .memory import Memory
from .request import ServeRequest
from .trace import read_trace

PERCENTILES = (50, 90, 99)


def _arrivals(req: ServeRequest) -> tuple[Any, Any, Any]:
    """(arrival seconds, prompt tokens, output tokens) of the requests to simulate."""
    import numpy as np

    if req.trace is not None:
        return read_trace(req.trace, rate=req.rate, seed=req.seed, limit=req.requests)
    n = int(req.requests or catalog.default_value("simulated_requests"))
    arr = sim.poisson_arrivals(req.rate, n_requests=n, seed=req.seed)
    return arr, np.full(n, req.prompt), np.full(n, req.output)


def under_load(r: Report, s: Setup, req: ServeRequest, c: Context, memory: Memory) -> None:
    import numpy as np

    if req.scheduling == "static":
        raise InputError("rate", req.rate, "needs a continuous or prefill-first scheduler",
                         "static batches run to completion before new requests join: use --scheduling continuous")
    if req.host_per_request:
        raise InputError("host_per_request", _fmt(req.host_per_request, "seconds"), "is not simulated under load",
                         "drop --host-per-request with --rate or --trace (the steady state counts it)")
    if s.pp > 1:
        r.warn("stages-not-simulated", f"the load simulation runs one TP group of {s.tp}: the {s.pp} pipeline stages "
                                       "are not simulated, so its latencies are those of one stage's replica")
    arr, prompt, output = _arrivals(req)
    slots = int(min(req.batch, memory.max_batch)) if memory.max_batch > 0 else req.batch
    if slots < req.batch:
        r.note(f"memory holds {slots:,} sequences of the longest request, so the simulation admits at most that many "
               f"at once, not --batch {req.batch:,}")
    cost = s.replica.step_cost(int(max(req.chunk, float(np.max(prompt)))) + slots + 2)
    out = sim.simulate_continuous(arr, prompt_tokens=prompt, output_tokens=output, cost=cost, max_sequences=slots,
                                  chunk_tokens=req.chunk, mixed=req.scheduling == "continuous",
                                  cached_tokens=min(req.cached_prefix, float(np.min(prompt)) - 1))
    keep = slice(len(arr) // 10, None)
    first, finish, admitted = out["first_token_s"][keep], out["finish_s"][keep], out["admitted_s"][keep]
    a, o = arr[keep], output[keep]
    ttft = first - a
    tpot = np.where(o > 1, (finish - first) / np.maximum(o - 1, 1), 0.0)
    e2e = finish - a
    queue = admitted - a
    span = float(finish.max() - a.min())
    r.set("simulated_requests", int(len(a)), "count")
    offered = (len(arr) - 1) / float(arr[-1] - arr[0]) if len(arr) > 1 and arr[-1] > arr[0] else 0.0
    r.set("offered_requests_per_s", offered, "per_s")
    r.step("achieved_tokens_per_s", "Σ output tokens / (last finish − first arrival), counted requests",
           value=float(o.sum()) / span, unit="per_s", cites=sim.simulate_continuous)
    for name, values in (("ttft", ttft), ("tpot", tpot), ("latency", e2e), ("queue", queue)):
        r.set(f"{name}_mean_s", float(np.mean(values)), "seconds")
        for p in PERCENTILES:
            r.set(f"{name}_p{p}_s", float(np.percentile(values, p)), "seconds")
    served = len(a) / span  # requests per second the replica got through
    if offered > 1.05 * served:
        r.warn("over-capacity", f"at {offered:.3g} requests/s the queue grows: the p99 request waits "
                                f"{_fmt(r['queue_p99_s'], 'seconds')} for a slot; the replica's steady-state capacity "
                                f"is about {r['requests_per_s']:.3g} requests/s at batch {req.batch:,}")
    r.note(f"load: {len(arr):,} requests simulated ({'a trace' if req.trace else 'Poisson arrivals at exactly the rate given'}, "
           f"seed {req.seed}), the first tenth as warm-up; percentiles over the rest")
