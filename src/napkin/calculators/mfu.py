"""``napkin mfu``: model FLOPs utilisation from a measured step time (HFU beside it with recomputation)."""

from __future__ import annotations

import math
from typing import Annotated

import msgspec

from napkin.calculators import Calculator
from napkin.calculators.resolve import (gpu_or_none, model_or_none, peak_of, resolve_flops_per_token, resolve_params,
                                        MFU_COUNTER_ABOVE)
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import flops
from napkin.request import field
from napkin.units import MEBI, MEGA
from napkin.units import format as fmt

S = msgspec.Struct


class MfuRequest(S, kw_only=True, forbid_unknown_fields=True):
    params: Annotated[float | None, field("count", "model parameters N", gt=0)] = None
    model: Annotated[str | None, field("name", "catalog model (instead of --params)")] = None
    tokens_per_step: Annotated[float, field("count", "tokens per optimiser step (4M = 4e6; 4Mi = 4·2^20)", gt=0)]
    step_time: Annotated[float, field("seconds", "wall time of one step", gt=0)]
    gpus: Annotated[int, field("int", "GPUs in the job", gt=0)]
    gpu: Annotated[str | None, field("name", "accelerator")] = None
    precision: Annotated[str, field("precision", "training precision")] = "bf16"
    peak: Annotated[float | None, field("flops_per_s", "dense peak per GPU (instead of the catalog's)", gt=0)] = None
    recompute: Annotated[bool, field("bool", "full activation recomputation is on: report HFU beside MFU")] = False
    flops_convention: Annotated[str, field("choice", "FLOPs per token: 6N, or with the attention term (causal: "
                                                     "6N + 6·L·d·T; full: 6N + 12·L·d·T); needs --model and "
                                                     "--seq-len", choices=flops.CONVENTIONS)] = "6N"
    seq_len: Annotated[float | None, field("count", "sequence length (for causal/full FLOPs)", gt=0)] = None


