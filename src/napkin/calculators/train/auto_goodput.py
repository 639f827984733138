"""``--goodput auto``: goodput from the failure model of `napkin goodput`, at the cluster's own size.

A synchronous job stops whenever any GPU fails, so the cluster's MTBF is the per-GPU MTBF over
the GPU count and goodput falls as the cluster grows (Daly 2006, through the shared failure
model, :mod:`napkin.calculators.failures`). With --deadline the cluster size and its goodput
depend on each other: the smallest self-consistent cluster is searched for, and a deadline no
size meets says the fastest wall time and the size that gives it.
"""

from __future__ import annotations

from typing import Any

from napkin.calculators.train.cluster import at_least
from napkin.calculators.failures import failure_goodput, failure_model_given, per_gpu_mtbf, warn_frequent_failures
from napkin.calculators.resolve import assume_default
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import reliability as rel, training as T
from napkin.limits import BY_KIND
from napkin.units import format as fmt

FRACTION = BY_KIND["fraction"]  # the range of a goodput napkin takes as given


def resolve_goodput(r: Report, req: Any, goodput_in: float | str | None, *, d: float, peak: float, mfu: float,
                    fpt: float) -> float:
    """Goodput: given, assumed, or from failure rates (which needs the cluster size), recorded in the report."""
    if goodput_in == "auto":
        if req.gpus is None and req.deadline is None:
            raise InputError("goodput", "auto", "needs the cluster size", "give --gpus K or --deadline 3w")
        tps_at_1 = T.tokens_per_gpu_s(peak, mfu=mfu, goodput=1.0, flops_per_token=fpt)
        if req.gpus is not None:  # --max-gpus limits what a --deadline may ask for, not a cluster given
            n_gpus = float(req.gpus)
        else:  # the cluster and its failure rate depend on each other
            n_gpus = float(_auto_cluster_for_deadline(req, d, tps_at_1))
        goodput = auto_goodput(r, req, n_gpus)
        if goodput < FRACTION.low:  # no measurable progress: below the least goodput napkin takes as given, the
            # time and cost overflow (τ a year against a 3-h MTBF: 2.7e-301, and GPU-hours of inf)
            shown = "0" if goodput <= 0 else f"{goodput:.3g}, below {FRACTION.low_text}"
            raise InputError("goodput", "auto", f"is {shown}: on {int(n_gpus):,} GPUs failures arrive faster than "
                             "the job can make progress between them", "checkpoint and restart faster, or use fewer "
                             "GPUs")
        if req.gpus is not None:
            _warn_past_peak(r, req, d, tps_at_1)
        r.assume("goodput", goodput, "from failure rates (Daly 2006, as `napkin goodput`)", unit="fraction",
                 basis="planned")  # derived by another napkin model, not given
    elif goodput_in is None:
        goodput = assume_default(r, "goodput", "training_goodput")
    else:
        goodput = goodput_in
        r.assume("goodput", goodput, "as given", unit="fraction", basis="given")
    if goodput_in != "auto" and failure_model_given(req):
        r.warn("failure-model-unused", "the interruption rate, checkpoint and restart times are used only with "
                                       "--goodput auto; this plan's goodput is " + ("assumed" if goodput_in is None
                                                                                     else "given"))
    return goodput


def auto_goodput(r: Report | None, req: Any, n_gpus: float) -> float:
    """Goodput from failure rates for a cluster of n_gpus: `napkin goodput`'s derivation (Daly 2006)."""
    missing = [o for o, v in (("--checkpoint-time", req.checkpoint_time), ("--restart-time", req.restart_time))
               if v is None]
    rates = (req.mtbf_per_gpu, req.cluster_mtbf, req.interruptions)
    if all(v is None for v in rates):
        missing.insert(0, "an interruption rate (--mtbf-per-gpu, --cluster-mtbf or --interruptions/--period)")
    if missing:
        raise InputError("goodput", "auto", "needs the failure model", "give " + ", ".join(missing))
    per_gpu = per_gpu_mtbf(r, req, n_gpus=req.gpus)
    m_cluster = rel.cluster_mtbf_s(per_gpu, n_gpus=n_gpus)
    tau, g = failure_goodput(req.checkpoint_time, restart_s=req.restart_time, mtbf_s=m_cluster,
                             interval_s=req.checkpoint_interval)
    if r is not None:
        r.step("cluster_mtbf_s", "mtbf_per_gpu / n_gpus", value=m_cluster, unit="seconds",
               mtbf_per_gpu=(per_gpu, "seconds"), n_gpus=int(n_gpus), cites=rel.cluster_mtbf_s)
        if req.checkpoint_interval is not None:
            r.set("checkpoint_interval_s", tau, "seconds")
        else:
            r.step("checkpoint_interval_s", "sqrt(2δM) · [1 + ⅓·sqrt(δ/2M) + (δ/2M)/9] − δ  (Daly 2006)",
                   value=tau, unit="seconds", δ=(req.checkpoint_time, "seconds"), M=(m_cluster, "seconds"),
                   cites=rel.daly_interval_s)
        r.step("goodput", "τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1))  (Daly 2006)", value=g, unit="fraction",
               τ=(tau, "seconds"), δ=(req.checkpoint_time, "seconds"), R=(req.restart_time, "seconds"),
               M=(m_cluster, "seconds"), result=False, cites=rel.goodput_at_interval)
        warn_frequent_failures(r, tau=tau, checkpoint_s=req.checkpoint_time, restart_s=req.restart_time,
                                  mtbf_s=m_cluster, goodput=g)
    return float(g)



