"""PyTorch Lightning ``CSVLogger`` ``metrics.csv``.

Lightning writes one row per logging call, so one step may span several rows (training
metrics, validation metrics): consecutive rows with the same step are merged. The file
has no wall clock unless napkin's ``NapkinLightningCallback`` logged ``napkin/t_wall``;
without it, give ``--start`` and ``--end``: Lightning's own rows are then read as the steps
done when they were written (step s + 1: it logs before it counts the step).
"""

from __future__ import annotations

from napkin.errors import InputError
from napkin.ledger.readers import LogRead, ReadOptions, Source
from napkin.ledger.readers.common import finish, interpolate_time, rename, time_to_seconds
from napkin.ledger.readers.csv import extras_numeric, frames


def read(src: Source, opts: ReadOptions, label: str) -> LogRead:
    import polars as pl

    out = LogRead(format="lightning", path=label)
    raw = list(frames(src, opts, label, out))  # read a piece at a time; the rows merge across pieces
    df = pl.concat(raw, how="diagonal_relaxed") if len(raw) > 1 else raw[0] if raw else pl.DataFrame(
        {"line": []}, schema={"line": pl.Int64})
    df = rename(df, opts, out)
    if "step" not in df.columns:
        raise InputError("step", label, "is missing from metrics.csv", "give the CSVLogger's metrics.csv")
    df = extras_numeric(df).with_columns(pl.col("step").cast(pl.Float64, strict=False))
    others = [c for c in df.columns if c not in ("line", "step", "_run")]
    merged = (df.with_columns(pl.col("step").rle_id().alias("_run"))
              .group_by("_run", maintain_order=True)
              .agg([pl.col("line").first(), pl.col("step").first(),
                    *[pl.col(c).drop_nulls().first() for c in others]])
              .drop("_run"))
    if merged.height < df.height:
        out.notes.append(f"{df.height - merged.height} rows merged into the row of the same step "
                         "(Lightning writes one row per logging call)")
    if "t_wall" in merged.columns and merged["t_wall"].drop_nulls().len():
        timed = merged.filter(pl.col("t_wall").is_not_null() | pl.col("step").is_null())
        if timed.height < merged.height:
            out.notes.append(f"{merged.height - timed.height} steps without napkin/t_wall are other metrics, "
                             "not step records (the callback logs the wall clock every `every` steps)")
        merged = time_to_seconds(timed, out)
    else:
        # Lightning logs a training step's metrics after its optimiser step but before it counts
        # it (training_epoch_loop: update_train_step_metrics, then _batches_that_stepped += 1), so
        # the row of step s is written when s + 1 steps are done
        merged = merged.filter(pl.col("step").is_not_null()).with_columns(pl.col("step") + 1)
        out.notes.append("Lightning writes step s's row when s + 1 steps are done: read as step s + 1")
        merged = interpolate_time(merged, opts, out, missing="CSVLogger writes no wall clock")
    return finish(merged, opts, out)
