"""What a fuzz run finds, counted by kind: the figures `make fuzz` prints and the README reports.

In the test suite (the default) the first problem fails the case, and hypothesis shrinks it to
the smallest input that shows it. With ``NAPKIN_FUZZ_TALLY=1`` (``make fuzz``) every case runs:
each problem is counted by kind, with the first input that showed it, and the test fails at the
end if any was found. With ``NAPKIN_FUZZ_REPORT=DIR`` each test writes its counts to a JSON
file in DIR, which ``python -m tests.fuzz.summary DIR`` adds up.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

TALLY = os.environ.get("NAPKIN_FUZZ_TALLY") == "1"

# The kinds of problem, in the order the summary prints them (the four first).
KINDS = ("internal error", "5xx", "multi-line error", "silent drop", "unescaped control character",
         "non-finite figure", "exit status", "leaked output", "unexpected status")


class Tally:
    """Cases run and problems found by one fuzz test (one surface: cli, web or ledger; one target)."""

    def __init__(self, surface: str, target: str):
        self.surface, self.target = surface, target
        self.cases = 0
        self.outcomes: Counter = Counter()  # exit status or HTTP status -> cases
        self.problems: Counter = Counter()
        self.examples: dict[str, str] = {}

    def case(self, outcome: int | None = None) -> None:
        """One case run; ``outcome`` its exit status or HTTP status (how many answered, how many were refused)."""
        self.cases += 1
        if outcome is not None:
            self.outcomes[str(outcome)] += 1

    def check(self, ok: bool, kind: str, detail: object) -> bool:
        """Count a problem of ``kind`` unless ``ok``; outside tally mode, fail the case at once."""
        if ok:
            return True
        assert kind in KINDS, kind
        if not TALLY:
            raise AssertionError(f"{kind}: {detail!s:.2000}")
        self.problems[kind] += 1
        self.examples.setdefault(kind, f"{detail!s:.1000}")
        return False

    def close(self) -> None:
        """Write the counts (``NAPKIN_FUZZ_REPORT``); fail if a problem was counted."""
        folder = os.environ.get("NAPKIN_FUZZ_REPORT")
        if folder:
            name = f"{self.surface}-{self.target.replace('/', '_').replace(' ', '_')}-{os.getpid()}.json"
            Path(folder, name).write_text(json.dumps({
                "surface": self.surface, "target": self.target, "cases": self.cases,
                "outcomes": dict(self.outcomes), "problems": dict(self.problems), "examples": self.examples}))
        assert not self.problems, f"{self.surface} {self.target}: {dict(self.problems)}; first of each: {self.examples}"
