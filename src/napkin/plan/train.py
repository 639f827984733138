"""`napkin plan train`: which TP/PP/CP/EP/DP/ZeRO/recompute layout trains a model fastest on a cluster,
what memory each GPU needs, and what MFU it gets.

Every degree or option not given is searched: each valid combination is evaluated on numpy
arrays (:mod:`napkin.plan.train_search`) through the formulas of activations, parallelism and
train_step; the fitting ones are ranked by tokens/s (by cost with ``--price`` across cluster
sizes, by fewest GPUs with ``--deadline``). The printed rows carry their memory breakdown, step
parts, MFU and HFU, and the binding constraint; the best configuration's working is the
derivation. With every degree given, that one configuration's figures are the result.
"""

from __future__ import annotations

import math
import time
from typing import Any

from napkin import units
from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.plan.train_request import RECOMPUTE_CHOICES, PlanTrainRequest
from napkin.plan.train_resolve import resolve
from napkin.plan.train_rows import describe, explain_best, row, single_row
from napkin.plan.train_search import KEY_COLUMNS, Space, chunks, merge, search_chunk
from napkin.plan.train_setup import TrainSetup

SIMPLIFICATIONS = (
    "the last pipeline stage sets the pace (its share of the layers plus the output layer); layers are split evenly",
    "communication overlaps compute only as the stated overlap fractions say; TP, EP and pipeline sends are exposed",
    "the slowest stage's data-parallel sync overlaps one micro-batch's compute (ZeRO-3: every micro-batch's)",
    "MoE routing is balanced; activations are kept at 16 bits, also under fp8 GEMMs",
)


def _search(S: TrainSetup, sizes: list[int], space: Space, req: PlanTrainRequest, r: Report) -> dict[str, Any]:
    """Every chunk of the grid, here or on an executor, merged per cluster size."""
    from napkin.plan.executors import get_executor

    by_cost = req.price is not None and len(sizes) > 1 and req.deadline is None
    pieces = chunks(S, sizes, space)
    t0 = time.perf_counter()
    ex = get_executor(req.executor, address=req.scheduler, workers=req.workers)
    top = req.top if req.deadline is None else 1
    if ex is None:
        parts = [search_chunk(S, n, rows, space, top, by_cost) for n, rows in pieces]
    else:
        try:
            parts = ex.gather([ex.submit(search_chunk, S, n, rows, space, top, by_cost) for n, rows in pieces])
        finally:
            ex.close()
        r.note(f"evaluated in {len(pieces)} chunks on the {req.executor} executor")
    if req.deadline is not None:  # the best of each size, then the fewest GPUs that meet the deadline
        per_size = [merge([p for p in parts if p["n_gpus"] == n], 1) for n in sizes]
        merged = merge(parts, 0)
        merged["per_size"] = per_size
    else:
        merged = merge(parts, req.top)
    merged["seconds"] = time.perf_counter() - t0
    return merged


def _deadline_rows(S: TrainSetup, res: dict[str, Any], req: PlanTrainRequest, r: Report) -> list[tuple]:
    """(key, layouts alike) of the cluster sizes whose best configuration finishes --tokens within --deadline,
    fewest GPUs first."""
    meeting, fastest = [], None
    for p in res["per_size"]:
        if not len(p["keys"]):
            continue
        n = p["keys"][0][0]
        wall = float(p["score"][0]) * req.tokens / S.seq_len / S.goodput  # seconds per sequence times sequences
        fastest = min(fastest or (math.inf, 0), (wall, n))
        if wall <= req.deadline:
            meeting.append((tuple(p["keys"][0]), int(p["alike"][0])))
    if not meeting and fastest:
        r.warn("deadline-missed", f"no cluster up to {req.max_gpus:,} GPUs trains {units.format(req.tokens, 'count')} "
                                  f"tokens in {units.format(req.deadline, 'seconds')}: the fastest searched takes "
                                  f"{units.format(fastest[0], 'seconds')} on {fastest[1]:,.0f} GPUs")
    return meeting[: req.top]


def _batch_text(S: Any) -> str:
    """The global batch in words: sequences, and the tokens they hold."""
    n = S.global_batch_seqs
    whole = f"{n:,.0f}" if n == round(n) else f"{n:,.2f}"
    return f"{whole} sequence{'s' if n != 1 else ''} ({units.format(n * S.seq_len, 'count')} tokens)"


