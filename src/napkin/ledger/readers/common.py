"""What every reader does last: read the clock, apply the options, skip bad rows (counted).

A line log is read a piece at a time (:mod:`napkin.ledger.readers.lines`): the first piece
decides what the others follow (how the clock is written, whether it is Unix time), a
:class:`Pieces` carries what one piece hands the next (the last tokens count of a
cumulative column), and :func:`done` says, once, what the pieces add up to.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError, quote
from napkin.ledger.readers import EPOCH_MIN_S, EPOCH_MS_MIN, FIELDS, LogRead, ReadOptions
from napkin.ledger.readers.columns import Names, rename  # noqa: F401  (readers import rename from here)
from napkin.ledger.readers.rows import skip_bad

def is_text(key: str) -> bool:
    """A JSON key that is text (JSON may escape a lone surrogate, which is not)."""
    try:
        key.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


FIX = {
    "step": "map a column with --map NAME=step",
    "t_wall": "map a column of seconds or ISO timestamps with --map NAME=t_wall",
    "gpus_allocated": "give --gpus K, or map a column with --map NAME=gpus_allocated",
    "tokens": "give --tokens-per-step T, or map a column with --map NAME=tokens",
}


class Pieces:
    """What the first piece of a log decides for the rest, and what each piece hands the next."""

    def __init__(self) -> None:
        self.names = Names()
        self.clock: str | None = None  # number | text | date | datetime | duration
        self.first = True  # the piece being finished is the log's first
        self.overridden: dict[str, list[float]] = {}  # field -> [min, max] of the log's column an option replaced
        self.cum_last: tuple[float, float] | None = None  # (step, tokens seen) at the end of the piece before
        self.cum_fill: float | None = None  # the last tokens-per-step figure (carried over a gap)
        self.cum_falls = 0  # times the tokens-seen count fell while the step went on
        self.cum_first_fall: tuple[int, float, float] | None = None  # (line, count before, count after)


COMMA_FRACTION_RX = r"(\d\d:\d\d:\d\d),(\d+)"
DATE_ONLY_RX = r"^\d{4}-\d\d-\d\d$"
DAY_CLOCK = "dates without a time of day: a 1-day resolution"


def time_to_seconds(df: Any, out: LogRead, pieces: Pieces | None = None) -> Any:
    """t_wall as float seconds: numbers kept, ISO timestamps parsed (UTC when no offset is given),
    dates (a Date column, or text with no time of day) as midnight UTC, with a warning. The first
    piece of a log with a clock decides how it is written; the others are read the same way."""
    import polars as pl

    pieces = pieces or Pieces()
    if "t_wall" not in df.columns:
        return df
    dtype = df.schema["t_wall"]
    kind = pieces.clock
    if dtype == pl.String:
        # Python logging's asctime writes the fraction after a comma ("2025-03-09 22:00:00,123")
        text = df["t_wall"].str.strip_chars().str.replace(COMMA_FRACTION_RX, "${1}.${2}")
        as_num = text.cast(pl.Float64, strict=False)
        if kind is None:
            given = df["t_wall"].drop_nulls()
            if not given.len():
                return df.with_columns(as_num.alias("t_wall"))  # no clock in this piece: the next decides
            kind = "number" if as_num.drop_nulls().len() >= 0.5 * given.len() else "text"
            dates = text.drop_nulls()
            if kind == "text" and dates.len() and len(dates[0]) == 10 and bool(dates.str.contains(DATE_ONLY_RX).all()):
                _day_clock(out)
        if kind == "number":
            df = df.with_columns(as_num.alias("t_wall"))
        else:
            try:
                parsed = text.str.to_datetime(strict=False, time_unit="us")
            except pl.exceptions.PolarsError:  # no value looks like a timestamp: each is skipped by line
                parsed = pl.Series("t_wall", [None] * df.height, dtype=pl.Datetime("us"))
            if parsed.dtype.time_zone is None:  # type: ignore[union-attr]
                if parsed.drop_nulls().len():
                    out.note("timestamps carry no time zone: read as UTC")
                parsed = parsed.dt.replace_time_zone("UTC")
            df = df.with_columns((parsed.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
            pieces.clock = "text"
            return df
    elif dtype == pl.Date:
        _day_clock(out)
        col = df["t_wall"].cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        return df.with_columns((col.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
    elif isinstance(dtype, pl.Datetime):
        col = df["t_wall"]
        if dtype.time_zone is None:
            out.note("timestamps carry no time zone: read as UTC")
            col = col.dt.replace_time_zone("UTC")
        return df.with_columns((col.dt.epoch("us").cast(pl.Float64) / 1e6).alias("t_wall"))
    elif isinstance(dtype, pl.Duration):  # time since the start
        df = df.with_columns((pl.col("t_wall").dt.total_microseconds().cast(pl.Float64) / 1e6).alias("t_wall"))
    elif dtype != pl.Float64:
        df = df.with_columns(pl.col("t_wall").cast(pl.Float64, strict=False))
    if pieces.clock is None:
        finite = df["t_wall"].drop_nulls()
        med = finite.filter(finite.is_finite()).median()
        if med is None:
            return df  # no clock in this piece: the next decides
        pieces.clock = "number"
        if med >= EPOCH_MS_MIN:
            raise InputError("t_wall", f"{med:.6g}", "looks like milliseconds since 1970, not seconds",
                             "write seconds (or ISO timestamps) in t_wall")
        if med < EPOCH_MIN_S:
            out.time_absolute = False
            out.note("t_wall is seconds from an arbitrary start (not Unix time): days are counted from the first "
                     "record")
    return df


def _day_clock(out: LogRead) -> None:
    if out.clock:
        return
    out.clock = DAY_CLOCK
    out.warnings.append(("clock-resolution", "t_wall has dates without a time of day: every record is placed at "
                         "midnight UTC, so paid time is known only to the day; log the time of each step"))


def finish(df: Any, opts: ReadOptions, out: LogRead, pieces: Pieces | None = None) -> LogRead:
    """Apply --tokens-per-step/--gpus, check the required fields, skip (and count) bad rows, and keep the
    records. Without ``pieces`` the frame is the whole log; with it, one piece of it (then call :func:`done`)."""
    import polars as pl

    whole = pieces is None
    pieces = pieces or Pieces()
    df = _options(df, opts, pieces)
    cols = set(df.columns)
    missing = [f for f in FIELDS if f not in cols]
    if missing and pieces.first:
        shown = ", ".join(c for c in (out.columns or df.columns) if c not in ("line", "_malformed")) or "none"
        fix = FIX[missing[0]]
        if missing[0] == "t_wall" and (opts.start is not None or opts.end is not None):  # said, not ignored
            fix = ("--start/--end spread the steps over the run only in the formats that log no clock (--format "
                   "lightning or hf); " + fix)
        raise InputError(missing[0], out.path, f"is missing from the {out.format} log (columns: {quote(shown)})", fix)
    if missing:
        df = df.with_columns([pl.lit(None, dtype=pl.Float64).alias(f) for f in missing])
    casts = [pl.col(f).cast(pl.Float64, strict=False) for f in ("step", "gpus_allocated", "tokens")
             if df.schema[f] != pl.Float64]
    if casts:
        df = df.with_columns(casts)
    if opts.tokens_cumulative or pieces.names.cumulative:
        df = tokens_per_step_from_cumulative(df, out, pieces)
    elif opts.tokens_per_step is None and not out.tokens_derived:
        out.tokens_column = True  # a column of the log: :func:`warn_if_cumulative` looks at how it grows
    df = skip_bad(df, out)
    if out.origin is not None and df.height and df["step"][0] > out.origin[0]:
        # the run's start (--start, at step 0 or --start-step) as a record of its own: the steps before
        # the first logged one were paid from --start and are counted as run
        first = df.head(1).select("gpus_allocated", "tokens")
        start = pl.DataFrame({"line": [0], "step": [float(out.origin[0])], "t_wall": [out.origin[1]]},
                             schema={"line": pl.Int64, "step": pl.Float64, "t_wall": pl.Float64})
        df = pl.concat([pl.concat([start, first], how="horizontal"), df], how="diagonal_relaxed")
    # built from its columns (no query: a select waits for polars' thread pool, busy parsing the next pieces)
    frame = pl.DataFrame([df["line"], df["step"].cast(pl.Int64), *(df[f] for f in FIELDS[1:]),
                          *(df[c] for c in df.columns if c not in FIELDS and c != "line")]).rechunk()
    if out.frames is None:
        from napkin.ledger.early import EarlyPass
        from napkin.ledger.readers.lines import FrameStore

        out.frames = FrameStore(opts.budget, watch=EarlyPass(out))
    out.frames.append(frame)
    pieces.first = False
    if whole:
        done(out, opts, pieces)
    return out


def done(out: LogRead, opts: ReadOptions, pieces: Pieces) -> LogRead:
    """What the pieces of a log add up to: the warnings no single piece can give."""
    for name, flag in (("tokens", "--tokens-per-step"), ("gpus_allocated", "--gpus")):
        span = pieces.overridden.get(name)
        opt = opts.tokens_per_step if name == "tokens" else opts.gpus
        if span is not None and opt is not None and not span[0] == span[1] == float(opt):
            out.warnings.append((f"{name.split('_')[0]}-overridden", f"{flag} {opt:g} replaces the log's {name} "
                                 f"column (which has {span[0]:g}..{span[1]:g})"))
    if pieces.cum_first_fall is not None:
        line, was, now = pieces.cum_first_fall
        out.warnings.append(("tokens-count-falls", f"the tokens-seen count falls {pieces.cum_falls} time(s) while "
                             f"the step goes on, first at {out.location} {line} ({was:,.0f} to {now:,.0f}): read "
                             "as a counter that started over (a restart): that record's steps are counted at the "
                             "rate before it and the rise after it as new tokens; if the value is a glitch, fix or "
                             "drop that line"))
    if out.frames is None:
        from napkin.ledger.readers.lines import FrameStore

        out.frames = FrameStore(opts.budget)
    return out


def _options(df: Any, opts: ReadOptions, pieces: Pieces) -> Any:
    """--tokens-per-step and --gpus in place of the log's columns (what they replace is remembered)."""
    import polars as pl

    for name, opt in (("tokens", opts.tokens_per_step), ("gpus_allocated", opts.gpus)):
        if opt is None:
            continue
        if name in df.columns:
            logged = df[name].cast(pl.Float64, strict=False).drop_nulls()
            logged = logged.filter(logged.is_finite())
            if logged.len():
                span = pieces.overridden.setdefault(name, [float("inf"), float("-inf")])
                span[0], span[1] = min(span[0], float(logged.min())), max(span[1], float(logged.max()))
        df = df.with_columns(pl.lit(float(opt), dtype=pl.Float64).alias(name))
    return df


