"""The scheduler: which tokens ride in each step, and so TTFT, TPOT, tokens/s and requests/s.

static: the batch's prompts are prefilled in one step, then it decodes together to the end.
continuous: B sequences in flight; in the steady state each decode step carries the prompt
chunks of the requests that replace finished ones (up to the step's token budget), so every
request's prefill is paid in the same GPU time. prefill-first: the same, but prompts run as
steps of their own that pause decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

from napkin.calculators.replica import operator_rows
from napkin.derivation import Report
from napkin.formulas import operators as op
from napkin.formulas import scheduling as sch
from napkin.formulas import serving as sv
from napkin.units import format as _fmt

from .decode import Context, decode_step
from .inputs import Setup
from .request import ServeRequest


@dataclass
class Schedule:
    ttft_s: float
    tpot_s: float
    tokens_per_s: float
    decode_step_s: float  # a decode step of the batch alone, no prompts in it
    prefill_request_s: float  # GPU time one request's prefill adds to the replica
    decode_seqs: float
    host_bound: bool = False  # the host's work per step outlasts the GPU's (--host-per-request)


def total(ops: dict[str, op.OperatorTime]) -> float:
    return float(op.total_seconds(ops))


def pairs_per_request(s: Setup, new: float, cached: float) -> float:
    """Causal query-key pairs of one prompt's prefill, averaged over layers (a sliding window cuts some)."""
    return s.replica.prefill_pairs(new, cached_tokens=cached)


def host(r: Report, req: ServeRequest, gpu_s: float, requests: float, *, label: str = "",
         formula: str = "") -> float:
    """The step's time once the host's work for its requests is counted (--host-per-request; none: the GPU's)."""
    h = req.host_per_request
    if not h:
        return gpu_s
    if label:
        r.step(label, formula, value=h * requests, unit="seconds", host_per_request=(h, "seconds"),
               requests=(requests, "count"), cites=sch.host_bound_step_seconds,
               note="overlapped with the GPU's previous step: a step lasts the longer of the two")
    return float(sch.host_bound_step_seconds(gpu_s, requests=requests, host_per_request_s=h))


def _binds(r: Report, req: ServeRequest, gpu_s: float, requests: float) -> bool:
    """Whether the host outlasts the GPU in the step; says so."""
    h = req.host_per_request or 0.0
    if h * requests <= gpu_s:
        return False
    r.note(f"host-bound: {requests:,.0f} requests a step take {_fmt(h * requests, 'seconds')} of host time at "
           f"{_fmt(h, 'seconds')} each, more than the GPU's {_fmt(gpu_s, 'seconds')}: the host sets the pace, and "
           "fewer sequences in flight would give the same tokens/s with shorter steps")
    return True


def _steps(r: Report, s: Setup, dec: dict, *, label: str, ops: dict, expr: str, **values: object) -> float:
    """Record the operators of a step and its time; return it."""
    rows = operator_rows(ops, step=label) + operator_rows(dec, step="decode")
    r.set("operators", rows)
    return r.step(f"{label}_step_s", expr, value=total(ops), unit="seconds", cites=op.step_seconds, **values)


def static(r: Report, s: Setup, req: ServeRequest, c: Context, dec: dict) -> Schedule:
    b, new, cached = req.batch, req.prompt - req.cached_prefix, req.cached_prefix
    pairs = pairs_per_request(s, new, cached)
    pre = s.replica.operators(b * new, prefill_pairs=b * pairs, logits=b)
    t_pre = _steps(r, s, dec, label="batch_prefill", ops=pre, expr="Σ operators of one step with the batch's "
                   "B · (prompt − cached) tokens", B=b, tokens=(b * new, "count"))
    t_dec = total(dec)
    bound = _binds(r, req, t_dec, b)
    t_pre = host(r, req, t_pre, b)
    t_dec = host(r, req, t_dec, b, label="host_step_s", formula="host_per_request · batch")
    lat = float(sch.static_latency_seconds(t_pre, decode_step_s=t_dec, output_tokens=req.output))
    r.step("ttft_s", "batch_prefill_step_s   (every prompt of the batch is prefilled before any first token)",
           value=t_pre, unit="seconds", cites=sch.static_latency_seconds)
    tps = float(sch.static_tokens_per_s(b, output_tokens=req.output, latency_s=lat))
    return Schedule(t_pre, t_dec, tps, t_dec, t_pre / b, b, bound)


