"""What every reader does last: name the columns, apply the options, skip bad rows (counted)."""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.ledger.readers import ALIASES, EPOCH_MIN_S, EPOCH_MS_MIN, FIELDS, LogRead, ReadOptions

FIX = {
    "step": "map a column with --map NAME=step",
    "t_wall": "map a column of seconds or ISO timestamps with --map NAME=t_wall",
    "gpus_allocated": "give --gpus K, or map a column with --map NAME=gpus_allocated",
    "tokens": "give --tokens-per-step T, or map a column with --map NAME=tokens",
}


def rename(df: Any, opts: ReadOptions) -> Any:
    """Apply --map (log column -> field) and napkin's own column names."""
    cols = list(df.columns)
    for src in opts.mapping:
        if src not in cols:
            raise InputError("map", f"{src}={opts.mapping[src]}", "does not name a column of the log",
                             "columns are: " + ", ".join(c for c in cols if c != "line"))
    for src, dst in opts.mapping.items():
        if dst not in FIELDS:
            raise InputError("map", f"{src}={dst}", "must map a column to step, t_wall, gpus_allocated or tokens")
    renames = dict(opts.mapping)
    for src, dst in ALIASES.items():
        if src in cols and dst not in cols and dst not in renames.values():
            renames[src] = dst
    # a mapped target that is already a column is replaced by the mapped one
    drop = [dst for src, dst in renames.items() if dst in cols and dst != src]
    if drop:
        df = df.drop(drop)
    return df.rename(renames)


