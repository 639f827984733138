"""CSV step logs, read a piece at a time: the columns ``step, t_wall, gpus_allocated, tokens``,
their aliases (:mod:`~napkin.ledger.readers.columns`), or ``--map col=field``.

Each piece of whole lines (8 MiB) is read by polars' native reader with the header's types,
only the columns that are fields (and ``mfu_logged``) parsed, the others counted as fields;
a line with the wrong number of fields, an unreadable number, a missing
field or bytes that are not UTF-8 text is skipped and reported with its line number.
Fields may be quoted (RFC 4180: ``"ok, fine"``, a quote inside doubled): a piece with a
quote is split line by line, so each record keeps its line number and a line with a stray
quote is skipped by number, never merged with the next.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from napkin.errors import InputError, quote
from napkin.ledger.readers import LogRead, ReadOptions, Source, check_delimiter
from napkin.ledger.readers.common import Pieces, done, finish, rename, time_to_seconds
from napkin.ledger.readers.lines import LONG, bad_utf8_lines

NUMERIC = ("step", "gpus_allocated", "tokens")
NOT_UTF8 = "is not UTF-8 text"
TOO_LONG = "is longer than 16 MiB (not a log line)"
PARSERS = 2  # threads parsing pieces (see frames)
AHEAD = 2  # pieces parsed ahead of the one being finished
# one field of an RFC 4180 line, with the comma before it: "quoted, ""escaped""" or bare
FIELD_RX = r'(?:^|,)(?:[ \t]*"(?:[^"]|"")*"[ \t]*|[^,"]*)'


@dataclass
class Layout:
    """The header's column names and the types they are read as (from the first piece)."""

    names: list[str]
    schema: dict[str, Any]  # positional names _c0.. -> polars type
    header_line: int
    keep: list[int] | None = None  # the columns read (None: all); the others are only counted as fields

    @property
    def plain(self) -> bytes:
        return (",".join(self.schema) + "\n").encode()

    def project(self, names: Any, out: LogRead, opts: ReadOptions) -> None:
        """Read only the columns that are fields (through --map and the aliases), and mfu_logged."""
        import polars as pl

        from napkin.ledger.readers import FIELDS
        from napkin.ledger.readers.columns import rename

        rename(pl.DataFrame(schema=dict.fromkeys(self.names, pl.String)), opts, out, names)
        wanted = {src for src, dst in (names.renames or {}).items() if dst in FIELDS} | set(FIELDS) | {"mfu_logged"}
        self.keep = [i for i, n in enumerate(self.names) if n in wanted]


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

    try:
        row = next(csv.reader([text], skipinitialspace=True), [])
    except csv.Error:  # a carriage return or NUL inside the line: split at the commas as they are
        row = text.split(",")
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


def layout(data: bytes, opts: ReadOptions, label: str) -> tuple[Layout, int]:
    """The header of the first piece, and the byte offset where its records start."""
    import polars as pl

    head_at, body_at, header_line, names = _header(data)
    if len(names) == 1:
        check_delimiter(label, data[head_at:body_at].decode("utf-8", errors="replace"))
    names = [n or f"column_{i + 1}" for i, n in enumerate(names)]  # a header ending in a comma
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError("log", label, f"has a repeated column name in its header ({quote(', '.join(dup))})",
                         "give each column a distinct name")
    if "line" in names:
        raise InputError("log", label, "has a column named 'line' (napkin numbers the records under that name)",
                         "rename that column")
    target = {n: opts.mapping.get(n, n) for n in names}
    numeric = _numeric_columns(data[body_at:body_at + 65536], names)
    schema = {f"_c{i}": (pl.Float64 if (target[n] in NUMERIC or n.lower() in NUMERIC or n in numeric) else pl.String)
              for i, n in enumerate(names)}
    return Layout(names, schema, header_line), body_at


