"""Failures, checkpoints and goodput: the fraction of paid time that makes progress.

Interruptions arrive at random (a Poisson process) at a cluster rate 1/M. Every τ
seconds of work the job spends δ seconds writing a checkpoint; an interruption anywhere
in the τ + δ of a segment throws that segment away, and restarting takes R (during which
another interruption can strike). Daly (2006) gives the expected wall-clock time of one
segment exactly for this model:

    E[segment] = M · e^(R/M) · (e^((τ+δ)/M) − 1)          goodput = τ / E[segment]

which lies in (0, 1] for every M, however short. Expanding it to first order in τ/M,
δ/M and R/M gives Young's (1974) model, goodput ≈ 1 − (δ/τ + (τ/2 + R)/M): close to it
while τ + δ + R is small beside M (within a point at Llama 3's rate, one failure every
3.1 h), but it falls through zero when failures come every few intervals, where the
exact expression stays positive.

Every function takes floats or numpy arrays (no ``if`` on values) and imports numpy
only when given an array.
"""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas._array import where as _where

# e^709 is the largest power of e a float holds; beyond it the job makes no measurable
# progress, and exponents are clipped there so that goodput comes out ~0, not an error.
_EXP_MAX = 700.0


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (int, float))


def _exp(x: Any) -> Any:
    if _is_scalar(x):
        return math.exp(min(float(x), _EXP_MAX))
    import numpy as np

    return np.exp(np.minimum(x, _EXP_MAX))


def _expm1(x: Any) -> Any:
    if _is_scalar(x):
        return math.expm1(min(float(x), _EXP_MAX))
    import numpy as np

    return np.expm1(np.minimum(x, _EXP_MAX))


def cluster_mtbf_s(mtbf_per_gpu_s: Any, *, n_gpus: Any) -> Any:
    """M_cluster = M_gpu / n_gpus

    Independent failures add their rates, so the job is interrupted n times as often as
    one GPU fails; a synchronous job stops when any one of its GPUs does.
    Trap: quoting a component's MTBF (50,000 h per GPU) as the job's; on 16,384 GPUs
    that is an interruption about every 3 hours.
    Source: Llama 3 paper (Dubey et al. 2024), section 3.3.4: 419 unexpected interruptions
    in 54 days on 16,384 H100s, one every ~3.1 hours (≈ 50,700 GPU-hours per GPU).
    """
    return mtbf_per_gpu_s / n_gpus


def mtbf_from_count_s(period_s: Any, *, n_interruptions: Any) -> Any:
    """M = period / interruptions

    Trap: counting only the failures that needed a human; every interruption costs a
    restart and the work since the last checkpoint, automated or not.
    Source: Llama 3 paper, section 3.3.4: 54 days / 419 interruptions = 3.09 hours.
    """
    return period_s / n_interruptions


def mtbf_per_gpu_s(cluster_mtbf_s: Any, *, n_gpus: Any) -> Any:
    """M_gpu = M_cluster · n_gpus

    The per-GPU figure a cluster rate implies, so it can be scaled to another cluster size.
    Trap: scaling the cluster rate itself; a bigger cluster fails more often, not as often.
    Source: the inverse of cluster_mtbf_s; Llama 3: 3.09 h × 16,384 ≈ 50,700 h.
    """
    return cluster_mtbf_s * n_gpus


def young_daly_interval_s(checkpoint_s: Any, *, mtbf_s: Any) -> Any:
    """τ_Young = sqrt(2 · δ · M)

    The interval that minimises the first-order loss δ/τ + τ/(2M): writing more often
    wastes write time, less often wastes recomputed work.
    Trap: using the per-GPU MTBF for M; the job's M is the cluster's, n_gpus times shorter,
    and the interval shrinks with its square root.
    Source: J. W. Young, "A first order approximation to the optimum checkpoint interval",
    CACM 17(9), 1974.
    """
    return (2.0 * checkpoint_s * mtbf_s) ** 0.5


def daly_interval_s(checkpoint_s: Any, *, mtbf_s: Any) -> Any:
    """τ* = sqrt(2δM) · [1 + ⅓·sqrt(δ/2M) + (δ/2M)/9] − δ   for δ < 2M, else τ* = M

    Daly's higher-order estimate of the interval that minimises the exact expected run
    time (E[segment] / τ, see goodput_at_interval); it tends to Young's sqrt(2δM) as δ/M → 0
    and does not depend on R.
    Trap: Young's interval when checkpoints are slow beside M: it over-counts by about δ.
    Source: J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
    restart dumps", Future Generation Computer Systems 22(3):303-312, 2006, eq. 20; his
    figures 3-5 (R = 10 min, δ = 5 min): τ* = 117 min at M = 24 h, 57 min at 6 h, 9.1 min
    at 15 min.
    """
    x = checkpoint_s / (2.0 * mtbf_s)
    higher = (2.0 * checkpoint_s * mtbf_s) ** 0.5 * (1.0 + x ** 0.5 / 3.0 + x / 9.0) - checkpoint_s
    return _where(checkpoint_s < 2.0 * mtbf_s, higher, mtbf_s)


