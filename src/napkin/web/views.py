"""What the page shows for one calculation, and how each tab is described.

:func:`view` is the answer to ``POST /api/<name>/view``: the report (what ``--json``
prints), its figures formatted with their units, lists of records as tables, the working
with each step's formula, trap and source, the charts, and the equivalent command.
:func:`describe_calculator` is one calculator in ``GET /api``: its fields with their
units, bounds and hints, and the worked example its tab opens with.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

from napkin import units
from napkin.web.calculation import calculator, charts_for, command_words, run, web_checks
from napkin.web.command import cli_command
from napkin.web.uploads import uploads_as_paths

log = logging.getLogger("napkin.web")

# A short unit label beside each input; the long form (units.EXPECTED) is the hint under it.
UNIT_LABELS: dict[str, str] = {
    "number": "", "count": "count", "bytes": "bytes", "flops": "FLOP", "flops_per_s": "FLOP/s",
    "bytes_per_s": "bytes/s", "seconds": "time", "usd": "$", "usd_per_hour": "$/h",
    "usd_per_million": "$/M tokens", "usd_per_kwh": "$/kWh", "fraction": "0–1 or %", "watts": "W",
    "per_s": "/s", "joules": "J", "int": "whole number", "precision": "precision", "name": "name",
    "text": "text", "choice": "choice", "bool": "yes/no", "path": "file",
}
EXTRA_HINTS: dict[str, str] = {
    "int": "a whole number such as 8 or 2k",
    "precision": "a precision such as bf16, fp8 or int4",
    "name": "a catalog name",
    "path": "a file to upload (read in memory)",
}

def describe_calculator(name: str) -> dict:
    """One calculator for ``GET /api``: fields with units and bounds, the example it opens with."""
    from napkin.request import describe
    from napkin.web.examples import EXAMPLES

    calc = calculator(name)
    fields = []
    for f in describe(calc.request):
        kind = f["kind"]
        f["unit"] = f.get("unit") or UNIT_LABELS.get(kind, "")
        f["expected"] = units.EXPECTED.get(kind) or EXTRA_HINTS.get(kind, "")
        f["upload"] = kind == "path"
        f["default"] = _jsonable(f["default"])
        fields.append(f)
    return {
        "name": name,
        "title": calc.title,
        "help": calc.help,
        "establishes": calc.establishes,
        "needs_measuring": calc.needs_measuring,
        "command": " ".join(command_words(name)),
        "upload": any(f["upload"] for f in fields),
        "fields": fields,
        "example": {k: _jsonable(v) for k, v in EXAMPLES.get(name, {}).items()},
        **_sample(name),
    }


SAMPLE_TYPES = {".csv": "text/csv", ".toml": "application/toml", ".json": "application/json"}


def _sample(name: str) -> dict:
    """A tab that reads a file: the field that needs one, the sample files its example attaches, the offer."""
    from pathlib import PurePosixPath

    from napkin.web.examples import SAMPLES

    if name not in SAMPLES:
        return {}
    s = SAMPLES[name]
    files = {field: [{"url": f"/static/examples/{n}", "name": n, "type": SAMPLE_TYPES.get(PurePosixPath(n).suffix, "")}
                     for n in names] for field, names in s["files"].items()}
    return {"needs_file": s["needs_file"], "example_files": files, "sample_offer": s["offer"], "sample_note": s["note"]}


def _jsonable(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


def view(name: str, raw: dict[str, Any]) -> dict:
    """Everything the page shows for one calculation."""
    checked = web_checks(name, raw)
    with uploads_as_paths(checked, calculator(name).request) as (resolved, clean):
        report = run(name, resolved)
        chart_error = None
        try:
            charts = charts_for(name, report)
        except Exception:  # a broken chart must not hide the figures
            log.exception("charts of %s failed", name)
            charts, chart_error = {}, "the chart could not be drawn for these inputs"
        out = _view_dict(name, raw, report, charts, chart_error)
        return json.loads(clean(json.dumps(out, allow_nan=False, default=str, ensure_ascii=False)))


# A table cell's unit kind, from its key (JSON keys carry their unit): the first rule that matches wins.
CELL_KINDS: tuple[tuple[str, str], ...] = (
    ("usd_per_million", "usd_per_million"), ("usd_per_gpu_hour", "usd_per_hour"), ("usd_per_hour", "usd_per_hour"),
    ("flops_per_s", "flops_per_s"), ("bytes_per_s", "bytes_per_s"), ("flops_per_usd", "flops"),
    ("_per_s", "per_s"), ("_per_gpu_s", "per_s"), ("_usd", "usd"), ("_flops", "flops"), ("_bytes", "bytes"),
    ("_s", "seconds"), ("_tokens", "count"), ("tokens", "count"), ("params", "count"), ("gpu_hours", "count"),
    ("usd", "usd"),
)
# "X_per_<thing>": X for one thing (a sequence, a step), in X's unit
PER_THING = re.compile(r"(.+?)_per_(sequence|step|token|request|user|gpu|node|replica|layer|day)")
FRACTION_KEYS = ("mfu", "hfu", "goodput", "utilization", "goodput_tokens", "goodput_time", "fraction_of_peak")
BARE_KEYS = {"flops": "flops", "bytes": "bytes", "seconds": "seconds", "share": "fraction"}
TABLE_ROWS = 100


def cell_kind(key: str) -> str | None:
    """The unit kind a table cell takes from its column's key (``ttft_s`` is seconds)."""
    if key in FRACTION_KEYS or key.endswith("_fraction") or key.startswith(("mfu_", "goodput_")):
        return "fraction"
    if key in BARE_KEYS:  # a rung's FLOPs; an operator row's bytes, time and share of the step
        return BARE_KEYS[key]
    for pattern, kind in CELL_KINDS:
        # rates and prices may carry a qualifier after the unit (usd_per_million_output_tokens), as a
        # word of its own: kv_bytes_per_sequence is bytes and batch_s_per_step seconds, not rates per second
        qualified = kind in ("usd_per_million", "usd_per_hour", "per_s") and f"{pattern}_" in key
        if key.endswith(pattern) or qualified:
            return kind
    per = PER_THING.fullmatch(key)  # kv_bytes_per_sequence is bytes (for one sequence), decode_s_per_token seconds
    return cell_kind(per.group(1)) if per else None