def parse(data: bytes, lay: Layout) -> tuple[Any, int, bool, list[int], int]:
    """One piece of whole lines parsed: (the raw table, how many lines the piece holds, whether a line has
    more fields than the header, the lines that are not UTF-8 text, the commas it holds; the quoted path
    numbers its lines from 0 in ``line``). Runs in a parsing thread: nothing here needs the pieces before."""
    import polars as pl

    bad_text = bad_utf8_lines(data)
    if b'"' in data:
        df, n_lines = _read_quoted(data, lay, bad_text)
        return df, n_lines, False, bad_text, 0
    ncols = len(lay.names)
    first = data.find(b"\n")
    plain_first = data.count(b",", 0, first if first >= 0 else len(data)) == ncols - 1
    table = data if plain_first else lay.plain + data  # polars takes the number of fields from the first line
    kw: dict[str, Any] = dict(has_header=not plain_first, schema=lay.schema, quote_char=None, ignore_errors=True,
                              raise_if_empty=False, encoding="utf8-lossy" if bad_text else "utf8",
                              columns=lay.keep)
    ragged = False
    try:
        df = pl.read_csv(table, truncate_ragged_lines=False, **kw)
    except pl.exceptions.ComputeError:  # a line with more fields than the header: read them, then count
        ragged = True
        df = pl.read_csv(table, truncate_ragged_lines=True, **kw)
    del table
    kept = lay.keep if lay.keep is not None else range(ncols)
    df = df.rename({f"_c{i}": lay.names[i] for i in kept}).rechunk()  # here, beside the main thread's work
    return df, df.height, ragged, bad_text, _count(data, ord(","))  # counted here: numpy lets go of the GIL


def settle(parsed: tuple[Any, int, bool, list[int], int], data: bytes, line0: int, lay: Layout) -> Any:
    """A parsed piece numbered from ``line0``, a line that cannot be a record marked in ``_malformed``.

    Every line is one row, so the fields are checked by count: the piece's commas are (fields - 1) per
    line unless a line has too many (polars refuses it, strictly read) or too few (the count is short,
    a blank line included); only then are its lines split and counted one by one."""
    import polars as pl

    df, n_lines, ragged, bad_text, commas = parsed
    if "line" in df.columns:  # the quoted path numbers its own (blank lines left out)
        return df.with_columns(pl.col("line") + line0)
    df.insert_column(0, pl.int_range(line0, line0 + n_lines, dtype=pl.Int64, eager=True).alias("line"))
    if ragged or bad_text or commas != (len(lay.names) - 1) * n_lines:
        df = _mark_lines(df, data, line0, lay, bad_text)
    return df


_SCRATCH = threading.local()  # each thread's boolean buffer for _count (the web reads logs in several)


def _count(data: bytes, byte: int) -> int:
    """How many times ``byte`` occurs in ``data``, compared into one reused buffer (a fresh 8 MiB one per
    piece costs its page faults every time)."""
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.size < raw.size:
        buf = _SCRATCH.buf = np.empty(raw.size, dtype=bool)
    hits = buf[:raw.size]
    np.equal(raw, byte, out=hits)
    return int(np.count_nonzero(hits))


def _mark_lines(df: Any, data: bytes, line0: int, lay: Layout, bad_text: list[int]) -> Any:
    """Blank lines dropped; lines with the wrong number of fields, or not UTF-8, marked (by number)."""
    import polars as pl

    text = pl.Series("_raw", data.decode("utf-8", errors="replace").split("\n"))
    raw = pl.DataFrame({"line": pl.int_range(line0, line0 + text.len(), eager=True, dtype=pl.Int64), "_raw": text})
    raw = raw.with_columns(pl.col("_raw").str.strip_chars_end("\r"))
    blank = raw.filter(pl.col("_raw").str.strip_chars() == "")["line"]
    n = pl.col("_raw").str.count_matches(",", literal=True) + 1
    wrong = raw.filter((pl.col("_raw").str.strip_chars() != "") & (n != len(lay.names))).select(
        "line", pl.format("has {} field(s); the header has " + str(len(lay.names)), n).alias("_why"))
    if bad_text:
        wrong = pl.concat([wrong, pl.DataFrame({"line": [line0 + i for i in bad_text], "_why": [NOT_UTF8] * len(bad_text)},
                                               schema=wrong.schema)]).unique("line", keep="last")
    df = df.filter(~pl.col("line").is_in(blank.implode()))
    if wrong.height:
        df = df.join(wrong.rename({"_why": "_malformed"}), on="line", how="left")
    return df


