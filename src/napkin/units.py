"""Quantities at the edges: parse what people type, format what they read.

Inside napkin every quantity is a plain float in a base unit (FLOP, byte, second,
FLOP/s, byte/s, USD, tokens, parameters). This module is the only place that knows
about prefixes. Decimal and binary prefixes are kept apart: ``80GB`` is 80e9 bytes,
``80GiB`` is 80 * 2**30. ``4M`` tokens is 4e6; ``4Mi`` is 4 * 2**20.

A *kind* names what a field holds; the parser refuses a unit of another kind
(``80GB`` for a duration) and ambiguous spellings (``Gb``: gigabit or gigabyte?).
"""

from __future__ import annotations

import math
import re

from napkin.errors import InputError

KILO, MEGA, GIGA, TERA, PETA, EXA = 1e3, 1e6, 1e9, 1e12, 1e15, 1e18
KIBI, MEBI, GIBI, TEBI, PEBI = 2.0**10, 2.0**20, 2.0**30, 2.0**40, 2.0**50
MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
WEEK = 7 * DAY
YEAR = 365 * DAY
MILLION = MEGA
BITS_PER_BYTE = 8.0
KWH_J = 3.6e6  # joules in one kilowatt-hour

DECIMAL = {"": 1.0, "k": KILO, "K": KILO, "M": MEGA, "G": GIGA, "T": TERA, "P": PETA, "E": EXA}
BINARY = {"Ki": KIBI, "Mi": MEBI, "Gi": GIBI, "Ti": TEBI, "Pi": PEBI}
COUNT_SUFFIX = {
    "": 1.0, "k": KILO, "K": KILO, "M": MEGA, "B": GIGA, "G": GIGA, "T": TERA, "P": PETA,
    # lowercase as people type counts ("13b params", "3t tokens", "4m"): a count has no milli- or
    # bits, so m is million and b billion here (a size in bytes keeps its case rules)
    "m": MEGA, "b": GIGA, "g": GIGA, "t": TERA, "p": PETA,
    **BINARY,
}

KINDS = (
    "number", "count", "bytes", "flops", "flops_per_s", "bytes_per_s", "seconds", "usd",
    "usd_per_hour", "usd_per_million", "usd_per_kwh", "fraction", "watts", "per_s", "joules",
)

EXPECTED = {
    "number": "a plain number such as 1.3",
    "count": "a count such as 7B, 70.6e9, 15T, 4M or 4Mi",
    "bytes": "a size such as 80GB, 80GiB or 141 GB",
    "flops": "an amount of work such as 6.3e24, 810 TFLOP or 3.8e25 FLOP",
    "flops_per_s": "a rate such as 989 TFLOP/s, 989T or 1.979e15",
    "bytes_per_s": "a bandwidth such as 3.35TB/s, 900GB/s or 400Gbit/s",
    "seconds": "a duration such as 2.07s, 9.3ms, 54d or 3w",
    "usd": "an amount of money such as $5.576M, 500k or $60,000",
    "usd_per_hour": "an hourly price such as $2.50/h or 2.5",
    "usd_per_million": "a price per million tokens such as $3/M or 15",
    "usd_per_kwh": "an energy price such as $0.08/kWh or 0.08",
    "fraction": "a fraction such as 0.4 or 40%",
    "watts": "a power such as 700W or 1.2kW",
    "per_s": "a rate such as 10/s or 600/min",
    "joules": "an energy such as 3.6MJ or 1kWh",
}

# A number as typed: digits with commas, underscores, a decimal part and an exponent. Commas are
# captured wherever they are so that a misplaced one is refused by name, never silently dropped.
_NUM = r"(?P<num>[-+]?(?:\d[\d,_]*(?:\.[\d,_]*)?|\.\d[\d,_]*)(?:[eE][-+]?\d+)?)"
_RE = re.compile(r"^\s*(?:(?P<lead>[-+])(?=\$))?(?P<dollar>\$)?\s*" + _NUM + r"(?P<gap>\s*)(?P<unit>.*?)\s*$")
# Commas are allowed only as thousands groups of the whole part: 16,384 or 1,234.5.
_GROUPED = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.[\d_]*)?(?:[eE][-+]?\d+)?")


