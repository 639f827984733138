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

from napkin.unitconst import (  # noqa: F401 - the constants, re-exported where callers have always found them
    BITS_PER_BYTE, DAY, EXA, GIBI, GIGA, HOUR, KIBI, KILO, KWH_J, MEBI, MEGA, MILLION, MINUTE, PEBI, PETA, TEBI, TERA,
    WEEK, YEAR,
)

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


from napkin.unitfmt import LOW, fmt_auto, format  # noqa: E402,F401,A004 - formatting, re-exported
