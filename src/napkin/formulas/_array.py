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


def same_values(a: Any, b: Any) -> bool:
    """Whether two rates are the same values (a catalog's scalars, or the planner's per-row arrays)."""
    if a is b:
        return True
    if is_scalar(a, b):
        return a == b  # a plain answer's scalars: no numpy on its path
    import numpy as np

    return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))


def gate_or_true(on: Any) -> Any:
    """True when every cell of ``on`` is (a GEMM's time needs no gate), else ``on``."""
    if isinstance(on, bool):  # a plain answer's scalar: no numpy on its path
        return on
    import numpy as np

    return True if bool(np.all(on)) else on


def all_zero(x: Any) -> bool:
    """Whether every cell of ``x`` is 0 (a scalar without numpy)."""
    if is_scalar(x):
        return x == 0
    import numpy as np

    return not np.any(x)
