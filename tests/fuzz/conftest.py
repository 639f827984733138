"""What the fuzz suites share: the spy on infinite figures in a report's JSON."""

from __future__ import annotations

import math
from typing import Any

import pytest

from napkin import derivation


@pytest.fixture(scope="module")
def non_finite():
    """Infinite numbers a report held when it was turned into JSON (shown as null: a figure that overflowed).

    A NaN is not counted: napkin writes 0/0 as NaN on purpose for a ratio that has no value (the
    characters per token of an empty file), which the JSON shows as null and the table as "-".
    """
    seen: list[float] = []
    real = derivation._plain

    def spy(v: Any) -> Any:
        if isinstance(v, float) and math.isinf(v):
            seen.append(v)
        return real(v)

    mp = pytest.MonkeyPatch()
    mp.setattr(derivation, "_plain", spy)
    yield seen
    mp.undo()
