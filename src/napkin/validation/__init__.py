"""Measured points for `napkin validate`, each with its source and date, and what the last run found.

``serving.toml`` and ``training.toml`` hold published measurements recorded as their sources
state them; ``baseline.json`` the out-of-sample errors of the last `napkin validate`, which
every serving answer cites as its error bar and a test holds the model to.
"""

from __future__ import annotations

from pathlib import Path

from napkin.catalog.efficiency import BASELINE
from napkin.catalog.efficiency import error_bars as baseline  # noqa: F401  (what serve cites, stored here)

HERE = Path(__file__).parent
