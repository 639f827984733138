"""The inputs of a training plan, each from where it comes: given, measured, the catalog or a default.

The accelerator, the price of its hour, FLOPs per token under the stated convention, the
advanced (and unique) tokens, and the MFU, each recorded in the Report with its basis; the
defaults come from catalog/assumptions.toml with their sources.
"""

from __future__ import annotations

from typing import Any

from napkin import catalog
from napkin.calculators.resolve import (assume_default, resolve_flops_per_token,  # noqa: F401 (train's import)
                                        MFU_COUNTER_ABOVE, convert_mfu, warn_if_activity_counter,
                                        warn_if_stale_price)
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.hardware import Accelerator
from napkin.model import ModelSpec
from napkin.request import check_bounds
from napkin.units import format as fmt

MFU_IMPLAUSIBLE = 0.60  # above what large dense training runs sustain (Llama 3 405B: 38-43%; PaLM: 46%)


def parse_goodput(raw: Any) -> float | str | None:
    """A fraction in (0, 1] or the word 'auto'; None when not given."""
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().lower() == "auto":
        return "auto"
    from napkin import units

    try:
        value = units.parse(raw, "fraction", "goodput")
    except InputError:
        raise InputError("goodput", raw, "must be a fraction or auto", "e.g. 0.9, 90% or auto") from None
    check_bounds("goodput", value, {"gt": 0.0, "le": 1.0}, "fraction", raw)
    return value


def resolve_gpu(r: Report, req: Any) -> Accelerator | None:
    """The accelerator: --gpu, or the default one (H100 SXM) when neither --gpu nor --peak is given (said so)."""
    if req.gpu:
        return catalog.gpu(req.gpu)
    if req.peak is not None:
        return None
    g = catalog.gpu(catalog.default_value("default_gpu"))
    assume_default(r, "gpu", "default_gpu",
                   note=f"no --gpu given: the {g.name}, the accelerator most published training runs report")
    return g


def resolve_price(r: Report, price: float | None, g: Accelerator | None) -> tuple[float, str]:
    """$/GPU-hour and how it was chosen: given, a dated reference list price, or an illustrative $2.50."""
    if price is not None:
        r.assume("price", price, "loaded $/GPU-hour as given", unit="usd_per_hour", basis="given")
        return price, "given"
    if g is None:
        illustrative = assume_default(r, "price", "illustrative_usd_per_gpu_hour", basis="reference")
        r.warn("illustrative-price", f"no --price: using an illustrative {fmt(illustrative, 'usd_per_hour')} "
                                     "per GPU-hour; give --price with your loaded rate")
        return illustrative, "illustrative figure"
    ref = catalog.gpu_hour_price(g.key)
    if ref is None:
        raise InputError("price", "nothing", f"is required: the catalog has no reference price for the {g.name}",
                         "give --price 2.50/h (your loaded $/GPU-hour)")
    value, when, src = ref.usd_per_gpu_hour, ref.date, ref.source
    r.assume("price", value, f"reference list price for the {g.name}, {when} ({src}); not a loaded price",
             unit="usd_per_hour", basis="reference")
    r.warn("list-price", f"no --price: using the {g.name}'s reference list price {fmt(value, 'usd_per_hour')} "
                         f"({when}); a loaded GPU-hour adds power, networking, storage and support "
                         f"(`napkin gpu-hour`)")
    warn_if_stale_price(r, ref, f"the {g.name}")
    return value, f"reference list price, {when}"


