"""Requests: one msgspec Struct per calculator, declared once.

The CLI options, the web form, the JSON API and ``--config file.toml`` all build the
same Struct through :func:`parse_request`, so a field's doc string, unit and bounds
live in one place (and beyond its own bounds, every number is held to the physical range of
its name or kind, :mod:`napkin.limits`)::

    class MfuRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
        params: Annotated[float, field("count", "model parameters N", gt=0)]
        mfu: Annotated[float, field("fraction", "model FLOPs utilisation")] = 0.4

Kinds are those of :mod:`napkin.units` plus ``text``, ``name`` (a catalog entry or a
path), ``precision``, ``int``, ``bool`` and ``choice`` (with ``choices=``). A field
typed ``list[...]`` takes comma-separated or repeated values (so a list item cannot hold a
thousands comma: ``--served 500B,50T``); ``dict[str, ...]`` takes ``NAME=VALUE`` pairs, where a
value may (``facility=$60,000,network=5k``).
"""

from __future__ import annotations

import functools
import math
import sys
import typing
from typing import Annotated, Any

import msgspec

from napkin import limits, units
from napkin.errors import InputError

EXTRA_KINDS = ("text", "name", "precision", "int", "bool", "choice", "path")


def field(kind: str, doc: str, *, gt: float | None = None, ge: float | None = None,
          lt: float | None = None, le: float | None = None, choices: tuple[str, ...] = (),
          positional: bool = False, cli: str | None = None, example: str | None = None,
          hidden: bool = False, aliases: tuple[str, ...] = (), unit: str | None = None,
          cli_only: bool = False, bare: str | None = None, words: tuple[str, ...] = ()) -> msgspec.Meta:
    """Metadata for a request field: its unit kind, help text and bounds.

    ``unit`` labels a plain number for a reader (``FLOP/B``, ``d``) where its kind has none.
    ``cli_only`` keeps a field off the web page and out of its API (a scheduler address: a
    request from a browser must not make the server connect where it says).

    ``aliases`` are other names the field answers to (an older spelling, or the name
    another command uses for the same input): raw keys and config files may use them.

    ``bare`` (NAME=VALUE fields) is the name a lone value without a name stands for
    (``--price 2.50/h`` as ``all=2.50/h``).

    ``words`` are words a numeric field also takes in place of a number (``--mfu auto``); the
    calculator reads the word.
    """
    if kind not in units.KINDS and kind not in EXTRA_KINDS:
        raise ValueError(f"unknown field kind {kind!r}")
    if kind == "fraction" and gt is None and ge is None and le is None and lt is None:
        gt, le = 0.0, 1.0
    extra = {"kind": kind, "gt": gt, "ge": ge, "lt": lt, "le": le, "choices": list(choices),
             "positional": positional, "cli": cli, "example": example, "hidden": hidden,
             "aliases": list(aliases), "unit": unit, "cli_only": cli_only, "bare": bare,
             "words": list(words)}
    keep = {k: v for k, v in extra.items() if v is not None and v is not False and v != []}
    return msgspec.Meta(description=doc, extra=keep)


class FieldInfo(typing.NamedTuple):
    name: str
    kind: str
    doc: str
    container: str  # "" | "list" | "dict"
    required: bool
    default: Any
    meta: dict

    @property
    def option(self) -> str:
        return self.meta.get("cli") or "--" + self.name.replace("_", "-")

    @property
    def alias_options(self) -> list[str]:
        """The flags of the field's aliases (``--checkpoint`` for alias ``checkpoint``)."""
        return ["--" + a.replace("_", "-") for a in self.meta.get("aliases", [])]

    def to_dict(self) -> dict:
        bounds = {k: self.meta[k] for k in ("gt", "ge", "lt", "le") if k in self.meta}
        d = {"name": self.name, "kind": self.kind, "doc": self.doc, "container": self.container or None,
             "required": self.required, "default": None if self.default is msgspec.NODEFAULT else self.default,
             "bounds": bounds, "choices": self.meta.get("choices", []), "option": self.option}
        for key in ("example", "unit", "words"):
            if key in self.meta:
                d[key] = self.meta[key]
        return d


def fields(cls: type) -> list[FieldInfo]:
    """The declared fields of a request Struct, with their kinds and bounds (cached per class)."""
    return list(_fields(cls))


