"""Which rows of a log's piece can be records: each field in its range, or the row is skipped and counted
with the first reason that holds, by line (:func:`skip_bad`)."""

from __future__ import annotations

from typing import Any

from napkin.ledger import limits
from napkin.ledger.readers import FIELDS, LogRead


def _checks() -> list[tuple[Any, str]]:
    """(condition, reason) of a row that cannot be a record, in the order a reason is chosen."""
    import polars as pl

    def nonfinite(f: str) -> Any:
        return pl.col(f).is_nan() | pl.col(f).is_infinite()

    return [
        (pl.col("step").is_null(), "no step"),
        (nonfinite("step"), "step is NaN or infinite"),
        ((pl.col("step") < 0) | (pl.col("step") != pl.col("step").floor()), "step is not a whole number >= 0"),
        (pl.col("step") >= limits.MAX_STEP, "step is 2^53 or more (no run takes that many steps)"),
        (pl.col("t_wall").is_null(), "no readable t_wall"),
        (nonfinite("t_wall"), "t_wall is NaN or infinite"),
        (pl.col("t_wall").abs() > limits.MAX_T_WALL_S, "t_wall is past the year 9999"),
        (nonfinite("gpus_allocated"), "gpus_allocated is NaN or infinite"),
        (pl.col("gpus_allocated").is_null() | (pl.col("gpus_allocated") <= 0), "no gpus_allocated > 0"),
        (pl.col("gpus_allocated") > limits.MAX_GPUS, f"gpus_allocated is over {limits.MAX_GPUS:.0e} (more GPUs "
                                                    "than exist)"),
        (nonfinite("tokens"), "tokens is NaN or infinite"),
        (pl.col("tokens").is_null() | (pl.col("tokens") < 0), "no tokens >= 0"),
        (pl.col("tokens") > limits.MAX_TOKENS_PER_STEP, f"tokens is over {limits.MAX_TOKENS_PER_STEP:.0e} "
                                                        "(more than all the world's GPUs could process in a year)"),
    ]


def _good() -> Any:
    """A row that can be a record, in one expression (polars orders NaN above every number, so a NaN or an
    infinity falls outside each range; a null makes it null, read as not good)."""
    import polars as pl

    step, t = pl.col("step"), pl.col("t_wall")
    return (step.is_between(0, limits.MAX_STEP, closed="left") & (step == step.floor())
            & (t.abs() <= limits.MAX_T_WALL_S)
            & pl.col("gpus_allocated").is_between(0, limits.MAX_GPUS, closed="right")
            & pl.col("tokens").is_between(0, limits.MAX_TOKENS_PER_STEP, closed="both"))


def _all_good(df: Any) -> bool:
    """Whether every row of ``df`` passes :func:`_good`, checked with numpy on the columns as they are (a
    null reads as NaN, which fails every comparison): a polars query here would wait for its thread pool,
    busy parsing the next pieces of the log. False sends the piece to the full check, which names the
    reasons."""
    import numpy as np

    if "_malformed" in df.columns and df["_malformed"].null_count() != df.height:
        return False
    cols = {f: df[f] for f in FIELDS}
    if any(c.dtype != cols["step"].dtype or not c.dtype.is_float() for c in cols.values()):
        return False
    step, t, gpus, tokens = (cols[f].to_numpy() for f in FIELDS)
    with np.errstate(invalid="ignore"):
        ok = ((step >= 0) & (step < limits.MAX_STEP) & (step == np.floor(step)) & (np.abs(t) <= limits.MAX_T_WALL_S)
              & (gpus > 0) & (gpus <= limits.MAX_GPUS) & (tokens >= 0) & (tokens <= limits.MAX_TOKENS_PER_STEP))
    return bool(ok.all())


def skip_bad(df: Any, out: LogRead) -> Any:
    """Rows that cannot be records skipped and counted, with the first few reasons by line."""
    import polars as pl

    if _all_good(df):  # the usual piece: every row a record
        if "_malformed" in df.columns:
            df = df.clone()
            df.drop_in_place("_malformed")
        return df
    good = _good()
    if "_malformed" in df.columns:
        good = good & pl.col("_malformed").is_null()
    flagged = df.select((~good).fill_null(True).alias("_bad"))["_bad"]
    rows = df.filter(flagged)
    reason = pl.lit("cannot be a record", dtype=pl.String)
    for cond, why in reversed(_checks()):
        reason = pl.when(cond).then(pl.lit(why)).otherwise(reason)
    if "_malformed" in rows.columns:
        reason = pl.when(pl.col("_malformed").is_not_null()).then(pl.col("_malformed")).otherwise(reason)
    first = rows.head(40).with_columns(reason.alias("_why"))
    for why in first["_why"].unique(maintain_order=True).to_list():
        out.skip(first.filter(pl.col("_why") == why)["line"].to_list(), why, count=0)
    out.skipped_count += rows.height
    out.skipped.sort()
    del out.skipped[20:]
    return df.filter(~flagged).drop([c for c in ("_malformed",) if c in df.columns])