def _read_quoted(data: bytes, lay: Layout, bad_text: list[int]) -> tuple[Any, int]:
    """A piece with quoted fields, split line by line with an RFC 4180 field pattern (vectorised); its lines
    numbered from 0."""
    import polars as pl

    names = lay.names
    text = pl.Series("_raw", data.decode("utf-8", errors="replace").split("\n"))
    if text.len() and text[-1] == "":
        text = text.head(text.len() - 1)
    n_lines = text.len()
    df = pl.DataFrame([text]).with_row_index("line").with_columns(
        pl.col("line").cast(pl.Int64), pl.col("_raw").str.strip_chars_end("\r"))
    df = df.filter(pl.col("_raw").str.strip_chars() != "")
    parts = pl.col("_raw").str.extract_all(FIELD_RX)
    df = df.with_columns(parts.alias("_f"))
    ncols = len(names)
    whole = pl.col("_f").list.eval(pl.element().str.len_chars()).list.sum() == pl.col("_raw").str.len_chars()
    n = pl.col("_f").list.len()
    df = df.with_columns(
        pl.when(pl.col("line").is_in(bad_text)).then(pl.lit(NOT_UTF8))
        .when(~whole).then(pl.lit("has a quote that is not a whole quoted field (RFC 4180)"))
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
    typed = [pl.col(n).cast(pl.Float64, strict=False) for n, t in zip(names, lay.schema.values())
             if t == pl.Float64]
    return df.with_columns(typed), n_lines


def extras_numeric(df: Any) -> Any:
    """Other columns as numbers where every value reads as one; text columns kept as text."""
    import polars as pl

    from napkin.ledger.readers import FIELDS

    casts = []
    for name, dtype in df.schema.items():
        if name in FIELDS or name in ("line", "_malformed") or dtype != pl.String:
            continue
        as_num = df[name].str.strip_chars().cast(pl.Float64, strict=False)  # " 2.99" after a comma and a space
        if as_num.null_count() == df[name].null_count():
            casts.append(as_num.alias(name))
    return df.with_columns(casts) if casts else df


def frames(src: Source, opts: ReadOptions, label: str, out: LogRead, names: Any = None) -> Any:
    """The raw frames of a CSV log, piece by piece (``layout`` from the first); with ``names`` (the column
    decisions of :mod:`~napkin.ledger.readers.columns`), only the columns that are fields are read.

    Two threads parse the next pieces while the caller finishes this one (polars lets go of the GIL while it
    parses), at most two pieces ahead: one polars call on an 8 MiB piece leaves a core idle in its serial
    steps, two at once keep both busy (the parse of a 3M-row log: 0.32 s with one thread, 0.24-0.27 s with two on
    a 2-core machine, as fast as polars reading the whole file at once)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    fh, chunks = src.chunks()
    lay: Layout | None = None
    line0 = 1
    pending: deque = deque()
    with fh, ThreadPoolExecutor(PARSERS, thread_name_prefix="napkin-csv") as pool:
        for data in chunks:
            if data is LONG:
                while pending:  # the pieces before it first: their lines come before it
                    df, line0 = _settled(pending.popleft(), line0, lay)
                    yield df
                out.skip([line0], TOO_LONG)
                line0 += 1
                continue
            if lay is None:
                lay, body_at = layout(data, opts, label)
                out.columns = lay.names
                if names is not None:
                    lay.project(names, out, opts)
                line0 = lay.header_line + 1
                data = data[body_at:]
                if not data:
                    continue
            pending.append((pool.submit(parse, data, lay), data))
            if len(pending) > AHEAD:
                df, line0 = _settled(pending.popleft(), line0, lay)
                yield df
        while pending:
            df, line0 = _settled(pending.popleft(), line0, lay)
            yield df
    if lay is None:
        from napkin.ledger.records import NotEnoughRecords

        raise NotEnoughRecords("log", label, "has no header line and no records", "give a CSV step log with a header")


def _settled(item: tuple[Any, bytes], line0: int, lay: Any) -> tuple[Any, int]:
    """A piece the second thread parsed, settled here (numbered from ``line0``), and the next piece's first line."""
    future, data = item
    parsed = future.result()
    return settle(parsed, data, line0, lay), line0 + parsed[1]


def read(src: Source, opts: ReadOptions, label: str) -> LogRead:
    out = LogRead(format="csv", path=label)
    pieces = Pieces()
    for df in frames(src, opts, label, out, pieces.names):
        df = rename(df, opts, out, pieces.names)
        df = time_to_seconds(df, out, pieces)
        finish(extras_numeric(df), opts, out, pieces)
    return done(out, opts, pieces)
