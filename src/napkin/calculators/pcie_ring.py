"""A tensor-parallel ring over PCIe: whether a TP group's all-reduce runs over PCIe, and the fraction of PCIe's
rate and the fixed time it then takes (cards with no NVLink, such as an L40S server, or bridged pairs beyond
their pair). The serve calculator, the journey and `napkin validate` take these through calculators.replica;
the planner's arrays take the same rules in plan.serve.hardware."""

from __future__ import annotations

import math

from napkin.catalog import efficiency as eff
from napkin.derivation import Report
from napkin.hardware import Accelerator
from napkin.units import format as fmt


def pcie_hop(g: Accelerator, link: float) -> bool:
    """Whether a TP group's ring runs at g's host link (PCIe between the cards of a server beyond their bridge)."""
    host = g.host_link_bytes_per_s_per_direction
    return host is not None and link == min(host, g.link_bytes_per_s_per_direction or math.inf)


def over_pcie(g: Accelerator, tp: int, link: float) -> bool:
    """Whether a TP group's ring runs over PCIe: cards whose only GPU-to-GPU link is PCIe (an L40S server), or
    bridged cards beyond their pair (the planner's arrays: plan.serve.hardware.over_pcie)."""
    if g.link_over_pcie:
        return tp > 1
    return tp > g.scale_up_domain and pcie_hop(g, link)


def pcie_ring_bus(r: Report | None, g: Accelerator, tp: int, link: float) -> float | None:
    """PCIe's ring fraction (recorded, with its source) where a TP group's ring runs over PCIe (over_pcie); None
    where the family's scale-up figure applies."""
    if not over_pcie(g, tp, link):
        return None
    fit = eff.fitted()
    if r is not None:
        r.assume("pcie_allreduce_bus", fit.pcie_allreduce_bus, "of PCIe's one-direction rate that a TP ring over "
                 "PCIe reaches at decode-sized messages (the cards of one server with no NVLink between them), "
                 "fitted to published serving runs on A100 PCIe and L40S servers, leave-sources-out",
                 unit="fraction", basis="fitted", source=f"napkin validate: {fit.method}. Measured rings for "
                 f"scale: 8 L40S on PCIe Gen4 copy at 20.75 GB/s, 65% of 32 GB/s (flashinfer pull request #4870); "
                 "bridged A100 PCIe pairs drop to 20 GB/s bus bandwidth once a third card joins (nccl-tests issue "
                 "#178); both at large messages, above what a decode step's few MiB reach",
                 replaced_by="nccl-tests all_reduce_perf across the server's cards at the decode message size, "
                             "or `torchrun -m napkin.measure --collectives`, then --calibration")
    return fit.pcie_allreduce_bus


def pcie_ring_latency(r: Report | None, g: Accelerator, tp: int, link: float, *,
                      given: float | None = None) -> float | None:
    """The fixed time of a TP all-reduce whose ring runs over PCIe (over_pcie): 2(n − 1) ring steps at PCIe's
    measured step time (formulas.comm.ring_latency_seconds), recorded with its source; None where the family's
    latency, or one given by hand, applies."""
    if given is not None or not over_pcie(g, tp, link):
        return None
    from napkin.formulas import comm

    p = eff.pcie()
    value = float(comm.ring_latency_seconds(tp, hop_latency_s=p.hop_latency_s))
    if r is not None:
        r.assume("pcie_allreduce_latency", value, f"a small all-reduce over PCIe on {tp} cards: 2 · ({tp} − 1) ring "
                 f"steps of {fmt(p.hop_latency_s, 'seconds')} each, in place of the family's scale-up figure",
                 unit="seconds", basis="catalog", source=p.hop_latency_source,
                 replaced_by="nccl-tests all_reduce_perf -b 8 across the server's cards, then --allreduce-latency")
    return value
