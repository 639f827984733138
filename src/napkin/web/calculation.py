"""One calculation from the web's raw values: the checks the web adds, the parse, the run.

Requests go through :func:`napkin.request.parse_request` and the registered calculator's
``run``, exactly as on the command line; this module adds only what the web refuses that
the CLI allows (server paths, processes, unbounded planner grids) and the upload handling.
"""

from __future__ import annotations

from typing import Any, Callable

from napkin.errors import InputError
from napkin.web.uploads import uploads_as_paths

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
    """What the web refuses that the CLI allows: server-side paths, processes, and values the form cannot send.

    A ``path`` field must be an upload and a ``name`` field a catalog name (or, for a model, an
    uploaded config.json), also inside free-text lists such as serve's waterfall
    (:mod:`napkin.web.names`); a field takes a value, a list of values or NAME: VALUE pairs,
    never deeper nesting, and a single-value field never a list. Planner grids are capped in
    :func:`parse` (the range of every number is the request layer's, :mod:`napkin.limits`).
    """
    from napkin.request import field_name
    from napkin.web.names import check_field

    calc = calculator(name)
    infos = field_infos(calc)
    command = " ".join(command_words(name))
    out = dict(raw)
    for key, val in raw.items():
        try:
            info = infos[field_name(infos, key)]
        except InputError:  # not a field: the request's parse names it, with the closest fields
            continue
        if val is None or val == "" or val == [] or val == {}:
            continue
        if info.meta.get("cli_only"):  # where the server connects, how many processes it starts
            raise InputError(info.name, val, "is not available on the web page",
                             f"run `{command} {info.option} ...` in a terminal")
        _check_shape(info, val)
        check_field(info, val, infos, command)
    return out


def _check_shape(info: Any, val: Any) -> None:
    """A value, a list of values or an object of values: what a field's parser reads (nothing deeper)."""
    items = val if isinstance(val, list) else list(val.values()) if isinstance(val, dict) else []
    if any(isinstance(v, (list, dict)) for v in items):
        raise InputError(info.name, "a nested list or object", "must be a value, a list of values or NAME: VALUE pairs",
                         'send e.g. "h100,a100", ["h100", "a100"] or {"h100": 0.4}')
    if isinstance(val, list) and not info.container:
        raise InputError(info.name, f"a list of {len(val)}", "must be one value, not a list", "send one value")
    if isinstance(val, dict) and info.container != "dict":
        raise InputError(info.name, "an object", "must be one value, not NAME: VALUE pairs",
                         f"send one value{' or a list' if info.container == 'list' else ''}")


def with_grid_cap(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A planner's grid bound, set to the web's cap where the request does not give one."""
    infos = field_infos(calculator(name))
    out = dict(raw)
    for cap in GRID_CAP_FIELDS:
        if cap in infos and out.get(cap) in (None, "") and out.get(cap.replace("_", "-")) in (None, ""):
            out[cap] = WEB_GRID_CAP
    return out


def parse(name: str, raw: dict[str, Any]) -> Any:
    """The calculator's request from raw values (every number within its physical range, :mod:`napkin.limits`),
    within the web's planner caps."""
    from napkin.request import parse_request

    calc = calculator(name)
    req = parse_request(calc.request, with_grid_cap(name, raw))
    for cap in GRID_CAP_FIELDS:
        value = getattr(req, cap, None)
        if isinstance(value, (int, float)) and value > WEB_GRID_CAP:
            raise InputError(cap, value, f"exceeds the web page's cap of {WEB_GRID_CAP:,}",
                             f"give at most {WEB_GRID_CAP:,}, or run the planner from the CLI")
    if calc.grid_size is not None:  # the planner's own count of the grid the request asks for
        size = calc.grid_size(req)
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
