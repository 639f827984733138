"""The web calculator: a JSON API over every calculator, and one static page.

``create_app()`` builds a Starlette app; ``napkin web`` serves it with uvicorn.

* ``GET /api`` lists the calculators that exist in this build, with their fields
  (kind, unit, bounds, default), what a result establishes and what needs measuring,
  and the worked example each tab opens with.
* ``POST /api/<name>`` takes the calculator's request (the CLI's fields, raw values:
  unit strings or numbers) and returns exactly what ``napkin <name> --json`` prints.
  Invalid input gets 422 with ``{field, value, problem, fix, message}``; never a traceback.
* ``POST /api/<name>/view`` is what the page calls: the same report plus the formatted
  rows, the derivation as text, the charts and the equivalent CLI command.
* ``POST /api/<name>/charts`` and ``POST /api/<name>/cli`` return those parts alone.

No formulas here: requests go through :func:`napkin.request.parse_request` and the
calculator's ``run``, as on the command line. Starlette is imported by this module
only, which only ``napkin web`` (and the tests) load.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import shlex
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from napkin import __version__, units
from napkin.errors import InputError, NapkinError, UnknownName
from napkin.units import MEBI
from napkin.request import field_name

log = logging.getLogger("napkin.web")

STATIC = Path(__file__).parent / "static"

MAX_JSON_BYTES = int(MEBI)  # a request is a few hundred bytes; 1 MiB is generous
MAX_UPLOAD_BYTES = int(50 * MEBI)  # a training log; kept in memory, never written to disk
MAX_FIELDS = 200
MAX_FILES = 16  # a run restarted a few times may come as several logs

CSP = ("default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
       "script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")

# calculator name -> the words after `napkin` on the command line, where they differ
COMMAND_WORDS: dict[str, list[str]] = {"plan-serve": ["plan", "serve"], "ledger": ["ledger", "report"]}

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


class BodyTooLarge(NapkinError):
    def __init__(self, limit: int, what: str):
        self.limit = limit
        self.what = what
        super().__init__(f"{what} is larger than the {units.format(limit, 'bytes', binary=True)} limit")

    def to_dict(self) -> dict:
        return {"field": "body", "value": None, "problem": f"exceeds the {self.what} limit",
                "fix": f"send at most {units.format(self.limit, 'bytes', binary=True)}", "message": str(self)}


class Upload:
    """An uploaded file, held in memory: the name it had and its bytes."""

    def __init__(self, filename: str, data: bytes, content_type: str | None = None):
        self.filename = filename
        self.data = data
        self.content_type = content_type

    def __repr__(self) -> str:
        return f"Upload({self.filename!r}, {len(self.data)} bytes)"

    def __str__(self) -> str:
        return self.filename


# ------------------------------------------------------------------------------ calculators
def calculator(name: str) -> Any:
    """The registered Calculator (UnknownName for a name not in the registry).

    A registered calculator whose module fails to import raises: the request is a 500 and
    the log names the module, never a calculator quietly missing from the page.
    """
    from napkin import calculators

    return calculators.get(name)


def command_words(name: str) -> list[str]:
    return ["napkin", *COMMAND_WORDS.get(name, [name])]


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
    }


def charts_for(name: str, report: Any) -> dict[str, dict]:
    """The calculator's own charts, or the fallback chart builders kept in napkin.charts."""
    calc = calculator(name)
    fn: Callable | None = calc.charts
    if fn is None and name in FALLBACK_CHARTS:
        import importlib

        module, attr = FALLBACK_CHARTS[name].split(":")
        fn = getattr(importlib.import_module(module), attr)
    return dict(fn(report)) if fn is not None else {}