# ------------------------------------------------------------------------------ the cluster size
# A synchronous job stops whenever any GPU fails, so the cluster's MTBF is the per-GPU MTBF over
# the GPU count, and goodput falls as the cluster grows. Throughput, GPUs × goodput, therefore
# rises, peaks and falls: past the peak each added GPU costs more in lost time than it adds.
_DOUBLINGS = 62  # the search for the peak stops at 2^62 GPUs


def _throughput(req: Any, n: float) -> float:
    """GPUs × goodput on n GPUs: the cluster's progress in GPU-equivalents."""
    return n * auto_goodput(None, req, n)


def peak_cluster(req: Any) -> int:
    """The cluster size at which GPUs × goodput is largest (the shortest wall time at any size).

    n·g(n) with g from Daly's model rises then falls (at a fixed interval its logarithm in 1/M
    has a strictly decreasing slope), so: double n while it still rises, then a ternary search
    on whole GPUs in the bracket.
    """
    n = 1
    for _ in range(_DOUBLINGS):
        if _throughput(req, 2 * n) <= _throughput(req, n):
            break
        n *= 2
    lo, hi = max(1, n // 2), 2 * n
    while hi - lo > 2:
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        if _throughput(req, m1) < _throughput(req, m2):
            lo = m1 + 1
        else:
            hi = m2
    return max(range(lo, hi + 1), key=lambda k: _throughput(req, k))


def _auto_cluster_for_deadline(req: Any, d: float, tps_at_1: float) -> int:
    """The smallest cluster that meets --deadline at its own goodput, or an infeasible error.

    Below the throughput peak n·g(n) grows with n, so "n GPUs at goodput g(n) meet the
    deadline" is false and then true: a bisection on whole GPUs finds the first n where it
    holds, which is self-consistent (the GPUs needed at g(n) are n). Past the peak no size does.
    """
    def need(n: float) -> float:
        gp = auto_goodput(None, req, n)
        return (T.gpus_for_deadline(d, tokens_per_gpu_s=tps_at_1 * gp, deadline_s=req.deadline) if gp > 0
                else float("inf"))

    top = peak_cluster(req)
    if need(top) > top:
        _unreachable(req, d, tps_at_1, top)
    lo, hi = 1, top  # need(hi) <= hi
    while lo < hi:
        mid = (lo + hi) // 2
        if need(mid) <= mid:
            hi = mid
        else:
            lo = mid + 1
    if hi > req.max_gpus:
        at_cap = _wall_at(req, d, tps_at_1, req.max_gpus)
        raise InputError("deadline", fmt(req.deadline, "seconds"),
                         f"is infeasible: it needs {hi:,} GPUs (at their goodput "
                         f"{auto_goodput(None, req, hi):.1%}), more than --max-gpus {req.max_gpus:,}",
                         f"allow {at_least(at_cap)} or more, or raise --max-gpus")
    return hi


def _wall_at(req: Any, d: float, tps_at_1: float, n: int) -> float:
    return T.wall_seconds(d, tokens_per_gpu_s=tps_at_1 * auto_goodput(None, req, n), n_gpus=n)


def _unreachable(req: Any, d: float, tps_at_1: float, top: int) -> None:
    """No cluster size meets the deadline: say the fastest wall time and the size that gives it."""
    fastest = _wall_at(req, d, tps_at_1, top)
    problem = (f"is infeasible: no cluster size meets it at these failure rates; GPUs × goodput peaks at "
               f"{top:,} GPUs (goodput {auto_goodput(None, req, top):.1%}), which take {fmt(fastest, 'seconds')}; "
               "more GPUs fail more often and finish later")
    if top <= req.max_gpus:
        fix = f"allow {at_least(fastest)} or more, or checkpoint and restart faster"
    else:
        fix = (f"allow {at_least(_wall_at(req, d, tps_at_1, req.max_gpus))} or more, the fastest within --max-gpus "
               f"{req.max_gpus:,}; or raise --max-gpus to {top:,} and allow {at_least(fastest)}; or checkpoint "
               "and restart faster")
    raise InputError("deadline", fmt(req.deadline, "seconds"), problem, fix)


def _warn_past_peak(r: Report, req: Any, d: float, tps_at_1: float) -> None:
    """A --gpus past the throughput peak finishes later than a smaller cluster: say so."""
    top = peak_cluster(req)
    if req.gpus > top:
        r.warn("past-throughput-peak",
               f"{req.gpus:,} GPUs are past the size where GPUs × goodput peaks ({top:,} GPUs, goodput "
               f"{auto_goodput(None, req, top):.1%}, {fmt(_wall_at(req, d, tps_at_1, top), 'seconds')}): with "
               "failures this frequent, fewer GPUs finish sooner")

