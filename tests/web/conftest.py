"""The web tests write nothing outside a temporary folder: the chart library's cache and the
ledger's store (which `napkin ledger report` keeps by default) go under the test's tmp_path."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_dirs(monkeypatch, tmp_path_factory):
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))
