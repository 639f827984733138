"""Fit the operator model's fitted parameters to published serving runs, leave-sources-out.

The parameters are the fixed costs of a step per layer: in a step with prompt tokens (kernels
launched one by one) and in a decode-only step (replayed as a CUDA graph); and the fraction of a
dense GEMM's efficiency the routed experts' grouped GEMMs reach (mixture-of-experts models only). Everything else in
the model is a published measurement; a fixed cost per step (scheduling, sampling) is kept at
its stored value (0: fitting it on one fold moved it between 0 and 2 ms, and the other fold's
errors doubled). A coordinate search on a grid
minimises the mean absolute log error (robust: a few runs the model cannot describe do not pull
the rest), each source weighted alike, and within a source each kind of figure it publishes
(throughput, TPOT, TTFT, request latency) alike; each fold's points are predicted with the
parameters fitted without their sources.

Why sources first: a source is the unit the folds hold out, and its points share one machine,
engine build and method, so they are not independent draws. Weighting each kind of figure alike
across all sources (as before) gave a kind with one point in a fold a quarter of the objective:
one batch-1 latency run set the decode step's fixed cost that predicted every point of the other
fold. Why kinds within a source: a source's hundreds of throughput rows would otherwise drown its
latencies, the figures that pin a decode step's fixed cost.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import msgspec

from napkin.catalog import efficiency as eff
from napkin.derivation import Report

GRID = {
    "per_layer_s": (0.0, 20e-6, 40e-6, 60e-6, 80e-6, 100e-6, 120e-6, 140e-6, 160e-6, 180e-6, 200e-6, 250e-6),
    "per_layer_decode_s": (0.0, 10e-6, 20e-6, 30e-6, 40e-6, 50e-6, 60e-6, 70e-6, 80e-6, 90e-6, 100e-6, 110e-6,
                           120e-6, 140e-6, 160e-6),
    # the published grouped-GEMM kernels span it: 26% of the FP8 peak for Qwen3-30B-A3B's small experts (vLLM pull
    # request #53710) against 74% for a large dense GEMM, a ratio of 0.35; near 1 for DeepGEMM's large experts
    "expert_gemm_efficiency": (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3),
    # PCIe rings at decode sizes: nccl-tests on four PCIe Gen4 RTX 4090s, 10.3, 12.3 and 12.6 GB/s bus bandwidth at
    # 1, 4 and 16 MB (0.32-0.39 of 32 GB/s; tinygrad/open-gpu-kernel-modules pull request #22, P2P state not
    # stated); eight L40S copy at 20.75 GB/s (0.65) at large messages (flashinfer pull request #4870)
    "pcie_allreduce_bus": (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7),
}
ROUNDS = 2


def source_mean(errors: dict[str, dict[str, list[float]]]) -> float:
    """loss = (1/S) Σ_sources (1/K_s) Σ_kinds (1/n_sk) Σ_points |log(predicted / measured)|

    Each source counts the same however many points it publishes; within a source each kind of figure it
    publishes (throughput, TPOT, TTFT, request latency) counts the same, and its points alike.
    Trap: weighting by point, or by kind across sources: one source with 500 throughput rows, or one kind with
    a single point in a fold, then sets a parameter for everything else; and a source's many throughput rows
    drown its latencies, which are what pin a decode step's fixed cost.
    Source: the leave-sources-out design (each fold holds out whole sources).
    """
    per_source = []
    for kinds in errors.values():
        kept = [e for e in kinds.values() if e]
        if kept:
            per_source.append(sum(sum(e) / len(e) for e in kept) / len(kept))
    return sum(per_source) / max(len(per_source), 1)


def _loss(points: list[dict], params: eff.Fitted) -> float:
    """source_mean of the points' |log error| under ``params``."""
    from napkin.validation import serving as sv

    errors: dict[str, dict[str, list[float]]] = {}
    with eff.fitted_as(params):
        for p in points:
            out = sv.predict(p)
            if out.value is None or out.value <= 0:
                continue
            kinds = errors.setdefault(p["source"], {})
            kinds.setdefault(sv.GROUPS[p["metric"]], []).append(abs(math.log(out.value / p["value"])))
    return source_mean(errors)


def fit(points: list[dict], start: eff.Fitted) -> eff.Fitted:
    """Coordinate search over GRID from ``start``: each parameter in turn to its best grid value."""
    best, best_loss = start, _loss(points, start)
    for _ in range(ROUNDS):
        for name, values in GRID.items():
            for v in values:
                trial = msgspec.structs.replace(best, **{name: v})
                loss = _loss(points, trial)
                if loss < best_loss - 1e-12:
                    best, best_loss = trial, loss
    return best


def fit_folds(r: Report) -> dict[str, eff.Fitted]:
    """Fit on each fold's complement and on everything; record the TOML to store; return the fold parameters."""
    from napkin.validation import serving as sv
    from napkin.validation.runner import FOLDS, fold_of

    pts = [p for p in sv.points() if not sv.why_not(p)]
    sources = sorted({p["source"] for p in sv.points()})
    start = msgspec.structs.replace(eff.fitted(), folds={})
    jobs = {fold: [p for p in pts if fold_of(p["source"], sources) != fold] for fold in FOLDS} | {"": pts}
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers > 1:  # the three fits are independent: one process each, as the cores allow
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            done = dict(zip(jobs, pool.map(fit, jobs.values(), [start] * len(jobs))))
    else:
        done = {k: fit(v, start) for k, v in jobs.items()}
    whole = done.pop("")
    out = done
    r.set("fitted_toml", toml(whole, out, sources))
    r.note("fitted: the [fitted] tables printed below belong in src/napkin/catalog/efficiency.toml")
    return out


def _lines(f: eff.Fitted) -> list[str]:
    return [f"{k} = {v!r}" for k, v in f.values().items()]


def toml(whole: eff.Fitted, folds: dict[str, eff.Fitted], sources: list[str]) -> str:
    from napkin.validation.runner import fold_of

    lines = ["[fitted]"] + _lines(whole)
    lines.append('method = "leave-sources-out: the sources sorted by name go alternately to folds a and b; each '
                 'fold is predicted with the parameters fitted on the other; mean absolute log error, each source '
                 'weighted alike, and each kind of figure alike within it"')
    for fold, f in folds.items():
        lines += ["", f"[fitted.folds.{fold}]"]
        lines.append("sources = [" + ", ".join(f'"{s}"' for s in sources if fold_of(s, sources) == fold) + "]")
        lines += _lines(f)
    return "\n".join(lines)
