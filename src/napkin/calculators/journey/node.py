"""The node as the operator model sees it: the fractions of its peaks the kernels reach, the link its
all-reduces cross, and the replica (one tensor-parallel group of every GPU the journey runs on) whose
steps `napkin serve` times the same way: a sum of operators, each on its own roofline.

Shared with serve through :mod:`napkin.calculators.replica` (the journey never imports serve).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from napkin.calculators import replica as rep
from napkin.calculators import resolve
from napkin.calculators.steps import kv_copies, kv_copies_why
from napkin.derivation import Report
from napkin.formulas import operators as op
from napkin.formulas import scheduling as sch
from napkin.formulas import serving as sv
from napkin.units import format as fmt

from .walk import Trip


def total(ops: dict[str, op.OperatorTime]) -> float:
    return float(op.total_seconds(ops))


def tp_link(r: Report, t: Trip) -> float:
    """One direction of the link a TP group's all-reduces cross: the scale-up link, or the scale-out NIC
    once the group is larger than the scale-up domain (inf on one GPU)."""
    g, n = t.g, t.n_gpus
    if n == 1:
        return math.inf
    link = g.link_bytes_per_s_per_direction
    if link is not None and n <= g.scale_up_domain:
        return link
    if link is not None and g.host_link_bytes_per_s_per_direction is not None and n <= (g.host_link_domain or 0):
        host = min(link, g.host_link_bytes_per_s_per_direction)
        r.note(f"{n} GPUs leave the {g.scale_up_domain}-card {g.link_name or 'link'}: their all-reduces cross PCIe at "
               f"{fmt(host, 'bytes_per_s')} per GPU ({g.host_link_source})")
        return host
    scale_out = resolve.assume_default(r, "scale_out_bandwidth", "scale_out_bytes_per_s_per_gpu", unit="bytes_per_s")
    if link is None:
        r.note(f"the catalog has no scale-up link for the {g.name}: its all-reduces cross the scale-out network "
               f"at {fmt(scale_out, 'bytes_per_s')} per GPU")
        return scale_out
    slow = float(sv.tp_link_bytes_per_s(n, scale_up_domain=g.scale_up_domain, link_bytes_per_s_per_direction=link,
                                        scale_out_bytes_per_s_per_gpu=scale_out,
                                        host_link_bytes_per_s_per_direction=g.host_link_bytes_per_s_per_direction,
                                        host_link_domain=g.host_link_domain))
    r.note(f"{n} GPUs span {math.ceil(n / g.scale_up_domain)} scale-up domains of {g.scale_up_domain}: the "
           f"all-reduces of one tensor-parallel group over all of them cross "
           f"{rep.tp_path(g, n, rate=slow, scale_out=scale_out)}, not {g.link_name or 'the link'}'s "
           f"{fmt(link, 'bytes_per_s')}")
    return slow


def build(r: Report, t: Trip, compute_precision: str) -> None:
    """Resolve the kernels' efficiencies (recorded with their sources) and the replica on t.n_gpus GPUs."""
    req, m, g = t.req, t.m, t.g
    e = rep.efficiencies(g, compute_precision, given=rep.Given(bandwidth=req.bandwidth_fraction), r=r)
    rep.note_experts(r, m)
    r.set("gemm_efficiency", e.gemm, "fraction")
    r.set("bandwidth_efficiency", e.bandwidth, "fraction")
    if m.n_heads % t.n_gpus and not t.grown:  # (a cluster grown to fit notes its own rounding)
        up = [d for d in range(t.n_gpus, m.n_heads + 1) if m.n_heads % d == 0]
        r.warn("uneven-heads", f"tensor parallelism over {t.n_gpus} GPUs does not divide {m.name}'s {m.n_heads} "
                               f"attention heads evenly: the journey times an even split, which no engine runs; "
                               f"a real deployment rounds up to {up[0] if up else m.n_heads} GPUs (or adds "
                               f"pipeline stages)")
    t.replica = rep.replica(m, g, tp=t.n_gpus, bytes_per_weight=t.bytes_per_param,
                            kv_bytes_per_value=t.kv_bytes_per_value, e=e, compute_precision=compute_precision,
                            link_bytes_per_s_per_direction=(link := tp_link(r, t)),
                            link_bus=rep.pcie_ring_bus(r, g, t.n_gpus, link),
                            ring_latency_s=rep.pcie_ring_latency(r, g, t.n_gpus, link),
                            scale_up=1 < t.n_gpus <= g.scale_up_domain and g.link_bytes_per_s_per_direction is not None)
    if req.params is not None and req.params != m.params:
        r.note(f"the operator model times {m.name}'s layers as the architecture has them "
               f"({fmt(m.params, 'count')} parameters); --params sets the meter and the napkin rules")


@dataclass(frozen=True)
class Steady:
    """Continuous batching at ``batch`` sequences in flight, in the steady state."""

    decode_seqs: float  # sequences decoding in a step (the batch, unless the step's token budget binds)
    prompt_tokens: float  # prompt tokens a step that carries any holds
    prompt_share: float  # the share of steps that carry prompt tokens
    decode_ops: dict[str, op.OperatorTime]  # a decode step of decode_seqs sequences, no prompts
    mixed_ops: dict[str, op.OperatorTime]  # a step with decode_seqs decode tokens and the prompt tokens
    cycle_s: float  # the mean step each decoding sequence waits per token


def steady_state(t: Trip, batch: float, chunk: float) -> Steady:
    """As `napkin serve --scheduling continuous` runs it: each finished sequence is replaced by a new request
    whose prompt rides whole in a step when the budget leaves room (prompt_steps); a share of the steps carry
    a prompt, the rest decode only."""
    P, O, rp = t.prompt_tokens, t.req.output_tokens, t.replica
    bd = float(sch.decode_sequences(batch, prompt_tokens=P, output_tokens=O, chunk_tokens=chunk))
    p = sch.prefill_tokens_per_step(bd, prompt_tokens=P, output_tokens=O)
    c, q = (float(v) for v in sch.prompt_steps(p, new_tokens=P, room=chunk - bd))
    dec = rp.operators(bd, kv_tokens=bd * t.held_avg, logits=bd)
    mixed = rp.operators(bd + c, kv_tokens=bd * t.held_avg, prefill_pairs=c / P * t.prefill_pairs, logits=bd + c / P)
    cycle = float(sch.continuous_step_seconds(total(mixed), decode_step_s=total(dec), prefill_request_s=0.0,
                                              decode_seqs=bd, output_tokens=O, prompt_share=q))
    return Steady(bd, c, q, dec, mixed, cycle)

def cache_copies(r: Report, t: Trip) -> float:
    """How many copies of the KV cache the node's tensor-parallel group keeps (MLA: one per GPU, every head
    reads the one latent; GQA: more than one where GPUs outnumber the KV heads), with serve's warning."""
    m = t.m
    repl = float(kv_copies(m, t.n_gpus))
    if repl > 1 and m.attention == "mla":
        r.warn("kv-replicated", f"MLA caches one latent per token that all heads read: TP {t.n_gpus} keeps a full "
                                "copy on every GPU, so the free memory holds the cache once per GPU")
    elif repl > 1:
        r.warn("kv-replicated", f"{kv_copies_why(m, t.n_gpus, repl)}, so the free memory holds that many copies "
                                "of the cache")
    return repl
