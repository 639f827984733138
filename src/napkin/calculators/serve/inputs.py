"""What a serve request resolves to before any figure is computed: the model, the accelerator,
the replica's layout (TP x PP), precisions, peak, bandwidth, the TP link and the efficiencies,
each recorded as given, measured (a calibration file), from the catalog, or a default assumption.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from napkin import catalog
from napkin.calculators import replica as rep
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import serving as sv
from napkin.hardware import Accelerator, bytes_per_value
from napkin.model import ModelSpec
from napkin.units import format as _fmt

from .request import ServeRequest


@dataclass
class Setup:
    """Everything resolved from a request before any figure is computed."""

    m: ModelSpec
    g: Accelerator
    gpus: int
    tp: int
    pp: int
    precision: str
    compute_precision: str
    b_w: float
    b_kv: float
    peak: float
    bw: float
    link: float  # one direction, after any scale-out cap; inf without a link
    eff: rep.Efficiencies
    replica: rep.Replica  # the operator model's view of one TP group
    capacity: float  # bytes per GPU the runtime reports
    scale_out: float  # per-GPU scale-out bandwidth beyond the scale-up domain, given or assumed
    by_hand: bool = False  # peak, bandwidth or memory given by hand: no published point covers the part
    link_bus: float | None = None  # the ring's fraction of the link where it is not the family's (PCIe, measured)
    ring_latency_s: float | None = None  # an all-reduce's fixed time where it is not the family's (PCIe)


def compute_precision_for(g: Accelerator, precision: str) -> str:
    """The precision the matmuls run at: the weights' own, else the fallback chain (int4 -> bf16)."""
    cp = resolve.compute_precision(g, precision)
    if cp is None:
        raise InputError("precision", precision, f"has no compute precision on the {g.name}",
                         "its dense peaks are at " + ", ".join(g.dense_flops_per_s))
    return cp


