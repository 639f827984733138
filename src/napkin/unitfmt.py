"""Format what people read: a base-unit float with a readable prefix (the other edge of napkin.units).

``napkin.units`` re-exports ``format`` and ``fmt_auto``; call them from there.
"""

from __future__ import annotations

import math

from napkin.unitconst import DAY, EXA, GIBI, GIGA, HOUR, KIBI, KILO, KWH_J, MEBI, MEGA, MINUTE, PEBI, PETA, TEBI, TERA

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
        return _fraction(neg, ax, digits)
    if kind == "count":
        return _count(neg, ax, digits, sci)
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
        return _seconds(neg, ax, digits, sci)
    if kind == "usd":
        return _usd(neg, ax, digits)
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
        return _joules(neg, ax, digits, sci)
    raise ValueError(f"unknown kind {kind!r}")


def _fraction(neg: str, ax: float, digits: int) -> str:
    fdigits = max(digits - 1, 2)
    if not _readable(ax, 1e4, 1e-6):  # 0.0001% .. 999,999%; beyond, a plain fraction
        return neg + _sci(ax, fdigits)
    text = _sig(ax * 100, fdigits)
    while text == "100" and ax != 1.0 and fdigits < 12:  # 100.4% is more than the whole: never "100%"
        fdigits += 1
        text = _sig(ax * 100, fdigits)
    return neg + text + "%"


def _count(neg: str, ax: float, digits: int, sci: str) -> str:
    if ax < 1e6 and ax == int(ax):
        return neg + f"{int(ax):,}"
    if ax >= 1e18 or ax < LOW:
        return sci
    if ax < 1000:
        return neg + _sig(ax, digits)
    n, p = _with_prefix(ax, _CNT, digits)
    return f"{neg}{n}{p}"


def _seconds(neg: str, ax: float, digits: int, sci: str) -> str:
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
    return f"{sci} s"  # not reached: the last limit is infinite


def _usd(neg: str, ax: float, digits: int) -> str:
    if not _readable(ax, 1e15):
        return f"{neg}${_sci(ax, digits)}"
    if ax >= 1e6:
        n, p = _with_prefix(ax, [(TERA, "T"), (GIGA, "B"), (MEGA, "M")], digits)
        return f"{neg}${n}{p}"
    if ax >= 10 ** (digits - 1):
        return f"{neg}${round(ax):,}"
    return f"{neg}${_money(ax, digits)}"


def _joules(neg: str, ax: float, digits: int, sci: str) -> str:
    if not _readable(ax, KWH_J * 1e9):  # up to 999,999 GWh
        return f"{sci} J"
    if ax >= KWH_J:
        n, p = _with_prefix(ax / HOUR, [(GIGA, "G"), (MEGA, "M"), (KILO, "k")], digits)
        return f"{neg}{n} {p}Wh"
    n, p = _with_prefix(ax, [(MEGA, "M"), (KILO, "k"), (1.0, "")], digits)
    return f"{neg}{n} {p}J"


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