@functools.cache
def _fields(cls: type) -> tuple[FieldInfo, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in msgspec.structs.fields(cls):
        hint = hints[f.name]
        meta: dict = {}
        doc = ""
        if typing.get_origin(hint) is Annotated:
            base, *extras = typing.get_args(hint)
            for m in extras:
                if isinstance(m, msgspec.Meta):
                    meta = dict(m.extra or {})
                    doc = m.description or ""
        else:
            base = hint
        container = ""
        inner = [a for a in (typing.get_args(base) or ()) if a is not type(None)]
        origin = typing.get_origin(base)
        if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and inner:
            base = inner[0]
            origin = typing.get_origin(base)
        if origin is list:
            container = "list"
        elif origin is dict:
            container = "dict"
        kind = meta.get("kind") or _kind_for(base)
        default = f.default if f.default is not msgspec.NODEFAULT else (
            f.default_factory() if f.default_factory is not msgspec.NODEFAULT else msgspec.NODEFAULT)
        out.append(FieldInfo(f.name, kind, doc, container, f.required, default, meta))
    return tuple(out)


def _kind_for(tp: Any) -> str:
    return {bool: "bool", int: "int", float: "number", str: "text"}.get(tp, "text")


def _bounds_text(meta: dict) -> str | None:
    lo = ("(", meta["gt"]) if "gt" in meta else ("[", meta["ge"]) if "ge" in meta else None
    hi = (")", meta["lt"]) if "lt" in meta else ("]", meta["le"]) if "le" in meta else None
    if lo and hi:
        return f"must be in {lo[0]}{_g(lo[1])}, {_g(hi[1])}{hi[0]}"
    if lo:
        return f"must be {'>' if lo[0] == '(' else '>='} {_g(lo[1])}"
    if hi:
        return f"must be {'<' if hi[0] == ')' else '<='} {_g(hi[1])}"
    return None


def _g(x: float) -> str:
    """A bound as written in a message: whole numbers in full (1000000, not 1e+06), others as %g."""
    return f"{int(x)}" if x == int(x) and abs(x) < 1e15 else f"{x:g}"


def _within(value: float, meta: dict) -> bool:
    """Whether ``value`` meets the field's bounds (gt/ge/lt/le)."""
    return not (("gt" in meta and not value > meta["gt"]) or ("ge" in meta and not value >= meta["ge"])
                or ("lt" in meta and not value < meta["lt"]) or ("le" in meta and not value <= meta["le"]))


def _percent_hint(value: float, meta: dict, raw: Any) -> str | None:
    """A fraction typed as a percentage (40 for 0.40, 12.5 for 0.125), as the fraction to write.

    None when the number already carried a % (150% is simply too large), when it is not a
    percentage (outside 1 < value <= 100), or when the fraction it suggests is out of bounds too.
    Whole percentages keep two decimals (0.40); others show the figures they need (0.125).
    """
    if (isinstance(raw, str) and "%" in raw) or not 1 < value <= 100 or not _within(value / 100, meta):
        return None
    return f"{value / 100:.2f}" if value == int(value) else f"{value / 100:g}"


def _bounds_fix(value: float, meta: dict, kind: str) -> str | None:
    """What to give instead of a value out of the field's bounds."""
    low = ("gt", meta["gt"]) if "gt" in meta else ("ge", meta["ge"]) if "ge" in meta else None
    if low is not None and not _within(value, {low[0]: low[1]}):
        if low == ("ge", 0):
            return "give 0 or more"
        if low == ("gt", 0):
            return "give a positive size" if kind in ("bytes", "seconds", "flops") else "give a positive number"
        return f"give a number {'above' if low[0] == 'gt' else 'of at least'} {_g(low[1])}"
    high = ("lt", meta["lt"]) if "lt" in meta else ("le", meta["le"]) if "le" in meta else None
    if high is not None:
        bound = f"{high[1]:.0%}" if kind == "fraction" and high[1] * 100 == int(high[1] * 100) else _g(high[1])
        return f"give {'less than' if high[0] == 'lt' else 'at most'} {bound}"
    return None


def check_bounds(name: str, value: float, meta: dict, kind: str, raw: Any = None) -> None:
    if _within(value, meta):
        return
    hint = _percent_hint(value, meta, raw) if kind == "fraction" else None
    fix = f"did you mean {hint}?" if hint else _bounds_fix(value, meta, kind)
    shown = raw if isinstance(raw, str) else value
    raise InputError(name, shown, _bounds_text(meta) or "is out of range", fix)


def _scalar(name: str, raw: Any, kind: str, meta: dict) -> Any:
    if meta.get("words") and isinstance(raw, str) and raw.strip().lower() in meta["words"]:
        return raw.strip().lower()
    if (kind in units.KINDS or kind == "int") and isinstance(raw, int) and not isinstance(raw, bool) \
            and abs(raw) > sys.float_info.max:  # a JSON or TOML integer of 310 digits: float() would overflow
        raise InputError(name, f"an integer of {len(str(abs(raw)))} digits", "is beyond the range of a number",
                         "no physical input is that large")
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in ("1", "true", "yes", "on", "y"):
            return True
        if s in ("0", "false", "no", "off", "n", ""):
            return False
        raise InputError(name, raw, "must be true or false")
    if kind in ("text", "name", "path"):
        if isinstance(raw, (dict, list, tuple)):  # a TOML table or array where one text value belongs
            raise InputError(name, "a table" if isinstance(raw, dict) else "a list", "must be text",
                             "give one value in quotes")
        s = str(raw).strip()
        if not s:
            raise InputError(name, raw, "must not be empty")
        return s
    if kind == "precision":
        from napkin.hardware import precision

        return precision(str(raw), name)
    if kind == "choice":
        s = str(raw).strip()
        choices = meta.get("choices", [])
        low = {c.lower(): c for c in choices}
        if s.lower() not in low:
            raise InputError(name, raw, "must be one of " + ", ".join(choices))
        return low[s.lower()]
    if kind == "int":
        v = units.parse(raw, "count", name) if isinstance(raw, str) else raw
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v):
            raise InputError(name, raw, "must be a whole number")
        check_bounds(name, v, meta, kind, raw)
        limits.check(name, v, kind, zero_ok=_within(0, meta), raw=raw)
        return int(v)
    if kind == "number" and meta.get("unit") == "d" and isinstance(raw, str) and raw.strip()[-1:].isalpha():
        v = units.parse(raw, "seconds", name) / units.DAY  # a field counted in days takes a duration: 54d, 3w
    else:
        v = units.parse(raw, kind, name)
    check_bounds(name, v, meta, kind, raw)
    limits.check(name, v, kind, zero_ok=_within(0, meta), raw=raw)
    return v


