"""``napkin goodput``: goodput derived from failures and checkpoints, not guessed.

From an interruption rate (per GPU, per cluster, or a count over a period), the time to
write a checkpoint and the time to restart: the cluster's MTBF, the checkpoint interval
that loses least (Young's sqrt(2·δ·M), refined by Daly 2006), the goodput there and at
your own interval under Daly's exact model for random failures, and how goodput falls as
the cluster grows. ``napkin train --goodput auto`` takes the same flags and uses the same
derivation (:func:`per_gpu_mtbf`, :func:`failure_goodput`).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import reliability as rel
from napkin.request import field
from napkin.units import DAY, HOUR, MINUTE

S = msgspec.Struct

SCALE_FACTORS = (1 / 64, 1 / 16, 1 / 4, 1, 4, 16)
# the first-order figure is worth showing beside the exact one once they differ by this much
FIRST_ORDER_SHOWN = 0.01

# The failure-model inputs, spelled the same in `napkin goodput` and `napkin train --goodput auto`.
# (name, kind, doc, bounds, aliases): the aliases are goodput's first spellings.
DOCS = {
    "checkpoint_time": "time the job pauses to write one checkpoint (δ)",
    "restart_time": "time from an interruption to training again (R): detect, replace, reload",
    "checkpoint_interval": "work between checkpoints, τ (default: the interval that loses least, Daly 2006)",
    "mtbf_per_gpu": "mean time between interruptions per GPU (e.g. 50000h)",
    "cluster_mtbf": "mean time between interruptions of the job, seen on --observed-gpus (e.g. 3h)",
    "interruptions": "interruptions counted over --period on --observed-gpus (e.g. 419)",
    "period": "the span the interruptions were counted over (e.g. 54d)",
    "observed_gpus": "GPUs of the cluster a --cluster-mtbf or --interruptions was seen on (default --gpus)",
}
ALIASES = {"checkpoint_time": ("checkpoint",), "restart_time": ("restart",), "checkpoint_interval": ("interval",)}
RATE_FLAGS = "--mtbf-per-gpu 50000h, --cluster-mtbf 3h, or --interruptions 419 --period 54d"
# Llama 3 (Dubey et al. 2024, section 3.3.4): 419 interruptions in 54 days on 16,384 GPUs, about
# 50,700 h per GPU. A per-GPU MTBF under a day is thousands of times shorter: most likely a unit left off.
LLAMA3_MTBF_PER_GPU_H = int(round(54 * 24 * 16384 / 419, -2))  # 419 interruptions in 54 days on 16,384 GPUs: 50,700 h
SHORT_MTBF_PER_GPU = DAY


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


# ------------------------------------------------------------------- shared with napkin train
def failure_model_given(req: Any) -> bool:
    """Whether any failure-model input is set (train: they need --goodput auto)."""
    return any(getattr(req, k, None) is not None for k in DOCS)


def per_gpu_mtbf(r: Report | None, req: Any, *, n_gpus: float | None) -> float:
    """MTBF per GPU from whichever rate was given (exactly one must be), with its working.

    A cluster rate (--cluster-mtbf, or --interruptions over --period) was seen on
    --observed-gpus, by default the job's own ``n_gpus``; None when the job's size is not
    known yet (train --deadline), which then needs --observed-gpus.
    """
    given = [n for n, v in (("mtbf_per_gpu", req.mtbf_per_gpu), ("cluster_mtbf", req.cluster_mtbf),
                            ("interruptions", req.interruptions)) if v is not None]
    if req.period is not None and req.interruptions is None:
        raise InputError("interruptions", "nothing", "is required with --period", "give --interruptions 419")
    if not given:
        raise InputError("mtbf_per_gpu", "nothing", "is required: give one interruption rate", RATE_FLAGS)
    if len(given) > 1:
        raise InputError(given[1], "both", f"conflicts with --{given[0].replace('_', '-')}",
                         "give one interruption rate")
    if req.interruptions is not None and req.period is None:
        raise InputError("period", "nothing", "is required with --interruptions", "give --period 54d")
    if req.observed_gpus is not None and req.mtbf_per_gpu is not None:
        raise InputError("observed_gpus", req.observed_gpus, "needs --interruptions and --period, or "
                         "--cluster-mtbf", "it is the cluster size a cluster rate was observed on")
    if req.mtbf_per_gpu is not None:
        if r is not None:
            r.set("mtbf_per_gpu_s", req.mtbf_per_gpu, "seconds")
            warn_short_mtbf(r, req, req.mtbf_per_gpu)
        return req.mtbf_per_gpu
    observed = req.observed_gpus or n_gpus
    if observed is None:
        raise InputError("observed_gpus", "nothing", f"is required with --{given[0].replace('_', '-')} when the "
                         "job's size is not given", "give --observed-gpus 16384, the cluster the rate was seen on")
    if req.cluster_mtbf is not None:
        m_obs = req.cluster_mtbf
        if r is not None:
            r.set("observed_mtbf_s", m_obs, "seconds")
    else:
        m_obs = rel.mtbf_from_count_s(req.period, n_interruptions=req.interruptions)
        if r is not None:
            r.step("observed_mtbf_s", "period / interruptions", value=m_obs, unit="seconds",
                   period=(req.period, "seconds"), interruptions=req.interruptions)
    per_gpu = rel.mtbf_per_gpu_s(m_obs, n_gpus=observed)
    if r is not None:
        r.step("mtbf_per_gpu_s", "observed_mtbf · observed_gpus", value=per_gpu, unit="seconds",
               observed_mtbf=(m_obs, "seconds"), observed_gpus=int(observed), note=f"{per_gpu / HOUR:,.0f} h")
        warn_short_mtbf(r, req, per_gpu)
    return per_gpu


def warn_short_mtbf(r: Report, req: Any, per_gpu: float) -> None:
    """A per-GPU MTBF under a day is hundreds of times below what large clusters see; most often it is
    hours (or days) typed without a unit, which napkin reads as seconds: say so."""
    if per_gpu >= SHORT_MTBF_PER_GPU:
        return
    meant = {"mtbf_per_gpu": "h", "cluster_mtbf": "h", "period": "d"}
    read = "; ".join(f"--{f.replace('_', '-')} is {_human(getattr(req, f))}: write "
                     f"--{f.replace('_', '-')} {_exact(getattr(req, f))}{unit} if {'hours' if unit == 'h' else 'days'} "
                     "were meant" for f, unit in meant.items() if getattr(req, f) is not None)
    r.warn("short-mtbf", f"the interruption rate gives each GPU an MTBF of {_human(per_gpu)}, far below the "
                         f"~{LLAMA3_MTBF_PER_GPU_H:,} h per GPU of Llama 3's cluster; a number without a unit is "
                         f"read as seconds ({read})")


def failure_goodput(checkpoint_s: float, *, restart_s: float, mtbf_s: float,
                    interval_s: float | None = None) -> tuple[float, float]:
    """(τ, goodput): at the given interval, else at Daly's best one; Daly's exact model."""
    tau = interval_s if interval_s is not None else rel.daly_interval_s(checkpoint_s, mtbf_s=mtbf_s)
    return tau, rel.goodput_at_interval(tau, checkpoint_s=checkpoint_s, restart_s=restart_s, mtbf_s=mtbf_s)


def warn_frequent_failures(r: Report, *, tau: float, checkpoint_s: float, restart_s: float, mtbf_s: float,
                           goodput: float) -> None:
    """Warn when an interruption comes, on average, before one interval, its write and a restart."""
    cycle = tau + checkpoint_s + restart_s
    if mtbf_s < cycle:
        r.warn("frequent-failures",
               f"an interruption comes every {_human(mtbf_s)} on average, sooner than one checkpoint interval, "
               f"its write and a restart take ({_human(cycle)}): failures arrive faster than the job can make "
               f"progress between them, and goodput is {goodput:.1%}; checkpoint and restart faster, or run "
               "fewer GPUs")


def first_order_note(r: Report, *, checkpoint_s: float, restart_s: float, mtbf_s: float, goodput: float) -> None:
    """Say what Young's first-order model gives when it differs from the exact figure."""
    tau_y = rel.young_daly_interval_s(checkpoint_s, mtbf_s=mtbf_s)
    g1 = rel.goodput_first_order(tau_y, checkpoint_s=checkpoint_s, restart_s=restart_s, mtbf_s=mtbf_s)
    if abs(g1 - goodput) >= FIRST_ORDER_SHOWN:
        r.note(f"Young's first-order 1 − (δ/τ + (τ/2 + R)/M) gives {g1:.1%} here (at τ = sqrt(2δM)); it holds only "
               f"while τ + δ + R is small beside M (here {(tau_y + checkpoint_s + restart_s) / mtbf_s:.0%} of it), "
               "and this goodput uses Daly's exact expression instead")


