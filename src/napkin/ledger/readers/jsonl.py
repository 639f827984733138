"""JSON Lines step logs, read a piece at a time: one object per line, keys as a CSV's columns.

A piece whose every line is a flat JSON object is read whole by polars' NDJSON reader;
any odd line (blank, cut short, not an object, nested, not UTF-8 text, nested too deeply to
parse) sends the piece line by line, where each bad line is skipped and counted by number.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.ledger.readers import LogRead, ReadOptions, Source
from napkin.ledger.readers.common import Pieces, done, finish, is_text, rename, time_to_seconds
from napkin.ledger.readers.csv import NOT_UTF8, TOO_LONG, extras_numeric
from napkin.ledger.readers.lines import LONG, bad_utf8_lines


def read(src: Source, opts: ReadOptions, label: str) -> LogRead:
    """JSON Lines: one object per line; a line that is not JSON is skipped and counted."""
    out = LogRead(format="jsonl", path=label)
    pieces = Pieces()
    fh, chunks = src.chunks()
    line0 = 1
    with fh:
        for data in chunks:
            if data is LONG:
                out.skip([line0], TOO_LONG)
                line0 += 1
                continue
            df, n = frame(data, line0, label, first=pieces.first)
            line0 += n
            if df is None:
                continue
            df = rename(df, opts, out, pieces.names)
            df = time_to_seconds(df, out, pieces)
            finish(extras_numeric(df), opts, out, pieces)
    return done(out, opts, pieces)


def frame(data: bytes, line0: int, label: str, *, first: bool = True) -> tuple[Any, int]:
    """The raw table of one piece of whole lines (``line0`` the number of its first), and how many it holds."""
    import msgspec
    import polars as pl

    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    bad_text = bad_utf8_lines(data)
    df = None if bad_text else _read_clean_jsonl(data, line0)
    if df is not None:
        return df, n_lines
    lines = pl.Series("raw", data.decode("utf-8", errors="replace").split("\n"))
    if lines.len() and lines[-1] == "":
        lines = lines.head(lines.len() - 1)
    df = pl.DataFrame([lines]).with_row_index("line", offset=line0).with_columns(pl.col("line").cast(pl.Int64))
    if bad_text:
        df = df.with_columns(pl.when(pl.col("line").is_in([line0 + i for i in bad_text])).then(pl.lit(""))
                             .otherwise(pl.col("raw")).alias("raw"),
                             pl.col("line").is_in([line0 + i for i in bad_text]).alias("_bad_text"))
    df = df.filter((pl.col("raw").str.strip_chars() != "") | pl.col("_bad_text") if bad_text else
                   pl.col("raw").str.strip_chars() != "")
    if not df.height:
        return None, n_lines
    df = _nonfinite_as_text(df)
    keys: list[str] = []
    decoder = msgspec.json.Decoder()
    for raw in df["raw"].head(2000).to_list():
        try:
            obj = decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):  # RecursionError: nested too deeply to be a log line
            continue
        if isinstance(obj, dict):
            keys += [k for k in obj if k not in keys and is_text(k)]
    if not keys and first:
        raise InputError("log", label, "has no line that is a JSON object", "give one JSON object per line")
    cols = []
    for k in keys:
        path = "$." + k if k.isidentifier() else "$['" + k.replace("'", "\\'") + "']"
        cols.append(pl.col("raw").str.json_path_match(path).alias(k))
    df = df.with_columns(cols)
    df = _exact_numbers(df, keys)
    # a line with none of the keys: not JSON at all (a line cut short), or JSON but not an object
    none = pl.all_horizontal([pl.col(k).is_null() for k in keys]) if keys else pl.lit(True)
    why = (pl.when(pl.col("raw").str.json_path_match("$").is_null()).then(pl.lit("not valid JSON"))
           .when(~pl.col("raw").str.strip_chars().str.starts_with("{")).then(pl.lit("not a JSON object"))
           .otherwise(None))
    if bad_text:
        why = pl.when(pl.col("_bad_text")).then(pl.lit(NOT_UTF8)).otherwise(why)
        none = none | pl.col("_bad_text")
    df = df.with_columns(pl.when(none).then(why).otherwise(None).alias("_malformed"))
    return df.drop([c for c in ("raw", "_bad_text") if c in df.columns]), n_lines


NONFINITE_RX = r"[:\[,]\s*-?(?:NaN|Infinity)\s*[,\]}]"  # a bare NaN or Infinity value (Python's json.dumps)
NONFINITE_VALUE_RX = r'("\s*:\s*)(-?(?:NaN|Infinity))(\s*[,}\]])'  # one as the value of a key


def _nonfinite_as_text(df: Any) -> Any:
    """Lines with a bare ``NaN``/``Infinity`` value (not JSON, but what Python's ``json.dumps``
    writes for a diverged loss) rewritten with those values as the strings "NaN"/"Infinity",
    which read back as the floats: the value of a key by a vectorised replacement, anything
    else (inside a list) by Python's own parser, line by line."""
    import json

    import polars as pl

    has = pl.col("raw").str.contains(NONFINITE_RX)
    if not df.select(has.any()).item():
        return df
    df = df.with_columns(pl.when(has).then(pl.col("raw").str.replace_all(NONFINITE_VALUE_RX, '${1}"${2}"${3}'))
                         .otherwise(pl.col("raw")))
    left = df.filter(has)
    if not left.height:
        return df

    def text(v: Any) -> Any:
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, float) and v in (float("inf"), float("-inf")):
            return "Infinity" if v > 0 else "-Infinity"
        if isinstance(v, dict):
            return {k: text(x) for k, x in v.items()}
        if isinstance(v, list):
            return [text(x) for x in v]
        return v

    def rewrite(raw: str) -> str:
        try:
            return json.dumps(text(json.loads(raw)))
        except (ValueError, RecursionError):  # not JSON even so: left as it is, skipped as malformed by number
            return raw

    fixed = left.with_columns(pl.col("raw").map_elements(rewrite, return_dtype=pl.String))
    return df.update(fixed.select("line", "raw"), on="line")


