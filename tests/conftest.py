"""Shared test helpers.

* ``worked(*ids)``: worked examples of the seeds (tests/golden/worked-examples.json, a
  copy of shared/data/worked-examples.json), for golden tests that cite their id.
* ``run_cli(*args)``: the napkin CLI through click's runner (stdout is not a terminal,
  so the plain-text table is printed, exactly).
* ``NAPKIN_TODAY`` pins the date prices are aged from (2026-12-01), so outputs are the same
  every day; set it yourself to look at another date.
* A skipped test fails the run: every part the suite needs must be installed
  (set NAPKIN_ALLOW_SKIP=1 to look at a partial environment by hand).
* Hypothesis draws the same examples on every run (derandomized), so CI passes or fails on
  the code, not on the draw; NAPKIN_HYPOTHESIS=explore draws new ones each run (do that
  when changing a property, and keep any failure it finds as an explicit test).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import settings

# Prices are aged from a pinned date, so the "older than 180 days" warnings in exact outputs (and in
# the README's, which its test runs in subprocesses that inherit this) do not change from day to day.
os.environ.setdefault("NAPKIN_TODAY", "2026-12-01")

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("NAPKIN_HYPOTHESIS", "ci"))

GOLDEN = Path(__file__).parent / "golden" / "worked-examples.json"


class Example(NamedTuple):
    id: str
    seed: str
    rule: str
    inputs: dict[str, Any]
    expected: dict[str, Any]
    rel_tol: float
    note: str

    def __str__(self) -> str:
        return self.id


def _examples() -> dict[str, Example]:
    data = json.loads(GOLDEN.read_text())
    return {e["id"]: Example(e["id"], e["seed"], e["rule"], e["inputs"], e["expected"],
                             e["rel_tol"], e.get("note", "")) for e in data["examples"]}


EXAMPLES = _examples()


def worked(*ids: str) -> list[Example]:
    """The worked examples with these ids (KeyError on a typo, so a test cannot go missing)."""
    return [EXAMPLES[i] for i in ids]


def approx(expected: Any, rel_tol: float) -> Any:
    """pytest.approx with the example's tolerance; rel_tol 0 means exact to float rounding."""
    return pytest.approx(expected, rel=max(rel_tol, 1e-12), abs=0)


@pytest.fixture
def run_cli():
    from click.testing import CliRunner

    from napkin.cli import cli

    def run(*args: str, code: int | None = 0, input: str | None = None):
        result = CliRunner().invoke(cli, [str(a) for a in args], input=input)
        if code is not None and result.exit_code != code:
            raise AssertionError(f"exit {result.exit_code} != {code}\nstdout:\n{result.stdout}\nstderr:\n"
                                 f"{result.stderr}\nexception: {result.exception!r}")
        return result

    return run


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("NAPKIN_ALLOW_SKIP"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped and session.exitstatus == 0:
        reporter.write_line(f"FAILED: {skipped} test(s) skipped; a required part is missing", red=True)
        session.exitstatus = 1