def resolve_tokens(r: Report, req: Any, m: ModelSpec | None, fpt: float = 0.0) -> tuple[float, float | None]:
    """(advanced tokens, unique tokens or None) from --tokens, --unique-tokens and --epochs, or a --flops
    budget read at ``fpt`` FLOPs per token."""
    d, u, e = req.tokens, req.unique_tokens, req.epochs
    budget = getattr(req, "flops", None)
    if budget is not None:
        if d is not None or u is not None:
            raise InputError("flops", fmt(budget, "flops"), "cannot be given with --tokens"
                             + (" or --unique-tokens" if u is not None else "") + ": both fix the run's size",
                             "give two of --flops, --params and --tokens")
        d = r.step("advanced_tokens", "C / flops_per_token  (the budget read as tokens)", value=budget / fpt,
                   unit="count", C=(budget, "flops"), flops_per_token=(fpt, "flops"))
        return d, None
    if d is not None:
        if u is not None and e is not None:
            if abs(u * e - d) > 1e-9 * d:
                raise InputError("epochs", f"{e:g}", f"does not match: unique_tokens · epochs = "
                                 f"{fmt(u * e, 'count')} but tokens = {fmt(d, 'count')}",
                                 "give two of --tokens, --unique-tokens and --epochs")
        elif u is not None:
            if u > d * (1 + 1e-12):
                raise InputError("unique_tokens", fmt(u, "count"), f"exceeds the advanced tokens ({fmt(d, 'count')})",
                                 "unique tokens are at most the tokens trained on")
            e = r.step("epochs", "advanced_tokens / unique_tokens", value=d / u, unit="number",
                       advanced_tokens=(d, "count"), unique_tokens=(u, "count"), result=False)
        elif e is not None:
            u = r.step("unique_tokens", "advanced_tokens / epochs", value=d / e, unit="count",
                       advanced_tokens=(d, "count"), epochs=e, result=False)
        r.set("advanced_tokens", d, "count")
    elif u is not None:
        if e is None:
            e = r.assume("epochs", 1.0, "one pass over the unique tokens (give --epochs)", unit="number")
        d = r.step("advanced_tokens", "unique_tokens · epochs", value=u * e, unit="count",
                   unique_tokens=(u, "count"), epochs=e)
    elif e is not None:
        raise InputError("epochs", f"{e:g}", "needs --unique-tokens", "give --unique-tokens 500B --epochs 4")
    elif m is not None and m.training_tokens:
        d = r.assume("tokens", m.training_tokens, f"{m.name}'s published training tokens", unit="count",
                     basis="catalog")
        r.set("advanced_tokens", d, "count")
    else:
        raise InputError("tokens", "nothing", "is required", "give --tokens 2T, or --unique-tokens with --epochs")
    if u is not None:
        r.set("unique_tokens", u, "count")
        r.set("epochs", e, "number")
    return d, u


def resolve_mfu(r: Report, req: Any, n: float, g: Accelerator | None = None, m: ModelSpec | None = None) -> float:
    """MFU: given (read under this plan's FLOPs convention when it was measured under another),
    measured (a calibration file, counted the way this plan counts FLOPs), planned (``auto``:
    `napkin plan train`'s best layout), or the default."""
    if req.mfu == "auto":
        from napkin.calculators.train.auto_mfu import planned_mfu

        return planned_mfu(r, req, g, m)
    if req.mfu is not None:
        plan = getattr(req, "flops_convention", "6N")
        measured = getattr(req, "mfu_convention", None) or plan
        r.assume("mfu", req.mfu, "as given" + (f", measured under the {measured} convention" if measured != plan
                                               else ""), unit="fraction", basis="given")
        warn_if_activity_counter(r, req.mfu, getattr(req, "precision", "bf16"))
        if req.calibration:
            from napkin import calibration

            calibration.load(req.calibration)  # still read: a missing or broken file is an error, not ignored
            r.note("--mfu given: it overrides the calibration's training MFU")
        mfu = convert_mfu(r, req.mfu, measured=measured, plan=plan, m=m, n=n, seq_len=getattr(req, "seq_len", None))
    elif req.calibration:
        from napkin import calibration

        cal = calibration.load(req.calibration)
        if cal.training_mfu is None:
            raise InputError("calibration", req.calibration, "has no training MFU",
                             "run `napkin measure` with a training step, or give --mfu")
        # the measured MFU counted the way this plan counts FLOPs per token (6N, causal, full)
        mfu = cal.training_mfu_for(getattr(req, "flops_convention", "6N")) or cal.training_mfu
        r.assume("mfu", mfu, cal.label, unit="fraction", basis="measured")
        for code, message in cal.fit_warnings(g, uses="its training MFU", precision=getattr(req, "precision", None),
                                              peak_by_hand=getattr(req, "peak", None) is not None):
            r.warn(code, message)
        size = getattr(cal, "training_mfu_params", None)
        if size and n and abs(size - n) / n > 0.5:
            r.warn("mfu-model-size", f"the calibration's MFU was measured on a {fmt(size, 'count')}-parameter model; "
                                     f"MFU changes with model size, so measure on one near {fmt(n, 'count')}")
    else:
        mfu = assume_default(r, "mfu", "training_mfu")
    if getattr(req, "mfu_convention", None) and req.mfu is None:
        raise InputError("mfu_convention", req.mfu_convention, "says how a given --mfu was measured, and none was "
                         "given", "give --mfu with it, or drop --mfu-convention")
    if mfu > MFU_IMPLAUSIBLE and not (req.mfu is not None and req.mfu > MFU_COUNTER_ABOVE):
        r.warn("mfu-high", f"MFU {mfu:.0%} is above what dense training runs sustain (35-50% is good); check it is "
                           f"MFU (model FLOPs) and not HFU, against the dense peak")
    return mfu

