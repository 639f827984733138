"""Rate of the serving planner: configurations per second through the public API and its numpy core.

Run: .venv/bin/python benchmarks/plan_bench.py [--repeat 7] [--batches 256]
The big grid is Llama 3.1 70B at 10 requests/s on every catalog GPU with a bf16 path, at bf16, fp8
and int4, up to 64 GPUs per replica, batches 1..256 (hardware x GPUs x TP x batch). It prints:
- public API: `napkin.plan_serve(...)` end to end (request parsing, the grid, the ranking, the
  Pareto front and the report: what a notebook gets back);
- core: the grid alone (`plan.serve.evaluate_compact`: every cell's TTFT, TPOT, tokens/s, status,
  and each chunk's cheapest cells and front);
- the public API's share of the core's rate (the floor the API can reach), and the same for the
  README's grid and a local thread pool split by GPU type.
Each figure is the best of --repeat runs (imports and catalogs warmed first), as wall time and as
this process's CPU time (on a machine shared with other jobs, CPU time is the steadier of the two).
"""

from __future__ import annotations

import argparse
import time


def best(fn, repeat: int) -> tuple[float, float, object]:
    """(best wall seconds, best CPU seconds, last result) over ``repeat`` runs after one warm-up."""
    out = fn()
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu), out


def line(name: str, n: int, wall: float, cpu: float, note: str = "") -> None:
    print(f"{name:<22} {n:>10,} configurations  {n / wall / 1e6:7.2f} M/s wall ({wall * 1e3:7.1f} ms)  "
          f"{n / cpu / 1e6:7.2f} M/s CPU ({cpu * 1e3:7.1f} ms){note}")


def main() -> None:
    from floors import temporary_environment

    tmp = temporary_environment()  # noqa: F841 - kept until main returns
    import msgspec

    import napkin
    from napkin import catalog
    from napkin.derivation import Report
    from napkin.plan.serve import PlanServeRequest, evaluate, evaluate_compact
    from napkin.plan.serve.request import objectives
    from napkin.request import parse_request

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--batches", type=int, default=256, help="batch values 1..N in the big grid")
    args = ap.parse_args()
    gpus = [k for k, g in catalog.gpus().items() if g.supports("bf16")]
    grids = {
        "README grid": {"model": "llama-3.1-70b", "rate": "10/s", "gpu": ["h100-sxm", "h200", "b200", "mi300x"],
                        "precision": ["bf16", "fp8"]},
        "big grid": {"model": "llama-3.1-70b", "rate": "10/s", "gpu": gpus, "precision": ["bf16", "fp8", "int4"],
                     "max_gpus": 64, "batch": list(range(1, args.batches + 1))},
    }
    for name, raw in grids.items():
        req = parse_request(PlanServeRequest, raw)
        obj = objectives(req)
        wall, cpu, g = best(lambda: evaluate_compact(req, objectives=obj, keep=req.top), args.repeat)
        n = g.axes.configurations
        line(f"{name}: core", n, wall, cpu)
        api_wall, api_cpu, _ = best(lambda: napkin.plan_serve(**raw), args.repeat)
        line(f"{name}: public API", n, api_wall, api_cpu,
             f"   {cpu / api_cpu:.0%} of the core's rate (CPU)")
    # the big grid split by GPU type over a local thread pool (the executor interface dask also serves)
    pooled = msgspec.structs.replace(parse_request(PlanServeRequest, grids["big grid"]), executor="local", workers=2)
    obj = objectives(pooled)
    wall, cpu, g = best(lambda: evaluate(pooled, Report("bench"), objectives=obj, keep=pooled.top), args.repeat)
    line("local pool (2 threads)", g.axes.configurations, wall, cpu, "   one chunk per GPU type")


if __name__ == "__main__":
    main()
