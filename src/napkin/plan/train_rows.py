"""The printed rows of `napkin plan train` (one configuration each, as Python objects) and the
working behind the best one."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from napkin import units
from napkin.derivation import Report
from napkin.formulas import activations as A
from napkin.formulas import flops as F
from napkin.formulas import parallelism as P
from napkin.formulas import train_step as TS
from napkin.model import ModelSpec
from napkin.plan.train_eval import evaluate, figures
from napkin.plan.train_request import RECOMPUTE_CHOICES
from napkin.plan.train_search import KEY_COLUMNS, MICRO_BATCHES
from napkin.plan.train_setup import TrainSetup

PARTS = ("compute", "tp_comm", "pp_bubble", "pp_comm", "dp_comm", "cp_comm", "ep_comm")
MEMORY = ("weights", "gradients", "optimizer", "activations", "buffers", "total")
BOUND_NAMES = {"tp_comm": "TP comm", "pp_bubble": "bubble", "pp_comm": "PP comm", "dp_comm": "DP comm",
               "cp_comm": "CP comm", "ep_comm": "EP comm"}
OVERHEAD_BINDS = 0.10  # a part beyond compute that takes this share of the step is the binding constraint
MEMORY_BINDS = 0.90  # a configuration filling this share of usable memory is bound by memory


def _degrees(key: tuple) -> dict[str, float]:
    return dict(zip(KEY_COLUMNS, key[1:]))


def _num(x: Any) -> float:
    v = float(np.asarray(x))
    return v if math.isfinite(v) else math.nan


def _opt(x: float) -> float | None:
    return None if math.isnan(x) else x


def max_micro_batch(S: TrainSetup, d: dict[str, float]) -> int | None:
    """The largest micro-batch (a power of two, or the one given) that fits with the rest of the layout."""
    per_rank = S.global_batch_seqs / d["dp"]
    cands = sorted({int(2**i) for i in range(0, 16) if 2**i <= per_rank * (1 + S.batch_tolerance)}
                   | {int(d["micro_batch"])} | {b for b in MICRO_BATCHES if b <= per_rank})
    e = evaluate(S, **{**d, "micro_batch": np.array(cands, dtype=float)})
    ok = np.broadcast_to(e["fits"] & e["valid"], (len(cands),))
    return int(np.array(cands)[ok].max()) if ok.any() else None


def bound(parts: dict[str, float], step: float, total: float, usable: float) -> str:
    """The binding constraint: the largest overhead beyond compute if it takes 10% of the step, else memory
    when the layout fills 90% of usable memory, else compute."""
    name, value = max(((k, v) for k, v in parts.items() if k != "compute"), key=lambda kv: kv[1])
    if value >= OVERHEAD_BINDS * step:
        return BOUND_NAMES[name]
    return "memory" if total >= MEMORY_BINDS * usable else "compute"


def row(S: TrainSetup, key: tuple, req: Any) -> dict[str, Any]:
    """One configuration's figures: the JSON row of `ranked` (and of `best`)."""
    d = _degrees(key)
    e = evaluate(S, **d)
    fig = figures(S, e)
    parts = {k: _num(e["parts"][k]) for k in PARTS}
    mem = {k: _num(e["memory"][k]) for k in MEMORY}
    step = _num(e["step"])
    c = e["config"]
    out = {"gpus": int(key[0]), "tp": int(d["tp"]), "pp": int(d["pp"]), "cp": int(d["cp"]), "ep": int(d["ep"]),
           "dp": int(d["dp"]), "zero": int(d["zero"]), "fsdp": "hybrid" if S.fsdp_hybrid else None,
           "recompute": RECOMPUTE_CHOICES[int(d["recompute"])], "micro_batch": int(d["micro_batch"]),
           "interleave": int(d["interleave"]), "sequence_parallel": bool(d["sp"]),
           "n_microbatches": int(_num(c["m"])), "global_batch_seqs": int(_num(c["batch"])),
           "memory_bytes_per_gpu": mem, "usable_bytes_per_gpu": S.usable_bytes,
           "fits": bool(mem["total"] <= S.usable_bytes), "max_micro_batch": max_micro_batch(S, d),
           "step_s": step, "step_parts_s": parts,
           "bubble_fraction": _num(P.bubble_fraction(d["pp"], n_microbatches=c["m"], interleave=d["interleave"])),
           "mfu": _num(fig["mfu"]), "hfu": _num(fig["hfu"]), "flops_convention": S.flops_convention,
           "tokens_per_s": _num(fig["tokens_per_s"]), "wall_s": _opt(_num(fig["wall_s"])),
           "gpu_hours": _opt(_num(fig["gpu_hours"])), "usd": _opt(_num(fig["usd"]))}
    out["bound"] = bound(parts, step, mem["total"], S.usable_bytes)
    return out


def single_row(S: TrainSetup, key: tuple, req: Any, r: Report) -> dict[str, Any]:
    """Every degree given: that configuration's row, with a warning when it does not fit or is not runnable."""
    out = row(S, key, req)
    e = evaluate(S, **_degrees(key))
    if not bool(np.asarray(e["valid"])):
        r.warn("layout-not-runnable", f"this layout is not one the frameworks run: the batch of "
                                      f"{out['global_batch_seqs']:,} sequences is not within "
                                      f"{S.batch_tolerance:.0%} of the one asked, interleaving needs a pipeline whose "
                                      "micro-batches fill it, or ZeRO/SP have no ranks to use")
    if not out["fits"]:
        short = out["memory_bytes_per_gpu"]["total"] - S.usable_bytes
        out["short_by_bytes"] = short
        r.warn("does-not-fit", f"needs {units.format(out['memory_bytes_per_gpu']['total'], 'bytes')} per GPU, "
                               f"{units.format(short, 'bytes')} more than the {units.format(S.usable_bytes, 'bytes')} "
                               "usable: raise a degree, recompute, or shrink the micro-batch")
    return out


