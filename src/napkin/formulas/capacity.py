"""Replica capacity under a request rate: how many requests a replica sustains, how many replicas a
rate needs at a target utilisation, and what the prefills of admitted requests do to TPOT.

Scalar-or-array, like :mod:`napkin.formulas.serving`: ``napkin plan serve`` sweeps them over its grid.
"""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas._array import is_scalar as _scalar

CEIL_SLACK = 1e-9  # 2.000000001 replicas of float noise is 2, not 3
NO_DECODE_LEFT = 1e-9  # the floor of 1 − λ · t_prefill: prefills take the whole second


def _ceil(x: Any) -> Any:
    if _scalar(x):
        return float(math.ceil(x))
    import numpy as np

    return np.ceil(x)


def replicas_for_rate(requests_per_s: Any, *, requests_per_s_per_replica: Any, utilization: Any) -> Any:
    """replicas = ceil(λ / (ρ · λ_max))

    The fewest replicas that carry λ requests per second with each loaded to at most ρ of the
    rate it sustains (λ_max: its steady-state tokens/s over the output, prefills included).
    Trap: sizing at 100% load: queueing delay grows as 1 / (1 − ρ), so a fleet sized to its
    capacity misses its latency targets at the first burst.
    Source: Little's law and the M/M/1 queue (Kleinrock 1975, Queueing Systems, vol. 1).
    """
    return _ceil(requests_per_s / (utilization * requests_per_s_per_replica) - CEIL_SLACK)
