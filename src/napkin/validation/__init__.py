"""Measured points for `napkin validate`, each with its source and date, and what the last run found.

``serving.toml`` and ``training.toml`` hold published measurements recorded as their sources
state them; ``baseline.json`` the out-of-sample errors of the last `napkin validate`, which
every serving answer cites as its error bar and a test holds the model to.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

HERE = Path(__file__).parent
BASELINE = HERE / "baseline.json"


@functools.cache
def baseline() -> dict:
    """{group: {family or 'all': {median, max, n}}} from the last `napkin validate --save-baseline`; {} if none."""
    try:
        return json.loads(BASELINE.read_text())
    except FileNotFoundError:
        return {}
