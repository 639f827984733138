"""The grid in this process or split by GPU type over an executor, and the grid as per-cell arrays
of every figure (evaluate_grid: the (hardware, GPUs, TP, batch) layout, for notebooks and tests)."""

from __future__ import annotations

from typing import Any

import msgspec

from napkin import catalog
from napkin.derivation import Report

from . import grid as gr
from . import select
from .hardware import hardware_rows, prices
from .request import PlanServeRequest, objectives
from .rows import bounds, cells


def _part(req: PlanServeRequest, obj: dict[str, float], keep: int) -> gr.Grid:
    """One GPU type's grid (a module-level function, so a process or a dask worker can run it)."""
    return gr.evaluate_compact(req, objectives=obj, keep=keep)


def evaluate(req: PlanServeRequest, r: Report, *, objectives: dict[str, float], keep: int) -> gr.Grid:
    """The grid, in this process or split by GPU type over an executor and joined on the hardware axis."""
    import numpy as np

    from napkin.plan.executors import get_executor

    ex = get_executor(req.executor, address=req.scheduler, workers=req.workers)
    if ex is None:
        return _counted(gr.evaluate_compact(req, r, objectives=objectives, keep=keep))
    hardware_rows(req, r)  # the price assumptions and notes, once, in this report
    try:
        priced = prices(req)
        futures = [ex.submit(_part, msgspec.structs.replace(
            req, gpu=[name], executor="none",
            price={k: v for k, v in priced.items() if k == catalog.gpu(name).key}), objectives, keep)
            for name in dict.fromkeys(req.gpu)]
        parts = ex.gather(futures)
    finally:
        ex.close()
    r.note(f"evaluated in {len(parts)} chunks on the {req.executor} executor")
    first = parts[0]
    ax = gr.Axes(sum((p.axes.hw for p in parts), []), first.axes.pairs, first.axes.sizes, first.axes.prompt,
                 first.axes.output, first.axes.batch, sum(p.axes.configurations for p in parts))
    per_row = int(np.prod(ax.shape[1:]))
    offsets = np.cumsum([0] + [len(p.axes.hw) * per_row for p in parts])
    join = lambda name: np.concatenate([getattr(p, name) for p in parts], axis=0)  # noqa: E731
    front = select.Front()
    for p, o in zip(parts, offsets):
        front.merge(p.front.flat + o, p.front.x, p.front.y)
    return _counted(gr.Grid(ax, first.model, join("tpot"), join("ttft"), join("tps"), join("status"),
                            np.concatenate([p.picks + o for p, o in zip(parts, offsets)]), front,
                            sum(p.chunks for p in parts), cut=min(p.cut for p in parts),
                            per_workload=np.concatenate([p.per_workload + o for p, o in zip(parts, offsets)])))


def _counted(g: gr.Grid) -> gr.Grid:
    import numpy as np

    if not g.counts:
        n = np.bincount(g.status.reshape(-1), minlength=4)
        g.counts = gr.tally(g.axes, (n[1:].sum(), n[2:].sum(), n[3]))
    return g


KEYS_FLOAT = ("ttft_s", "tpot_s", "tpot_at_load_s", "tokens_per_s", "tokens_per_s_per_gpu", "replicas",
              "tokens_per_s_per_gpu_at_load", "replica_utilization", "fleet_usd_per_hour",
              "usd_per_million_tokens_all_in", "gpus", "tp", "pp", "batch", "prompt", "output")


def evaluate_grid(req: PlanServeRequest, r: Report | None = None) -> dict[str, Any]:
    """Every configuration's figures as numpy arrays of shape (hardware, GPUs, TP, batch), or
    (hardware, GPUs, TP, prompt, output, batch) when --prompt or --output list several values; a
    (GPUs, TP) split the model does not admit reads NaN (False for the masks)."""
    import numpy as np

    r = r or Report("plan")
    g = _counted(gr.evaluate_compact(req, r, objectives=objectives(req), keep=max(1, req.top)))
    ax = g.axes
    c = cells(req, g, np.arange(g.status.size))
    comm, comp = bounds(req, g, c, as_arrays=True)
    figures = {"ttft_s": c["ttft"], "tpot_s": c["tpot"], "tpot_at_load_s": c["tpot"], "tokens_per_s": c["tps"],
               "tokens_per_s_per_gpu": c["tps"] / c["gpus"], "replicas": c["replicas"],
               "tokens_per_s_per_gpu_at_load": c["per_gpu"], "replica_utilization": c["utilization"],
               "fleet_usd_per_hour": c["fleet"], "usd_per_million_tokens_all_in": c["usd"], "gpus": c["gpus"],
               "tp": c["tp"], "pp": c["pp"], "batch": c["batch"], "prompt": c["prompt"], "output": c["output"],
               "valid": g.status.reshape(-1) >= gr.VALID, "fits": g.status.reshape(-1) >= gr.FITS,
               "ok": g.status.reshape(-1) == gr.MEETS, "beyond_scale_up": c["beyond"], "bound_compute": comp,
               "bound_comm": comm, "hw": c["hw"]}
    sizes = ax.sizes
    n_of = np.array([sizes.index(n) for n, _ in ax.pairs])
    t_of = np.array([sizes.index(t) for _, t in ax.pairs])
    h, p, i, j, k = np.unravel_index(np.arange(g.status.size), ax.shape)
    single = len(ax.prompt) == 1 and len(ax.output) == 1
    shape = (len(ax.hw), len(sizes), len(sizes)) + ((len(ax.batch),) if single else ax.shape[2:])
    where = (h, n_of[p], t_of[p]) + ((k,) if single else (i, j, k))
    arrays = {}
    for key, v in figures.items():
        out = np.full(shape, np.nan) if key in KEYS_FLOAT else np.zeros(shape, dtype=bool if key != "hw" else int)
        out[where] = v
        arrays[key] = out
    arrays["hw"][...] = np.arange(len(ax.hw)).reshape((-1,) + (1,) * (len(shape) - 1))
    for key, values in (("gpus", sizes), ("tp", sizes)):
        axis = 1 if key == "gpus" else 2
        arrays[key][...] = np.array(values, dtype=float).reshape((1,) * axis + (-1,) + (1,) * (len(shape) - axis - 1))
    arrays["pp"][...] = np.maximum(arrays["gpus"] / arrays["tp"], 1.0)
    arrays["batch"][...] = ax.batch.reshape((1,) * (len(shape) - 1) + (-1,))
    return {"arrays": arrays, "hardware": ax.hw, "model": g.model, "configurations": g.counts["configurations"],
            "valid_configurations": g.counts["valid"]}
