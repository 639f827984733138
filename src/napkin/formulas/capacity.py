"""Replica capacity under a request rate: how many requests a replica sustains, how many replicas a
rate needs at a target utilisation, and what the prefills of admitted requests do to TPOT.

Scalar-or-array, like :mod:`napkin.formulas.serving`: ``napkin plan serve`` sweeps them over its grid.
"""

from __future__ import annotations

import math
from typing import Any

from napkin.formulas._array import is_scalar as _scalar
from napkin.formulas._array import maximum as _maximum

CEIL_SLACK = 1e-9  # 2.000000001 replicas of float noise is 2, not 3
NO_DECODE_LEFT = 1e-9  # the floor of 1 − λ · t_prefill: prefills take the whole second


def _ceil(x: Any) -> Any:
    if _scalar(x):
        return float(math.ceil(x))
    import numpy as np

    return np.ceil(x)


def replica_request_rate(batch: Any, *, output_tokens: Any, tpot_s: Any, prefill_s: Any) -> Any:
    """λ_max = B / (output · TPOT + B · t_prefill)   requests per second one replica sustains

    B slots each hold a request for output · TPOT of decoding; every admitted request's
    prefill pauses all decoding for t_prefill (no chunked prefill).
    Trap: B / (output · TPOT) alone forgets that prefills steal decode time.
    Source: Little's law over the decode slots; Orca (Yu et al. 2022) continuous batching.
    """
    return batch / (output_tokens * tpot_s + batch * prefill_s)


def replicas_for_rate(requests_per_s: Any, *, requests_per_s_per_replica: Any, utilization: Any) -> Any:
    """replicas = ceil(λ / (ρ · λ_max))

    The fewest replicas that carry λ requests per second with each loaded to at most ρ of the
    rate it sustains (λ_max, replica_request_rate).
    Trap: sizing at 100% load: queueing delay grows as 1 / (1 − ρ), so a fleet sized to its
    capacity misses its latency targets at the first burst.
    Source: Little's law and the M/M/1 queue (Kleinrock 1975, Queueing Systems, vol. 1).
    """
    return _ceil(requests_per_s / (utilization * requests_per_s_per_replica) - CEIL_SLACK)


def tpot_under_prefills(tpot_s: Any, *, requests_per_s: Any, prefill_s: Any) -> Any:
    """TPOT at load = TPOT / (1 − λ · t_prefill)

    A replica admitting λ requests per second spends λ · t_prefill of each second prefilling,
    and without chunked prefill every prefill pauses all decoding, so the decode steps that
    remain share what is left of the second: an upper bound on TPOT at that load.
    Trap: quoting a full-batch TPOT at load: the prefills of the requests that keep the batch
    full stretch it, by half when they take half the time.
    Source: Orca (Yu et al. 2022, OSDI) iteration-level scheduling; Agrawal et al. 2024,
    Sarathi-Serve (arXiv:2403.02310), on prefills stalling decodes.
    """
    return tpot_s / _maximum(1.0 - requests_per_s * prefill_s, NO_DECODE_LEFT)
