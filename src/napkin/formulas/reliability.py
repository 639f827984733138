"""Failures, checkpoints and goodput: the fraction of paid time that makes progress.

The model is first order (Young 1974, Daly 2006): interruptions arrive at random at a
cluster rate 1/M; every τ seconds of work the job spends δ seconds writing a
checkpoint; after an interruption it loses, on average, half an interval of work
(τ/2) plus the restart time R. Per second of wall clock the lost fraction is

    lost ≈ δ/τ + (τ/2 + R)/M          goodput = max(0, 1 − lost)

valid while τ and R are small beside M. Every function takes floats or numpy arrays
(no ``if`` on values) and imports numpy only when given an array.
"""

from __future__ import annotations

from typing import Any


def _clip_at_zero(x: Any) -> Any:
    """max(0, x) for a float, np.maximum(0, x) for an array (numpy only when needed)."""
    if isinstance(x, (int, float)):
        return max(0.0, float(x))
    import numpy as np

    return np.maximum(0.0, x)


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
    """τ* = sqrt(2 · δ · M)

    The checkpoint interval that minimises δ/τ + τ/(2M): writing more often wastes write
    time, less often wastes recomputed work.
    Trap: using the per-GPU MTBF for M; the job's M is the cluster's, n_gpus times shorter,
    and the interval shrinks with its square root.
    Source: J. W. Young, "A first order approximation to the optimum checkpoint interval",
    CACM 17(9), 1974; J. T. Daly, FGCS 22(3), 2006.
    """
    return (2.0 * checkpoint_s * mtbf_s) ** 0.5


def lost_fraction(interval_s: Any, *, checkpoint_s: Any, restart_s: Any, mtbf_s: Any) -> Any:
    """lost ≈ δ/τ + (τ/2 + R)/M, unclipped

    δ/τ is time spent writing checkpoints; (τ/2 + R)/M is the work redone since the last
    checkpoint plus the restart, once per interruption.
    Trap: counting only the restart (R/M) and forgetting the half interval recomputed.
    Source: Young 1974; Daly 2006 (first-order terms only).
    """
    return checkpoint_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s


def goodput_at_interval(interval_s: Any, *, checkpoint_s: Any, restart_s: Any, mtbf_s: Any) -> Any:
    """goodput = max(0, 1 − (δ/τ + (τ/2 + R)/M))

    First order in τ/M and R/M: good to a few per cent while they are under ~0.2;
    clipped at 0 where the job would never make progress.
    Trap: a goodput guessed at 90% on a cluster whose M is a few times τ + R, where the
    formula gives far less; and checkpoint time δ counted in τ (τ is work between writes).
    Source: Young 1974; Daly 2006; the lost-time terms of the Llama 3 paper, section 3.3.4.
    """
    return _clip_at_zero(1.0 - lost_fraction(interval_s, checkpoint_s=checkpoint_s,
                                             restart_s=restart_s, mtbf_s=mtbf_s))


def optimal_goodput(checkpoint_s: Any, *, restart_s: Any, mtbf_s: Any) -> Any:
    """goodput* = max(0, 1 − sqrt(2δ/M) − R/M), the goodput at τ* = sqrt(2δM)

    Trap: expecting a faster checkpoint to fix a slow restart: R/M does not depend on τ.
    Source: substituting Young's τ* into lost_fraction (Young 1974).
    """
    return _clip_at_zero(1.0 - (2.0 * checkpoint_s / mtbf_s) ** 0.5 - restart_s / mtbf_s)
