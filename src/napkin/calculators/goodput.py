"""``napkin goodput``: goodput derived from failures and checkpoints, not guessed.

From an interruption rate (per GPU, per cluster, or a count over a period), the time to
write a checkpoint and the time to restart: the cluster's MTBF, the checkpoint interval
that loses least (Young's sqrt(2·δ·M), refined by Daly 2006), the goodput there and at
your own interval under Daly's exact model for random failures, and how goodput falls as
the cluster grows. ``napkin train --goodput auto`` takes the same flags and uses the same
derivation (:mod:`napkin.calculators.failures`: one failure model, shared).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from napkin.calculators import Calculator
from napkin.calculators.failures import ALIASES, DOCS, exact_number, per_gpu_mtbf, warn_frequent_failures
from napkin.derivation import Report
from napkin.formulas import reliability as rel
from napkin.request import field
from napkin.units import DAY, HOUR, MINUTE

S = msgspec.Struct

SCALE_FACTORS = (1 / 64, 1 / 16, 1 / 4, 1, 4, 16)
# the first-order figure is worth showing beside the exact one once they differ by this much
FIRST_ORDER_SHOWN = 0.01


class GoodputRequest(S, kw_only=True, forbid_unknown_fields=True):
    gpus: Annotated[int, field("int", "GPUs in the job (a synchronous job stops when any one fails)", gt=0)]
    checkpoint_time: Annotated[float, field("seconds", DOCS["checkpoint_time"], gt=0,
                                            aliases=ALIASES["checkpoint_time"])]
    restart_time: Annotated[float, field("seconds", DOCS["restart_time"], ge=0, aliases=ALIASES["restart_time"])]
    mtbf_per_gpu: Annotated[float | None, field("seconds", DOCS["mtbf_per_gpu"], gt=0)] = None
    cluster_mtbf: Annotated[float | None, field("seconds", DOCS["cluster_mtbf"], gt=0)] = None
    interruptions: Annotated[int | None, field("int", DOCS["interruptions"], gt=0)] = None
    period: Annotated[float | None, field("seconds", DOCS["period"], gt=0)] = None
    observed_gpus: Annotated[int | None, field("int", DOCS["observed_gpus"], gt=0)] = None
    checkpoint_interval: Annotated[float | None, field("seconds", "your checkpoint interval, to compare (e.g. 30min)",
                                                       gt=0, aliases=ALIASES["checkpoint_interval"])] = None
    sizes: Annotated[list[int], field("int", "cluster sizes for the goodput-vs-size series "
                                      "(default 1/64x to 16x --gpus)", gt=0)] = []


def first_order_note(r: Report, *, checkpoint_s: float, restart_s: float, mtbf_s: float, goodput: float) -> None:
    """Say what Young's first-order model gives when it differs from the exact figure."""
    tau_y = rel.young_daly_interval_s(checkpoint_s, mtbf_s=mtbf_s)
    g1 = rel.goodput_first_order(tau_y, checkpoint_s=checkpoint_s, restart_s=restart_s, mtbf_s=mtbf_s)
    if abs(g1 - goodput) >= FIRST_ORDER_SHOWN:
        r.note(f"Young's first-order 1 − (δ/τ + (τ/2 + R)/M) gives {g1:.1%} here (at τ = sqrt(2δM)); it holds only "
               f"while τ + δ + R is small beside M (here {(tau_y + checkpoint_s + restart_s) / mtbf_s:.0%} of it), "
               "and this goodput uses Daly's exact expression instead")


def _flag_time(seconds: float) -> str:
    """A duration as a flag value without spaces that parses back exactly: 54d, 50000h, 10min, 50000s."""
    for unit, size in (("d", DAY), ("h", HOUR), ("min", MINUTE)):
        if seconds >= size and seconds % size == 0:
            return f"{exact_number(seconds / size)}{unit}"
    return f"{exact_number(seconds)}s"


def rate_flags(req: Any, per_gpu: float) -> str:
    """The interruption rate as it was given, as flags for `napkin train --goodput auto`."""
    if req.interruptions is not None:
        out = f"--interruptions {req.interruptions} --period {_flag_time(req.period)}"
    elif req.cluster_mtbf is not None:
        out = f"--cluster-mtbf {_flag_time(req.cluster_mtbf)}"
    else:
        return f"--mtbf-per-gpu {_flag_time(per_gpu)}"
    return out + f" --observed-gpus {req.observed_gpus or req.gpus}"


# --------------------------------------------------------------------------------- goodput
def _sizes(req: GoodputRequest) -> list[int]:
    if req.sizes:
        return sorted(set(req.sizes) | {req.gpus})
    return sorted({max(1, round(req.gpus * f)) for f in SCALE_FACTORS})