def tokens_per_step_from_cumulative(df: Any, out: LogRead, pieces: Pieces | None = None) -> Any:
    """A tokens column that counts tokens seen so far, as tokens per step: its change over the
    change in step between records (the first record takes the first such figure)."""
    import polars as pl

    pieces = pieces or Pieces()
    good = pl.col("step").is_not_null() & pl.col("tokens").is_not_null()
    pairs = df.select("line", "step", "tokens").filter(good)
    if pieces.cum_last is not None:
        head = pl.DataFrame({"line": [-1], "step": [pieces.cum_last[0]], "tokens": [pieces.cum_last[1]]},
                            schema=pairs.schema)
        pairs = pl.concat([head, pairs])
    d_tokens, d_step = pl.col("tokens").diff(), pl.col("step").diff()
    fell = pairs.select("line", pl.col("tokens").shift(1).alias("_from"), "tokens",
                        ((d_tokens < 0) & (d_step > 0)).alias("_fell")).filter(pl.col("_fell"))
    if fell.height:
        pieces.cum_falls += fell.height
        if pieces.cum_first_fall is None:
            line, was, now = fell.row(0)[:3]
            pieces.cum_first_fall = (int(line), float(was), float(now))
    per = pairs.select("line", pl.when((d_step != 0) & (d_tokens / d_step > 0)).then(d_tokens / d_step)
                       .otherwise(None).alias("_per"))
    if pairs.height:
        last = pairs.tail(1)
        pieces.cum_last = (float(last["step"][0]), float(last["tokens"][0]))
    df = df.join(per, on="line", how="left").with_columns(pl.col("_per").forward_fill())
    if pieces.cum_fill is not None:
        df = df.with_columns(pl.col("_per").fill_null(pieces.cum_fill))
    df = df.with_columns(pl.col("_per").backward_fill())
    filled = df["_per"].drop_nulls()
    if filled.len():
        pieces.cum_fill = float(filled[-1])
    # a row with no count (an eval or other metrics row) is no step record: the next count's change covers its
    # interval, so it gets no tokens of its own and is skipped by name, never filled from the interval before
    empty = pl.col("step").is_not_null() & pl.col("tokens").is_null()
    why = pl.when(empty).then(pl.lit("has no tokens-seen count (a row of other metrics)"))
    if "_malformed" in df.columns:
        why = pl.when(pl.col("_malformed").is_not_null()).then(pl.col("_malformed")).otherwise(why)
    df = df.with_columns(pl.when(empty).then(None).otherwise(pl.col("_per")).alias("tokens"),
                         why.alias("_malformed")).drop("_per")
    out.note("tokens per step = the change in the cumulative tokens column over the change in step "
             "(--tokens-cumulative)" if not pieces.names.cumulative else
             "tokens per step = the change in the tokens-seen column over the change in step")
    return df