def time_to_seconds(df: Any, out: LogRead) -> Any:
    """t_wall as float seconds: numbers kept, ISO timestamps parsed (UTC when no offset is given)."""
    import polars as pl

    if "t_wall" not in df.columns:
        return df
    dtype = df.schema["t_wall"]
    if dtype == pl.String:
        as_num = df["t_wall"].str.strip_chars().cast(pl.Float64, strict=False)
        given = df["t_wall"].drop_nulls()
        n_num = as_num.drop_nulls().len()
        if given.len() and n_num >= 0.5 * given.len():
            df = df.with_columns(as_num.alias("t_wall"))
        else:
            parsed = df["t_wall"].str.strip_chars().str.to_datetime(strict=False, time_unit="us")
            if parsed.dtype.time_zone is None:  # type: ignore[union-attr]
                if parsed.drop_nulls().len():
                    out.notes.append("timestamps carry no time zone: read as UTC")
                parsed = parsed.dt.replace_time_zone("UTC")
            df = df.with_columns((parsed.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
            return df
    elif isinstance(dtype, pl.Datetime):
        col = df["t_wall"]
        if dtype.time_zone is None:
            out.notes.append("timestamps carry no time zone: read as UTC")
            col = col.dt.replace_time_zone("UTC")
        return df.with_columns((col.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
    else:
        df = df.with_columns(pl.col("t_wall").cast(pl.Float64, strict=False))
    med = df["t_wall"].drop_nulls().median()
    if med is not None and med >= EPOCH_MS_MIN:
        raise InputError("t_wall", f"{med:.6g}", "looks like milliseconds since 1970, not seconds",
                         "write seconds (or ISO timestamps) in t_wall")
    if med is not None and med < EPOCH_MIN_S:
        out.time_absolute = False
        out.notes.append("t_wall is seconds from an arbitrary start (not Unix time): days are counted from "
                         "the first record")
    return df


def finish(df: Any, opts: ReadOptions, out: LogRead) -> LogRead:
    """Apply --tokens-per-step/--gpus, check the required fields, skip (and count) bad rows."""
    import polars as pl

    cols = set(df.columns)
    for name, opt, flag in (("tokens", opts.tokens_per_step, "--tokens-per-step"), ("gpus_allocated", opts.gpus, "--gpus")):
        if opt is None:
            continue
        if name in cols:
            logged = df[name].cast(pl.Float64, strict=False).drop_nulls()
            if logged.len() and not bool((logged == float(opt)).all()):
                out.warnings.append((f"{name.split('_')[0]}-overridden",
                                     f"{flag} {opt:g} replaces the log's {name} column (which has "
                                     f"{logged.min():g}..{logged.max():g})"))
        df = df.with_columns(pl.lit(float(opt), dtype=pl.Float64).alias(name))
    cols = set(df.columns)
    shown = ", ".join(c for c in df.columns if c != "line") or "none"
    for f in FIELDS:
        if f not in cols:
            raise InputError(f, out.path, f"is missing from the {out.format} log (columns: {shown})", FIX[f])
    df = df.with_columns([pl.col(f).cast(pl.Float64, strict=False) for f in ("step", "gpus_allocated", "tokens")])
    checks = [
        ("step", pl.col("step").is_null(), "no step"),
        ("step", (pl.col("step") < 0) | (pl.col("step") != pl.col("step").floor()), "step is not a whole number >= 0"),
        ("t_wall", pl.col("t_wall").is_null() | pl.col("t_wall").is_nan(), "no readable t_wall"),
        ("gpus_allocated", pl.col("gpus_allocated").is_null() | (pl.col("gpus_allocated") <= 0)
         | pl.col("gpus_allocated").is_nan(), "no gpus_allocated > 0"),
        ("tokens", pl.col("tokens").is_null() | (pl.col("tokens") < 0) | pl.col("tokens").is_nan(),
         "no tokens >= 0"),
    ]
    reason = pl.lit(None, dtype=pl.String)
    for _, cond, why in reversed(checks):
        reason = pl.when(cond).then(pl.lit(why)).otherwise(reason)
    if "_malformed" in df.columns:
        reason = pl.when(pl.col("_malformed").is_not_null()).then(pl.col("_malformed")).otherwise(reason)
    df = df.with_columns(reason.alias("_why"))
    bad = df.filter(pl.col("_why").is_not_null())
    if bad.height:
        first = bad.head(40)
        for why in first["_why"].unique(maintain_order=True).to_list():
            lines = first.filter(pl.col("_why") == why)["line"].to_list()
            out.skip(lines, why, count=0)
        out.skipped_count += bad.height
        out.skipped.sort()
        del out.skipped[20:]
    df = df.filter(pl.col("_why").is_null()).drop([c for c in ("_why", "_malformed") if c in df.columns])
    df = df.with_columns(pl.col("step").cast(pl.Int64))
    out.frame = df.select(["line", *FIELDS, *[c for c in df.columns if c not in FIELDS and c != "line"]])
    return out


def interpolate_time(df: Any, opts: ReadOptions, out: LogRead, *, missing: str) -> Any:
    """t_wall spread between --start and --end in proportion to the steps run.

    Total paid time is exact ((end − start) · GPUs); the split into days and the time
    lost to restarts are estimates, and the report says so.
    """
    import polars as pl

    if opts.start is None or opts.end is None:
        raise InputError("t_wall", out.path, f"is not in the {out.format} log ({missing})",
                         "log with napkin's callback (napkin.ledger.callbacks), which writes the wall clock, "
                         "or give --start and --end of the run")
    if opts.end <= opts.start:
        raise InputError("end", opts.end, "must be after --start")
    if df.height < 2:
        return df.with_columns(pl.lit(opts.start, dtype=pl.Float64).alias("t_wall"))
    step = df["step"].cast(pl.Float64)
    run = step.diff().fill_null(0.0)
    run = pl.Series(run.to_numpy().clip(min=0.0)).cum_sum()
    frac = run / run.max() if run.max() else pl.Series([i / (df.height - 1) for i in range(df.height)])
    df = df.with_columns((opts.start + frac * (opts.end - opts.start)).alias("t_wall"))
    out.warnings.append(("time-interpolated",
                         f"the {out.format} log has no wall clock per step: times are spread between --start and "
                         "--end by steps run, so paid time is exact but the per-day split and restart downtime "
                         "are estimates"))
    return df
