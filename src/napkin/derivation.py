"""The working behind every number: Step, Assumption, Warning and Report.

A calculator builds a Report as it computes, so the derivation is the code path itself::

    flops = report.step("train_flops", "6 · N · D", value=6 * n * d, unit="flops", N=n, D=d)
    report.assume("mfu", 0.40, "not measured: run `napkin measure` or a short trial", unit="fraction")
    report.warn("sparse-peak", "the peak given equals the H100's sparse figure")

Results are kept in base units under keys that carry the unit as a suffix
(``train_flops``, ``wall_s``, ``marginal_usd``); ``unit`` is a kind from
``napkin.units`` used only to format them for people.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from napkin import units


_JSON_ESCAPES = {0x2028: "\\u2028", 0x2029: "\\u2029", 0x7F: "\\u007f"}  # only ever inside JSON strings

class Step(msgspec.Struct, frozen=True):  # a Struct, not a dataclass: made in C, so a plain answer starts fast
    """One line of working: ``name = formula`` with its values substituted."""

    name: str
    formula: str
    value: Any
    unit: str | None
    values: dict[str, Any] = msgspec.field(default_factory=dict)
    note: str = ""
    cites: str = ""  # the formula function that computed it, "napkin.formulas.<module>.<name>"

    def to_dict(self, *, cite: bool = False) -> dict:
        vals = {k: (v[0] if _is_pair(v) else v) for k, v in self.values.items()}
        out = {"name": self.name, "formula": self.formula, "values": _plain(vals),
               "value": _plain(self.value), "unit": self.unit, "note": self.note}
        if cite and self.cites:
            out["cites"] = citation(self.cites)
        return out

    def citation_text(self) -> str:
        """The formula function, its trap and its source, on one line (empty when none is cited)."""
        if not self.cites:
            return ""
        c = citation(self.cites)
        parts = [f"formula {c['function']}"]
        parts += [f"{k}: {c[k]}" for k in ("trap", "source") if c[k]]
        return "; ".join(parts)

    def text(self) -> str:
        subs = ", ".join(f"{k} = {_fmt_value(v)}" for k, v in self.values.items())
        line = f"{self.name} = {self.formula}"
        if subs:
            line += f"   [{subs}]"
        line += f"   = {units.fmt_auto(self.value, self.unit)}"
        if self.note:
            line += f"   ({self.note})"
        return line


class Assumption(msgspec.Struct, frozen=True):
    """An input that was not given, or was given but not measured."""

    name: str
    value: Any
    note: str
    unit: str | None = None
    basis: str = "assumed"  # assumed | measured | catalog | given | reference | fitted | planned
    source: str = ""  # where a default's value comes from (catalog/assumptions.toml)
    replaced_by: str = ""  # the measurement that would replace it

    def to_dict(self, *, cite: bool = False) -> dict:
        out = {"name": self.name, "value": _plain(self.value), "unit": self.unit,
               "basis": self.basis, "note": self.note}
        if cite and (self.source or self.replaced_by):
            out["source"] = self.source
            out["replaced_by"] = self.replaced_by
        return out


class Warning(msgspec.Struct, frozen=True):  # noqa: A001 - the domain word; never the builtin in this module's users
    """A plausible input that falls into one of the classic traps (DESIGN: sparse peaks, query heads, busy GPUs, ...)."""

    code: str
    message: str

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


class Report:
    """Results, the steps that produced them, assumptions, warnings and notes."""

    def __init__(self, title: str, *, command: str | None = None):
        self.title = title
        self.command = command
        self.results: dict[str, Any] = {}
        self.units: dict[str, str | None] = {}
        self.steps: list[Step] = []
        self.assumptions: list[Assumption] = []
        self.warnings: list[Warning] = []
        self.notes: list[str] = []
        self.sections: dict[str, Report] = {}

    # ------------------------------------------------------------- building
    def step(self, name: str, formula: str, *, value: Any, unit: str | None = None,
             note: str = "", result: bool = True, cites: Any = None, **values: Any) -> Any:
        """Record ``name = formula`` (with ``values`` substituted) and return ``value``.

        The value is also stored as a result under ``name`` unless ``result=False``.
        ``cites`` is the formula function that computed the value: ``--explain --cite``
        prints its trap and source beside the step.
        """
        self.steps.append(Step(name, formula, value, unit, dict(values), note, _cited(cites)))
        if result:
            self.set(name, value, unit)
        return value

    def set(self, key: str, value: Any, unit: str | None = None) -> Any:
        """Store a result without a derivation line (an input echoed, a verdict)."""
        self.results[key] = value
        self.units[key] = unit
        return value

    def assume(self, name: str, value: Any, note: str, *, unit: str | None = None,
               basis: str = "assumed", source: str = "", replaced_by: str = "") -> Any:
        self.assumptions = [a for a in self.assumptions if a.name != name]
        self.assumptions.append(Assumption(name, value, note, unit, basis, source, replaced_by))
        return value

    def warn(self, code: str, message: str) -> None:
        if not any(w.code == code and w.message == message for w in self.warnings):
            self.warnings.append(Warning(code, message))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def merge(self, other: Report, *, prefix: str = "") -> None:
        """Fold another report's steps, assumptions and warnings into this one."""
        for s in other.steps:
            self.steps.append(Step(prefix + s.name, s.formula, s.value, s.unit, s.values, s.note, s.cites))
        for a in other.assumptions:
            self.assume(a.name, a.value, a.note, unit=a.unit, basis=a.basis, source=a.source,
                        replaced_by=a.replaced_by)
        for w in other.warnings:
            self.warn(w.code, w.message)

    def __getitem__(self, key: str) -> Any:
        return self.results[key]

    def __contains__(self, key: object) -> bool:  # `"wall_s" in report`
        return key in self.results

    def __iter__(self) -> Any:  # the result keys, as a mapping iterates
        return iter(self.results)

    def keys(self) -> Any:
        return self.results.keys()

    def get(self, key: str, default: Any = None) -> Any:
        return self.results.get(key, default)

    # ------------------------------------------------------------ rendering
    def to_dict(self, *, cite: bool = False) -> dict:
        """Results in base units, then the derivation, assumptions, warnings and notes.

        ``cite=True`` adds each step's formula function with its equation, trap and source,
        and each default assumption's source and the measurement that replaces it.
        """
        out = {k: _plain(v) for k, v in self.results.items()}
        out["derivation"] = [s.to_dict(cite=cite) for s in self.steps]
        out["assumptions"] = [a.to_dict(cite=cite) for a in self.assumptions]
        out["warnings"] = [w.to_dict() for w in self.warnings]
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def to_json(self, indent: int | None = 2, *, cite: bool = False) -> str:
        """JSON, UTF-8 kept; the characters JSON allows raw but a terminal or a JavaScript parser takes for
        a line break or hides (U+2028, U+2029, DEL) are escaped, as every other control character is."""
        import json

        text = json.dumps(self.to_dict(cite=cite), indent=indent, allow_nan=False, default=str, ensure_ascii=False)
        return text.translate(_JSON_ESCAPES)

    def rows(self) -> list[tuple[str, str]]:
        """(key, formatted value) for every scalar result, in insertion order."""
        out = []
        for k, v in self.results.items():
            if isinstance(v, (list, dict)):
                out.append((k, _fmt_nested(v, self.units.get(k))))
            else:
                out.append((k, _cell(v, self.units.get(k))))
        return out

    def explain(self, *, cite: bool = False) -> str:
        """The working: every step with its values substituted, then assumptions, warnings, notes.

        ``cite=True`` adds under each step the formula function that computed it with its trap
        and source, and under each default assumption its source and what measurement replaces it.
        """
        lines = ["derivation:"]
        for s in self.steps:
            lines.append("  " + s.text())
            if cite and s.cites:
                lines.append("      " + s.citation_text())
        if self.assumptions:
            lines += ["", "assumptions:"]
            for a in self.assumptions:
                lines.append(f"  {a.name} = {units.fmt_auto(a.value, a.unit)} ({a.basis}): {a.note}")
                if cite and a.source:
                    lines.append(f"      source: {a.source}" + (f"; replaced by: {a.replaced_by}" if a.replaced_by
                                                                 else ""))
        if self.warnings:
            lines += ["", "warnings:"]
            lines += [f"  [{w.code}] {w.message}" for w in self.warnings]
        if self.notes:
            lines += ["", "notes:"] + [f"  {n}" for n in self.notes]
        return "\n".join(lines)

    def text(self) -> str:
        """A plain aligned table: what the CLI prints when output is not a terminal."""
        rows = self.rows()
        width = max((len(k) for k, _ in rows), default=0)
        lines = [self.title]
        lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
        return "\n".join(lines + self.footer())

    def footer(self) -> list[str]:
        """Warnings, the inputs that were assumed, and notes: the lines under any table."""
        lines = [f"warning [{w.code}]: {w.message}" for w in self.warnings]
        guessed = [a for a in self.assumptions if a.basis in ("assumed", "reference")]
        if guessed:
            lines.append("assumed: " + "; ".join(f"{a.name} = {units.fmt_auto(a.value, a.unit)}" for a in guessed))
        fitted = [a for a in self.assumptions if a.basis == "fitted"]
        if fitted:  # fitted to published measurements (napkin validate): named, so a reader knows they are
            lines.append("fitted: " + "; ".join(f"{a.name} = {units.fmt_auto(a.value, a.unit)}" for a in fitted))
        measured = [a for a in self.assumptions if a.basis == "measured"]
        if measured:  # a figure from a calibration file: where and when it was measured
            lines.append("measured: " + "; ".join(f"{a.name} = {units.fmt_auto(a.value, a.unit)} ({a.note})"
                                                  for a in measured))
        planned = [a for a in self.assumptions if a.basis == "planned"]
        if planned:  # a figure another napkin command predicted (--mfu auto: napkin plan train's best layout)
            lines.append("planned: " + "; ".join(f"{a.name} = {units.fmt_auto(a.value, a.unit)} ({a.note})"
                                                 for a in planned))
        lines += [f"note: {n}" for n in self.notes]
        return lines

    def _repr_html_(self) -> str:
        return self.html()

    def html(self) -> str:
        import html

        e = html.escape
        parts = [f"<div class='napkin-report'><h3>{e(self.title)}</h3><table>"]
        for k, v in self.rows():
            parts.append(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>")
        parts.append("</table>")
        if self.steps:
            parts.append("<details><summary>derivation</summary><ol>")
            parts += [f"<li><code>{e(s.text())}</code></li>" for s in self.steps]
            parts.append("</ol></details>")
        if self.assumptions:
            parts.append("<h4>assumptions</h4><ul>")
            parts += [f"<li>{e(a.name)} = {e(units.fmt_auto(a.value, a.unit))} ({e(a.basis)}): {e(a.note)}</li>"
                      for a in self.assumptions]
            parts.append("</ul>")
        if self.warnings:
            parts.append("<h4>warnings</h4><ul>")
            parts += [f"<li><b>{e(w.code)}</b>: {e(w.message)}</li>" for w in self.warnings]
            parts.append("</ul>")
        parts.append("</div>")
        return "".join(parts)

    def __repr__(self) -> str:
        return f"Report({self.title!r}, {len(self.results)} results, {len(self.steps)} steps)"


def _cited(fn: Any) -> str:
    """The dotted path of a cited formula function (or the path as given)."""
    if fn is None:
        return ""
    if isinstance(fn, str):
        return fn
    return f"{fn.__module__}.{fn.__qualname__}"


def citation(path: str) -> dict[str, str]:
    """{function, equation, trap, source} of a formula function named by its dotted path."""
    from napkin.formulas import citation as parse

    return parse(path)


def _plain(v: Any) -> Any:
    """JSON-safe: numpy scalars to floats, non-finite floats to None."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Sequence) and not isinstance(v, (str, bytes, bytearray)):  # rows made when read (a sweep's)
        return [_plain(x) for x in v]
    if hasattr(v, "to_dict") and not isinstance(v, type):
        return _plain(v.to_dict())
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return None
    if f == int(f) and abs(f) < 2**53 and not isinstance(v, float):
        return int(f)
    return f


def _is_pair(v: Any) -> bool:
    """A substituted value given with its unit kind: ``(7e9, "count")``."""
    return isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], (str, type(None)))


def _fmt_value(v: Any) -> str:
    if _is_pair(v):
        return units.fmt_auto(v[0], v[1])
    return units.fmt_auto(v, None)


def _fmt_nested(v: Any, kind: str | None = None) -> str:
    """A list or dict result on one line; numbers in it take the key's unit kind, if one was given."""
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_fmt_nested(x, kind)}" for k, x in v.items())
    if isinstance(v, list):
        if len(v) > 6:
            return f"[{len(v)} items]"
        return "[" + ", ".join(_fmt_nested(x, kind) for x in v) + "]"
    return _cell(v, kind)


def _cell(v: Any, kind: str | None) -> str:
    """One figure of the table; NaN, a ratio with no value (0/0: characters per token of an empty file), reads "-"."""
    if isinstance(v, float) and math.isnan(v):
        return "-"
    return units.fmt_auto(v, kind)
