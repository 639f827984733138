"""Generic step logs: CSV, JSON Lines and Parquet with the seed's column names (or --map).

Columns: ``step``, ``t_wall`` (Unix seconds, seconds from a start, or ISO timestamps),
``gpus_allocated``, ``tokens`` (tokens in that step; or ``--tokens-per-step``). Any other
column (loss, learning rate) is kept. CSV is read by polars' native reader (RFC 4180
quoted fields line by line); a line with the wrong number of fields, an unreadable number
or a missing field is skipped and reported with its line number.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.ledger.readers import FIELDS, LogRead, ReadOptions, Unparseable, check_delimiter
from napkin.ledger.readers.common import finish, rename, time_to_seconds

NUMERIC = ("step", "gpus_allocated", "tokens")


# one field of an RFC 4180 line, with the comma before it: "quoted, ""escaped""" or bare
FIELD_RX = r'(?:^|,)(?:[ \t]*"(?:[^"]|"")*"[ \t]*|[^,"]*)'


def _header(data: bytes) -> tuple[int, int, int, list[str]]:
    """(byte offset of the header line, of the line after it, the header's 1-based line number, column names).

    Names are unquoted (RFC 4180) and stripped of spaces and of a UTF-8 byte order mark:
    ``step, t_wall`` names ``t_wall``."""
    pos, line = 0, 1
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        text = data[pos:end].decode("utf-8", errors="replace").lstrip("\ufeff").strip()
        if text:
            return pos, end + 1, line, _split_line(text)
        pos, line = end + 1, line + 1
    from napkin.ledger.records import NotEnoughRecords

    raise NotEnoughRecords("log", "empty", "has no header line and no records", "give a CSV step log with a header")


def _split_line(text: str) -> list[str]:
    """The fields of one CSV line (RFC 4180 quoting), unquoted and stripped."""
    import csv

    row = next(csv.reader([text], skipinitialspace=True), [])
    return [c.strip() for c in row]


def _numeric_columns(data: bytes, names: list[str], sample: int = 200) -> set[str]:
    """Columns whose values in the first lines all read as numbers: parsed as Float64 by polars directly
    (a later value that does not is null there: skipped if the field is required, absent otherwise).
    ``data`` starts at the first line after the header."""
    lines = [ln for ln in data[:65536].split(b"\n")[:sample] if ln.strip()]
    if len(lines) > 1 and not data[:65536].endswith(b"\n"):
        lines = lines[:-1]  # the sample may end inside a line
    out = set()
    for i, name in enumerate(names):
        vals = [ln.split(b",")[i].strip() if len(ln.split(b",")) > i else b"" for ln in lines]
        try:
            [float(v) for v in vals]
        except ValueError:
            continue
        if vals and all(vals):
            out.add(name)
    return out


