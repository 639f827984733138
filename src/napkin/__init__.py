"""napkin: the cost and capacity of training and serving large language models.

Every result is a :class:`Report` carrying its derivation, assumptions and warnings::

    >>> import napkin
    >>> r = napkin.memory(params="70.6B", precision="bf16")
    >>> r["weights_bytes"]
    141200000000.0
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "InputError",
    "NapkinError",
    "Report",
    "UnknownName",
    "__version__",
    "allreduce",
    "calculate",
    "memory",
    "mfu",
    "model",
    "roofline",
]

from napkin.derivation import Report
from napkin.errors import InputError, NapkinError, UnknownName


def calculate(name: str, raw: dict | None = None, /, **kwargs: Any) -> Report:
    """Run any registered calculator by name with raw values (unit strings welcome)."""
    from napkin import calculators

    return calculators.get(name)(raw, **kwargs)


def model(model: str, **kwargs: Any) -> Report:
    """Architecture, parameters and KV bytes per token of a catalog model or config.json."""
    return calculate("model", model=model, **kwargs)


def memory(**kwargs: Any) -> Report:
    """Weights, KV cache and (with training=True) static training state, and the fit."""
    return calculate("memory", **kwargs)


def roofline(**kwargs: Any) -> Report:
    """Ridge point and attainable FLOP/s of a GPU at an arithmetic intensity."""
    return calculate("roofline", **kwargs)


def mfu(**kwargs: Any) -> Report:
    """Model FLOPs utilisation from tokens per step, step time and GPUs."""
    return calculate("mfu", **kwargs)


def allreduce(**kwargs: Any) -> Report:
    """Ring all-reduce volume per rank and time over a link."""
    return calculate("allreduce", **kwargs)