def _cell(key: str, value: Any, kind: str | None = None) -> str:
    """One table cell; ``kind`` is the unit the record states for it (a rung's ``units``), else the key's."""
    if value is None:
        return ""
    if isinstance(value, dict):  # one line per entry: the page keeps the breaks; entries take the key's unit
        inner = kind or cell_kind(key)  # (memory_bytes_per_gpu's weights are bytes, step_parts_s's compute seconds)
        return "\n".join(f"{k}: {_cell(k, v, inner)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value) and sum(map(len, value)) > 60:
            return "\n".join(value)  # notes: one per line
        return f"[{len(value)} items]" if len(value) > 6 else ", ".join(_cell(key, v) for v in value)
    if isinstance(value, float) and not math.isfinite(value):  # a ratio with no value (0/0): "-", as the CLI's tables
        return "-"
    if kind is None and isinstance(value, (int, float)) and not isinstance(value, bool):
        kind = cell_kind(key)
    try:
        return units.fmt_auto(value, kind)
    except (ValueError, TypeError):
        return units.fmt_auto(value, None)


# A record that states its figures' units (a journey rung: ``figures``, ``units`` and ``working``, each keyed by
# figure) is shown as the CLI prints it: one line per figure, formatted by its own unit, with its working.
FIGURES, FIGURE_UNITS, FIGURE_WORKING = "figures", "units", "working"
# folded into the figures column (the units format it, the working follows it) or repeated by the page's
# derivation below (every step of every rung): not columns of their own
FOLDED = (FIGURE_UNITS, FIGURE_WORKING, "derivation")


def _states_units(record: dict) -> bool:
    return isinstance(record.get(FIGURES), dict) and isinstance(record.get(FIGURE_UNITS), dict)


def _figures_cell(record: dict) -> str:
    kinds, work = record[FIGURE_UNITS], record.get(FIGURE_WORKING) or {}
    lines = []
    for k, v in record[FIGURES].items():
        line = f"{k}: {_cell(k, v, kinds.get(k))}"
        lines.append(f"{line}  = {work[k]}" if k in work else line)
    return "\n".join(lines)


def tables(report: Any) -> dict[str, dict]:
    """Results that are lists of records (a ranking, days of a ledger), formatted as tables."""
    out = {}
    for key, value in report.results.items():
        if isinstance(value, Sequence) and not isinstance(value, (list, str)) and hasattr(value, "to_dict"):
            value = value.to_dict()  # a list made only when read (plan serve's cloud of points)
        if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            folded = FOLDED if all(_states_units(row) for row in value) else ()
            columns = [c for c in dict.fromkeys(c for row in value for c in row) if c not in folded]
            rows = [[_figures_cell(row) if folded and c == FIGURES else _cell(c, row.get(c)) for c in columns]
                    for row in value[:TABLE_ROWS]]
            out[key] = {"columns": columns, "rows": rows, "total": len(value)}
    return out


def _view_dict(name: str, raw: dict[str, Any], report: Any, charts: dict, chart_error: str | None) -> dict:
    shown_as_tables = tables(report)  # a list of records is a table below, not a dump in the figures
    return {
        "title": report.title,
        "report": json.loads(report.to_json(indent=None)),
        "report_json": report.to_json() + "\n",  # byte for byte what `--json` prints: Download JSON saves this
        "rows": [[k, v] for k, v in report.rows() if k not in shown_as_tables],
        "derivation": [s.text() for s in report.steps],
        # beside each step, the formula function that computed it: its equation, trap and source
        # (what `--json --cite` gives as "cites"; null for a step no formula function computed)
        "citations": [s.to_dict(cite=True).get("cites") for s in report.steps],
        "assumptions": [_assumption(a) for a in report.assumptions],
        "tables": shown_as_tables,
        "charts": charts,
        "chart_error": chart_error,
        "cli": cli_command(name, dict(raw)),
    }


def _assumption(a: Any) -> dict:
    """One assumption as the page lists it, with a default's source and what measurement replaces it."""
    cited = a.to_dict(cite=True)
    return {"name": a.name, "value": units.fmt_auto(a.value, a.unit), "basis": a.basis, "note": a.note,
            "source": cited.get("source", ""), "replaced_by": cited.get("replaced_by", "")}
