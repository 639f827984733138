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


COMMA_FRACTION_RX = r"(\d\d:\d\d:\d\d),(\d+)"
DATE_ONLY_RX = r"^\d{4}-\d\d-\d\d$"
DAY_CLOCK = "dates without a time of day: a 1-day resolution"


def time_to_seconds(df: Any, out: LogRead) -> Any:
    """t_wall as float seconds: numbers kept, ISO timestamps parsed (UTC when no offset is given),
    dates (a Date column, or text with no time of day) as midnight UTC, with a warning."""
    import polars as pl

    if "t_wall" not in df.columns:
        return df
    dtype = df.schema["t_wall"]
    if dtype == pl.String:
        # Python logging's asctime writes the fraction after a comma ("2025-03-09 22:00:00,123")
        text = df["t_wall"].str.strip_chars().str.replace(COMMA_FRACTION_RX, "${1}.${2}")
        as_num = text.cast(pl.Float64, strict=False)
        given = df["t_wall"].drop_nulls()
        n_num = as_num.drop_nulls().len()
        if given.len() and n_num >= 0.5 * given.len():
            df = df.with_columns(as_num.alias("t_wall"))
        else:
            dates = text.drop_nulls()
            if dates.len() and len(dates[0]) == 10 and bool(dates.str.contains(DATE_ONLY_RX).all()):
                _day_clock(out)
            try:
                parsed = text.str.to_datetime(strict=False, time_unit="us")
            except pl.exceptions.ComputeError:  # no value looks like a timestamp: each is skipped by line
                parsed = pl.Series("t_wall", [None] * df.height, dtype=pl.Datetime("us"))
            if parsed.dtype.time_zone is None:  # type: ignore[union-attr]
                if parsed.drop_nulls().len():
                    out.notes.append("timestamps carry no time zone: read as UTC")
                parsed = parsed.dt.replace_time_zone("UTC")
            df = df.with_columns((parsed.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
            return df
    elif dtype == pl.Date:
        _day_clock(out)
        col = df["t_wall"].cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        return df.with_columns((col.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
    elif isinstance(dtype, pl.Datetime):
        col = df["t_wall"]
        if dtype.time_zone is None:
            out.notes.append("timestamps carry no time zone: read as UTC")
            col = col.dt.replace_time_zone("UTC")
        return df.with_columns((col.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
    elif isinstance(dtype, pl.Duration):  # time since the start
        df = df.with_columns((pl.col("t_wall").dt.total_microseconds().cast(pl.Float64) / 1e6).alias("t_wall"))
    else:
        df = df.with_columns(pl.col("t_wall").cast(pl.Float64, strict=False))
    finite = df["t_wall"].drop_nulls()
    med = finite.filter(finite.is_finite()).median()
    if med is not None and med >= EPOCH_MS_MIN:
        raise InputError("t_wall", f"{med:.6g}", "looks like milliseconds since 1970, not seconds",
                         "write seconds (or ISO timestamps) in t_wall")
    if med is not None and med < EPOCH_MIN_S:
        out.time_absolute = False
        out.notes.append("t_wall is seconds from an arbitrary start (not Unix time): days are counted from "
                         "the first record")
    return df


def _day_clock(out: LogRead) -> None:
    out.clock = DAY_CLOCK
    out.warnings.append(("clock-resolution", "t_wall has dates without a time of day: every record is placed at "
                         "midnight UTC, so paid time is known only to the day; log the time of each step"))


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
    if opts.tokens_cumulative:
        df = tokens_per_step_from_cumulative(df, out)
    elif opts.tokens_per_step is None and not out.tokens_derived:
        _warn_if_cumulative(df, out)

    def nonfinite(f: str) -> Any:
        return pl.col(f).is_nan() | pl.col(f).is_infinite()

    checks = [
        ("step", pl.col("step").is_null(), "no step"),
        ("step", nonfinite("step"), "step is NaN or infinite"),
        ("step", (pl.col("step") < 0) | (pl.col("step") != pl.col("step").floor()), "step is not a whole number >= 0"),
        ("t_wall", pl.col("t_wall").is_null(), "no readable t_wall"),
        ("t_wall", nonfinite("t_wall"), "t_wall is NaN or infinite"),
        ("gpus_allocated", nonfinite("gpus_allocated"), "gpus_allocated is NaN or infinite"),
        ("gpus_allocated", pl.col("gpus_allocated").is_null() | (pl.col("gpus_allocated") <= 0),
         "no gpus_allocated > 0"),
        ("tokens", nonfinite("tokens"), "tokens is NaN or infinite"),
        ("tokens", pl.col("tokens").is_null() | (pl.col("tokens") < 0), "no tokens >= 0"),
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
    if out.origin is not None and df.height and df["step"][0] > out.origin[0]:
        # the run's start (--start, at step 0 or --start-step) as a record of its own: the steps before
        # the first logged one were paid from --start and are counted as run
        first = df.head(1).select("gpus_allocated", "tokens")
        start = pl.DataFrame({"line": [0], "step": [float(out.origin[0])], "t_wall": [out.origin[1]]},
                             schema={"line": pl.Int64, "step": pl.Float64, "t_wall": pl.Float64})
        df = pl.concat([pl.concat([start, first], how="horizontal"), df], how="diagonal_relaxed")
    df = df.with_columns(pl.col("step").cast(pl.Int64))
    out.frame = df.select(["line", *FIELDS, *[c for c in df.columns if c not in FIELDS and c != "line"]])
    return out


def tokens_per_step_from_cumulative(df: Any, out: LogRead) -> Any:
    """A tokens column that counts tokens seen so far, as tokens per step: its change over the
    change in step between records (the first record takes the first such figure)."""
    import polars as pl

    d_tokens, d_step = pl.col("tokens").diff(), pl.col("step").diff()
    per = pl.when((d_step != 0) & (d_tokens / d_step > 0)).then(d_tokens / d_step).otherwise(None)
    df = df.with_columns(per.forward_fill().backward_fill().alias("tokens"))
    out.notes.append("tokens per step = the change in the cumulative tokens column over the change in step "
                     "(--tokens-cumulative)")
    return df


CUMULATIVE_MIN_PAIRS = 4  # forward record pairs needed before a tokens column is called cumulative
CUMULATIVE_RISING = 0.9  # ... and the share of them that must rise: a batch-size ramp rises a few times, then holds


def _warn_if_cumulative(df: Any, out: LogRead) -> None:
    """A tokens column that rises at (nearly) every forward record pair counts tokens seen so far,
    not tokens per step (a batch-size ramp rises in a few steps, then holds): read as tokens per
    step it understates the cost by the number of steps run, so say so and give the fix."""
    import polars as pl

    k = df["tokens"].drop_nulls()
    if k.len() <= CUMULATIVE_MIN_PAIRS or k.min() == k.max():  # the usual log: the same tokens every step
        return
    pairs = df.select(pl.col("step").diff().alias("ds"), pl.col("tokens").diff().alias("dk")).filter(pl.col("ds") > 0)
    if pairs.height < CUMULATIVE_MIN_PAIRS:
        return
    rising = pairs.filter(pl.col("dk") > 0).height
    if rising < CUMULATIVE_RISING * pairs.height:
        return
    out.warnings.append((
        "tokens-cumulative",
        f"the tokens column grows with the step ({rising} of the {pairs.height} records that advance have more "
        f"tokens than the one before; {k.min():,.0f} to {k.max():,.0f}): if it counts tokens seen so far, not "
        "tokens per step, give --tokens-cumulative (or --tokens-per-step T)"))


def interpolate_time(df: Any, opts: ReadOptions, out: LogRead, *, missing: str) -> Any:
    """t_wall spread between --start and --end in proportion to the steps run.

    --start is the run at step 0 (or ``--start-step``, a run resumed from a checkpoint), so the
    steps before the first logged one are paid and counted; ``finish`` adds that record.
    Total paid time is exact ((end − start) · GPUs); the split into days and the time
    lost to restarts are estimates, and the report says so.
    """
    import numpy as np
    import polars as pl

    if opts.start is None or opts.end is None:
        raise InputError("t_wall", out.path, f"is not in the {out.format} log ({missing})",
                         "log with napkin's callback (napkin.ledger.callbacks), which writes the wall clock, "
                         "or give --start and --end of the run")
    if opts.end <= opts.start:
        raise InputError("end", _iso(opts.end), f"must be after --start ({_iso(opts.start)})",
                         "give the run's end time after its start")
    origin = 0 if opts.start_step is None else int(opts.start_step)
    step = df["step"].cast(pl.Float64)
    first = step.drop_nulls().min() if step.drop_nulls().len() else None
    if first is not None and first < origin:
        raise InputError("start_step", origin, f"must be at most the first logged step ({first:g})",
                         "give the step the run was at when --start")
    if df.height == 0:
        return df.with_columns(pl.lit(None, dtype=pl.Float64).alias("t_wall"))
    d = step.diff().to_numpy().copy()  # steps run since the record before; the first, since --start
    d[0] = step[0] - origin if step[0] is not None else 0.0
    run = pl.Series(np.nan_to_num(d, nan=0.0).clip(min=0.0)).cum_sum()
    if run.max():
        frac = run / run.max()
    else:
        frac = pl.Series([i / max(df.height - 1, 1) for i in range(df.height)])
    df = df.with_columns((opts.start + frac * (opts.end - opts.start)).alias("t_wall"))
    if first is not None and first > origin:
        out.origin = (origin, opts.start)
        out.notes.append(f"--start is the run at step {origin}"
                         + (" (give --start-step N for a run resumed at step N)" if opts.start_step is None else "")
                         + f": the steps from {origin} to the first logged step {first:g} are paid and counted")
    out.warnings.append(("time-interpolated",
                         f"the {out.format} log has no wall clock per step: times are spread between --start and "
                         "--end by steps run, so paid time is exact but the per-day split and restart downtime "
                         "are estimates"))
    return df


def _iso(t: float) -> str:
    """Unix seconds as an ISO time in UTC (as --start/--end are given)."""
    import datetime as _dt

    return _dt.datetime.fromtimestamp(t, _dt.UTC).isoformat().replace("+00:00", "Z")
