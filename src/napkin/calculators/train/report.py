"""The Report of `napkin train`: $/M tokens, energy and the cost breakdown in their units; the sweep and tornado as tables."""

from __future__ import annotations

from napkin.calculators.train.sensitivity import sensitivity_text
from napkin.calculators.train.vary import vary_text
from napkin.derivation import Report
from napkin.units import KWH_J, fmt_auto
from napkin.units import format as fmt


class TrainReport(Report):
    """A Report whose table shows $/M tokens, energy and the cost breakdown in their units."""

    NESTED_UNITS = {"usd_per_million_tokens": "usd_per_million", "cost_breakdown_usd": "usd"}
    HIDDEN = ("sensitivity", "vary", "denominators")
    vary_axes: list[tuple[str, list[str]]] = []  # the varied inputs with their values as typed (train/vary.py)

    def rows(self) -> list[tuple[str, str]]:
        out = []
        for k, v in self.results.items():
            if k in self.HIDDEN:
                continue
            if k == "usd_per_million_tokens" and isinstance(v, dict):
                denom = self.results.get("denominators") or {}
                out.append((k, ", ".join(f"{n}: {fmt(x, 'usd_per_million')}"
                                         + (f" {denom[n].split()[0]}" if n in denom else "")
                                         for n, x in v.items())))
            elif k in self.NESTED_UNITS and isinstance(v, dict):
                kind = self.NESTED_UNITS[k]
                out.append((k, ", ".join(f"{n}: {fmt(x, kind)}" for n, x in v.items())))
            elif k == "energy_kwh" and isinstance(v, (int, float)):
                out.append((k, fmt(v * KWH_J, "joules")))
            elif k == "energy_household_years" and isinstance(v, (int, float)) and v >= 100:
                out.append((k, f"{v:,.0f}"))  # 1,936 household-years, not 1.936k
            elif isinstance(v, dict):
                out.append((k, ", ".join(f"{n}: {fmt_auto(x, None)}" for n, x in v.items())))
            else:
                out.append((k, fmt_auto(v, self.units.get(k))))
        return out

    def text(self) -> str:
        sweep = self.results.get("vary")
        if sweep and self.vary_axes:
            return self.vary_text()
        base = super().text()
        rows = self.results.get("sensitivity")
        if not rows:
            return base
        return base + "\n" + sensitivity_text(rows)


    def vary_text(self) -> str:
        """The sweep's table, then the base plan's warnings and the defaults it assumed that were not varied."""
        lines = [vary_text(self.title, self.vary_axes, self.results["vary"]["rows"])]
        lines += [f"warning [{w.code}]: {w.message}" for w in self.warnings]
        varied = {n for n, _ in self.vary_axes}
        guessed = [a for a in self.assumptions if a.basis in ("assumed", "reference") and a.name not in varied]
        if guessed:
            lines.append("assumed: " + "; ".join(f"{a.name} = {fmt_auto(a.value, a.unit)}" for a in guessed))
        return "\n".join(lines)
