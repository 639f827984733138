"""Plan files (``--config FILE.toml``) with values given on top: what a given value replaces.

A plan file holds every input of a request (:func:`napkin.request.write_config` writes it,
:func:`napkin.request.read_config` reads it). Run again with some inputs given anew (flags on
the command line, fields of a web form, keyword arguments), :func:`merge` takes the given ones
over the plan's, and drops from the plan what they replace: the alternatives to an input
(a plan with --gpus run again with --deadline asks for the GPUs, not for both), the defaults
the plan froze that depended on it (a plan's reference price for an H100 is not the price of
the B200 now named), and, when the parts to compare are named again, the plan's per-part
values for parts no longer named.
"""

from __future__ import annotations

from typing import Any

# Inputs that stand for one another: a given one replaces the plan's alternatives to it.
_TRAIN_PLAN = ("gpu", "precision", "mfu", "goodput", "price", "fixed_usd", "overhead")  # amortise: plans a cost
ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "model": ("params",), "params": ("model",), "gpus": ("deadline", "flops"), "deadline": ("gpus",),
    "tokens": ("epochs",), "epochs": ("tokens",),
    "mtbf_per_gpu": ("cluster_mtbf", "interruptions", "period", "observed_gpus"),
    "cluster_mtbf": ("mtbf_per_gpu", "interruptions", "period"),
    "interruptions": ("mtbf_per_gpu", "cluster_mtbf"), "period": ("mtbf_per_gpu", "cluster_mtbf"),
    "served": ("years", "per_day"), "years": ("served",),
    "training_usd": _TRAIN_PLAN, **{k: ("training_usd",) for k in _TRAIN_PLAN},
    "flops": ("gpus", "days"), "days": ("flops",),
}
# Defaults a plan froze that were derived from another input: re-derived when that input is given.
DERIVED_DEFAULTS: dict[str, tuple[str, ...]] = {"price": ("gpu", "precision")}


def merge(request_cls: type, plan: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Raw values: the plan's, less what ``given`` replaces, then ``given`` on top.

    ``given`` maps field names to the values given anew (raw: unit strings, lists); keys that
    are not fields of ``request_cls`` replace nothing and are not kept.
    """
    from napkin.request import fields

    raw = dict(plan)
    if raw:
        _drop_replaced(request_cls, raw, given)
    names = {f.name for f in fields(request_cls)}
    raw.update({k: v for k, v in given.items() if k in names})
    return raw


def _drop_replaced(request_cls: type, raw: dict[str, Any], given: dict[str, Any]) -> None:
    """Drop from a plan's values what the given values replace (see :func:`merge`)."""
    from napkin.request import fields

    line = set(given)
    for k in line:
        for alt in ALTERNATIVES.get(k, ()):
            raw.pop(alt, None)
    frozen = raw.get("assumed")
    if isinstance(frozen, list) and all(isinstance(d, str) for d in frozen):  # else the parse says what is wrong
        stale = {d for d in frozen if set(DERIVED_DEFAULTS.get(d, ())) & line}
        for d in stale:
            raw.pop(d, None)
        raw["assumed"] = [d for d in frozen if d not in stale and d not in line]  # a given value is not a default
    info = {f.name: f for f in fields(request_cls)}
    if "gpu" in line and "gpu" in info and info["gpu"].container == "list":
        from napkin import catalog
        from napkin.errors import NapkinError

        def key(name: str) -> str:
            try:
                return catalog.gpu(name).key
            except NapkinError:
                return name

        values = given["gpu"] if isinstance(given["gpu"], (list, tuple)) else [given["gpu"]]
        named = {key(g.strip()) for v in values for g in str(v).split(",") if g.strip()}
        for name, f in info.items():
            if f.container == "dict" and isinstance(raw.get(name), dict) and name not in line:
                raw[name] = {k: v for k, v in raw[name].items() if key(str(k)) in named}
