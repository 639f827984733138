"""Ledger test helpers: logs are written by the tests themselves; the store lives in tmp."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_store(tmp_path, monkeypatch):
    """Every test gets its own store: nothing is written to the user's ~/.local/share."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("NAPKIN_LEDGER_STORE", raising=False)