def continuous(r: Report, s: Setup, req: ServeRequest, c: Context, dec: dict) -> Schedule:
    b, new, cached = req.batch, req.prompt - req.cached_prefix, req.cached_prefix
    bd = float(sch.decode_sequences(b, prompt_tokens=req.prompt, output_tokens=req.output, chunk_tokens=req.chunk,
                                    cached_tokens=cached))
    r.step("decode_sequences", "min(batch, chunk · output / (output + prompt − cached))", value=bd, unit="count",
           batch=b, chunk=(req.chunk, "count"), cites=sch.decode_sequences)
    if bd < b:
        r.note(f"the step's token budget ({req.chunk:,} tokens) binds: at most {bd:,.0f} of the {b:,} sequences "
               "decode per step, the rest wait with their prompts; raise --chunk or lower --batch")
    p = r.step("prefill_tokens_per_step", "decode_sequences · (prompt − cached) / output", value=float(
        sch.prefill_tokens_per_step(bd, prompt_tokens=req.prompt, output_tokens=req.output, cached_tokens=cached)),
        unit="count", cites=sch.prefill_tokens_per_step,
        note="each finished sequence is replaced by a new request whose prompt is prefilled in the steps")
    c_tok, q = (float(v) for v in sch.prompt_steps(p, new_tokens=new, room=req.chunk - bd))
    r.step("prompt_step_tokens", "max(prefill_tokens_per_step, min(prompt − cached, chunk − decode_sequences))",
           value=c_tok, unit="count", cites=sch.prompt_steps, note="the prompt tokens a step that carries any holds")
    r.step("prompt_step_share", "prefill_tokens_per_step / prompt_step_tokens", value=q, unit="fraction",
           cites=sch.prompt_steps, note="the share of steps that carry prompt tokens; the rest decode only")
    micro = float(sv.microbatch(bd, pp=s.pp)) / bd
    mixed = s.replica.operators((bd + c_tok) * micro, kv_tokens=bd * c.held_avg * micro,
                                prefill_pairs=c_tok / new * pairs_per_request(s, new, cached) * micro,
                                logits=(bd + c_tok / new) * micro)
    t_mix = _steps(r, s, dec, label="mixed", ops=mixed, expr="Σ operators of a step with decode_sequences decode "
                   "tokens and prompt_step_tokens prompt tokens")
    t_dec = total(dec) if bd >= req.batch else total(decode_step(s, bd, c))
    bound = _binds(r, req, t_mix if q >= 0.5 else t_dec, bd + c_tok / new if q >= 0.5 else bd)
    t_mix = host(r, req, t_mix, bd + c_tok / new, label="host_step_s",
                 formula="host_per_request · (decode_sequences + prompt_step_tokens / (prompt − cached))")
    t_dec = host(r, req, t_dec, bd)
    t = r.step("cycle_s", "prompt_step_share · mixed_step_s + (1 − prompt_step_share) · decode_step_s(decode_sequences)",
               value=float(sch.continuous_step_seconds(t_mix, decode_step_s=t_dec, prefill_request_s=0.0,
                                                       decode_seqs=bd, output_tokens=req.output, prompt_share=q)),
               unit="seconds", cites=sch.continuous_step_seconds,
               note="the mean step each decoding sequence waits per token")
    window = pairs_per_request(s, new, cached) / sch.prefill_pairs(new, cached_tokens=cached)  # a window cuts some
    n, tokens, pairs = sch.prefill_chunk_plan(new, room=req.chunk - bd, cached_tokens=cached)
    # the request's chunk rides in one micro-batch, whole, beside that micro-batch's share of the decoding
    # sequences (the mixed step above spreads many requests' prompt tokens over the micro-batches)
    chunk_step = total(s.replica.operators(bd * micro + tokens, kv_tokens=bd * c.held_avg * micro,
                                           prefill_pairs=pairs * window, logits=bd * micro + 1 / n))
    chunk_step = host(r, req, chunk_step, bd * micro + 1)
    ttft = r.step("ttft_s", "chunks · (a step with the decode batch and one chunk of the prompt)   (no queue)",
                  value=float(sch.continuous_ttft_seconds(chunk_step, n_chunks=n)), unit="seconds", chunks=n,
                  chunk=(tokens, "count"), cites=sch.continuous_ttft_seconds)
    return Schedule(ttft, t, bd / t, t_dec, (t - t_dec) * req.output / bd, bd, bound)


def prefill_first(r: Report, s: Setup, req: ServeRequest, c: Context, dec: dict) -> Schedule:
    b, new, cached = req.batch, req.prompt - req.cached_prefix, req.cached_prefix
    n = float(max(1, min(b, int(req.chunk // new))))
    pre = s.replica.operators(n * new, prefill_pairs=n * pairs_per_request(s, new, cached), logits=n)
    t_pre = _steps(r, s, dec, label="prefill_batch", ops=pre, expr="Σ operators of a prefill step of n prompts "
                   "(as many as the budget holds)", n=n)
    t_dec = total(dec)
    bound = _binds(r, req, t_dec, b)
    t_pre = host(r, req, t_pre, n)
    t_dec = host(r, req, t_dec, b, label="host_step_s", formula="host_per_request · batch")
    t = r.step("cycle_s", "decode_step_s + (batch / output) · prefill_batch_step_s / n", value=float(
        sch.continuous_step_seconds(0.0, decode_step_s=t_dec, prefill_request_s=t_pre / n, decode_seqs=b,
                                    output_tokens=req.output, mixed=False)), unit="seconds",
        cites=sch.continuous_step_seconds, note="each decode step waits for the prefill steps of the requests "
                                                "that replace finished ones")
    ttft = r.step("ttft_s", "decode_step_s / 2 + prefill_batch_step_s   (no queue)", value=float(
        sch.continuous_ttft_seconds(0.0, n_chunks=1, mixed=False, decode_step_s=t_dec, prefill_batch_s=t_pre)),
        unit="seconds", cites=sch.continuous_ttft_seconds)
    return Schedule(ttft, t, b / t, t_dec, t_pre / n, float(b), bound)


SCHEDULERS = {"static": static, "continuous": continuous, "prefill-first": prefill_first}


def schedule(r: Report, s: Setup, req: ServeRequest, c: Context) -> Schedule:
    """The steady state of the request's scheduler: its steps, TTFT, TPOT and throughput."""
    r.set("scheduling", req.scheduling)
    dec = decode_step(s, req.batch, c)
    r.step("decode_step_s", "Σ operators of a decode step of the batch (no prompts)", value=total(dec),
           unit="seconds", batch=req.batch, cites=op.step_seconds)
    return SCHEDULERS[req.scheduling](r, s, req, c, dec)
