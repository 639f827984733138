"""Generic step logs: CSV, JSON Lines and Parquet with the seed's column names (or --map).

Columns: ``step``, ``t_wall`` (Unix seconds, seconds from a start, or ISO timestamps),
``gpus_allocated``, ``tokens`` (tokens in that step; or ``--tokens-per-step``). Any other
column (loss, learning rate) is kept. CSV is read by polars' native reader; a line with
the wrong number of fields, an unreadable number or a missing field is skipped and
reported with its line number.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.ledger.readers import FIELDS, LogRead, ReadOptions
from napkin.ledger.readers.common import finish, rename, time_to_seconds

NUMERIC = ("step", "gpus_allocated", "tokens")


def _header(data: bytes) -> tuple[int, int, list[str]]:
    """(byte offset of the header line, its 1-based line number, column names)."""
    pos, line = 0, 1
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        text = data[pos:end].decode("utf-8", errors="replace").strip()
        if text:
            return pos, line, [c.strip().strip('"').strip() for c in text.split(",")]
        pos, line = end + 1, line + 1
    from napkin.ledger.records import NotEnoughRecords

    raise NotEnoughRecords("log", "empty", "has no header line and no records", "give a CSV step log with a header")


def _numeric_columns(data: bytes, names: list[str], sample: int = 200) -> set[str]:
    """Columns whose values in the first lines all read as numbers: parsed as Float64 by polars directly
    (a later value that does not is null there: skipped if the field is required, absent otherwise)."""
    lines = [ln for ln in data[:65536].split(b"\n")[1:sample + 1] if ln.strip()]
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
    """The raw table of a CSV log, ``line`` numbered, ragged lines marked in ``_malformed``."""
    import polars as pl

    offset, header_line, names = _header(data)
    if offset:
        data = data[offset:]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError("log", out.path, f"has a repeated column name in its header ({', '.join(dup)})",
                         "give each column a distinct name")
    target = {n: opts.mapping.get(n, n) for n in names}
    quoted = b'"' in data
    numeric = _numeric_columns(data, names) if not quoted else set()
    overrides = {n: (pl.Float64 if (target[n] in NUMERIC or n in numeric) and not quoted else pl.String)
                 for n in names}
    try:
        df = pl.read_csv(data, has_header=True, schema_overrides=overrides, quote_char=None, ignore_errors=True,
                         truncate_ragged_lines=True, infer_schema=False, raise_if_empty=False)
    except pl.exceptions.PolarsError as exc:  # pragma: no cover - polars refused the whole file
        raise InputError("log", out.path, f"could not be read as CSV ({str(exc).splitlines()[0]})") from None
    df = df.with_row_index("line", offset=header_line + 1).with_columns(pl.col("line").cast(pl.Int64))
    if quoted:
        df = df.with_columns([pl.col(n).str.strip_chars().str.strip_chars('"') for n in names])
        df = df.with_columns([pl.col(n).cast(pl.Float64, strict=False) for n in names if target[n] in NUMERIC])
    raw_lines: Any = None

    def per_line() -> Any:  # the raw lines, numbered like the rows (built only when something is off)
        nonlocal raw_lines
        if raw_lines is None:
            text = pl.Series(data.decode("utf-8", errors="replace").split("\n"))
            raw_lines = pl.DataFrame({"line": pl.int_range(header_line, header_line + text.len(), eager=True,
                                                           dtype=pl.Int64), "_raw": text})
        return raw_lines

    empty = pl.all_horizontal([pl.col(n).is_null() for n in names])
    if df.select(empty.any()).item():
        blank = per_line().filter(pl.col("_raw").str.strip_chars() == "")["line"]
        df = df.filter(~(empty & pl.col("line").is_in(blank.implode())))
    # every data line has exactly len(names) fields unless the commas say otherwise
    ncols = len(names)
    expected = (ncols - 1) * (df.height + 1)
    short = df.select(pl.col(names[-1]).is_null().sum()).item() if df.height else 0
    if data.count(b",") != expected or short:
        fields = per_line().with_columns((pl.col("_raw").str.count_matches(",", literal=True) + 1).alias("_n"))
        df = df.join(fields.drop("_raw"), on="line", how="left").with_columns(
            pl.when(pl.col("_n") != ncols)
            .then(pl.format("has {} field(s); the header has " + str(ncols), pl.col("_n")))
            .otherwise(None).alias("_malformed")).drop("_n")
    return df


def _extras_numeric(df: Any) -> Any:
    """Other columns as numbers where every value reads as one; text columns kept as text."""
    import polars as pl

    casts = []
    for name, dtype in df.schema.items():
        if name in FIELDS or name in ("line", "_malformed") or dtype != pl.String:
            continue
        as_num = df[name].cast(pl.Float64, strict=False)
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
    not_object = pl.all_horizontal([pl.col(k).is_null() for k in keys]) & ~pl.col("raw").str.strip_chars().str.starts_with("{")
    df = df.with_columns(pl.when(not_object).then(pl.lit("not a JSON object")).otherwise(None).alias("_malformed"))
    df = df.drop("raw")
    df = rename(df, opts)
    df = time_to_seconds(df, out)
    return finish(_extras_numeric(df), opts, out)


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
        raise InputError("log", label, f"is not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    df = df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))
    df = rename(df, opts)
    df = time_to_seconds(df, out)
    return finish(df, opts, out)