def _human(seconds: float) -> str:
    from napkin.units import format as fmt

    return fmt(seconds, "seconds")


def _exact(x: float) -> str:
    """A number as text that parses back to exactly the same float: 50000, 0.5, 1.8e+20."""
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(float(x))


def _flag_time(seconds: float) -> str:
    """A duration as a flag value without spaces that parses back exactly: 54d, 50000h, 10min, 50000s."""
    for unit, size in (("d", DAY), ("h", HOUR), ("min", MINUTE)):
        if seconds >= size and seconds % size == 0:
            return f"{_exact(seconds / size)}{unit}"
    return f"{_exact(seconds)}s"


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
               mtbf_per_gpu=(per_gpu, "seconds"), gpus=req.gpus)
    r.step("interruptions_per_day", "1 day / mtbf", value=DAY / m, unit="number")
    r.step("young_daly_interval_s", "sqrt(2 · δ · M)  (Young 1974, first order)",
           value=rel.young_daly_interval_s(delta, mtbf_s=m), unit="seconds", δ=(delta, "seconds"),
           M=(m, "seconds"))
    tau = r.step("optimal_interval_s", "sqrt(2δM) · [1 + ⅓·sqrt(δ/2M) + (δ/2M)/9] − δ  (Daly 2006)",
                 value=rel.daly_interval_s(delta, mtbf_s=m), unit="seconds", δ=(delta, "seconds"), M=(m, "seconds"))
    g_opt = r.step("goodput", "τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1)), at τ = optimal_interval  (Daly 2006)",
                   value=rel.goodput_at_interval(tau, checkpoint_s=delta, restart_s=restart, mtbf_s=m),
                   unit="fraction", τ=(tau, "seconds"), δ=(delta, "seconds"), R=(restart, "seconds"),
                   M=(m, "seconds"))
    r.set("lost_fraction", rel.lost_fractions(tau, checkpoint_s=delta, restart_s=restart, mtbf_s=m), "fraction")
    if req.checkpoint_interval is not None:
        r.set("checkpoint_interval_s", req.checkpoint_interval, "seconds")
        g_user = r.step("goodput_at_interval", "τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1)), at your τ",
                        value=rel.goodput_at_interval(req.checkpoint_interval, checkpoint_s=delta,
                                                      restart_s=restart, mtbf_s=m),
                        unit="fraction", τ=(req.checkpoint_interval, "seconds"))
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