def _split(raw: Any) -> list:
    if isinstance(raw, (list, tuple)):
        out: list = []
        for r in raw:
            out += _split(r) if isinstance(r, str) else [r]
        return out
    if isinstance(raw, str):
        return [p for p in (x.strip() for x in raw.split(",")) if p]
    return [raw]


def _split_pairs(raw: Any) -> list:
    """Like _split, for NAME=VALUE pairs: a piece with no ``=`` that starts with a digit is a
    thousands group of the value before it (``facility=$60,000,network=5k``), so it goes back
    on that value; units.parse then accepts the group or refuses a decimal comma by name."""
    if isinstance(raw, (list, tuple)):
        out: list = []
        for r in raw:
            out += _split_pairs(r) if isinstance(r, str) else [r]
        return out
    if isinstance(raw, str):
        parts: list[str] = []
        for piece in raw.split(","):
            if parts and "=" in parts[-1] and "=" not in piece and piece[:1].isdigit():
                parts[-1] += "," + piece
            else:
                parts.append(piece)
        return [p for p in (x.strip() for x in parts) if p]
    return [raw]


def parse_value(info: FieldInfo, raw: Any) -> Any:
    """Parse one field's raw value (a string, a number, a list or a mapping)."""
    if info.container == "list":
        return [_scalar(info.name, r, info.kind, info.meta) for r in _split(raw)]
    if info.container == "dict":
        if isinstance(raw, dict):
            items = list(raw.items())
        else:
            items = []
            pieces = _split_pairs(raw)
            if info.meta.get("bare") and len(pieces) == 1 and "=" not in str(pieces[0]):
                pieces = [f"{info.meta['bare']}={pieces[0]}"]  # one value for every name
            for part in pieces:
                if not isinstance(part, str) or "=" not in part:
                    raise InputError(info.name, part, "must be NAME=VALUE", f"e.g. {info.meta.get('example', 'name=0.5')}")
                k, v = part.split("=", 1)
                if not k.strip():
                    raise InputError(info.name, part, "has an empty name", "write NAME=VALUE")
                if k.strip() in [name for name, _ in items]:  # the second would silently replace the first
                    raise InputError(info.name, part, f"has {k.strip()} twice",
                                     f"give {k.strip()} once, adding up the parts if both apply")
                items.append((k.strip(), v.strip()))
        return {str(k): _scalar(f"{info.name}[{k}]", v, info.kind, info.meta) for k, v in items}
    return _scalar(info.name, raw, info.kind, info.meta)