def _read_clean_jsonl(data: bytes, line0: int = 1) -> Any:
    """The fast path (ten times the line-by-line one): a file whose every line is a flat JSON
    object, read whole by polars' NDJSON reader, which parses numbers exactly. None when any
    line is blank or not an object, a value is nested, or a column mixes numbers and text: the
    line-by-line path then reads it and reports each bad line by number."""
    import io

    import polars as pl

    if not data or data[:1].isspace() or b"\n\n" in data:
        return None
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    try:
        df = pl.read_ndjson(io.BytesIO(data), infer_schema_length=2000)
    except (pl.exceptions.PolarsError, ValueError, OSError):
        return None
    if df.height != lines or not df.width:
        return None
    numeric = []
    for name, dtype in df.schema.items():
        if dtype.is_nested() or dtype == pl.Object:
            return None
        if dtype == pl.String and df[name].cast(pl.Float64, strict=False).null_count() < df.height:
            return None  # numbers among text: the reader writes them back its own way ("1e+20" as "1000...")
        if dtype.is_numeric() or dtype == pl.Null:
            numeric.append(pl.col(name).cast(pl.Float64))
        elif dtype == pl.Boolean:  # as text, as the line-by-line path has it: not a number
            numeric.append(pl.col(name).cast(pl.String))
    df = df.with_columns(numeric) if numeric else df
    return df.with_row_index("line", offset=line0).with_columns(pl.col("line").cast(pl.Int64))


def _exact_numbers(df: Any, keys: list[str]) -> Any:
    """Numbers as they were written. polars' JSON path matcher re-serialises a number after an
    approximate parse (one Unix-time float in eight comes back an ulp off, 2.4e-7 s, enough to
    move a short run's $/M in the seventh figure), so a top-level number is taken from the line's
    own text instead: the first or the last ``"key": number`` of the line, whichever equals the
    matcher's value to 1e-12 (a nested key of the same name is the other one; with neither, the
    matcher's value stands)."""
    import re

    import polars as pl

    exprs = []
    for k in keys:
        found = pl.col("raw").str.extract_all('"' + re.escape(k) + r'"\s*:\s*-?[0-9][0-9.eE+\-]*')
        approx = pl.col(k).cast(pl.Float64, strict=False)
        out = pl.col(k)
        for pick in (found.list.last(), found.list.first()):  # the first checked wins
            text = pick.str.extract(r":\s*(\S+)$", 1)
            exact = text.cast(pl.Float64, strict=False)
            same = exact.is_not_null() & approx.is_not_null() & ((exact - approx).abs() <= 1e-12 * approx.abs())
            out = pl.when(same).then(text).otherwise(out)
        exprs.append(out.alias(k))
    return df.with_columns(exprs)
