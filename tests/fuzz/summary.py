"""Add up the counts the fuzz tests wrote (``NAPKIN_FUZZ_REPORT=DIR``) and print them: ``python -m tests.fuzz.summary DIR``.

One line per surface (cli, web, ledger): the cases run, how they ended (exit status or HTTP status),
and the problems of each kind, the issue's four first (internal errors, 5xx, multi-line errors,
silent drops). Exits 1 when any problem was counted or no case ran.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from tests.fuzz.tally import KINDS


def main(folder: str) -> int:
    cases: Counter = Counter()
    outcomes: dict[str, Counter] = {}
    problems: dict[str, Counter] = {}
    examples: dict[str, str] = {}
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        surface = data["surface"]
        cases[surface] += data["cases"]
        outcomes.setdefault(surface, Counter()).update(data.get("outcomes", {}))
        problems.setdefault(surface, Counter()).update(data["problems"])
        for kind, example in data["examples"].items():
            examples.setdefault(f"{surface} {data['target']} {kind}", example)
    if not cases:
        print("fuzz: no counts found in", folder)
        return 1
    total = Counter()
    for surface in sorted(cases):
        total.update(problems[surface])
        ends = ", ".join(f"{k}: {v:,}" for k, v in sorted(outcomes[surface].items()))
        print(f"fuzz {surface:6s} {cases[surface]:>8,} cases ({ends})")
    print(f"fuzz total  {sum(cases.values()):>8,} cases")
    for kind in KINDS:
        print(f"  {kind + ':':30s} {total[kind]:,}")
    for where, example in examples.items():
        print(f"  first {where}: {example}")
    return 1 if sum(total.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
