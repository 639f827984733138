"""The cluster of a training plan: --gpus gives the wall time, --deadline the GPUs it needs (or why none can)."""

from __future__ import annotations

from typing import Any

from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import training as T
from napkin.units import format as fmt


def size_cluster(r: Report, req: Any, d: float, tps: float) -> int | None:
    """The GPUs the run uses (given, or needed for the deadline) with its wall time; None when neither is given."""
    if req.gpus is not None:
        r.set("gpus", req.gpus, "count")
        r.step("wall_s", "D / (tokens_per_gpu_s · gpus)", value=T.wall_seconds(d, tokens_per_gpu_s=tps,
               n_gpus=req.gpus), unit="seconds", gpus=req.gpus, cites=T.wall_seconds)
        return req.gpus
    if req.deadline is not None:
        r.set("deadline_s", req.deadline, "seconds")
        need = T.gpus_for_deadline(d, tokens_per_gpu_s=tps, deadline_s=req.deadline)
        if need > req.max_gpus:
            infeasible(req, d, tps)
        n_used = int(need)
        r.step("gpus_needed", "ceil(D / (tokens_per_gpu_s · deadline))", value=n_used, unit="count",
               deadline=(req.deadline, "seconds"), cites=T.gpus_for_deadline)
        r.step("wall_s", "D / (tokens_per_gpu_s · gpus_needed)", value=T.wall_seconds(d, tokens_per_gpu_s=tps,
               n_gpus=n_used), unit="seconds", gpus_needed=n_used, cites=T.wall_seconds)
        return n_used
    r.note("give --gpus K for the wall time, or --deadline for the GPUs it needs")
    return None


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
