"""``--mfu auto``: the MFU of the fastest layout `napkin plan train` finds for this model on this cluster.

The planner searches TP, PP, CP, EP, DP, ZeRO, recomputation and micro-batch for the model's
own shape (layers, width, heads: a catalog name or a config.json), memory with activations
included, and predicts the step time from the GEMM, attention and communication parts; its
best configuration's MFU (under this plan's FLOPs convention) is the MFU this plan assumes.
It is composed through the registry, so `napkin train` runs the same planner the user can run.
"""

from __future__ import annotations

from typing import Any

from napkin.derivation import Report
from napkin.errors import InputError
from napkin.hardware import Accelerator
from napkin.model import ModelSpec
from napkin.request import fields

def planned_mfu(r: Report, req: Any, g: Accelerator | None, m: ModelSpec | None) -> float:
    """MFU from `napkin plan train`'s best layout for --model on --gpus x --gpu (recorded as an assumption)."""
    from napkin import calculators

    if m is None or not req.model:
        raise InputError("mfu", "auto", "needs the model's shape (layers, width, heads), not only its parameters",
                         "give --model NAME or a config.json, or a number such as --mfu 0.4")
    if g is None:
        raise InputError("mfu", "auto", "needs a catalog accelerator to plan on", "give --gpu h100-sxm")
    if req.gpus is None:
        raise InputError("mfu", "auto", "needs the cluster size the layout is planned for",
                         "give --gpus K (with --deadline, plan first: napkin plan train --deadline ...)")
    if getattr(req, "mfu_convention", None):
        raise InputError("mfu_convention", req.mfu_convention, "says how a given --mfu was measured; --mfu auto is "
                         "planned under this plan's --flops-convention", "drop --mfu-convention")
    plan = calculators.get("plan-train")  # composed through the registry: train does not reach into the planner
    planned = next(f for f in fields(plan.request) if f.name == "precision").meta["choices"]  # what it models
    if req.precision not in planned:
        raise InputError("mfu", "auto", f"plans {' or '.join(planned)} training, not {req.precision}",
                         f"give --precision {' or '.join(planned)}, or a number such as --mfu 0.4")
    raw: dict[str, Any] = dict(model=req.model, gpu=g.key, gpus=[req.gpus], precision=req.precision,
                               flops_convention=req.flops_convention, top=1)
    if req.seq_len is not None:
        raw["seq_len"] = req.seq_len
    rep = plan.run(plan.request(**raw))
    if rep.get("best") is None:
        raise InputError("mfu", "auto", f"has no layout to take it from: nothing fits {m.name} on {req.gpus:,} "
                         f"{g.name}", "give more --gpus, or a number such as --mfu 0.4")
    mfu = float(rep["best_mfu"])
    r.assume("mfu", mfu, f"the fastest layout napkin plan train finds, {rep['best_config']}; sequences of "
                         f"{rep['seq_len']:,.0f}, global batch {rep['batch_tokens']:,.0f} tokens, "
                         f"{req.flops_convention} FLOPs",
             unit="fraction", basis="planned")
    if req.calibration:
        r.note("--mfu auto: the planner's MFU is used, not the calibration's training MFU")
    return mfu
