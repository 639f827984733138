"""torchtitan log lines: ``step: N  loss: X  ...  tps: 5,123  tflops: ...  mfu: 25.30%``.

torchtitan's metrics processor prints, every ``log_freq`` steps, a line like
``[titan] 2025-01-01 10:00:00,000 - root - INFO - step: 10  loss:  7.1234  grad_norm: ...
memory: 30.12GiB(38.05%)  tps: 5,123  tflops: 250.12  mfu: 25.30%`` (colour codes are
stripped). ``tps`` is tokens per second per GPU. Wall time comes from the logging
prefix's timestamp. Tokens per step: ``--tokens-per-step`` (global batch · sequence
length), or estimated as tps · GPUs · seconds / steps between lines, with a warning.
Validation lines (``validate step:``) are not training steps.

torchtitan prints its step line on every rank: through torchrun each copy carries a
``[rankN]:`` prefix (``[defaultN]:`` in older torchrun), and a multi-node log without the
prefix holds one copy per node a few ms apart. Read as records, every copy after the first
would be a step back (a fake rollback) and its tokens counted again, so only the lowest
rank's lines are kept, and a line repeating the step of the line before within
``SAME_STEP_S`` seconds is a copy, not a record: both are counted as duplicates, as a CSV's
repeated lines are. A step line cut short before its ``loss:`` (the last line of a killed
job) is skipped and counted. The log is read a piece at a time; only its step lines'
figures are kept.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.ledger import limits
from napkin.ledger.readers import LogRead, ReadOptions, Source
from napkin.ledger.readers.common import finish
from napkin.ledger.readers.lines import LONG
from napkin.units import MILLION

ANSI = r"\x1b\[[0-9;]*m"
RANK = r"^\s*\[(?:rank|default)(\d+)\]:"  # torchrun's per-rank prefix (--tee / --local-ranks-filter)
SAME_STEP_S = 1.0  # one rank's copy of a step line a few ms after another's (one copy per node)
STEP = r"(?:^|\s)step:\s*(\d+)\s"
TS = r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)"
NUM = r"([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
FIELDS = {
    "loss": r"\sloss:\s*" + NUM,
    "grad_norm": r"grad_norm:\s*" + NUM,
    "memory_gib": r"memory:\s*" + NUM + r"\s*GiB",
    "tps": r"tps:\s*" + NUM,
    "tflops": r"tflops:\s*" + NUM,
    "mfu_logged": r"mfu:\s*" + NUM + r"\s*%",
}


STEP_LOOKING = r"(?:^|\s)step:\s*\d"  # a step line (without 'validat'): read, or skipped and counted
VALIDATION = "validat"


def is_step_line(text: str) -> bool:
    """Whether a line of the log is a training step line: the definition the reader applies, for a check
    that counts them independently."""
    import re

    text = re.sub(ANSI, "", text)
    return bool(re.search(STEP_LOOKING, text)) and VALIDATION not in text


def _piece(data: bytes, line0: int) -> tuple[Any, int]:
    """The step lines of one piece with their figures (not their text), and how many lines it holds."""
    import polars as pl

    lines = pl.Series("raw", data.decode("utf-8", errors="replace").split("\n"))
    if lines.len() and lines[-1] == "" and data.endswith(b"\n"):
        lines = lines.head(lines.len() - 1)
    df = pl.DataFrame([lines]).with_row_index("line", offset=line0).with_columns(
        pl.col("line").cast(pl.Int64), pl.col("raw").str.replace_all(ANSI, ""))
    df = df.filter(pl.col("raw").str.contains(STEP_LOOKING) & ~pl.col("raw").str.contains(VALIDATION, literal=True))
    df = df.with_columns(
        pl.col("raw").str.extract(STEP, 1).cast(pl.Float64, strict=False).alias("step"),
        pl.col("raw").str.extract(TS, 1).alias("ts"),
        pl.col("raw").str.extract(RANK, 1).cast(pl.Int64, strict=False).alias("_rank"),
        *[pl.col("raw").str.extract(rx, 1).str.replace_all(",", "").cast(pl.Float64, strict=False).alias(name)
          for name, rx in FIELDS.items()],
    )
    return df.drop("raw"), lines.len()


def read(src: Source, opts: ReadOptions, label: str) -> LogRead:
    import polars as pl

    out = LogRead(format="torchtitan", path=label)
    pieces, line0 = [], 1
    fh, chunks = src.chunks()
    with fh:
        for data in chunks:
            if data is LONG:
                line0 += 1
                continue
            df, n = _piece(data, line0)
            pieces.append(df)
            line0 += n
    df = pl.concat(pieces) if pieces else pl.DataFrame()
    if df.height == 0:
        from napkin.ledger.records import NotEnoughRecords

        raise NotEnoughRecords("log", label, "has no torchtitan 'step: N  loss: X' line",
                         "give torchtitan's training log, or another --format")
    df = df.with_columns((pl.col("mfu_logged") / 100).alias("mfu_logged"))
    if df["ts"].drop_nulls().len() == 0:
        raise InputError("t_wall", label, "is not in the torchtitan lines (no timestamp prefix)",
                         "keep the logging prefix with its time ('[titan] 2025-01-01 10:00:00,000 - ...')")
    ts = df["ts"].str.replace(",", ".").str.to_datetime(strict=False, time_unit="us")
    df = df.with_columns((ts.dt.replace_time_zone("UTC").dt.epoch("us").cast(pl.Float64) / MILLION).alias("t_wall"))
    df = _one_rank(df, out)
    df = df.with_columns(pl.when(pl.col("loss").is_null()).then(pl.lit("a step line without a readable loss"))
                         .otherwise(None).alias("_malformed")).drop(["ts"])
    out.notes.append("wall time from each line's timestamp (read as UTC)")
    if opts.gpus is None:
        raise InputError("gpus", "nothing", "is required for torchtitan logs (the lines carry no GPU count)",
                         "give --gpus K (GPUs allocated)")
    if opts.tokens_per_step is None:
        good = df.filter(pl.col("step").is_not_null() & pl.col("t_wall").is_not_null() & pl.col("tps").is_not_null())
        ds = good["step"].diff()
        dt = good["t_wall"].diff()
        est = (good["tps"] * opts.gpus * dt / ds).filter((ds > 0) & (dt > 0))
        est = est.filter(est.is_finite() & (est <= limits.MAX_TOKENS_PER_STEP))  # a corrupt tps is no estimate
        if est.len() == 0:
            raise InputError("tokens_per_step", "nothing", "is required (too few step lines to estimate it from tps)",
                             "give --tokens-per-step (global batch × sequence length)")
        per_step = float(est.median())
        df = df.with_columns(pl.lit(per_step).alias("tokens"))
        out.tokens_derived = True
        out.warnings.append(("tokens-estimated",
                             f"tokens per step estimated as {per_step:,.0f} from tps · gpus · seconds / steps "
                             "(median over lines); give --tokens-per-step (global batch × sequence length) "
                             "for exact figures"))
    return finish(df, opts, out)


def _one_rank(df: Any, out: LogRead) -> Any:
    """The lowest rank's step lines only (``[rankN]:`` prefixes), then each run of copies of one
    step within SAME_STEP_S seconds (one per node, no prefix) collapsed to its first line."""
    import polars as pl

    ranks = df["_rank"].drop_nulls().unique().sort()
    if ranks.len() > 1:
        keep = int(ranks[0])
        n_before = df.height
        df = df.filter(pl.col("_rank").is_null() | (pl.col("_rank") == keep))
        out.duplicates += n_before - df.height
        out.notes.append(f"the log has the step lines of {ranks.len()} ranks ([rankN]: prefixes): rank {keep}'s "
                         f"are the records ({n_before - df.height} lines of the other ranks are copies, not read)")
    df = df.drop("_rank")
    same = ((pl.col("step") == pl.col("step").shift(1)) & (pl.col("t_wall") - pl.col("t_wall").shift(1)).abs()
            .le(SAME_STEP_S)).fill_null(False)
    copies = int(df.select(same.sum()).item())
    if copies:
        df = df.filter(~same)
        out.duplicates += copies
        out.notes.append(f"{copies} step line(s) repeat the step of the line before within {SAME_STEP_S:g} s "
                         "(one copy per node or rank): read once")
    return df
