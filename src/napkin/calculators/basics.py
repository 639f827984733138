"""Kept for the modules not moved yet: the shared resolution layer and KV steps, under their old address.

`napkin model`, `memory`, `roofline`, `mfu` and `allreduce` are one module each now
(calculators/model.py, ...); what other modules imported from here lives in the shared
layer, :mod:`napkin.calculators.resolve` and :mod:`napkin.calculators.steps`. Import it
from there: this module goes once serve, journey, plan serve and the ledger do.
"""

from __future__ import annotations

from napkin.calculators.resolve import gpu_or_none, model_or_none, peak_of, resolve_params, warn_if_sparse
from napkin.calculators.steps import kv_held, kv_held_step, kv_step, kv_window_note

__all__ = ["gpu_or_none", "kv_held", "kv_held_step", "kv_step", "kv_window_note", "model_or_none", "peak_of",
           "resolve_params", "warn_if_sparse"]
