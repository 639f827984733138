"""The failure model `napkin goodput` and `napkin train --goodput auto` share: one interruption rate, one derivation.

An interruption rate is given one of three ways (per GPU, per cluster, or a count over a
period); :func:`per_gpu_mtbf` turns it into the MTBF of one GPU with its working, and
:func:`failure_goodput` gives the checkpoint interval and the goodput at it (Daly 2006,
through :mod:`napkin.formulas.reliability`). The inputs are spelled the same in both
commands (:data:`DOCS`, :data:`ALIASES`).

Shared layer: the goodput and train calculators import this; it imports no calculator.
"""

from __future__ import annotations

from typing import Any

from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import reliability as rel
from napkin.units import DAY, HOUR

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
                   period=(req.period, "seconds"), interruptions=req.interruptions, cites=rel.mtbf_from_count_s)
    per_gpu = rel.mtbf_per_gpu_s(m_obs, n_gpus=observed)
    if r is not None:
        r.step("mtbf_per_gpu_s", "observed_mtbf · observed_gpus", value=per_gpu, unit="seconds",
               observed_mtbf=(m_obs, "seconds"), observed_gpus=int(observed), note=f"{per_gpu / HOUR:,.0f} h",
               cites=rel.mtbf_per_gpu_s)
        warn_short_mtbf(r, req, per_gpu)
    return per_gpu


def warn_short_mtbf(r: Report, req: Any, per_gpu: float) -> None:
    """A per-GPU MTBF under a day is hundreds of times below what large clusters see; most often it is
    hours (or days) typed without a unit, which napkin reads as seconds: say so."""
    if per_gpu >= SHORT_MTBF_PER_GPU:
        return
    meant = {"mtbf_per_gpu": "h", "cluster_mtbf": "h", "period": "d"}
    read = "; ".join(f"--{f.replace('_', '-')} is {_human(getattr(req, f))}: write "
                     f"--{f.replace('_', '-')} {exact_number(getattr(req, f))}{unit} if "
                     f"{'hours' if unit == 'h' else 'days'} were meant"
                     for f, unit in meant.items() if getattr(req, f) is not None)
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


def _human(seconds: float) -> str:
    from napkin.units import format as fmt

    return fmt(seconds, "seconds")


def exact_number(x: float) -> str:
    """A number as text that parses back to exactly the same float: 50000, 0.5, 1.8e+20."""
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(float(x))
