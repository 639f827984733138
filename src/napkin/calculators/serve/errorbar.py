"""The error bar of a serving answer: how far napkin's predictions were from published measurements.

`napkin validate` runs the model on measured serving runs (src/napkin/validation/serving.toml)
and stores the out-of-sample median error of each kind of answer, per accelerator family, in
src/napkin/validation/baseline.json; every serve answer names the one that applies to it.
"""

from __future__ import annotations

from napkin.catalog import efficiency as eff
from napkin.derivation import Report

from .inputs import Setup
from .request import ServeRequest

METRICS = (("tokens_per_s", "throughput"), ("tpot_s", "tpot"), ("ttft_s", "ttft"))


def error_bar(r: Report, s: Setup, req: ServeRequest) -> None:
    table = eff.error_bars()
    if not table or s.by_hand:  # figures by hand: no published measurement covers the part
        return
    fam = eff.family(s.g.key).key
    out: dict[str, str] = {}
    for key, group in METRICS:
        g = table.get(group, {})
        cell = g.get(fam) if g.get(fam, {}).get("n", 0) >= 3 else g.get("all")
        if not cell:
            continue
        where = f"{s.g.name.split()[0]}" if cell is g.get(fam) else "all"
        out[key] = (f"median error {cell['median']:.0%} (max {cell['max']:.0%}) on {cell['n']} published "
                    f"{'' if where == 'all' else where + ' '}points, out of sample")
    if out:
        r.set("error_bar", out)