def run_goodput(req: GoodputRequest) -> Report:
    r = Report(f"Goodput: {req.gpus:,} GPU{'s' if req.gpus != 1 else ''}", command="goodput")
    r.set("gpus", req.gpus, "count")
    per_gpu = per_gpu_mtbf(r, req, n_gpus=req.gpus)
    delta, restart = req.checkpoint_time, req.restart_time
    r.assume("checkpoint_time_s", delta, "time to write one checkpoint; measure it on the real job",
             unit="seconds", basis="given")
    r.assume("restart_time_s", restart, "time from an interruption to training again; measure it",
             unit="seconds", basis="given")
    m = r.step("mtbf_s", "mtbf_per_gpu / gpus  (independent failures add their rates)",
               value=rel.cluster_mtbf_s(per_gpu, n_gpus=req.gpus), unit="seconds",
               mtbf_per_gpu=(per_gpu, "seconds"), gpus=req.gpus, cites=rel.cluster_mtbf_s)
    r.step("interruptions_per_day", "1 day / mtbf", value=DAY / m, unit="number")
    r.step("young_daly_interval_s", "sqrt(2 · δ · M)  (Young 1974, first order)",
           value=rel.young_daly_interval_s(delta, mtbf_s=m), unit="seconds", δ=(delta, "seconds"),
           M=(m, "seconds"), cites=rel.young_daly_interval_s)
    tau = r.step("optimal_interval_s", "sqrt(2δM) · [1 + ⅓·sqrt(δ/2M) + (δ/2M)/9] − δ  (Daly 2006)",
                 value=rel.daly_interval_s(delta, mtbf_s=m), unit="seconds", δ=(delta, "seconds"), M=(m, "seconds"),
                 cites=rel.daly_interval_s)
    g_opt = r.step("goodput", "τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1)), at τ = optimal_interval  (Daly 2006)",
                   value=rel.goodput_at_interval(tau, checkpoint_s=delta, restart_s=restart, mtbf_s=m),
                   unit="fraction", τ=(tau, "seconds"), δ=(delta, "seconds"), R=(restart, "seconds"),
                   M=(m, "seconds"), cites=rel.goodput_at_interval)
    r.set("lost_fraction", rel.lost_fractions(tau, checkpoint_s=delta, restart_s=restart, mtbf_s=m), "fraction")
    if req.checkpoint_interval is not None:
        r.set("checkpoint_interval_s", req.checkpoint_interval, "seconds")
        g_user = r.step("goodput_at_interval", "τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1)), at your τ",
                        value=rel.goodput_at_interval(req.checkpoint_interval, checkpoint_s=delta,
                                                      restart_s=restart, mtbf_s=m),
                        unit="fraction", τ=(req.checkpoint_interval, "seconds"), cites=rel.goodput_at_interval)
        r.step("goodput_gain", "goodput − goodput_at_interval", value=g_opt - g_user, unit="fraction")
    sizes = _sizes(req)
    r.set("cluster_gpus", sizes, "count")
    r.set("goodput_by_cluster", [rel.optimal_goodput(delta, restart_s=restart,
                                                     mtbf_s=rel.cluster_mtbf_s(per_gpu, n_gpus=n)) for n in sizes],
          "fraction")
    r.note("goodput_by_cluster: goodput at each size's own optimal interval, same per-GPU failure rate")
    first_order_note(r, checkpoint_s=delta, restart_s=restart, mtbf_s=m, goodput=g_opt)
    warn_frequent_failures(r, tau=tau, checkpoint_s=delta, restart_s=restart, mtbf_s=m, goodput=g_opt)
    auto = (f"--goodput auto {rate_flags(req, per_gpu)} --checkpoint-time {_flag_time(delta)} "
            f"--restart-time {_flag_time(restart)}")
    if g_opt > 0:
        r.note(f"feed it to `napkin train --goodput {g_opt:.4g}`, or let train derive it: {auto}")
    else:
        r.note(f"goodput is 0 at this size (no measurable progress), so there is none to give `napkin train`; "
               f"`napkin train {auto}` finds the cluster size a --deadline needs")
    return r


def goodput_charts(report: Report) -> dict[str, dict]:
    from napkin.charts.economics import goodput_chart

    return {"goodput-vs-cluster": goodput_chart(report)}


GOODPUT = Calculator(
    "goodput", GoodputRequest, run_goodput, "Goodput",
    "Goodput and the best checkpoint interval from failure rates, checkpoint and restart times.",
    establishes="the fraction of paid time a job of this size spends training, and the interval that maximises it",
    needs_measuring="the interruption rate, checkpoint write time and restart time of the real cluster",
    charts=goodput_charts,
)
