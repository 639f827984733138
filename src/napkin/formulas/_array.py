"""Scalar-or-array helpers for formulas the planner sweeps: plain Python on floats (no numpy
import for the CLI's scalar path), numpy on arrays."""

from __future__ import annotations

from typing import Any


def is_scalar(*xs: Any) -> bool:
    return all(isinstance(x, (int, float)) for x in xs)


def maximum(a: Any, b: Any) -> Any:
    if is_scalar(a, b):
        return max(a, b)
    import numpy as np

    return np.maximum(a, b)


def minimum(a: Any, b: Any) -> Any:
    if is_scalar(a, b):
        return min(a, b)
    import numpy as np

    return np.minimum(a, b)


def where(cond: Any, a: Any, b: Any) -> Any:
    if is_scalar(cond, a, b):
        return a if cond else b
    import numpy as np

    return np.where(cond, a, b)
