"""Every public formula states its equation, trap and source, and `--explain --cite` shows them.

DESIGN.md: a formula's docstring has three parts: the equation, **Trap:**, **Source:**. The
citation parser reads them back, so the working a user reads cites the function that ran.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import napkin.formulas
from napkin.formulas import citation


def public_formulas() -> list[str]:
    out = []
    for info in pkgutil.iter_modules(napkin.formulas.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"napkin.formulas.{info.name}")
        for name, fn in vars(mod).items():
            if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == mod.__name__:
                out.append(f"{mod.__name__}.{name}")
    return sorted(out)


@pytest.mark.parametrize("path", public_formulas())
def test_every_formula_has_equation_trap_and_source(path: str) -> None:
    c = citation(path)
    assert c["equation"], f"{path}: no equation line"
    assert c["trap"], f"{path}: no Trap: paragraph"
    assert c["source"], f"{path}: no Source: paragraph"


def test_citation_reads_the_three_parts() -> None:
    c = citation("napkin.formulas.serving.microbatch")
    assert c == {"function": "serving.microbatch",
                 "equation": "b = max(B / pp, 1): sequences per pipeline micro-batch",
                 "trap": "with fewer sequences than stages, stages idle; the pipeline adds no throughput.",
                 "source": "GPipe (Huang et al. 2019) micro-batching."}


def test_a_cited_step_shows_its_trap_and_source() -> None:
    from napkin.derivation import Report
    from napkin.formulas import serving as sv

    r = Report("t")
    r.step("b", "max(B / pp, 1)", value=sv.microbatch(8.0, pp=4.0), B=8, pp=4, cites=sv.microbatch)
    plain = r.explain()
    cited = r.explain(cite=True)
    assert "GPipe" not in plain
    assert cited.splitlines()[2] == ("      formula serving.microbatch; trap: with fewer sequences than stages, "
                                     "stages idle; the pipeline adds no throughput.; source: GPipe (Huang et al. "
                                     "2019) micro-batching.")
    assert r.to_dict()["derivation"][0].keys() == {"name", "formula", "values", "value", "unit", "note"}
    assert r.to_dict(cite=True)["derivation"][0]["cites"]["function"] == "serving.microbatch"
