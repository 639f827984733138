"""`python -m napkin.validation [--save-baseline]`: the serving validation run, and (for napkin's own
developers) storing its out-of-sample errors as the baseline every serve answer cites."""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    from napkin import calculators
    from napkin.validation import BASELINE
    from napkin.validation.runner import baseline_table

    r = calculators.get("validate")({"group": "serving"})
    table = baseline_table(r["serving"])
    for group, cells in table.items():
        print(f"{group:11} median {cells['all']['median']:.1%}  max {cells['all']['max']:.1%}  n {cells['all']['n']}")
    if "--save-baseline" in argv:
        BASELINE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        print(f"wrote {BASELINE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
