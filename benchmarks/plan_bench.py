"""Rate of the serving planner's vectorised grid: configurations evaluated per second.

Run: .venv/bin/python benchmarks/plan_bench.py [--repeat 5] [--batches 256]
Evaluates `napkin plan serve`'s grid (hardware x GPUs per replica x TP degree x batch) for
Llama 3.1 70B on every catalog GPU at bf16, fp8 and int4, up to 64 GPUs per replica, and
prints the median time and the rate. Imports and catalog loading are excluded (warmed up
first); the rate is the numpy evaluation itself. A small grid (the README's) is timed too.
"""

from __future__ import annotations

import argparse
import statistics
import time


def timed(req, repeat: int) -> tuple[float, int]:
    from napkin.plan.serve import evaluate_grid

    evaluate_grid(req)  # warm: imports, catalog
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        g = evaluate_grid(req)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), g["configurations"]


def _temporary_environment() -> object:
    """Catalog copies and bytecode in a temporary folder (benchmarks/floors.py), removed when it is dropped."""
    import tempfile

    from floors import environment

    tmp = tempfile.TemporaryDirectory()
    environment(tmp.name)
    return tmp


def main() -> None:
    tmp = _temporary_environment()  # noqa: F841 - kept until main returns
    from napkin import catalog
    from napkin.plan.serve import PlanServeRequest
    from napkin.request import parse_request

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batches", type=int, default=256, help="batch values 1..N in the big grid")
    args = ap.parse_args()
    gpus = [k for k, g in catalog.gpus().items() if g.supports("bf16")]
    big = parse_request(PlanServeRequest, {
        "model": "llama-3.1-70b", "rate": "10/s", "gpu": gpus, "precision": "bf16,fp8,int4", "max_gpus": 64,
        "batch": [str(b) for b in range(1, args.batches + 1)]})
    small = parse_request(PlanServeRequest, {
        "model": "llama-3.1-70b", "rate": "10/s", "gpu": "h100-sxm,h200,b200,mi300x"})
    for name, req in (("README grid", small), ("big grid", big)):
        t, n = timed(req, args.repeat)
        print(f"{name:<12} {n:>10,} configurations in {t * 1e3:8.2f} ms   {n / t:>14,.0f} configurations/s")
    # the same big grid split by GPU type over a local thread pool (the executor interface dask also serves)
    import msgspec

    from napkin.derivation import Report
    from napkin.plan.serve import evaluate

    pooled = msgspec.structs.replace(big, executor="local", workers=2)
    evaluate(pooled, Report("warm"))
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        g = evaluate(pooled, Report("bench"))
        times.append(time.perf_counter() - t0)
    t, n = statistics.median(times), g["configurations"]
    print(f"{'local pool':<12} {n:>10,} configurations in {t * 1e3:8.2f} ms   {n / t:>14,.0f} configurations/s"
          "   (2 threads, one chunk per GPU type)")


if __name__ == "__main__":
    main()