CUMULATIVE_MIN_PAIRS = 4  # forward record pairs needed before a tokens column is called cumulative
CUMULATIVE_RISING = 0.9  # ... and the share of them that must rise: a batch-size ramp rises a few times, then holds


def warn_if_cumulative(tally: Any) -> tuple[str, str] | None:
    """A tokens column that rises at (nearly) every forward record pair counts tokens seen so far,
    not tokens per step (a batch-size ramp rises in a few steps, then holds): read as tokens per
    step it understates the cost by the number of steps run, so say so and give the fix. ``tally``:
    the records' :class:`~napkin.ledger.records.Tally`."""
    n_pairs, rising, (k_min, k_max) = tally.forward_ds.n, tally.rising, tally.tokens
    if n_pairs < CUMULATIVE_MIN_PAIRS or not k_min < k_max:  # the usual log: the same tokens every step
        return None
    if rising < CUMULATIVE_RISING * n_pairs:
        return None
    return (
        "tokens-cumulative",
        f"the tokens column grows with the step ({rising} of the {n_pairs} records that advance have more "
        f"tokens than the one before; {k_min:,.0f} to {k_max:,.0f}): if it counts tokens seen so far, not "
        "tokens per step, give --tokens-cumulative (or --tokens-per-step T)")


def interpolate_time(df: Any, opts: ReadOptions, out: LogRead, *, missing: str,
                     span: tuple[float, float, str] | None = None) -> Any:
    """t_wall spread between --start and --end (or ``span``: start, end and where they come from) in
    proportion to the steps run.

    --start is the run at step 0 (or ``--start-step``, a run resumed from a checkpoint), so the
    steps before the first logged one are paid and counted; ``finish`` adds that record.
    Total paid time is exact ((end − start) · GPUs); how it splits into days, and the time
    lost to restarts, are not known: the report gives no per-day figures and says why.
    """
    import numpy as np
    import polars as pl

    if span is None and (opts.start is None or opts.end is None):
        raise InputError("t_wall", out.path, f"is not in the {out.format} log ({missing})",
                         "log with napkin's callback (napkin.ledger.callbacks), which writes the wall clock, "
                         "or give --start and --end of the run")
    start, end, said = span or (opts.start, opts.end, "--start and --end")
    if end <= start:
        raise InputError("end", _iso(end), f"must be after --start ({_iso(start)})",
                         "give the run's end time after its start")
    out.clock_per_record = False
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
    df = df.with_columns((start + frac * (end - start)).alias("t_wall"))
    if first is not None and first > origin:
        out.origin = (origin, start)
        out.notes.append(f"{'--start' if span is None else 'time 0'} is the run at step {origin}"
                         + (" (give --start-step N for a run resumed at step N)" if opts.start_step is None else "")
                         + f": the steps from {origin} to the first logged step {first:g} are paid and counted")
    out.warnings.append(("time-interpolated",
                         f"the {out.format} log has no wall clock per step: times are spread between {said} by "
                         "steps run, so paid time is exact but how it falls into days, and the downtime of "
                         "restarts, are not known (no per-day figures: drift needs a clock per record)"))
    return df


def _iso(t: float) -> str:
    """Unix seconds as an ISO time in UTC (as --start/--end are given)."""
    import datetime as _dt

    return _dt.datetime.fromtimestamp(t, _dt.UTC).isoformat().replace("+00:00", "Z")
