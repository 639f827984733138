"""Values for the fuzz suites, from the request Structs' field metadata (kind, bounds, physical range).

Valid numbers (within the field's bounds and its physical range, :mod:`napkin.limits`, as a number or
in the field's unit syntax), boundary numbers (each bound, just inside and just outside), extremes
(1.7e308, 5e-324, a 400-digit integer, "1e400", "nan"), hostile text (control characters, server
paths, long names) and the catalogs' names. The web fuzz sends them as JSON; the CLI fuzz as argv.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from napkin import catalog, limits, units

CONTROL = "\x00\x07\x08\t\n\r\x1b\x7f\x85\u2028\u2029\u202e"
HOSTILE_TEXT = ["", " ", "\x1b[2J\nerror: spoofed second line", "7B\nerror: x", "é€🙂", "🙂" * 50, "a" * 300,
                "/etc/hostname", "/etc/passwd", "../../etc/passwd", "~/.ssh/id_rsa", "/dev/zero", "./src", "src",
                "config.json", "C:\\Windows\\win.ini", "\x00", "meta-llama/Llama-3.1-8B", "file:///etc/passwd",
                "%2Fetc%2Fpasswd", "null", "true", "1e400", "NaN", "-Infinity", "1,5", "1.2.3", "$", "%", "=",
                ",,,", "a=b=c", "x" * 5000]
EXTREME_NUMBERS = [0, -0.0, -1, 1, 1e-30, 9.9e-31, 1e30, 1.01e30, 5e-324, 2.2e-308, 1e-300, 1.7e308, -1.7e308,
                   1e308, 2**53 + 1, 2**63, 2**64, -(2**63), 10**400, 0.5, 1e15, 1e26]
EXTREME_STRINGS = ["1e400", "-1e400", "1e-400", "nan", "inf", "-inf", "NaN", "Infinity", "1.7e308", "5e-324",
                   "1e308B", "1e30T", "-7B", "0", "-0", "1" + "0" * 400, "0x10", "1_000", "1,000,000", "7 B",
                   "7BB", "7 parameters", "$-5", "1e-30", "1e30"]
PRECISIONS = ["bf16", "fp16", "fp8", "fp4", "int8", "int4", "fp32", "tf32", "FP8", "BF16", "fp6", "int2", "e4m3"]


def catalog_names() -> dict[str, list[str]]:
    models = sorted(catalog.models())
    aliases = sorted({a for m in catalog.models().values() for a in (getattr(m, "aliases", None) or ())})
    return {"models": models + aliases[:10], "gpus": sorted(catalog.gpus()),
            "prices": sorted(catalog.table("prices").get("api", {}))}


NAMES = catalog_names()
ALL_NAMES = NAMES["models"] + NAMES["gpus"] + NAMES["prices"]


def _bounds(info: Any) -> tuple[float, float]:
    """The field's own bounds within its physical range (napkin.limits), or -1e6..1e6 where it has neither."""
    low = info.meta.get("gt", info.meta.get("ge"))
    high = info.meta.get("lt", info.meta.get("le"))
    low, high = (low if low is not None else -1e6), (high if high is not None else 1e6)
    limit = limits.limit_for(info.name, info.kind)
    if limit is not None:
        low, high = max(low, limit.low), min(high, limit.high)
    return low, high


def valid_number(info: Any) -> st.SearchStrategy:
    """A number within the field's bounds, as a number or in the field's unit syntax."""
    low, high = _bounds(info)
    low = max(low, 1e-3) if info.kind in ("count", "int") or low >= 0 else low
    x = st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False, exclude_min="gt" in info.meta,
                  exclude_max="lt" in info.meta)
    if info.kind == "int":
        return st.integers(min_value=max(1, int(math.ceil(low))), max_value=max(1, int(min(high, 4096)))).flatmap(
            lambda n: st.sampled_from([n, str(n), f"{n:,}"]))
    kind = info.kind if info.kind in units.KINDS else "number"
    return x.flatmap(lambda v: st.sampled_from([v, units.format(v, kind), f"{v:g}"]))


def boundary_number(info: Any) -> st.SearchStrategy:
    """Each bound of the field and of its physical range, just inside, just outside, and past it."""
    edges = [info.meta[k] for k in ("gt", "ge", "lt", "le") if k in info.meta] or [0.0]
    limit = limits.limit_for(info.name, info.kind)
    edges += [limit.low, limit.high] if limit is not None else []
    out = []
    for b in edges:
        out += [b, math.nextafter(b, math.inf), math.nextafter(b, -math.inf), b + 1, b - 1, b * 100, -b]
    return st.sampled_from(out)


def numeric(info: Any) -> st.SearchStrategy:
    return st.one_of(valid_number(info), valid_number(info), boundary_number(info), st.sampled_from(EXTREME_NUMBERS),
                     st.sampled_from(EXTREME_STRINGS))


def any_text(max_size: int = 40) -> st.SearchStrategy:
    return st.one_of(st.text(max_size=max_size), st.text(alphabet=st.sampled_from(list(CONTROL) + list("abc=,/.")),
                                                         max_size=max_size), st.sampled_from(HOSTILE_TEXT))
