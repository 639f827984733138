"""Parquet step logs: columns named step, t_wall, gpus_allocated, tokens_per_step, their aliases, or ``--map col=field``.

Rows are numbered from 1; a row missing a field is skipped and counted. (CSV and JSON
Lines, read a piece at a time, are :mod:`napkin.ledger.readers.csv` and ``jsonl``.)
"""

from __future__ import annotations

from napkin.errors import quote
from napkin.ledger.readers import LogRead, ReadOptions, Source, Unparseable
from napkin.ledger.readers.common import finish, rename, time_to_seconds


def read_parquet(src: Source, opts: ReadOptions, label: str) -> LogRead:
    """Parquet: rows are numbered from 1; a row missing a field is skipped and counted."""
    import io

    import polars as pl

    out = LogRead(format="parquet", path=label, location="row")
    try:
        with src.open() as fh:
            df = pl.read_parquet(io.BytesIO(fh.read()) if src.content is not None else fh)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise Unparseable("log", label, f"is not a readable Parquet file ({quote(str(exc).splitlines()[0])})") \
            from None
    df = df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))
    df = rename(df, opts, out)
    df = time_to_seconds(df, out)
    return finish(df, opts, out)
