"""``napkin goodput``: goodput derived from failures and checkpoints, not guessed.

From an interruption rate (per GPU, per cluster, or a count over a period), the time to
write a checkpoint and the time to restart: the cluster's MTBF, the checkpoint interval
that loses least (Young/Daly, sqrt(2·δ·M)), the goodput there and at your own
interval, and how goodput falls as the cluster grows.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import reliability as rel
from napkin.request import field
from napkin.units import DAY, HOUR

S = msgspec.Struct

# first-order terms stop being small beside M past this (τ* + R)/M: warn
FIRST_ORDER_LIMIT = 0.3
SCALE_FACTORS = (1 / 64, 1 / 16, 1 / 4, 1, 4, 16)


class GoodputRequest(S, kw_only=True, forbid_unknown_fields=True):
    gpus: Annotated[int, field("int", "GPUs in the job (a synchronous job stops when any one fails)", gt=0)]
    checkpoint: Annotated[float, field("seconds", "time the job pauses to write one checkpoint (δ)", gt=0)]
    restart: Annotated[float, field("seconds", "time from an interruption to training again (R): detect, "
                                    "replace, reload", ge=0)]
    mtbf_per_gpu: Annotated[float | None, field("seconds", "mean time between interruptions per GPU "
                                                "(e.g. 50000h)", gt=0)] = None
    cluster_mtbf: Annotated[float | None, field("seconds", "mean time between interruptions of the whole job "
                                                "(e.g. 3h)", gt=0)] = None
    interruptions: Annotated[int | None, field("int", "interruptions counted over --period (e.g. 419)", gt=0)] = None
    period: Annotated[float | None, field("seconds", "the span the interruptions were counted over (e.g. 54d)",
                                          gt=0)] = None
    observed_gpus: Annotated[int | None, field("int", "GPUs of the cluster the count was observed on "
                                               "(default --gpus)", gt=0)] = None
    interval: Annotated[float | None, field("seconds", "your checkpoint interval, to compare (e.g. 30min)",
                                            gt=0)] = None
    sizes: Annotated[list[int], field("int", "cluster sizes for the goodput-vs-size series "
                                      "(default 1/64x to 16x --gpus)", gt=0)] = []


def _per_gpu_mtbf(r: Report, req: GoodputRequest) -> float:
    """MTBF per GPU from whichever rate was given; exactly one must be."""
    given = [n for n, v in (("mtbf_per_gpu", req.mtbf_per_gpu), ("cluster_mtbf", req.cluster_mtbf),
                            ("interruptions", req.interruptions)) if v is not None]
    if not given:
        raise InputError("mtbf_per_gpu", "nothing", "is required: give one interruption rate",
                         "--mtbf-per-gpu 50000h, --cluster-mtbf 3h, or --interruptions 419 --period 54d")
    if len(given) > 1:
        raise InputError(given[1], "both", f"conflicts with --{given[0].replace('_', '-')}",
                         "give one interruption rate")
    if (req.interruptions is None) != (req.period is None):
        raise InputError("period", "nothing", "is required with --interruptions", "give --period 54d")
    if req.observed_gpus is not None and req.interruptions is None:
        raise InputError("observed_gpus", req.observed_gpus, "needs --interruptions and --period",
                         "it is the cluster size the count was observed on")
    if req.mtbf_per_gpu is not None:
        return r.set("mtbf_per_gpu_s", req.mtbf_per_gpu, "seconds")
    if req.cluster_mtbf is not None:
        r.set("observed_mtbf_s", req.cluster_mtbf, "seconds")
        return r.step("mtbf_per_gpu_s", "cluster_mtbf · gpus",
                      value=rel.mtbf_per_gpu_s(req.cluster_mtbf, n_gpus=req.gpus), unit="seconds",
                      cluster_mtbf=(req.cluster_mtbf, "seconds"), gpus=req.gpus,
                      note=f"{req.cluster_mtbf * req.gpus / HOUR:,.0f} h")
    observed = req.observed_gpus or req.gpus
    m_obs = r.step("observed_mtbf_s", "period / interruptions",
                   value=rel.mtbf_from_count_s(req.period, n_interruptions=req.interruptions), unit="seconds",
                   period=(req.period, "seconds"), interruptions=req.interruptions)
    return r.step("mtbf_per_gpu_s", "observed_mtbf · observed_gpus",
                  value=rel.mtbf_per_gpu_s(m_obs, n_gpus=observed), unit="seconds", observed_gpus=observed,
                  note=f"{m_obs * observed / HOUR:,.0f} h")


def _sizes(req: GoodputRequest) -> list[int]:
    if req.sizes:
        return sorted(set(req.sizes) | {req.gpus})
    return sorted({max(1, round(req.gpus * f)) for f in SCALE_FACTORS})


def run_goodput(req: GoodputRequest) -> Report:
    r = Report(f"Goodput: {req.gpus:,} GPU{'s' if req.gpus != 1 else ''}", command="goodput")
    r.set("gpus", req.gpus, "count")
    per_gpu = _per_gpu_mtbf(r, req)
    delta, restart = req.checkpoint, req.restart
    r.assume("checkpoint_s", delta, "time to write one checkpoint; measure it on the real job",
             unit="seconds", basis="given")
    r.assume("restart_s", restart, "time from an interruption to training again; measure it",
             unit="seconds", basis="given")
    m = r.step("mtbf_s", "mtbf_per_gpu / gpus  (independent failures add their rates)",
               value=rel.cluster_mtbf_s(per_gpu, n_gpus=req.gpus), unit="seconds",
               mtbf_per_gpu=(per_gpu, "seconds"), gpus=req.gpus)
    r.step("interruptions_per_day", "1 day / mtbf", value=DAY / m, unit="number")
    tau = r.step("young_daly_interval_s", "sqrt(2 · δ · M)", value=rel.young_daly_interval_s(delta, mtbf_s=m),
                 unit="seconds", δ=(delta, "seconds"), M=(m, "seconds"))
    g_opt = r.step("goodput", "1 − (δ/τ + (τ/2 + R)/M), at τ = young_daly_interval",
                   value=rel.goodput_at_interval(tau, checkpoint_s=delta, restart_s=restart, mtbf_s=m),
                   unit="fraction", δ=(delta, "seconds"), τ=(tau, "seconds"), R=(restart, "seconds"),
                   M=(m, "seconds"))
    r.set("lost_fraction", {"checkpoint_writes": delta / tau, "rework": tau / 2 / m, "restarts": restart / m},
          "fraction")
    if req.interval is not None:
        r.set("interval_s", req.interval, "seconds")
        g_user = r.step("goodput_at_interval", "1 − (δ/τ + (τ/2 + R)/M), at your τ",
                        value=rel.goodput_at_interval(req.interval, checkpoint_s=delta, restart_s=restart, mtbf_s=m),
                        unit="fraction", τ=(req.interval, "seconds"))
        r.step("goodput_gain", "goodput − goodput_at_interval", value=g_opt - g_user, unit="fraction")
    sizes = _sizes(req)
    r.set("cluster_gpus", sizes, "count")
    r.set("goodput_by_cluster", [rel.goodput_at_interval(
        rel.young_daly_interval_s(delta, mtbf_s=rel.cluster_mtbf_s(per_gpu, n_gpus=n)),
        checkpoint_s=delta, restart_s=restart, mtbf_s=rel.cluster_mtbf_s(per_gpu, n_gpus=n)) for n in sizes],
          "fraction")
    r.note("goodput_by_cluster: goodput at each size's own Young/Daly interval, same per-GPU failure rate")
    if (tau + restart) / m > FIRST_ORDER_LIMIT:
        r.warn("first-order", f"τ + R is {(tau + restart) / m:.0%} of the MTBF: the first-order model is "
                              "optimistic here; expect less goodput, or checkpoint faster")
    if g_opt <= 0:
        r.warn("no-progress", "the job restarts faster than it can make progress at this MTBF")
    if g_opt > 0:
        r.note(f"feed it to `napkin train --goodput {g_opt:.3f}`, or let train derive it: --goodput auto "
               f"--mtbf-per-gpu {per_gpu / HOUR:.0f}h --checkpoint-time {delta:g}s --restart-time {restart:g}s")
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
