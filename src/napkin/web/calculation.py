"""One calculation from the web's raw values: the checks the web adds, the parse, the run.

Requests go through :func:`napkin.request.parse_request` and the registered calculator's
``run``, exactly as on the command line; this module adds only what the web refuses that
the CLI allows (server paths, processes, unbounded planner grids) and the upload handling.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

from napkin.errors import InputError
from napkin.web.uploads import is_upload, uploads_as_paths

# calculator name -> the words after `napkin` on the command line, where they differ
COMMAND_WORDS: dict[str, list[str]] = {"plan-serve": ["plan", "serve"], "plan-train": ["plan", "train"],
                                       "ledger": ["ledger", "report"]}

# Attached to calculators that have no charts of their own (their modules belong to others).
FALLBACK_CHARTS: dict[str, str] = {
    "memory": "napkin.charts.memory:memory_charts",
    "roofline": "napkin.charts.roofline:roofline_charts",
}

# Fields that bound the work a planner does per request, capped on the web.
GRID_CAP_FIELDS = ("max_configurations", "max_configs", "max_grid")
# 200k serving configurations take about 0.7 s and 200 MB on one core: the most one page request may ask
WEB_GRID_CAP = 200_000


def _plan_serve_grid(req: Any) -> int:
    """Configurations plan-serve evaluates: (GPU, precision) × replica sizes × TP degrees × batches."""
    sizes = sum(1 for i in range(7) if 2**i <= req.max_gpus)
    return len(req.gpu) * len(req.precision) * sizes * sizes * len(set(req.batch))


# calculator name -> the size of the grid a request asks for (checked against WEB_GRID_CAP)
GRID_SIZE: dict[str, Callable[[Any], int]] = {"plan-serve": _plan_serve_grid}

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+:@-]{0,127}$")


def calculator(name: str) -> Any:
    """The registered Calculator (UnknownName for a name not in the registry).

    A registered calculator whose module fails to import raises: the request is a 500 and
    the log names the module, never a calculator quietly missing from the page.
    """
    from napkin import calculators

    return calculators.get(name)


def field_infos(calc: Any) -> dict[str, Any]:
    """The calculator's request fields by name."""
    from napkin.request import fields

    return {f.name: f for f in fields(calc.request)}


def command_words(name: str) -> list[str]:
    """The command line that runs a calculator: ``["napkin", "plan", "serve"]``."""
    return ["napkin", *COMMAND_WORDS.get(name, [name])]


def web_checks(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """What the web refuses that the CLI allows: server-side paths, and unbounded grids.

    A ``path`` field must be an upload (the page never reads the server's files); a
    ``name`` field must be a catalog name, not a path to a config.json on the server.
    Planner grids are capped in :func:`parse`.
    """
    calc = calculator(name)
    infos = field_infos(calc)
    out = dict(raw)
    for key, val in raw.items():
        info = infos.get(key.replace("-", "_").lstrip("_"))
        if info is None or val is None or val == "":
            continue
        if info.meta.get("cli_only"):  # where the server connects, how many processes it starts
            raise InputError(info.name, val, "is not available on the web page",
                             f"run `{' '.join(command_words(name))} {info.option} ...` in a terminal")
        if info.kind == "path" and not is_upload(val):
            raise InputError(info.name, val, "must be an uploaded file on the web page",
                             f"upload it, or run `{' '.join(command_words(name))} {info.option} FILE` in a terminal")
        if info.kind == "name":
            items = val if isinstance(val, list) else [val]
            if info.container == "list":
                items = [p for item in items for p in (str(item).split(",") if isinstance(item, str) else [item])]
            for item in items:
                text = str(item).strip()
                if text and (not _NAME_RE.match(text) or text.endswith(".json") or os.path.exists(text)):
                    raise InputError(info.name, text, "must be a catalog name on the web page",
                                     "a config.json path works from the CLI: `napkin model path/config.json`")
    return out


def with_grid_cap(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A planner's grid bound, set to the web's cap where the request does not give one."""
    infos = field_infos(calculator(name))
    out = dict(raw)
    for cap in GRID_CAP_FIELDS:
        if cap in infos and out.get(cap) in (None, "") and out.get(cap.replace("_", "-")) in (None, ""):
            out[cap] = WEB_GRID_CAP
    return out


def parse(name: str, raw: dict[str, Any]) -> Any:
    """The calculator's request from raw values, within the web's planner caps."""
    from napkin.request import parse_request

    calc = calculator(name)
    req = parse_request(calc.request, with_grid_cap(name, raw))
    for cap in GRID_CAP_FIELDS:
        value = getattr(req, cap, None)
        if isinstance(value, (int, float)) and value > WEB_GRID_CAP:
            raise InputError(cap, value, f"exceeds the web page's cap of {WEB_GRID_CAP:,}",
                             f"give at most {WEB_GRID_CAP:,}, or run the planner from the CLI")
    if name in GRID_SIZE:
        size = GRID_SIZE[name](req)
        if size > WEB_GRID_CAP:
            raise InputError("grid", f"{size:,} configurations", f"exceeds the web page's cap of {WEB_GRID_CAP:,}",
                             f"consider fewer GPUs, precisions or batches, or run `{' '.join(command_words(name))}` "
                             "in a terminal")
    return req


def charts_for(name: str, report: Any) -> dict[str, dict]:
    """The calculator's own charts, or the fallback chart builders kept in napkin.charts."""
    calc = calculator(name)
    fn: Callable | None = calc.charts
    if fn is None and name in FALLBACK_CHARTS:
        import importlib

        module, attr = FALLBACK_CHARTS[name].split(":")
        fn = getattr(importlib.import_module(module), attr)
    return dict(fn(report)) if fn is not None else {}


def run(name: str, raw: dict[str, Any]) -> Any:
    """Parse and run one calculation: the Report that ``--json`` prints."""
    return calculator(name).run(parse(name, raw))


def run_json(name: str, raw: dict[str, Any], *, cite: bool = False) -> str:
    """One calculation as the JSON text ``napkin <name> --json`` prints (``cite``: ``--json --cite``)."""
    checked = web_checks(name, raw)
    with uploads_as_paths(checked, calculator(name).request) as (resolved, clean):
        return clean(run(name, resolved).to_json(cite=cite))