def goodput_at_interval(interval_s: Any, *, checkpoint_s: Any, restart_s: Any, mtbf_s: Any) -> Any:
    """goodput = τ / E[segment] = τ · e^(−R/M) / (M · (e^((τ+δ)/M) − 1))

    The fraction of wall-clock time that advances the run, checkpointing every τ of work.
    E[segment] = M · e^(R/M) · (e^((τ+δ)/M) − 1) is the expected wall-clock time to complete τ
    of work and its δ checkpoint write, when an interruption (rate 1/M) anywhere in the τ + δ
    loses the segment and each restart takes R and can itself be interrupted.
    Always in (0, 1]: however often failures come, some segments finish.
    Trap: the first-order 1 − (δ/τ + (τ/2 + R)/M) when failures come every few τ + R:
    it drops through zero where the job still progresses (e.g. δ = 60 s, R = 10 min,
    M = 11.6 min: first order −28%, exact 27%).
    Source: J. T. Daly 2006 (FGCS 22(3)), eq. 9; its first-order limit is Young 1974.
    """
    return interval_s * _exp(-restart_s / mtbf_s) / (mtbf_s * _expm1((interval_s + checkpoint_s) / mtbf_s))


def lost_fractions(interval_s: Any, *, checkpoint_s: Any, restart_s: Any, mtbf_s: Any) -> dict[str, Any]:
    """Where the rest of the wall clock goes, as fractions that sum to 1 − goodput:

    checkpoint_writes = δ / E;  rework = (M·(e^(L/M) − 1) − L) / E;
    restarts = M·(e^(L/M) − 1)·(e^(R/M) − 1) / E;   L = τ + δ, E = E[segment]

    e^(L/M) − 1 interruptions strike a segment on average, each after M − L/(e^(L/M) − 1)
    on average (the work and partial writes redone), and each is followed by a restart
    phase of M·(e^(R/M) − 1) (R, plus restarts cut short). With E = M·e^(R/M)·(e^(L/M) − 1)
    they are computed as e^(−R/M)·δ/(M·(e^(L/M) − 1)), e^(−R/M)·(1 − L/(M·(e^(L/M) − 1)))
    and 1 − e^(−R/M), which stay finite where e^(L/M) and e^(R/M) overflow a float.
    Trap: counting the restart (R/M) and not the half interval recomputed; and dividing the
    expanded products, which gives inf/inf (NaN) once failures come far faster than τ + δ.
    Source: Daly 2006, eq. 9 split by phase; to first order δ/τ, τ/(2M), R/M (Young 1974).
    """
    seg = interval_s + checkpoint_s
    survive = _exp(-restart_s / mtbf_s)  # e^(−R/M) in (0, 1]: never overflows
    work = mtbf_s * _expm1(seg / mtbf_s)  # M·(e^(L/M) − 1) >= L
    return {"checkpoint_writes": survive * checkpoint_s / work,
            "rework": survive * (1.0 - seg / work),
            "restarts": -_expm1(-restart_s / mtbf_s)}


def optimal_goodput(checkpoint_s: Any, *, restart_s: Any, mtbf_s: Any) -> Any:
    """goodput* = goodput_at_interval(τ*), τ* = daly_interval_s(δ, M)

    Trap: expecting a faster checkpoint to fix a slow restart: R enters as e^(−R/M)
    whatever τ is.
    Source: Daly 2006, eqs. 9 and 20.
    """
    tau = daly_interval_s(checkpoint_s, mtbf_s=mtbf_s)
    return goodput_at_interval(tau, checkpoint_s=checkpoint_s, restart_s=restart_s, mtbf_s=mtbf_s)


def lost_fraction(interval_s: Any, *, checkpoint_s: Any, restart_s: Any, mtbf_s: Any) -> Any:
    """lost ≈ δ/τ + (τ/2 + R)/M   (first order, unclipped)

    δ/τ is time spent writing checkpoints; (τ/2 + R)/M is the work redone since the last
    checkpoint plus the restart, once per interruption. Young's interval minimises it.
    Trap: trusting it when τ + δ + R is not small beside M: it passes 1 (goodput below 0)
    where goodput_at_interval, the exact model it approximates, stays positive.
    Source: Young 1974; the first-order expansion of Daly 2006, eq. 9.
    """
    return checkpoint_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s


def goodput_first_order(interval_s: Any, *, checkpoint_s: Any, restart_s: Any, mtbf_s: Any) -> Any:
    """goodput ≈ 1 − (δ/τ + (τ/2 + R)/M)   (first order, unclipped: may be negative)

    Shown beside the exact figure so a reader who knows Young's formula sees where it
    stops holding.
    Trap: clipping it at 0 and reporting "no progress" when the exact model gives a
    positive goodput.
    Source: Young 1974.
    """
    return 1.0 - lost_fraction(interval_s, checkpoint_s=checkpoint_s, restart_s=restart_s, mtbf_s=mtbf_s)