def run_plan_train(req: PlanTrainRequest) -> Report:
    r = Report("Plan train", command="plan train")
    S, m, g, space, sizes = resolve(req, r)
    n_single = len(sizes) == 1 and all(len(getattr(space, k)) == 1 for k in ("zero", "recompute", "micro_batch",
                                                                          "interleave", "sp"))
    n_single = n_single and all(space.fixed[k] for k in ("tp", "pp", "cp", "ep", "dp"))
    gpus_text = f"{sizes[0]:,} {g.name}" if len(sizes) == 1 else f"{g.name} ({', '.join(f'{n:,}' for n in sizes)})"
    r.title = f"Plan train {m.name} on {gpus_text}: sequences of {S.seq_len:,.0f}, batch {_batch_text(S)}"
    r.set("model", m.name)
    r.set("gpu", g.key)
    r.set("seq_len", S.seq_len, "count")
    r.set("flops_convention", S.flops_convention)
    if n_single:
        key = (sizes[0],) + tuple(float(space.fixed[k]) for k in ("tp", "pp", "cp", "ep", "dp")) + (
            float(space.zero[0]), float(space.recompute[0]), float(space.micro_batch[0]),
            float(space.interleave[0]), float(space.sp[0]))
        one = single_row(S, key, req, r)
        for k, v in one.items():
            r.set(k, v, _UNITS.get(k))
        explain_best(r, S, key, m)
        _footer(r, req)
        return r
    res = _search(S, sizes, space, req, r)
    r.set("configs_evaluated", res["evaluated"], "count")
    r.set("configs_valid", res["valid"], "count")
    r.set("configs_feasible", res["feasible"], "count")
    r.set("configs_per_s", res["evaluated"] / max(res["seconds"], 1e-9), "per_s")
    found = (_deadline_rows(S, res, req, r) if req.deadline is not None else
             [(tuple(k), int(n)) for k, n in zip(res["keys"], res["alike"])])
    keys = [k for k, _ in found]
    ranked = [{**row(S, k, req), "alike": n} for k, n in found]
    r.set("ranked", ranked)
    if any(n > 1 for _, n in found):
        r.note("alike: the layouts each row stands for, with the same step time per sequence and the same memory "
               "per GPU (often a larger CP with a proportionally larger micro-batch: the same tokens per GPU); the "
               "row is the simplest of them, and --top counts results, not layouts")
    if ranked:
        r.set("best", ranked[0])
        r.set("best_config", describe(ranked[0]))
        r.set("best_mfu", ranked[0]["mfu"], "fraction")
        r.set("best_tokens_per_s", ranked[0]["tokens_per_s"], "per_s")
        explain_best(r, S, keys[0], m)
    elif req.deadline is not None and res["feasible"]:
        r.set("best", None)  # layouts fit, none fast enough: the deadline-missed warning says so
    else:
        _nothing_fits(r, S, res, g)
    _footer(r, req)
    return r


_UNITS = {"step_s": "seconds", "mfu": "fraction", "hfu": "fraction", "tokens_per_s": "per_s", "wall_s": "seconds",
          "gpu_hours": "number", "usd": "usd", "gpus": "count", "memory_bytes_per_gpu": "bytes",
          "usable_bytes_per_gpu": "bytes", "step_parts_s": "seconds", "bubble_fraction": "fraction",
          "short_by_bytes": "bytes", "global_batch_seqs": "count"}


def _nothing_fits(r: Report, S: TrainSetup, res: dict[str, Any], g: Any) -> None:
    r.set("best", None)
    if res["least_memory_key"] is None:
        r.warn("no-valid-layout", "no layout of these GPUs divides the model (heads, layers, sequence) and the batch: "
                                  "change --gpus, the given degrees or --global-batch")
        return
    k = dict(zip(("gpus",) + KEY_COLUMNS, res["least_memory_key"]))
    r.warn("nothing-fits", f"no configuration fits in {units.format(S.usable_bytes, 'bytes')} per {g.name}: the "
                           f"leanest (TP {k['tp']:.0f}, PP {k['pp']:.0f}, CP {k['cp']:.0f}, ZeRO {k['zero']:.0f}, "
                           f"{RECOMPUTE_CHOICES[int(k['recompute'])]} recompute, micro-batch {k['micro_batch']:.0f}) "
                           f"needs {units.format(res['least_memory'], 'bytes')}; add GPUs or shorten the sequence")


def _footer(r: Report, req: PlanTrainRequest) -> None:
    if req.tokens is None:
        r.note("wall_s, gpu_hours and usd need --tokens (the tokens of the whole run)")
    r.note("MFU counts the model FLOPs of the stated convention against the dense peak; HFU adds the recomputed "
           "forward work")
    for text in SIMPLIFICATIONS:
        r.note("simplification: " + text)


PLAN_TRAIN = Calculator(
    "plan-train", PlanTrainRequest, run_plan_train, "Plan a training run's parallelism",
    "Search TP, PP, CP, EP, DP, ZeRO/FSDP, recomputation, micro-batch and interleave for a model on a cluster: "
    "memory per GPU with activations, step time with communication and the pipeline bubble, MFU and HFU, ranked.",
    establishes="which layouts fit in memory with their activations, and the step time and MFU the roofline model "
                "predicts for each",
    needs_measuring="a trial step at the chosen layout (torch.cuda.max_memory_allocated and the step time)",
)