def _comma_error(field: str, text: str, num: str) -> InputError:
    """A comma that is not a thousands separator: 1,5B or 2,50 (a decimal comma), 1,,2 or 5,."""
    fix = "commas may only separate thousands, as in 1,500; write a point for a decimal"
    if num.count(",") == 1 and re.fullmatch(r"[-+]?\d+,\d+", num):
        decimal = text.replace(",", ".", 1)
        fix = f"write {decimal} for a decimal; commas may only separate thousands, as in 1,500"
    return InputError(field, text, "has a comma that is not a thousands separator", fix)


def _number(text: str, field: str, kind: str) -> tuple[float, str, bool, bool]:
    """The number, the unit text after it, whether a $ led, and whether a space parted number and unit."""
    m = _RE.match(text)
    if not m or (m.group("lead") and m.group("num")[0] in "+-"):
        raise InputError(field, text, f"is not {EXPECTED[kind]}")
    num = m.group("num")
    if "," in num:
        if not _GROUPED.fullmatch(num):
            raise _comma_error(field, text, num)
        num = num.replace(",", "")
    try:
        value = float(num)  # underscores as Python writes them: 1_000_000
    except ValueError:
        raise InputError(field, text, f"is not {EXPECTED[kind]}") from None
    if m.group("lead") == "-":  # -$1,234 as format writes a negative amount
        value = -value
    return value, m.group("unit"), bool(m.group("dollar")), bool(m.group("gap"))


def _fail(field: str, text: str, kind: str, why: str = "") -> InputError:
    why = why or f"expected {EXPECTED[kind]}"
    return InputError(field, text, why)


def _bytes_unit(unit: str, field: str, text: str, kind: str) -> float:
    """Multiplier to bytes for a unit like GB, GiB, Gbit; None-safe errors."""
    u = unit.replace(" ", "")
    if u in ("", "B", "byte", "bytes"):
        return 1.0
    m = re.fullmatch(r"([kKMGTPE]?)(i?)(B|bytes?|bits?|b)", u)
    if not m:
        raise _fail(field, text, kind)
    pre, binary, base = m.groups()
    if binary:
        if not pre:
            raise _fail(field, text, kind)
        scale = BINARY[pre.upper() + "i"]
    else:
        scale = DECIMAL[pre]
    if base == "b":
        raise InputError(
            field, text,
            f"is ambiguous: '{pre}{binary}b' could be bits or bytes",
            f"write {pre}{binary}B for bytes or {pre}{binary}bit for bits",
        )
    if base.startswith("bit"):
        return scale / BITS_PER_BYTE
    return scale