def describe(x: dict[str, Any]) -> str:
    """``TP 8 · PP 4 · DP 32, ZeRO-1, selective recompute, micro-batch 1`` (degrees above 1 only)."""
    degrees = " · ".join(f"{k.upper()} {x[k]}" for k in ("tp", "pp", "cp", "ep", "dp") if x[k] > 1) or "1 GPU"
    extras = [("FSDP hybrid" if x.get("fsdp") == "hybrid" else f"ZeRO-{x['zero']}"),
              "no recompute" if x["recompute"] == "none" else f"{x['recompute']} recompute",
              f"micro-batch {x['micro_batch']}"]
    if x["interleave"] > 1:
        extras.append(f"interleave {x['interleave']}")
    if x["sequence_parallel"]:
        extras.append("SP")
    return f"{x['gpus']:,} GPUs: {degrees}, " + ", ".join(extras)


def explain_best(r: Report, S: TrainSetup, key: tuple, m: ModelSpec) -> None:
    """The working of one configuration: the steps behind its memory, step time and MFU."""
    d = _degrees(key)
    e = evaluate(S, **d)
    mem, c = e["memory"], e["config"]
    n = lambda x: _num(x)  # noqa: E731
    tp, pp = d["tp"], d["pp"]
    r.step("stage_params", "(L_stage · N_layer + N_embed + N_head − (p > 1) · min(N_embed, N_head)) / t, experts "
           "÷ (t · e)", value=n(mem["stage_params"]), unit="count", result=False,
           L_stage=n(P.stage_layers(S.n_layers, pp=pp)), p=pp, t=tp, e=d["ep"],
           cites=P.stage_params)
    for kind, b, z in (("weights", S.weight_bytes, 3), ("gradients", S.grad_bytes, 2),
                       ("optimizer", S.optimizer_bytes, 1)):
        r.step(f"{kind}_bytes_per_gpu", f"N_stage · {b:g} B / (shard if ZeRO ≥ {z})", value=n(mem[kind]),
               unit="bytes", result=False, zero=d["zero"], shard=n(mem["shard"]), cites=P.zero_sharded_bytes)
    T = S.seq_len / d["cp"] * d["micro_batch"]
    r.step("activation_bytes_per_layer", "replicated + attention + MLP, or the checkpoint under full recompute "
           "(Korthikanti et al. 2022)", value=n(mem["per_layer"]), unit="bytes", result=False,
           T=(T, "count"), h=S.d_model, t=tp, recompute=RECOMPUTE_CHOICES[int(d["recompute"])],
           cites=A.layer_activation_bytes)
    r.step("layers_in_flight", "min(chunks, m · v) · L_stage / v", value=n(mem["layers_in_flight"]), unit="count",
           result=False, m=n(c["m"]), v=d["interleave"], p=pp, cites=P.layers_in_flight)
    r.step("activations_bytes_per_gpu", "max(first stage, last stage + logits) + recompute working set",
           value=n(mem["activations"]), unit="bytes", result=False, cites=A.recompute_working_bytes)
    r.step("memory_bytes_per_gpu", "weights + gradients + optimizer + buffers + activations", value=n(mem["total"]),
           unit="bytes", result=False, usable=(S.usable_bytes, "bytes"))
    r.step("microbatch_s", "L_stage · (t_layer + t_tp + t_cp) + t_head + L_stage_moe · t_ep",
           value=n(e["microbatch_s"]), unit="seconds", result=False, cites=TS.layer_train_seconds)
    for part in PARTS:
        r.step(f"{part}_s", _PART_FORMULA[part], value=n(e["parts"][part]), unit="seconds", result=False,
               cites=_PART_CITES.get(part))
    r.step("step_s", "compute + tp + bubble + pp + dp + cp + ep", value=n(e["step"]), unit="seconds", result=False,
           cites=TS.step_seconds)
    fig = figures(S, e)
    r.step("mfu", "flops_per_token · tokens_per_step / step_s / (GPUs · peak)", value=n(fig["mfu"]),
           unit="fraction", result=False, flops_per_token=(S.flops_per_token, "flops"),
           tokens_per_step=(n(fig["tokens_per_step"]), "count"), GPUs=key[0], peak=(S.peak, "flops_per_s"),
           cites=F.model_flops_utilization)


_PART_FORMULA = {
    "compute": "m · t_mb + t_optimizer", "tp_comm": "m · L_stage · t_tp_layer · exposed",
    "pp_bubble": "(p − 1) / (m · v) · m · t_mb", "pp_comm": "2 · m · v · t_p2p · exposed",
    "dp_comm": "max(t_dp − overlap · window, 0)",
    "cp_comm": "m · L_stage · max(t_ring − overlap · t_attention, 0)",
    "ep_comm": "m · L_stage_moe · t_all_to_all · exposed",
}
_PART_CITES = {"compute": TS.optimizer_seconds, "tp_comm": P.tp_bytes_per_layer, "pp_bubble": P.bubble_fraction,
               "pp_comm": P.p2p_bytes, "dp_comm": P.dp_bytes_per_rank, "cp_comm": P.cp_bytes_per_layer,
               "ep_comm": P.ep_bytes_per_layer}