def _jsonable(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


def _field_infos(calc: Any) -> dict[str, Any]:
    from napkin.request import fields

    return {f.name: f for f in fields(calc.request)}


def web_checks(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """What the web refuses that the CLI allows: server-side paths, and unbounded grids.

    A ``path`` field must be an upload (the page never reads the server's files); a
    ``name`` field must be a catalog name, not a path to a config.json on the server.
    Planner grids are capped in :func:`parse`.
    """
    calc = calculator(name)
    infos = _field_infos(calc)
    out = dict(raw)
    for key, val in raw.items():
        info = infos.get(key.replace("-", "_").lstrip("_"))
        if info is None or val is None or val == "":
            continue
        if info.meta.get("cli_only"):  # where the server connects, how many processes it starts
            raise InputError(info.name, val, "is not available on the web page",
                             f"run `{' '.join(command_words(name))} {info.option} ...` in a terminal")
        if info.kind == "path" and not _is_upload(val):
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
    infos = _field_infos(calculator(name))
    out = dict(raw)
    for cap in GRID_CAP_FIELDS:
        if cap in infos and out.get(cap) in (None, "") and out.get(cap.replace("_", "-")) in (None, ""):
            out[cap] = WEB_GRID_CAP
    return out


def _is_upload(val: Any) -> bool:
    return isinstance(val, Upload) or (isinstance(val, list) and all(isinstance(v, Upload) for v in val))


def parse(name: str, raw: dict[str, Any]) -> Any:
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


def _ram_dir() -> str | None:
    """A RAM-backed directory for uploads (tmpfs), where the platform has one."""
    for d in ("/dev/shm",):
        if os.path.isdir(d) and os.access(d, os.W_OK):
            return d
    return None


def _safe_filename(name: str) -> str:
    base = re.sub(r"[^A-Za-z0-9._+-]", "_", os.path.basename(name.replace("\\", "/")))[:120].lstrip(".")
    return base or "upload"


def _as_content(name: str, raw: dict[str, Any], uploads: dict[str, Any]) -> dict[str, Any] | None:
    """A single text upload as the request's own ``content``/``filename`` fields, where it has them.

    The ledger takes an uploaded log's text this way, so it is parsed straight from memory.
    """
    infos = _field_infos(calculator(name))
    if "content" not in infos or "filename" not in infos:
        return None
    files = [u for v in uploads.values() for u in (v if isinstance(v, list) else [v])]
    if len(files) != 1 or any(raw.get(k) not in (None, "") for k in ("content", "filename")):
        return None
    try:
        text = files[0].data.decode("utf-8")
    except UnicodeDecodeError:  # a binary log (Parquet): read from a path in RAM below
        return None
    out = {k: v for k, v in raw.items() if k not in uploads}
    out["content"] = text
    out["filename"] = _safe_filename(files[0].filename)
    return out


@contextmanager
def uploads_as_paths(raw: dict[str, Any], calculator_name: str | None = None):
    """Give each uploaded file to the calculator from memory, for one request.

    A calculator whose request has ``content`` and ``filename`` (the ledger) gets a text
    upload's text there. Otherwise calculators read files by path (as on the command
    line), and an upload becomes
    ``<tmpfs dir>/<n>/<its own name>`` in a private (0700) directory under /dev/shm,
    which is memory, not disk, and is removed when the request ends. Yields the raw
    values with paths in place of uploads, and a function that strips the private
    directory from any text the report shows (so it reads ``log.csv``, as the CLI would
    for ``--log log.csv``).
    """
    uploads = {k: v for k, v in raw.items() if _is_upload(v)}
    if not uploads:
        yield raw, (lambda text: text)
        return
    text_upload = _as_content(calculator_name, raw, uploads) if calculator_name else None
    if text_upload is not None:
        yield text_upload, (lambda text: text)
        return
    tmp = tempfile.mkdtemp(prefix="napkin-upload-", dir=_ram_dir())
    try:
        out = dict(raw)
        n = 0
        for key, value in uploads.items():
            paths = []
            for up in (value if isinstance(value, list) else [value]):
                sub = os.path.join(tmp, str(n))
                n += 1
                os.mkdir(sub, 0o700)
                path = os.path.join(sub, _safe_filename(up.filename))
                with open(path, "wb") as fh:
                    fh.write(up.data)
                paths.append(path)
            out[key] = paths if isinstance(value, list) else paths[0]
        prefix = re.compile(re.escape(tmp) + r"/\d+/")

        def clean(text: str) -> str:
            return prefix.sub("", text)

        try:
            yield out, clean
        except NapkinError as exc:  # an error names the upload as the user knows it, not the server's path
            _clean_error(exc, clean)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _clean_error(exc: Exception, clean: Callable[[str], str]) -> None:
    """Strip the private upload directory from an error's message and fields, in place."""
    for attr in ("value", "problem", "fix", "message", "name"):
        if isinstance(getattr(exc, attr, None), str):
            setattr(exc, attr, clean(getattr(exc, attr)))
    exc.args = tuple(clean(a) if isinstance(a, str) else a for a in exc.args)


def run(name: str, raw: dict[str, Any]) -> Any:
    """Parse and run one calculation: the Report that ``--json`` prints."""
    return calculator(name).run(parse(name, raw))


def run_json(name: str, raw: dict[str, Any]) -> str:
    """One calculation as the JSON text ``napkin <name> --json`` prints."""
    checked = web_checks(name, raw)
    with uploads_as_paths(checked, name) as (resolved, clean):
        return clean(run(name, resolved).to_json())


def cli_command(name: str, raw: dict[str, Any]) -> str:
    """The same calculation as a shell command: ``napkin memory --model llama-3.1-70b ...``."""
    calc = calculator(name)
    infos = _field_infos(calc)
    given: dict[str, Any] = {}
    for key, val in raw.items():
        given[field_name(infos, key, val, see="see GET /api")] = val
    args: list[str] = []
    opts: list[str] = []
    for info in infos.values():
        if info.name not in given or info.meta.get("hidden"):
            continue
        val = given[info.name]
        if val is None or (isinstance(val, str) and not val.strip() and info.kind != "bool") or val in ([], {}):
            continue
        if info.kind == "bool":
            on = val if isinstance(val, bool) else str(val).strip().lower() in ("1", "true", "yes", "on", "y")
            if on and info.default is not True:
                opts.append(info.option)
            elif not on and info.default is True:
                opts.append("--no-" + info.option[2:])
            continue
        if isinstance(val, dict):
            text = ",".join(f"{k}={v}" for k, v in val.items())
        elif isinstance(val, list):
            text = ",".join(str(v) for v in val)
        else:
            text = str(val).strip()
        if info.meta.get("positional"):
            args += _split_list(text) if info.container == "list" else [text]
        else:
            opts += [info.option, text]
    if any(a.startswith("-") for a in args):  # text such as "- a bullet" is not an option: after "--"
        return shlex.join(command_words(name) + opts + ["--"] + args)
    return shlex.join(command_words(name) + args + opts)


def _split_list(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def view(name: str, raw: dict[str, Any]) -> dict:
    """Everything the page shows for one calculation."""
    from napkin.units import fmt_auto

    checked = web_checks(name, raw)
    with uploads_as_paths(checked, name) as (resolved, clean):
        report = run(name, resolved)
        chart_error = None
        try:
            charts = charts_for(name, report)
        except Exception:  # a broken chart must not hide the figures
            log.exception("charts of %s failed", name)
            charts, chart_error = {}, "the chart could not be drawn for these inputs"
        out = _view_dict(name, raw, report, charts, chart_error, fmt_auto)
        return json.loads(clean(json.dumps(out, allow_nan=False, default=str, ensure_ascii=False)))


# A table cell's unit kind, from its key (JSON keys carry their unit): the first rule that matches wins.
CELL_KINDS: tuple[tuple[str, str], ...] = (
    ("usd_per_million", "usd_per_million"), ("usd_per_gpu_hour", "usd_per_hour"), ("usd_per_hour", "usd_per_hour"),
    ("flops_per_s", "flops_per_s"), ("bytes_per_s", "bytes_per_s"), ("flops_per_usd", "flops"),
    ("_per_s", "per_s"), ("_per_gpu_s", "per_s"), ("_usd", "usd"), ("_flops", "flops"), ("_bytes", "bytes"),
    ("_s", "seconds"), ("_tokens", "count"), ("tokens", "count"), ("params", "count"), ("gpu_hours", "count"),
    ("usd", "usd"),
)
FRACTION_KEYS = ("mfu", "goodput", "utilization", "goodput_tokens", "goodput_time", "fraction_of_peak")
TABLE_ROWS = 100


def cell_kind(key: str) -> str | None:
    if key in FRACTION_KEYS or key.endswith("_fraction") or key.startswith(("mfu_", "goodput_")):
        return "fraction"
    if key == "flops":  # a rung's FLOPs, beside its figures in FLOP
        return "flops"
    for pattern, kind in CELL_KINDS:
        # rates and prices may carry a qualifier after the unit (usd_per_million_output_tokens)
        if key.endswith(pattern) or (kind in ("usd_per_million", "usd_per_hour", "per_s") and pattern in key):
            return kind
    return None


def _cell(key: str, value: Any) -> str:
    from napkin.units import fmt_auto

    if value is None:
        return ""
    if isinstance(value, dict):  # one line per entry (a rung's figures): the page keeps the breaks
        return "\n".join(f"{k}: {_cell(k, v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} items]" if len(value) > 6 else ", ".join(_cell(key, v) for v in value)
    kind = cell_kind(key) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    try:
        return fmt_auto(value, kind)
    except (ValueError, TypeError):
        return fmt_auto(value, None)


def tables(report: Any) -> dict[str, dict]:
    """Results that are lists of records (a ranking, days of a ledger), formatted as tables."""
    out = {}
    for key, value in report.results.items():
        if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            columns = list(dict.fromkeys(c for row in value for c in row))
            rows = [[_cell(c, row.get(c)) for c in columns] for row in value[:TABLE_ROWS]]
            out[key] = {"columns": columns, "rows": rows, "total": len(value)}
    return out


def _view_dict(name: str, raw: dict[str, Any], report: Any, charts: dict, chart_error: str | None,
               fmt_auto: Callable) -> dict:
    shown_as_tables = tables(report)  # a list of records is a table below, not a dump in the figures
    return {
        "title": report.title,
        "report": json.loads(report.to_json(indent=None)),
        "report_json": report.to_json() + "\n",  # byte for byte what `--json` prints: Download JSON saves this
        "rows": [[k, v] for k, v in report.rows() if k not in shown_as_tables],
        "derivation": [s.text() for s in report.steps],
        "assumptions": [{"name": a.name, "value": fmt_auto(a.value, a.unit), "basis": a.basis, "note": a.note}
                        for a in report.assumptions],
        "tables": shown_as_tables,
        "charts": charts,
        "chart_error": chart_error,
        "cli": cli_command(name, {k: v for k, v in raw.items()}),
    }


# ---------------------------------------------------------------------------------- vendor JS
_bundle: dict[str, bytes] = {}
_bundle_lock = threading.Lock()

BUNDLE_SCRIPT = """
import sys, vl_convert as vlc
head = ("/* vega " + vlc.get_vega_version() + ", vega-lite, vega-embed " + vlc.get_vega_embed_version()
        + ": BSD-3-Clause, (c) the University of Washington Interactive Data Lab; bundled by vl-convert-python. */\\n")
sys.stdout.buffer.write((head + vlc.javascript_bundle()).encode("utf-8"))
"""


def _bundle_cache_path() -> Path | None:
    """~/.cache/napkin/vega-bundle-<vl-convert version>.js: built once per version of vl-convert."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("vl-convert-python")
    except PackageNotFoundError:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "napkin" / f"vega-bundle-{re.sub(r'[^A-Za-z0-9.]', '_', v)}.js"


def vega_bundle() -> dict[str, bytes]:
    """vega, vega-lite and vega-embed as one script, from vl-convert (nothing is downloaded).

    vl-convert takes ~1.7 s of CPU to bundle them and holds the GIL while it does, so the
    bundle is built in a child process (the server keeps answering), kept in memory and
    cached on disk per vl-convert version, so later starts read it in milliseconds.
    """
    import subprocess
    import sys

    with _bundle_lock:
        if _bundle:
            return _bundle
        cache = _bundle_cache_path()
        data = None
        if cache is not None and cache.is_file():
            data = cache.read_bytes()
        if not data:
            proc = subprocess.run([sys.executable, "-c", BUNDLE_SCRIPT], capture_output=True, timeout=120)
            if proc.returncode != 0 or b"window.vegaEmbed=" not in proc.stdout:
                raise RuntimeError("vl-convert could not bundle the chart library: "
                                   + proc.stderr.decode(errors="replace")[-300:])
            data = proc.stdout
            if cache is not None:
                try:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
                    tmp.write_bytes(data)
                    os.replace(tmp, cache)
                except OSError:
                    log.warning("could not cache the chart library at %s", cache)
        _bundle["raw"] = data
        _bundle["gzip"] = gzip.compress(data, 6)
        return _bundle


def warm_bundle() -> None:
    try:
        vega_bundle()
    except Exception:  # charts are optional; the page still shows every figure
        log.exception("could not build the vega bundle")


# ---------------------------------------------------------------------------------- handlers
def _error(status: int, exc: Exception) -> JSONResponse:
    body = exc.to_dict() if hasattr(exc, "to_dict") else {
        "field": None, "value": None, "problem": str(exc), "fix": None, "message": str(exc)}
    return JSONResponse(body, status_code=status)


def api(fn: Callable) -> Callable:
    """Turn napkin errors into 4xx JSON and anything else into a 500 without a traceback."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except BodyTooLarge as exc:
            return _error(413, exc)
        except UnknownName as exc:
            if exc.what == "calculator":
                return _error(404, exc)
            return _error(422, exc)
        except NapkinError as exc:
            return _error(422, exc)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return JSONResponse({"field": None, "value": None, "problem": "internal error",
                                 "fix": "run the same inputs with the CLI to see the details",
                                 "message": "internal error: the calculation failed"}, status_code=500)

    return endpoint


async def read_input(request: Request, name: str) -> dict[str, Any]:
    """The raw request: a JSON object, or a multipart form whose files stay in memory."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    calculator(name)  # 404 before reading a body for a name that does not exist
    if ctype == "multipart/form-data":
        return await _read_multipart(request)
    if ctype not in ("application/json", ""):
        raise InputError("content-type", ctype, "is not accepted",
                         "send a JSON object with content-type: application/json (or multipart/form-data with a file)")
    body = b""
    async for chunk in request.stream():
        body += chunk
    if not body.strip():
        return {}
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise InputError("body", body[:80].decode("utf-8", "replace"), "is not valid JSON",
                         'send an object such as {"params": "7B"}') from None
    if not isinstance(raw, dict):
        raise InputError("body", str(raw)[:80], "must be a JSON object", 'send {"field": value, ...}')
    return raw


async def _read_multipart(request: Request) -> dict[str, Any]:
    from starlette.datastructures import UploadFile
    from starlette.formparsers import MultiPartException, MultiPartParser

    class InMemory(MultiPartParser):
        spool_max_size = 0  # SpooledTemporaryFile(max_size=0) never rolls over to disk

    parser = InMemory(request.headers, request.stream(), max_files=MAX_FILES, max_fields=MAX_FIELDS,
                      max_part_size=MAX_JSON_BYTES)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise InputError("body", "multipart form", str(exc), "send one log file and the form's fields") from None
    raw: dict[str, Any] = {}
    try:
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if not value.filename:
                    continue
                await value.seek(0)
                item: Any = Upload(value.filename, await value.read(), value.content_type)
            else:
                item = value
            if key in raw:
                prev = raw[key]
                raw[key] = (prev if isinstance(prev, list) else [prev]) + [item]
            else:
                raw[key] = item
    finally:
        await form.close()
    return raw


async def list_calculators(request: Request) -> Response:
    """GET /api: built once per app, on the first request that succeeds."""
    state = request.app.state
    if getattr(state, "listing", None) is None:
        state.listing = await run_in_threadpool(_listing_body)
    return Response(state.listing, media_type="application/json")


def _listing_body() -> bytes:
    from napkin import calculators, catalog

    return json.dumps({
        "napkin": __version__,
        "calculators": [describe_calculator(name) for name in calculators.available()],
        "catalog": {"gpus": sorted(catalog.gpus()), "models": sorted(catalog.models())},
        "limits": {"json_bytes": MAX_JSON_BYTES, "upload_bytes": MAX_UPLOAD_BYTES, "grid": WEB_GRID_CAP},
    }, ensure_ascii=False, allow_nan=False).encode()


async def get_calculator(request: Request) -> Response:
    return JSONResponse(describe_calculator(request.path_params["name"]))


async def post_calculator(request: Request) -> Response:
    name = request.path_params["name"]
    raw = await read_input(request, name)
    text = await run_in_threadpool(run_json, name, raw)
    return Response(text, media_type="application/json")


async def post_view(request: Request) -> Response:
    name = request.path_params["name"]
    raw = await read_input(request, name)
    return JSONResponse(await run_in_threadpool(view, name, raw))


async def post_charts(request: Request) -> Response:
    name = request.path_params["name"]
    raw = await read_input(request, name)

    def charts() -> dict:
        with uploads_as_paths(web_checks(name, raw), name) as (resolved, clean):
            out = charts_for(name, run(name, resolved))
            return json.loads(clean(json.dumps(out, allow_nan=False, default=str)))

    return JSONResponse(await run_in_threadpool(charts))


async def post_cli(request: Request) -> Response:
    name = request.path_params["name"]
    raw = await read_input(request, name)
    return JSONResponse({"command": cli_command(name, raw)})


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})


async def favicon(request: Request) -> Response:
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")


async def vendor_js(request: Request) -> Response:
    try:
        bundle = await run_in_threadpool(vega_bundle)
    except Exception:
        log.exception("could not build the vega bundle")
        return Response("/* charts unavailable: vl-convert-python is not installed */\n",
                        media_type="text/javascript", status_code=503)
    headers = {"cache-control": "public, max-age=86400", "vary": "accept-encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["content-encoding"] = "gzip"
        return Response(bundle["gzip"], media_type="text/javascript", headers=headers)
    return Response(bundle["raw"], media_type="text/javascript", headers=headers)


# -------------------------------------------------------------------------------- middleware
def _cross_site(headers: Any) -> bool:
    """A browser request sent by a page of another origin (a form on a hostile site posting to
    127.0.0.1): its Sec-Fetch-Site says so, or its Origin is not this server's Host. curl and
    scripts send neither header, and are not refused."""
    if headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return True
    origin = headers.get("origin")
    if not origin:
        return False
    from urllib.parse import urlsplit

    return origin == "null" or urlsplit(origin).netloc.lower() != headers.get("host", "").lower()


class Guard:
    """Security headers on every response, body size limits, and (on loopback) a Host check.

    The Host check refuses DNS-rebinding: a page elsewhere that points its own name at
    127.0.0.1 reaches this server with its own name in the Host header.
    """

    def __init__(self, app: Any, *, trusted_hosts: tuple[str, ...] | None = None,
                 json_limit: int = MAX_JSON_BYTES, upload_limit: int = MAX_UPLOAD_BYTES):
        self.app = app
        self.trusted_hosts = trusted_hosts
        self.json_limit = json_limit
        self.upload_limit = upload_limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_secure(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                names = {k.lower() for k, _ in message.get("headers", [])}
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + [
                    (k, v) for k, v in SECURITY_HEADERS if k not in names]
            await send(message)

        headers = Headers(scope=scope)
        if self.trusted_hosts is not None:
            host = headers.get("host", "")
            hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
            if hostname.lower() not in self.trusted_hosts:
                await JSONResponse({"field": "host", "value": host, "problem": "is not this server's address",
                                    "fix": "open the address `napkin web` printed", "message": "invalid Host header"},
                                   status_code=400)(scope, receive, send_secure)
                return
        if scope.get("method") not in ("GET", "HEAD", "OPTIONS") and _cross_site(headers):
            await JSONResponse({"field": "origin", "value": headers.get("origin") or headers.get("sec-fetch-site"),
                                "problem": "is another site: this server answers its own page only",
                                "fix": "use the page `napkin web` serves, or call the API without a browser",
                                "message": "cross-site request refused"}, status_code=403)(scope, receive, send_secure)
            return
        multipart = headers.get("content-type", "").lower().startswith("multipart/form-data")
        limit = self.upload_limit if multipart else self.json_limit
        what = "upload" if multipart else "request body"
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            await _error(413, BodyTooLarge(limit, what))(scope, receive, send_secure)
            return
        seen = 0

        async def receive_limited() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit, what)
            return message

        try:
            await self.app(scope, receive_limited, send_secure)
        except BodyTooLarge as exc:
            if started:
                raise
            await _error(413, exc)(scope, receive, send_secure)


def create_app(*, trusted_hosts: tuple[str, ...] | None = None, warm: bool = True,
               json_limit: int = MAX_JSON_BYTES, upload_limit: int = MAX_UPLOAD_BYTES) -> Starlette:
    """The web calculator.

    ``trusted_hosts`` limits the Host header (``napkin web`` passes the loopback names
    when it binds to loopback); ``warm`` builds the chart library in the background at
    startup so the first page load does not wait for it; the limits bound request bodies.
    """
    from contextlib import asynccontextmanager

    from starlette.middleware import Middleware

    @asynccontextmanager
    async def lifespan(app: Starlette):  # noqa: ANN202
        if warm:
            threading.Thread(target=warm_bundle, name="napkin-vega-bundle", daemon=True).start()
        yield

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/api", api(list_calculators)),
        Route("/api/{name}", api(get_calculator), methods=["GET"]),
        Route("/api/{name}", api(post_calculator), methods=["POST"]),
        Route("/api/{name}/view", api(post_view), methods=["POST"]),
        Route("/api/{name}/charts", api(post_charts), methods=["POST"]),
        Route("/api/{name}/cli", api(post_cli), methods=["POST"]),
        Route("/static/vendor/vega.js", vendor_js),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, lifespan=lifespan,
                     middleware=[Middleware(Guard, trusted_hosts=trusted_hosts, json_limit=json_limit,
                                             upload_limit=upload_limit)])