def read_csv_frame(data: bytes, opts: ReadOptions, out: LogRead) -> Any:
    """The raw table of a CSV log, ``line`` numbered, ragged lines marked in ``_malformed``.

    The header may carry spaces after its commas and a UTF-8 byte order mark; fields may be
    quoted (RFC 4180: ``"ok, fine"``, a quote inside doubled). A file without a quote is read by
    polars' native reader; one with quotes is split line by line, so each record keeps its
    line number and a line with a stray quote is skipped by number, never merged with the next.
    """
    import polars as pl

    head_at, body_at, header_line, names = _header(data)
    if len(names) == 1:
        check_delimiter(out.path, data[head_at:body_at].decode("utf-8", errors="replace"))
    names = [n or f"column_{i + 1}" for i, n in enumerate(names)]  # a header ending in a comma
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError("log", out.path, f"has a repeated column name in its header ({', '.join(dup)})",
                         "give each column a distinct name")
    if "line" in names:
        raise InputError("log", out.path, "has a column named 'line' (napkin numbers the records under that name)",
                         "rename that column")
    if data.find(b'"', body_at) >= 0:
        return _read_quoted(data[body_at:], names, header_line, opts)
    target = {n: opts.mapping.get(n, n) for n in names}
    numeric = _numeric_columns(data[body_at:body_at + 65536], names)
    schema = {n: (pl.Float64 if (target[n] in NUMERIC or n in numeric) else pl.String) for n in names}
    if data[head_at:body_at].rstrip(b"\r\n") == ",".join(names).encode():  # a plain header: read as it is
        table = data if head_at == 0 else data[head_at:]
        read_schema = schema
    else:  # spaces, quotes or a byte order mark in the header: polars reads a plain one in its place
        read_schema = {f"_c{i}": dtype for i, dtype in enumerate(schema.values())}
        table = ",".join(read_schema).encode() + b"\n" + data[body_at:]
    try:
        df = pl.read_csv(table, has_header=True, schema=read_schema, quote_char=None, ignore_errors=True,
                         truncate_ragged_lines=True, raise_if_empty=False)
    except pl.exceptions.PolarsError as exc:  # pragma: no cover - polars refused the whole file
        raise InputError("log", out.path, f"could not be read as CSV ({str(exc).splitlines()[0]})") from None
    if read_schema is not schema:
        df = df.rename(dict(zip(read_schema, names)))
    del table
    df = df.with_row_index("line", offset=header_line + 1).with_columns(pl.col("line").cast(pl.Int64))
    raw_lines: Any = None

    def per_line() -> Any:  # the raw lines, numbered like the rows (built only when something is off)
        nonlocal raw_lines
        if raw_lines is None:
            text = pl.Series(data[body_at:].decode("utf-8", errors="replace").split("\n"))
            raw_lines = pl.DataFrame({"line": pl.int_range(header_line + 1, header_line + 1 + text.len(),
                                                           eager=True, dtype=pl.Int64), "_raw": text})
        return raw_lines

    empty = pl.all_horizontal([pl.col(n).is_null() for n in names])
    if df.select(empty.any()).item():
        blank = per_line().filter(pl.col("_raw").str.strip_chars() == "")["line"]
        df = df.filter(~(empty & pl.col("line").is_in(blank.implode())))
    # every data line has exactly len(names) fields unless the commas say otherwise
    ncols = len(names)
    expected = (ncols - 1) * df.height
    short = df.select(pl.col(names[-1]).is_null().sum()).item() if df.height else 0
    if data.count(b",", body_at) != expected or short:
        fields = per_line().with_columns((pl.col("_raw").str.count_matches(",", literal=True) + 1).alias("_n"))
        df = df.join(fields.drop("_raw"), on="line", how="left").with_columns(
            pl.when(pl.col("_n") != ncols)
            .then(pl.format("has {} field(s); the header has " + str(ncols), pl.col("_n")))
            .otherwise(None).alias("_malformed")).drop("_n")
    return df


def _read_quoted(data: bytes, names: list[str], header_line: int, opts: ReadOptions) -> Any:
    """A CSV with quoted fields, split line by line with an RFC 4180 field pattern (vectorised)."""
    import polars as pl

    text = pl.Series("_raw", data.decode("utf-8", errors="replace").split("\n"))
    if text.len() and text[-1] == "":
        text = text.head(text.len() - 1)
    df = pl.DataFrame([text]).with_row_index("line", offset=header_line + 1).with_columns(
        pl.col("line").cast(pl.Int64), pl.col("_raw").str.strip_chars_end("\r"))
    df = df.filter(pl.col("_raw").str.strip_chars() != "")
    parts = pl.col("_raw").str.extract_all(FIELD_RX)
    df = df.with_columns(parts.alias("_f"))
    ncols = len(names)
    whole = pl.col("_f").list.eval(pl.element().str.len_chars()).list.sum() == pl.col("_raw").str.len_chars()
    n = pl.col("_f").list.len()
    df = df.with_columns(
        pl.when(~whole).then(pl.lit("has a quote that is not a whole quoted field (RFC 4180)"))
        .when(n != ncols).then(pl.format("has {} field(s); the header has " + str(ncols), n))
        .otherwise(None).alias("_malformed"))
    cols = []
    for i, name in enumerate(names):
        v = pl.col("_f").list.get(i, null_on_oob=True)
        v = v.str.strip_prefix(",").str.strip_chars(" \t") if i else v.str.strip_chars(" \t")
        quoted = v.str.starts_with('"') & v.str.ends_with('"') & (v.str.len_chars() >= 2)
        v = pl.when(quoted).then(v.str.slice(1, v.str.len_chars() - 2).str.replace_all('""', '"', literal=True)) \
            .otherwise(v)
        cols.append(pl.when(v == "").then(None).otherwise(v).alias(name))
    df = df.with_columns(cols).drop(["_raw", "_f"])
    return df.with_columns([pl.col(n).cast(pl.Float64, strict=False) for n in names
                            if opts.mapping.get(n, n) in NUMERIC])