def run_mfu(req: MfuRequest) -> Report:
    m = model_or_none(req.model)
    g = gpu_or_none(req.gpu)
    r = Report("MFU", command="mfu")
    n = resolve_params(r, m, req.params, active=True)
    peak = peak_of(r, g, req.precision, req.peak)
    fpt, _ = resolve_flops_per_token(r, m, n, req.flops_convention, req.seq_len)
    step_flops = fpt * req.tokens_per_step
    needed = step_flops / req.step_time
    avail = req.gpus * peak
    mfu = flops.model_flops_utilization(fpt, tokens_per_step=req.tokens_per_step, step_s=req.step_time,
                                        n_gpus=req.gpus, dense_flops_per_s=peak)
    if not (math.isfinite(mfu) and mfu > 0):
        raise _mfu_not_finite(req, n, peak, fpt, step_flops, needed, avail)
    r.step("model_flops_per_s", "flops_per_token · tokens_per_step / step_time", value=needed, unit="flops_per_s",
           tokens_per_step=(req.tokens_per_step, "count"), step_time=(req.step_time, "seconds"))
    r.step("available_flops_per_s", "gpus · peak", value=avail, unit="flops_per_s", gpus=req.gpus,
           peak=(peak, "flops_per_s"))
    r.step("mfu", "model_flops_per_s / available_flops_per_s", value=mfu, unit="fraction",
           cites=flops.model_flops_utilization)
    if mfu > 1:
        r.warn("mfu-above-one",
               f"MFU {fmt(mfu, 'fraction')} is above 100%: the model's arithmetic ({fmt(needed, 'flops_per_s')}) "
               f"exceeds every FLOP the {req.gpus:,} GPUs could do at the {fmt(peak, 'flops_per_s')} dense "
               f"{req.precision} peak ({fmt(avail, 'flops_per_s')}). Likely: the step time is too short (time the "
               f"whole optimiser step, not one micro-batch), tokens per step too large (the global batch, counted "
               f"once), too few GPUs counted (--gpus is every GPU in the job), or the peak too low (the wrong "
               f"precision: an fp8 run against the bf16 peak, or a hand-typed peak)")
    elif req.recompute and flops.hfu_full_recompute(mfu) > 1:
        r.warn("mfu-above-one", f"HFU {fmt(flops.hfu_full_recompute(mfu), 'fraction')} is above 100%: with full recomputation the "
                                "hardware would do more than its dense peak; check the step time, tokens per step, "
                                "GPU count and precision")
    elif mfu > MFU_COUNTER_ABOVE:
        r.warn("mfu-high", f"MFU {fmt(mfu, 'fraction')} is above what any published large run reached (MegaScale: "
                           "55.2% on 12,288 GPUs): check that the step time is the whole optimiser step, tokens per "
                           "step the global batch, --gpus every GPU in the job, and the peak the dense one at the "
                           "run's precision")
    t = req.tokens_per_step
    if t % MEGA == 0:
        alt = t / MEGA * MEBI
        r.note(f"tokens_per_step read as {fmt(t, 'count')} = {t:,.0f} (decimal M); if it meant {t / MEGA:g}Mi = "
               f"{alt:,.0f} tokens, MFU would be {fmt(mfu * alt / t, 'fraction')}")
    elif t % MEBI == 0:
        alt = t / MEBI * MEGA
        r.note(f"tokens_per_step read as {t / MEBI:g}Mi = {t:,.0f} (binary); if it meant {alt:,.0f}, "
               f"MFU would be {fmt(mfu * alt / t, 'fraction')}")
    if req.flops_convention != "6N":
        plain = mfu * flops.train_flops_per_token(n) / fpt
        r.note(f"MFU counted under the {req.flops_convention} convention; the same step under 6N (no attention term) "
               f"is {fmt(plain, 'fraction')}: quote the convention with the figure, and plan with the same one "
               f"(`napkin train --mfu {fmt(mfu, 'fraction')} --mfu-convention {req.flops_convention}`)")
    if req.recompute:
        r.step("hfu", "mfu · 8 / 6  (recompute adds one forward pass: 2N more per token)",
               value=flops.hfu_full_recompute(mfu), unit="fraction", cites=flops.hfu_full_recompute)
        r.warn("hfu-not-mfu", "HFU counts recomputed activations; report MFU, which counts only the model's FLOPs")
    else:
        r.note("MFU counts model FLOPs only; with activation recomputation the hardware does more (HFU), "
               "which must not be reported as MFU")
    return r


def _mfu_not_finite(req: MfuRequest, n: float, peak: float, fpt: float, step_flops: float, needed: float,
                    avail: float) -> InputError:
    """The input that pushed MFU past what a float holds (or to zero), named with its fix."""
    if not math.isfinite(fpt):
        return InputError("params", fmt(n, "count"), "is too large: 6 · N passes 1.8e308 FLOPs, beyond a float",
                          "give the parameter count, e.g. 70B")
    if not math.isfinite(step_flops):
        return InputError("tokens_per_step", fmt(req.tokens_per_step, "count"), "is too large: 6 · N · tokens passes "
                          "1.8e308 FLOPs, beyond a float", "give the global batch in tokens, e.g. 4M")
    if not math.isfinite(needed):
        return InputError("step_time", fmt(req.step_time, "seconds"), "is too short: the model FLOP/s it implies "
                          "passes 1.8e308, beyond a float", "give the measured wall time of one optimiser step, e.g. 2.07s")
    if not math.isfinite(avail):
        what = "peak" if req.peak is not None else "gpus"
        return InputError(what, fmt(peak, "flops_per_s") if what == "peak" else f"{req.gpus:,}",
                          "is too large: gpus · peak passes 1.8e308 FLOP/s, beyond a float",
                          "give the job's GPU count and one GPU's dense peak")
    return InputError("step_time", fmt(req.step_time, "seconds"), "is too long: MFU comes out as 0 (below the "
                      "smallest float)", "give the measured wall time of one optimiser step, e.g. 2.07s")


MFU = Calculator("mfu", MfuRequest, run_mfu, "MFU",
                 "Model FLOPs utilisation from a measured step time (HFU beside it with --recompute).",
                 establishes="the fraction of dense peak the run turns into model arithmetic",
                 needs_measuring="nothing more if the step time is measured; never use hardware activity counters")
