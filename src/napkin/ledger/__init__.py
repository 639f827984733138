"""The realised-cost ledger: what a run really cost per million tokens, from its own logs.

Readers turn each log format into one table of step records (step, wall time, GPUs
allocated, tokens in the step); :mod:`napkin.ledger.realised` does the arithmetic
(paid GPU time over advanced tokens) over that table, vectorised;
:mod:`napkin.ledger.drift` compares each day with the plan. polars and numpy are
imported only inside these modules' functions, never by ``import napkin``.

Definitions, in one place (each is also written into every report's derivation):

1. **Paid time** is allocated GPU time over wall-clock gaps, restarts included:
   ``Σ (t[i+1] − t[i]) · gpus_allocated[i]`` over consecutive records in log order.
2. **Advanced tokens** count forward progress only: ``(last step − first step) ·
   tokens per step``. A rollback (the step counter going back) raises the cost; it
   never inflates the denominator.
3. **Processed tokens** count every step run, re-runs after a rollback included.
4. Realised cost per million is **marginal** (compute at the given GPU-hour price) per
   **advanced** token: the same definition as the plan's marginal figure.
"""

from __future__ import annotations

from typing import Any

__all__ = ["read_log", "report"]


def read_log(path: str, **options: Any) -> Any:
    """Read one log into a :class:`napkin.ledger.readers.LogRead` (format sniffed by default)."""
    from napkin.ledger.readers import read_log as _read

    return _read(path, **options)


def report(*logs: str, **options: Any) -> Any:
    """The realised-cost Report of one or more logs (options as ``napkin ledger report``)."""
    from napkin.calculators import get

    return get("ledger")({"logs": list(logs), **options})
