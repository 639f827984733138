"""napkin: the cost and capacity of training and serving large language models.

Every result is a :class:`Report` carrying its derivation, assumptions and warnings::

    >>> import napkin
    >>> r = napkin.memory(params="70.6B", precision="bf16")
    >>> r["weights_bytes"]
    141200000000.0
"""

from __future__ import annotations

from typing import Any

from napkin.version import __version__

__all__ = [
    "InputError",
    "NapkinError",
    "Report",
    "UnknownName",
    "__version__",
    "allreduce",
    "amortise",
    "architecture",
    "bill",
    "calculate",
    "card",
    "check",
    "compare",
    "goodput",
    "gpu_hour",
    "journey",
    "ledger_report",
    "memory",
    "mfu",
    "optimal",
    "plan_serve",
    "plan_train",
    "roofline",
    "serve",
    "tokens",
    "train",
]

from napkin.errors import InputError, NapkinError, UnknownName


SUBMODULES = ("units", "errors", "derivation", "request", "catalog", "hardware", "model", "formulas",
              "calculators", "calibration", "charts", "plan", "ledger", "measure", "web", "token_count")


def __getattr__(name: str) -> Any:  # loaded on first use: `napkin --version` stays fast
    if name == "Report":
        from napkin.derivation import Report

        return Report
    if name in SUBMODULES:  # `import napkin; napkin.units.parse(...)` as the README writes it
        import importlib

        return importlib.import_module(f"napkin.{name}")
    raise AttributeError(f"module 'napkin' has no attribute {name!r}")


def calculate(name: str, raw: dict | None = None, /, **kwargs: Any) -> Report:
    """Run any registered calculator by name with raw values (unit strings welcome)."""
    from napkin import calculators

    return calculators.get(name)(raw, **kwargs)


def architecture(model: str, **kwargs: Any) -> Report:
    """Architecture, parameters and KV bytes per token of a catalog model or config.json.

    (Named ``architecture`` because ``napkin.model`` is the ModelSpec module.)
    """
    return calculate("model", model=model, **kwargs)


def _wrap(name: str, doc: str):
    def run(raw: dict | None = None, /, **kwargs: Any) -> Report:
        return calculate(name, raw, **kwargs)

    run.__name__ = run.__qualname__ = name.replace("-", "_")
    run.__doc__ = doc + "\n\nKeyword arguments are the command's options (unit strings welcome)."
    return run


memory = _wrap("memory", "Weights, KV cache and (training=True) static training state, and the fit.")
roofline = _wrap("roofline", "Ridge point and attainable FLOP/s of a GPU at an arithmetic intensity.")
mfu = _wrap("mfu", "Model FLOPs utilisation from tokens per step, step time and GPUs.")
allreduce = _wrap("allreduce", "Ring all-reduce volume per rank and time over a link.")
train = _wrap("train", "Cost, time and cluster size of a planned training run.")
compare = _wrap("compare", "Accelerators ranked for one training job by cost per token.")
check = _wrap("check", "A published training cost or GPU-hour claim checked against 6ND.")
amortise = _wrap("amortise", "Training cost spread over served tokens; the serving crossover.")
gpu_hour = _wrap("gpu-hour", "The loaded price of one GPU-hour.")
goodput = _wrap("goodput", "Goodput and checkpoint interval from failure rates.")
optimal = _wrap("optimal", "Compute-optimal parameters and tokens for a budget.")
serve = _wrap("serve", "Memory fit, prefill, decode and $/M tokens for serving a model.")
bill = _wrap("bill", "An API bill from the dated price catalog.")
plan_serve = _wrap("plan-serve", "Search serving configurations under latency SLOs.")
plan_train = _wrap("plan-train", "Search training parallelism: memory per GPU, step time, MFU, ranked.")
ledger_report = _wrap("ledger", "Realised cost of a run from its own logs.")
journey = _wrap("journey", "One prompt through a model, rung by rung.")
card = _wrap("card", "The numbers every engineer should know, computed.")
tokens = _wrap("tokens", "Token counts of text, offline.")