def _extras_numeric(df: Any) -> Any:
    """Other columns as numbers where every value reads as one; text columns kept as text."""
    import polars as pl

    casts = []
    for name, dtype in df.schema.items():
        if name in FIELDS or name in ("line", "_malformed") or dtype != pl.String:
            continue
        as_num = df[name].str.strip_chars().cast(pl.Float64, strict=False)  # " 2.99" after a comma and a space
        if as_num.null_count() == df[name].null_count():
            casts.append(as_num.alias(name))
    return df.with_columns(casts) if casts else df


def read_csv(data: bytes, opts: ReadOptions, label: str) -> LogRead:
    out = LogRead(frame=None, format="csv", path=label)
    df = read_csv_frame(data, opts, out)
    df = rename(df, opts)
    df = time_to_seconds(df, out)
    return finish(_extras_numeric(df), opts, out)


def read_jsonl(data: bytes, opts: ReadOptions, label: str) -> LogRead:
    """JSON Lines: one object per line; a line that is not JSON is skipped and counted."""
    import msgspec
    import polars as pl

    out = LogRead(frame=None, format="jsonl", path=label)
    df = _read_clean_jsonl(data)
    if df is not None:
        df = rename(df, opts)
        df = time_to_seconds(df, out)
        return finish(_extras_numeric(df), opts, out)
    lines = pl.Series("raw", data.decode("utf-8", errors="replace").split("\n"))
    if lines.len() and lines[-1] == "":
        lines = lines.head(lines.len() - 1)
    df = pl.DataFrame([lines]).with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))
    df = df.filter(pl.col("raw").str.strip_chars() != "")
    df = _nonfinite_as_text(df)
    keys: list[str] = []
    decoder = msgspec.json.Decoder()
    for raw in df["raw"].head(2000).to_list():
        try:
            obj = decoder.decode(raw)
        except msgspec.DecodeError:
            continue
        if isinstance(obj, dict):
            keys += [k for k in obj if k not in keys]
    if not keys:
        raise InputError("log", label, "has no line that is a JSON object", "give one JSON object per line")
    cols = []
    for k in keys:
        path = "$." + k if k.isidentifier() else "$['" + k.replace("'", "\\'") + "']"
        cols.append(pl.col("raw").str.json_path_match(path).alias(k))
    df = df.with_columns(cols)
    df = _exact_numbers(df, keys)
    # a line with none of the keys: not JSON at all (a line cut short), or JSON but not an object
    empty = df.filter(pl.all_horizontal([pl.col(k).is_null() for k in keys])).select(
        "line", pl.when(pl.col("raw").str.json_path_match("$").is_null()).then(pl.lit("not valid JSON"))
        .when(~pl.col("raw").str.strip_chars().str.starts_with("{")).then(pl.lit("not a JSON object"))
        .otherwise(None).alias("_malformed"))
    df = df.join(empty, on="line", how="left") if empty.height else df.with_columns(
        pl.lit(None, dtype=pl.String).alias("_malformed"))
    df = df.drop("raw")
    df = rename(df, opts)
    df = time_to_seconds(df, out)
    return finish(_extras_numeric(df), opts, out)


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
        except ValueError:  # not JSON even so: left as it is, skipped as malformed by number
            return raw

    fixed = left.with_columns(pl.col("raw").map_elements(rewrite, return_dtype=pl.String))
    return df.update(fixed.select("line", "raw"), on="line")


def _read_clean_jsonl(data: bytes) -> Any:
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
    return df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))


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


def read_parquet(path: Any, opts: ReadOptions, label: str) -> LogRead:
    """Parquet: rows are numbered from 1; a row missing a field is skipped and counted."""
    import io

    import polars as pl

    out = LogRead(frame=None, format="parquet", path=label, location="row")
    src = io.BytesIO(path) if isinstance(path, bytes) else path
    try:
        df = pl.read_parquet(src)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise Unparseable("log", label, f"is not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    df = df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))
    df = rename(df, opts)
    df = time_to_seconds(df, out)
    return finish(df, opts, out)