def parallelism(req_gpus: int | None, req_tp: int | None, m: ModelSpec, *, domain: int | None = None,
                r: Report | None = None) -> tuple[int, int, int]:
    """(gpus, tp, pp) from --gpus/--tp, with clear errors for impossible layouts. Without --tp the GPUs are one
    TP group, up to the scale-up ``domain``: beyond it the largest TP within it that divides the GPUs and the
    heads, and the rest pipeline stages (said in a note)."""
    gpus = req_gpus if req_gpus is not None else (req_tp if req_tp is not None else 1)
    tp = req_tp if req_tp is not None else gpus
    fits = [d for d in range(1, int(domain or 0) + 1)
            if gpus % d == 0 and m.n_heads % d == 0 and gpus // d <= m.n_layers]
    if req_tp is None and domain and gpus > domain and fits:  # else one TP group, warned where it leaves the domain
        tp = max(fits)
        if r is not None:
            r.note(f"--gpus {gpus} spans more than one scale-up domain of {domain:g}: TP {tp} within it and "
                   f"{gpus // tp} pipeline stages (give --tp for another split)")
    if tp > gpus:
        raise InputError("tp", tp, f"exceeds the GPUs of the replica ({gpus})",
                         f"use --tp at most {gpus}, or raise --gpus to {tp}")
    if gpus % tp:
        raise InputError("gpus", gpus, f"is not a multiple of --tp {tp}",
                         "GPUs beyond the TP degree form pipeline stages: give gpus = tp x stages")
    if m.n_heads % tp:
        divisors = [d for d in (1, 2, 4, 8, 16, 32, 64) if m.n_heads % d == 0 and d <= m.n_heads]
        raise InputError("tp", tp, f"does not divide the {m.n_heads} attention heads of {m.name}",
                         "use one of " + ", ".join(map(str, divisors)))
    pp = gpus // tp
    if pp > m.n_layers:
        raise InputError("gpus", gpus, f"gives {pp} pipeline stages for {m.n_layers} layers",
                         "use at most one stage per layer")
    return gpus, tp, pp


def setup(req: ServeRequest, r: Report) -> Setup:
    m = catalog.model(req.model)
    g = catalog.gpu(req.gpu)
    gpus, tp, pp = parallelism(req.gpus, req.tp, m, domain=g.scale_up_domain, r=r)
    b_w = bytes_per_value(req.precision)
    b_kv = bytes_per_value(req.kv_precision, "kv_precision")
    cp = compute_precision_for(g, req.precision)
    mlp_cp = compute_precision_for(g, req.mlp_precision) if req.mlp_precision else None
    b_mlp = bytes_per_value(req.mlp_precision, "mlp_precision") if req.mlp_precision else None
    if cp != req.precision:
        r.note(f"the {g.name} has no {req.precision} tensor-core peak: {req.precision} weights are dequantised and "
               f"multiplied at {cp}, so compute uses the {cp} peak")
    base = g
    g = rep.by_hand(g, precision=cp, peak=req.peak, bandwidth=req.bandwidth, memory=req.memory)
    peak = g.peak(cp)
    link = g.link_bytes_per_s_per_direction
    if tp > 1 and link is None:
        raise InputError("tp", tp, f"needs a scale-up link, and the {g.name} has none in the catalog",
                         "use --tp 1 (pipeline stages only)")
    given = rep.Given(gemm=req.gemm_efficiency, bandwidth=req.bandwidth_efficiency,
                      allreduce_latency_s=req.allreduce_latency, per_layer_s=req.layer_overhead,
                      per_step_s=req.step_overhead, calibration=req.calibration)
    e = rep.efficiencies(g, cp, mlp_precision=mlp_cp, given=given, r=r)
    rep.note_experts(r, m)
    hand_figures(r, req, base, g, cp)
    capacity = rep.memory_capacity_bytes(g, r) if req.memory is None else r.assume(
        "memory_bytes", req.memory, "per GPU, given by hand", unit="bytes", basis="given")
    catalogued = link
    if link is not None and tp > 1 and req.calibration:
        link = measured_link(req, m, tp, link, r)
    measured = link if link is not None and link != catalogued else None  # a calibration's bus bandwidth
    scale_out = (req.scale_out_bandwidth if req.scale_out_bandwidth is not None else
                 catalog.default_value("scale_out_bytes_per_s_per_gpu"))
    if link is not None:  # a TP group beyond the scale-up domain crosses the scale-out network
        link = float(sv.tp_link_bytes_per_s(tp, scale_up_domain=g.scale_up_domain, link_bytes_per_s_per_direction=link,
                                            scale_out_bytes_per_s_per_gpu=scale_out,
                                            host_link_bytes_per_s_per_direction=g.host_link_bytes_per_s_per_direction,
                                            host_link_domain=g.host_link_domain))
    link = link if link is not None else math.inf
    # the catalogued link within one domain: the family's measured all-reduce sweep applies
    scale_up = 1 < tp <= g.scale_up_domain and link == catalogued
    if scale_up:
        allreduce_sweep(r, g, e, message=float(sv.microbatch(req.batch, pp=pp)) * m.d_model * sv.ACTIVATION_BYTES,
                        link=link)
    bus, latency = ring_fraction(r, g, tp, link, measured), rep.pcie_ring_latency(r, g, tp, link,
                                                                                   given=req.allreduce_latency)
    replica = rep.replica(m, g, tp=tp, bytes_per_weight=b_w, kv_bytes_per_value=b_kv, e=e, compute_precision=cp,
                          link_bytes_per_s_per_direction=link, mlp_precision=mlp_cp, mlp_bytes_per_weight=b_mlp,
                          scale_up=scale_up, link_bus=bus, ring_latency_s=latency)
    return Setup(m, g, gpus, tp, pp, req.precision, cp, b_w, b_kv, peak, g.memory_bytes_per_s, link, e, replica,
                 capacity, scale_out, by_hand=g is not base, link_bus=bus, ring_latency_s=latency)


def ring_fraction(r: Report, g: Accelerator, tp: int, link: float, measured: float | None) -> float | None:
    """The fraction of the TP link a ring reaches where it is not the family's: 1 for a calibration's measured
    bus bandwidth, PCIe's (recorded) for bridged cards that reach the rest of their server over PCIe."""
    if measured is not None and link == measured:
        return 1.0
    return rep.pcie_ring_bus(r, g, tp, link)


def allreduce_sweep(r: Report, g: Accelerator, e: rep.Efficiencies, *, message: float, link: float) -> None:
    """Record the bus bandwidth the family's published all-reduce sweep gives a decode step's message."""
    from napkin.catalog import efficiency as eff
    from napkin.formulas import comm

    if e.allreduce_curve is None:
        return
    fam = eff.family(g.key)
    ring = float(comm.measured_ring_seconds(float(message), n_ranks=8.0, curve=e.allreduce_curve))
    bus = min(2.0 * 7.0 / 8.0 * message / ring, link * e.allreduce_bus)  # busbw: the same at any rank count
    r.assume("allreduce_bus_at_decode", bus, f"measured all-reduce bus bandwidth on the {fam.key} family at a decode "
             f"step's message of {_fmt(message, 'bytes')} (batch / pipeline stages x d_model x 2 B; every step's "
             "all-reduce reads the sweep at its own size, and a one-shot kernel is used where faster)",
             unit="bytes_per_s",
             basis="catalog", source=fam.allreduce_curve_source,
             replaced_by="`torchrun -m napkin.measure --collectives` on this machine, then --calibration")


def hand_figures(r: Report, req: ServeRequest, base: Accelerator, g: Accelerator, cp: str) -> None:
    """The peak and bandwidth the operator model runs at: the catalog's, or given by hand (said so, with
    what still comes from --gpu: its efficiencies, link and scale-up domain)."""
    if req.peak is None:
        r.assume("dense_flops_per_s", g.peak(cp), f"{g.name} dense {cp} peak ({g.source})", unit="flops_per_s",
                 basis="catalog")
    else:
        resolve.warn_if_sparse(r, req.peak, cp)
        r.assume("dense_flops_per_s", req.peak, f"dense {cp} peak given by hand, in place of the {base.name}'s "
                 f"{_fmt(base.peak(cp), 'flops_per_s')}", unit="flops_per_s", basis="given")
    if req.bandwidth is None:
        r.assume("memory_bytes_per_s", g.memory_bytes_per_s, f"{g.name} HBM bandwidth ({g.source})",
                 unit="bytes_per_s", basis="catalog")
    else:
        r.assume("memory_bytes_per_s", req.bandwidth, f"given by hand, in place of the {base.name}'s "
                 f"{_fmt(base.memory_bytes_per_s, 'bytes_per_s')}", unit="bytes_per_s", basis="given")
    if g is not base:
        what = [k for k in ("peak", "bandwidth", "memory") if getattr(req, k) is not None]
        words = what[0] if len(what) == 1 else ", ".join(what[:-1]) + " and " + what[-1]
        r.warn("figures-by-hand", f"the {words} given by hand {'replace' if len(what) > 1 else 'replaces'} the "
                                  f"{base.name}'s; its kernel efficiencies, fixed costs, "
                                  "link and scale-up domain still apply (measured on GPUs with HBM): give "
                                  "--gemm-efficiency, --bandwidth-efficiency and --layer-overhead for the part, and "
                                  "the error bar does not cover it")


def measured_link(req: ServeRequest, m: ModelSpec, tp: int, link: float, r: Report) -> float:
    """The TP all-reduce link from a calibration's measured bus bandwidth (`torchrun -m napkin.measure
    --collectives`), at the measured message size nearest a decode step's all-reduce; else the catalog's."""
    from napkin.calibration import load

    cal = load(req.calibration)
    message = req.batch * m.d_model * sv.ACTIVATION_BYTES
    hit = cal.allreduce_bus_at(message)
    if hit is None:
        r.note("the calibration has no all-reduce figures; the TP link stays the catalog's")
        return link
    label, bus = hit
    r.assume("link_bytes_per_s_per_direction", bus, f"{cal.label}: all-reduce bus bandwidth at {label} "
             f"{cal.allreduce_setup}, nearest a decode all-reduce of "
             f"{_fmt(message, 'bytes')}; it includes that size's latency", unit="bytes_per_s", basis="measured")
    if cal.allreduce_ranks and cal.allreduce_ranks != tp:
        r.warn("calibration-ranks", f"the bus bandwidth was measured over {cal.allreduce_ranks} ranks, not the "
                                    f"TP degree {tp}")
    return bus


def beyond_scale_up(r: Report, s: Setup, req: ServeRequest) -> bool:
    """Record the all-reduce link of a TP group larger than the scale-up domain; True when it is slower."""
    g = s.g
    link = g.link_bytes_per_s_per_direction
    if link is None or s.tp <= g.scale_up_domain or s.link >= link:
        return False
    host = g.host_link_bytes_per_s_per_direction
    if host is not None and s.tp <= (g.host_link_domain or 0):
        r.step("tp_link_bytes_per_s", "min(scale-up link, host link), since scale_up_domain < tp <= host_link_domain",
               value=s.link, unit="bytes_per_s", tp=s.tp, scale_up_domain=g.scale_up_domain,
               host_link=(host, "bytes_per_s"), note=f"{g.link_name} joins {g.scale_up_domain} cards; the server's "
               f"other cards are reached over PCIe. {g.host_link_source}", cites=sv.tp_link_bytes_per_s)
        return True
    where = "per GPU, one direction, beyond the scale-up domain"
    if req.scale_out_bandwidth is None:
        d = catalog.default("scale_out_bytes_per_s_per_gpu")
        resolve.assume_default(r, "scale_out_bandwidth", d.key, note=f"{where}: {d.note}", unit="bytes_per_s")
    else:
        r.assume("scale_out_bandwidth", s.scale_out, where, unit="bytes_per_s", basis="given")
    if host is not None:  # beyond the server: PCIe to reach the NIC, then the NIC
        r.step("tp_link_bytes_per_s", "min(scale-up link, host link, scale-out per GPU), since tp > host_link_domain",
               value=s.link, unit="bytes_per_s", tp=s.tp, host_link_domain=g.host_link_domain,
               link=(link, "bytes_per_s"), host_link=(host, "bytes_per_s"), scale_out=(s.scale_out, "bytes_per_s"),
               note=f"a ring all-reduce runs at its slowest hop; {g.link_name} joins {g.scale_up_domain} cards, PCIe "
               f"the {g.host_link_domain} of a server. {g.host_link_source}", cites=sv.tp_link_bytes_per_s)
        return True
    r.step("tp_link_bytes_per_s", "min(scale-up link, scale-out per GPU), since tp > scale_up_domain", value=s.link,
           unit="bytes_per_s", tp=s.tp, scale_up_domain=g.scale_up_domain, link=(link, "bytes_per_s"),
           scale_out=(s.scale_out, "bytes_per_s"),
           note=f"a ring all-reduce runs at its slowest hop; {g.link_name} joins {g.scale_up_domain} GPUs",
           cites=sv.tp_link_bytes_per_s)
    return True
