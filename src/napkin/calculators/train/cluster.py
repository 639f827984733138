"""The cluster of a training plan: --gpus gives the wall time, --deadline the GPUs it needs (or why none can)."""

from __future__ import annotations

from typing import Any

from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import training as T
from napkin.hardware import Accelerator
from napkin.units import format as fmt


def size_cluster(r: Report, req: Any, d: float, tps: float, g: Accelerator | None = None, *, work: str = "D",
                 rate: str = "tokens_per_gpu_s") -> int | None:
    """The GPUs the run uses (given, or needed for the deadline, in whole nodes of ``g``) with its wall time;
    None when neither is given. ``work`` and ``rate`` name D and the rate per GPU in the working (a FLOP
    budget runs at FLOP/s per GPU)."""
    if req.gpus is not None:
        r.set("gpus", req.gpus, "count")
        r.step("wall_s", f"{work} / ({rate} · gpus)", value=T.wall_seconds(d, tokens_per_gpu_s=tps,
               n_gpus=req.gpus), unit="seconds", gpus=req.gpus, cites=T.wall_seconds)
        return req.gpus
    if req.deadline is not None:
        r.set("deadline_s", req.deadline, "seconds")
        need = T.gpus_for_deadline(d, tokens_per_gpu_s=tps, deadline_s=req.deadline)
        if need > req.max_gpus:
            infeasible(req, d, tps)
        node = g.node_size if g is not None else 1
        name = "gpus_needed" if node == 1 else "gpus_for_deadline"
        n_used = int(r.step(name, f"ceil({work} / ({rate} · deadline))", value=int(need), unit="count",
                            deadline=(req.deadline, "seconds"), cites=T.gpus_for_deadline))
        if node > 1:
            n_used = int(r.step("gpus_needed", "gpus_for_deadline rounded up to whole nodes",
                                value=int(T.whole_nodes(n_used, gpus_per_node=node)), unit="count",
                                gpus_for_deadline=n_used, gpus_per_node=node,
                                note=f"{int(T.whole_nodes(n_used, gpus_per_node=node)) // node:,} nodes of {node} "
                                     f"({_node_words(g)})", cites=T.whole_nodes))
            r.set("nodes", n_used // node, "count")
        r.step("wall_s", f"{work} / ({rate} · gpus_needed)", value=T.wall_seconds(d, tokens_per_gpu_s=tps,
               n_gpus=n_used), unit="seconds", gpus_needed=n_used, cites=T.wall_seconds)
        return n_used
    r.note("give --gpus K for the wall time, or --deadline for the GPUs it needs")
    return None


def _node_words(g: Any) -> str:
    if g.gpus_per_node:
        return f"a {g.name} host"
    return f"the {g.name}'s scale-up domain" + (f", {g.link_name}" if g.link_name else "")


def infeasible(req: Any, d: float, tps: float) -> None:
    """A deadline that needs more than --max-gpus: the GPUs it needs, and the shortest wall time within the cap."""
    shortest = T.wall_seconds(d, tokens_per_gpu_s=tps, n_gpus=req.max_gpus)
    need = T.gpus_for_deadline(d, tokens_per_gpu_s=tps, deadline_s=req.deadline) if tps > 0 else float("inf")
    needs = f"it needs {int(need):,} GPUs" if need != float("inf") else "no cluster makes progress"
    raise InputError("deadline", fmt(req.deadline, "seconds"),
                     f"is infeasible: {needs}, more than --max-gpus {req.max_gpus:,}",
                     f"allow {at_least(shortest)} or more, or raise --max-gpus")


def at_least(seconds: float) -> str:
    """A duration as printed, rounded up so that the printed value is itself enough."""
    from napkin import units

    for k in range(100):
        text = fmt(seconds * (1 + k * 1e-4), "seconds")
        if units.parse(text.replace(" ", ""), "seconds", "deadline") >= seconds:
            return text
    return fmt(seconds, "seconds")