def parse(text: str | float | int, kind: str, field: str = "value") -> float:
    """Parse ``text`` as a quantity of ``kind``; return a float in base units.

    Numbers pass through unchanged. Raises InputError naming ``field`` when the unit
    is of the wrong kind, unknown or ambiguous.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    if isinstance(text, bool):
        raise _fail(field, str(text), kind)
    if isinstance(text, (int, float)):
        value = float(text)
        if not math.isfinite(value):
            raise _fail(field, str(text), kind, "must be a finite number")
        return value
    raw = str(text)
    value, unit, dollar, gap = _number(raw, field, kind)
    unit = unit.strip()
    if dollar and kind not in ("usd", "usd_per_hour", "usd_per_million", "usd_per_kwh"):
        raise _fail(field, raw, kind, f"is money; expected {EXPECTED[kind]}")
    if kind == "bytes" and not unit and 0 < abs(value) < MEBI:  # "--memory 80": 80 bytes is never what is meant
        raise InputError(field, raw, "has no unit (read bare, it is bytes)",
                         f"write {raw.strip()}GB or {raw.strip()}GiB, or {raw.strip()}B for bytes")
    scale = _scale(unit, kind, field, raw, gap)
    result = value * scale
    if not math.isfinite(result):
        raise _fail(field, raw, kind, "must be a finite number")
    return result


def _strip_words(unit: str, words: tuple[str, ...], field: str, raw: str, gap: bool) -> str:
    """The unit without a trailing word such as "tokens" ("T tokens" -> "T", "Mtok" -> "M").

    The word is matched case-insensitively, but only whole: what is left before it is the
    prefix. A capitalised word glued to the number ("15Tokens", "15Tok", "7Params") is refused:
    its first letter is also a prefix (T, P, G), so 15 and 15T are both readings. A lowercase
    word glued on ("15tokens") is the word: "15t" alone is 15 trillion, "15tokens" is 15.
    """
    low = unit.lower()
    for w in sorted(words, key=len, reverse=True):
        if not low.endswith(w):
            continue
        head, word = unit[: -len(w)], unit[-len(w):]
        if not head and not gap and word[0].isupper() and word[0] in COUNT_SUFFIX:
            number = raw.strip()[: -len(word)].strip()
            raise InputError(
                field, raw, f"is ambiguous: the {word[0]} of {word!r} could be the prefix {word[0]}",
                f"write {number} {w} for {number}, or {number}{word[0]} {w} for {number}{word[0]}",
            )
        return head.strip()
    return unit


def _scale_number(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    if unit in ("", "x", "×"):
        return 1.0
    raise _fail(field, raw, kind)


def _scale_fraction(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    if unit == "%":
        return 0.01
    if unit == "":
        return 1.0
    raise _fail(field, raw, kind)


def _scale_count(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    u = _strip_words(unit, ("tokens", "token", "tok", "params", "parameters", "requests", "gpus"),
                     field, raw, gap)
    if u in COUNT_SUFFIX:
        return COUNT_SUFFIX[u]
    if re.fullmatch(r"[kKMGTPE]i?(B|bytes?)|[kKMGTPE]?bit", u):
        raise _fail(field, raw, kind, f"is a size in bytes; expected {EXPECTED[kind]}")
    raise _fail(field, raw, kind)


def _scale_bytes(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    if unit.endswith("/s") or unit.lower().endswith("ps"):
        raise _fail(field, raw, kind, f"is a bandwidth; expected {EXPECTED[kind]}")
    if unit in ("s", "ms", "h", "d", "w"):
        raise _fail(field, raw, kind, f"is a duration; expected {EXPECTED[kind]}")
    if re.fullmatch(r"[kKMGTPE]", unit):
        raise InputError(field, raw, "has a prefix but no unit",
                         f"write {unit}B for decimal bytes or {unit.upper()}iB for binary")
    return _bytes_unit(unit, field, raw, kind)


def _scale_bytes_per_s(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    u = unit.replace(" ", "")
    m = re.fullmatch(r"([kKMGTPE]?)(bps|Bps)", u)
    if m:
        if m.group(2) == "bps":
            return DECIMAL[m.group(1)] / BITS_PER_BYTE
        return DECIMAL[m.group(1)]
    if u in DECIMAL:  # bare prefix: 3.35T means 3.35e12 bytes/s
        return DECIMAL[u]
    if not u.endswith("/s"):
        raise _fail(field, raw, kind)
    return _bytes_unit(u[:-2], field, raw, kind)


def _scale_flops(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    u = unit.replace(" ", "")
    if u in DECIMAL:
        return DECIMAL[u]
    m = re.fullmatch(r"([kKMGTPE]?)(FLOP|FLOPs|flop|flops|FLOPS|FLOP/s|flop/s|FLOPs/s|OPS|OP/s|ops)", u)
    if not m:
        raise _fail(field, raw, kind)
    pre, base = m.groups()
    rate = base in ("FLOPS", "FLOP/s", "flop/s", "FLOPs/s", "OPS", "OP/s")
    if kind == "flops" and rate:
        raise _fail(field, raw, kind, f"is a rate; expected {EXPECTED[kind]}")
    if kind == "flops_per_s" and base in ("FLOP", "flop"):  # "FLOPs" stays: it is written for both
        raise _fail(field, raw, kind, f"is an amount of work; expected {EXPECTED[kind]}")
    return DECIMAL[pre]


_SECONDS = {
    "": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "fs": 1e-15, "ps": 1e-12, "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "min": MINUTE, "mins": MINUTE,
    "minute": MINUTE, "minutes": MINUTE, "h": HOUR, "hr": HOUR, "hrs": HOUR,
    "hour": HOUR, "hours": HOUR, "d": DAY, "day": DAY, "days": DAY, "w": WEEK,
    "wk": WEEK, "week": WEEK, "weeks": WEEK, "y": YEAR, "yr": YEAR, "year": YEAR,
    "years": YEAR,
}


def _scale_seconds(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    if unit in _SECONDS:
        return _SECONDS[unit]
    if unit == "m":
        raise InputError(field, raw, "is ambiguous: m could be minutes or months", "write min for minutes")
    raise _fail(field, raw, kind)


def _scale_usd(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    u = _strip_words(unit, ("usd", "dollars", "$"), field, raw, gap)
    if u in ("", "k", "K", "M", "B", "bn", "T"):
        return {"": 1.0, "k": KILO, "K": KILO, "M": MEGA, "B": GIGA, "bn": GIGA, "T": TERA}[u]
    if "/" in u:
        raise _fail(field, raw, kind, f"is a rate; expected {EXPECTED[kind]}")
    raise _fail(field, raw, kind)


def _scale_usd_per_hour(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    u = unit.replace(" ", "").lower()
    for per in ("/gpu-hour", "/gpu-hr", "/gpu-h", "/gpuh", "/hour", "/hr", "/h"):
        if u.endswith(per):
            u = u[: -len(per)]
            break
    else:
        if u not in ("",):
            if "/" in u:
                raise _fail(field, raw, kind, f"is not per hour; expected {EXPECTED[kind]}")
            raise _fail(field, raw, kind)
    if u in ("", "usd"):
        return 1.0
    raise _fail(field, raw, kind)


def _scale_usd_per_million(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    u = unit.replace(" ", "")
    if u in ("", "/M", "/Mtok", "/Mtokens", "/1M", "per M"):
        return 1.0
    raise _fail(field, raw, kind)


def _scale_usd_per_kwh(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    u = unit.replace(" ", "").lower()
    if u in ("", "/kwh"):
        return 1.0
    if u == "/mwh":
        return 1e-3
    raise _fail(field, raw, kind)


def _scale_watts(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    table = {"": 1.0, "W": 1.0, "kW": KILO, "MW": MEGA, "GW": GIGA}
    if unit.replace(" ", "") in table:
        return table[unit.replace(" ", "")]
    raise _fail(field, raw, kind)


def _scale_per_s(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    table = {"": 1.0, "/s": 1.0, "/sec": 1.0, "/min": 1 / MINUTE, "/h": 1 / HOUR, "/hr": 1 / HOUR,
             "/d": 1 / DAY, "/day": 1 / DAY}
    u = unit.replace(" ", "")
    if u in table:
        return table[u]
    raise _fail(field, raw, kind)


def _scale_joules(unit: str, kind: str, field: str, raw: str, gap: bool) -> float:
    table = {"": 1.0, "J": 1.0, "kJ": KILO, "MJ": MEGA, "GJ": GIGA, "Wh": 3600.0,
             "kWh": KWH_J, "MWh": KWH_J * 1e3, "GWh": KWH_J * 1e6}
    u = unit.replace(" ", "")
    if u in table:
        return table[u]
    raise _fail(field, raw, kind)


_SCALE = {
    "number": _scale_number, "fraction": _scale_fraction, "count": _scale_count, "bytes": _scale_bytes,
    "bytes_per_s": _scale_bytes_per_s, "flops": _scale_flops, "flops_per_s": _scale_flops, "seconds": _scale_seconds,
    "usd": _scale_usd, "usd_per_hour": _scale_usd_per_hour, "usd_per_million": _scale_usd_per_million,
    "usd_per_kwh": _scale_usd_per_kwh, "watts": _scale_watts, "per_s": _scale_per_s, "joules": _scale_joules,
}


def _scale(unit: str, kind: str, field: str, raw: str, gap: bool = False) -> float:
    """The factor of ``unit`` for a quantity of ``kind`` (its base unit: 1), or a one-line error."""
    return _SCALE[kind](unit, kind, field, raw, gap)


# ---------------------------------------------------------------- formatting


def _sig(x: float, digits: int) -> str:
    """x to ``digits`` significant figures, without trailing zeros or exponent."""
    if x == 0:
        return "0"
    s = f"{x:.{digits}g}"
    if "e" in s:  # fall back to positional for the mantissa range we produce
        s = f"{x:.{max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def _money(x: float, digits: int) -> str:
    """x to ``digits`` significant figures, with its cents where they are among those figures:
    "2.50" not "2.5" (a price with one decimal reads like a typo), but 153.33 stays "153.3"
    (a written "153.30" would claim a fifth figure)."""
    s = _sig(x, digits)
    head, dot, tail = s.partition(".")
    return s + "0" if dot and len(tail) == 1 and x < 10 ** (digits - 2) else s


def _with_prefix(x: float, table: list[tuple[float, str]], digits: int) -> tuple[str, str]:
    ax = abs(x)
    for scale, name in table:
        if ax >= scale * 0.9995:
            return _sig(x / scale, digits), name
    scale, name = table[-1]
    return _sig(x / scale, digits), name


_DEC = [(EXA, "E"), (PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"), (1.0, "")]
_BIN = [(PEBI, "Pi"), (TEBI, "Ti"), (GIBI, "Gi"), (MEBI, "Mi"), (KIBI, "Ki"), (1.0, "")]
_CNT = [(PETA, "P"), (TERA, "T"), (GIGA, "B"), (MEGA, "M"), (KILO, "k"), (1.0, "")]


def _sci(x: float, digits: int) -> str:
    mant, exp = f"{x:.{digits - 1}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return f"{mant}e{int(exp)}"


# Below LOW every kind is written in scientific notation ("3e-7 B", "$1.2e-9/h"): positional
# digits would run to hundreds of zeros for a value like 1e-300. Above its own limit each kind
# does the same (past the largest prefix, or where plain digits stop being readable).
LOW = 1e-6


def _readable(ax: float, high: float, low: float = LOW) -> bool:
    return ax == 0 or low <= ax < high


def format(value: float, kind: str, digits: int = 4, *, binary: bool = False) -> str:  # noqa: A001
    """Format a base-unit float for a reader, with a readable prefix.

    ``binary=True`` formats bytes with binary prefixes (GiB); the default is decimal
    (GB). Values outside a kind's readable range are written in scientific notation
    with the kind's base unit ("1.2e25 B"). parse(format(x, kind), kind) gives x back to
    ``digits`` significant figures (a fraction, shown as a percentage, to ``digits − 1``:
    0.57351 -> "57.4%"; a fraction near 1 takes the digits that tell it from 1: 1.0043 -> "100.4%",
    never "100%").
    """
    x = float(value)
    if not math.isfinite(x):
        return str(x)
    neg = "-" if x < 0 else ""
    ax = abs(x)
    sci = neg + _sci(ax, digits)
    if kind in ("number",):
        return neg + _sig(ax, digits) if _readable(ax, 1e9) else sci
    if kind == "fraction":
        fdigits = max(digits - 1, 2)
        if not _readable(ax, 1e4, 1e-6):  # 0.0001% .. 999,999%; beyond, a plain fraction
            return neg + _sci(ax, fdigits)
        text = _sig(ax * 100, fdigits)
        while text == "100" and ax != 1.0 and fdigits < 12:  # 100.4% is more than the whole: never "100%"
            fdigits += 1
            text = _sig(ax * 100, fdigits)
        return neg + text + "%"
    if kind == "count":
        if ax < 1e6 and ax == int(ax):
            return neg + f"{int(ax):,}"
        if ax >= 1e18 or ax < LOW:
            return sci
        if ax < 1000:
            return neg + _sig(ax, digits)
        n, p = _with_prefix(ax, _CNT, digits)
        return f"{neg}{n}{p}"
    if kind == "bytes":
        if not _readable(ax, 1e21):
            return f"{sci} B"
        if ax < 1000 and not binary:
            return f"{neg}{_sig(ax, digits)} B"
        n, p = _with_prefix(ax, _BIN if binary else _DEC, digits)
        return f"{neg}{n} {p}B"
    if kind == "bytes_per_s":
        if not _readable(ax, 1e21):
            return f"{sci} B/s"
        n, p = _with_prefix(ax, _DEC, digits)
        return f"{neg}{n} {p}B/s"
    if kind == "flops":  # FLOP units are long: below a thousandth, e-notation keeps a figure short
        if not _readable(ax, 1e18, 1e-3):
            return f"{sci} FLOP"
        n, p = _with_prefix(ax, _DEC, digits)
        return f"{neg}{n} {p}FLOP"
    if kind == "flops_per_s":
        if not _readable(ax, 1e21, 1e-3):
            return f"{sci} FLOP/s"
        n, p = _with_prefix(ax, _DEC, digits)
        return f"{neg}{n} {p}FLOP/s"
    if kind == "seconds":
        if ax == 0:
            return "0 s"
        if not _readable(ax, 1e9 * DAY, 1e-15):
            return f"{sci} s"
        for limit, scale, name in (
            (1e-12, 1e-15, "fs"), (1e-9, 1e-12, "ps"), (1e-6, 1e-9, "ns"), (1e-3, 1e-6, "us"), (1.0, 1e-3, "ms"),
            (120.0, 1.0, "s"),
            (2 * HOUR, MINUTE, "min"), (48 * HOUR, HOUR, "h"), (math.inf, DAY, "d"),
        ):
            if ax < limit * 0.99995:
                return f"{neg}{_sig(ax / scale, digits)} {name}"
    if kind == "usd":
        if not _readable(ax, 1e15):
            return f"{neg}${_sci(ax, digits)}"
        if ax >= 1e6:
            n, p = _with_prefix(ax, [(TERA, "T"), (GIGA, "B"), (MEGA, "M")], digits)
            return f"{neg}${n}{p}"
        if ax >= 10 ** (digits - 1):
            return f"{neg}${round(ax):,}"
        return f"{neg}${_money(ax, digits)}"
    if kind in ("usd_per_hour", "usd_per_million", "usd_per_kwh"):
        per = {"usd_per_hour": "/h", "usd_per_million": "/M", "usd_per_kwh": "/kWh"}[kind]
        n = _money(ax, digits) if _readable(ax, 1e9) else _sci(ax, digits)
        return f"{neg}${n}{per}"
    if kind == "watts":
        if not _readable(ax, 1e15):
            return f"{sci} W"
        n, p = _with_prefix(ax, [(GIGA, "G"), (MEGA, "M"), (KILO, "k"), (1.0, "")], digits)
        return f"{neg}{n} {p}W"
    if kind == "per_s":
        return f"{neg}{_sig(ax, digits)}/s" if _readable(ax, 1e9) else f"{sci}/s"
    if kind == "joules":
        if not _readable(ax, KWH_J * 1e9):  # up to 999,999 GWh
            return f"{sci} J"
        if ax >= KWH_J:
            n, p = _with_prefix(ax / HOUR, [(GIGA, "G"), (MEGA, "M"), (KILO, "k")], digits)
            return f"{neg}{n} {p}Wh"
        n, p = _with_prefix(ax, [(MEGA, "M"), (KILO, "k"), (1.0, "")], digits)
        return f"{neg}{n} {p}J"
    raise ValueError(f"unknown kind {kind!r}")


def fmt_auto(value: object, kind: str | None) -> str:
    """Format any result value: floats by kind, everything else as text."""
    if kind and isinstance(value, (int, float)) and not isinstance(value, bool):
        return format(value, kind)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):  # as format() writes it ("nan", "inf"); _sci has no exponent to split
            return str(value)
        return _sig(value, 4) if 1e-4 <= abs(value) < 1e9 or value == 0 else _sci(value, 4)
    if value is None:  # a figure that does not exist here (a note says why): not Python's "None"
        return "none"
    return str(value)