def field_name(infos: dict[str, FieldInfo], key: str, value: Any = None, *, see: str = "see --help") -> str:
    """The field a raw key names (``tokens-per-step`` -> ``tokens_per_step``); InputError if none."""
    name = key.replace("-", "_").lstrip("_")
    if name not in infos:
        for info in infos.values():
            if name in info.meta.get("aliases", ()):
                return info.name
        from napkin.errors import closest

        near = closest(name, list(infos))
        raise InputError(key, value, "is not a field of this calculator",
                         f"did you mean {', '.join(near)}?" if near else see)
    return name


def parse_request(cls: type, raw: dict[str, Any]) -> Any:
    """Build a request Struct from raw values, with napkin's unit parsing and errors.

    Keys may use dashes or underscores; ``None`` and empty strings mean "not given".
    Unknown keys are an error that names them.
    """
    infos = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for key, val in raw.items():
        name = field_name(infos, key, val)
        if val is None or (isinstance(val, str) and val.strip() == "" and infos[name].kind != "bool"):
            continue
        if isinstance(val, (list, tuple)) and len(val) == 0:
            continue
        if name in values:  # the field and one of its aliases
            raise InputError(name, val, f"is given twice (as {keys[name]} and as {key})", "give it once")
        keys[name] = key
        values[name] = parse_value(infos[name], val)
    for info in infos.values():
        if info.required and info.name not in values:
            raise InputError(info.name, "nothing", "is required", f"give {info.option}")
    try:
        return cls(**values)
    except InputError:
        raise
    except (TypeError, msgspec.ValidationError) as exc:
        raise InputError("request", values, str(exc)) from None


def to_raw(req: Any) -> dict[str, Any]:
    """A request back to plain values (for --save and the web page's URL)."""
    out = {}
    for info in fields(type(req)):
        v = getattr(req, info.name)
        if v is None or v == info.default:
            continue
        out[info.name] = v
    return out


def basis_of(req: Any, name: str) -> str:
    """"given" when a request's field differs from its default (or has none), else "assumed".

    For an input with a default (``--usable 0.9``) the report must say whether the user
    chose it; a value equal to the default reads as the default, which it is.
    """
    info = next(f for f in _fields(type(req)) if f.name == name)
    if info.default is msgspec.NODEFAULT:
        return "given"
    return "assumed" if getattr(req, name) == info.default else "given"


def describe(cls: type) -> list[dict]:
    """Every field with its kind, doc, bounds and default, for ``GET /api`` and the page."""
    return [f.to_dict() for f in fields(cls) if not f.meta.get("hidden") and not f.meta.get("cli_only")]


# ------------------------------------------------------------------------ plan files
def read_config(path: str) -> dict[str, Any]:
    """Flat TOML of field = value (a plan file written by --save); ``[request]`` holds them if present."""
    from napkin.files import read_toml

    data = read_toml(path, "config", missing_fix="give the path of a .toml file",
                     fix="give a plan file written by --save (TOML of field = value)")
    if "request" in data and isinstance(data["request"], dict):
        data = data["request"]
    return data


def write_config(path: str, values: dict[str, Any], *, command: str, trailer: list[str] = ()) -> None:
    """Write a request as flat TOML, readable by --config (``trailer``: comment lines after it)."""
    from napkin.files import write_file

    lines = [f"# napkin {command} plan: every input, in base units", "[request]"]
    for k, v in values.items():
        lines.append(f"{k} = {_toml_value(v)}")
    write_file(path, "save", "\n".join([*lines, *trailer]) + "\n")


def _toml_value(v: Any) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(float(v)) if isinstance(v, float) else str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v))
