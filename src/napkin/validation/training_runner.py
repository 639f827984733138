"""The training section of `napkin validate` (the planner's predictions against published runs)."""

from __future__ import annotations

from napkin.derivation import Report


def training_section(r: Report) -> None:
    try:
        from napkin.validation import training  # noqa: F401  (arrives with `napkin plan train`)
    except ImportError:
        r.note("training: the planner's predictions are not in this build yet")
        return
