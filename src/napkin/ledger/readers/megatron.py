"""Megatron-LM stdout: the ``iteration N/ M | ...`` lines.

A line looks like ``[2024-05-01 10:00:00] iteration      100/  500000 | consumed samples:
51200 | elapsed time per iteration (ms): 2071.3 | ... | global batch size:   512 | lm loss:
2.345678E+00 | ...``. The timestamp prefix may be absent: then wall time accumulates from
the elapsed milliseconds, and the downtime of a restart is invisible (the report says so).
The line has no sequence length: tokens per step = global batch size · ``--seq-len``.
Other lines of the log are not records and are not counted as skipped; a step line that
does not parse is: one that says ``iteration`` and ``|``, or one cut short after ``iteration
N`` (the last line of a killed job). Evaluation lines (``validation loss at iteration N |
lm loss value: ...``) are not training steps: counted in a note, not skipped. The log is
read a piece at a time, and only its step lines' figures are kept.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.ledger.readers import LogRead, ReadOptions, Source
from napkin.ledger.readers.common import finish
from napkin.ledger.readers.lines import LONG
from napkin.units import MILLION

TS = r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]\s*)?"
EVAL = r"\b(?:validation|test) loss at iteration\s+\d+"  # Megatron-LM's evaluate_and_print_results
ITER = TS + r"iteration\s+(?P<it>\d+)\s*/\s*(?P<total>\d+)\s*\|(?P<rest>.*)$"
# a step line: 'iteration' and '|' (whole or damaged), or a line cut short after 'iteration N' (no '|' yet)
STEP_WORD = r"\biteration\b"  # ... with a '|' anywhere on the line
CUT_SHORT = r"^\s*(?:\[[^\]]*\]:?\s*)*iteration(?:\s+[\d\s/]*)?$"
NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
FIELDS = {
    "consumed_samples": r"consumed samples:\s*" + NUM,
    "elapsed_ms": r"elapsed time per iteration \(ms\):\s*" + NUM,
    "learning_rate": r"learning rate:\s*" + NUM,
    "global_batch_size": r"global batch size:\s*" + NUM,
    "loss": r"lm loss:\s*" + NUM,
    "loss_scale": r"loss scale:\s*" + NUM,
    "grad_norm": r"grad norm:\s*" + NUM,
    "skipped_iterations": r"number of skipped iterations:\s*" + NUM,
    "nan_iterations": r"number of nan iterations:\s*" + NUM,
}


def is_step_line(text: str) -> bool:
    """Whether a line of the log is a training step line (read, or skipped and counted): the definition the
    reader applies, for a check that counts them independently."""
    import re

    text = text.rstrip("\r")
    return bool(((re.search(STEP_WORD, text) and "|" in text) or re.search(CUT_SHORT, text))
                and not re.search(EVAL, text))


def _piece(data: bytes, line0: int) -> tuple[Any, int, int]:
    """The step lines of one piece with their figures (not their text), the evaluation lines, the lines."""
    import polars as pl

    lines = pl.Series("raw", data.decode("utf-8", errors="replace").split("\n"))
    if lines.len() and lines[-1] == "" and data.endswith(b"\n"):
        lines = lines.head(lines.len() - 1)
    df = pl.DataFrame([lines]).with_row_index("line", offset=line0).with_columns(
        pl.col("line").cast(pl.Int64), pl.col("raw").str.strip_chars_end("\r"))
    df = df.filter((pl.col("raw").str.contains(STEP_WORD) & pl.col("raw").str.contains("|", literal=True))
                   | pl.col("raw").str.contains(CUT_SHORT))
    evals = df["raw"].str.contains(EVAL)
    n_eval = int(evals.sum())
    df = df.filter(~evals)
    parts = df.with_columns(pl.col("raw").str.extract_groups(ITER).alias("m")).unnest("m")
    parts = parts.with_columns(
        *[pl.col("rest").str.extract(rx, 1).cast(pl.Float64, strict=False).alias(name) for name, rx in FIELDS.items()],
        pl.col("raw").str.contains("|", literal=True).alias("_bar"))
    return parts.drop(["raw", "rest", "total"]), n_eval, lines.len()


def read(src: Source, opts: ReadOptions, label: str) -> LogRead:
    import polars as pl

    out = LogRead(format="megatron", path=label)
    pieces, n_eval, line0 = [], 0, 1
    fh, chunks = src.chunks()
    with fh:
        for data in chunks:
            if data is LONG:
                line0 += 1  # no log line: not a step line either
                continue
            df, k, n = _piece(data, line0)
            pieces.append(df)
            n_eval, line0 = n_eval + k, line0 + n
    parts = pl.concat(pieces) if pieces else pl.DataFrame()
    if n_eval:
        out.notes.append(f"{n_eval} evaluation line(s) ('validation loss at iteration N | ...') are not training "
                         "steps: not records")
    if parts.height == 0:
        from napkin.ledger.records import NotEnoughRecords

        raise NotEnoughRecords("log", label, "has no Megatron-LM 'iteration N/ M |' line",
                         "give the training stdout of Megatron-LM, or another --format")
    elapsed_missing = pl.col("elapsed_ms").is_null()
    parts = parts.with_columns(
        pl.when(pl.col("it").is_null() & ~pl.col("_bar")).then(pl.lit("an 'iteration' line cut short (no '|' "
                                                                      "fields)"))
        .when(pl.col("it").is_null()).then(pl.lit("an 'iteration' line that does not parse"))
        .when(elapsed_missing).then(pl.lit("no 'elapsed time per iteration (ms)'"))
        .otherwise(None).alias("_malformed"),
        pl.col("it").cast(pl.Float64, strict=False).alias("step"),
    )
    has_ts = parts.filter(pl.col("it").is_not_null())["ts"].is_not_null()
    if has_ts.len() and bool(has_ts.all()):
        ts = parts["ts"].str.replace(",", ".").str.to_datetime(strict=False, time_unit="us")
        parts = parts.with_columns((ts.dt.replace_time_zone("UTC").dt.epoch("us").cast(pl.Float64) / MILLION)
                                   .alias("t_wall"))
        out.notes.append("wall time from each line's timestamp (read as UTC; 1 s resolution)")
    else:
        if has_ts.len() and bool(has_ts.any()):
            out.warnings.append(("mixed-timestamps", "some iteration lines have a timestamp and some do not: "
                                 "wall time accumulates from elapsed ms for all"))
        good = parts.filter(pl.col("_malformed").is_null())
        d = good["step"].diff().fill_null(0.0)
        stride = d.filter(d > 0).median() or 1.0
        # steps run between two lines: the step difference, or one log interval after a restart
        steps_run = pl.select(pl.when(d > 0).then(d).otherwise(stride).cast(pl.Float64)).to_series()
        if steps_run.len():
            steps_run[0] = 0.0
        t = (steps_run * good["elapsed_ms"] / 1e3).cum_sum()
        parts = parts.join(good.select("line").with_columns(t.alias("t_wall")), on="line", how="left")
        out.time_absolute = False
        out.warnings.append(("time-from-elapsed", "the lines carry no timestamp: wall time accumulates from "
                             "'elapsed time per iteration', so time between runs (restarts, queueing) is not "
                             "counted; log with timestamps for the paid time"))
    if opts.tokens_per_step is None:
        if opts.seq_len is None:
            raise InputError("seq_len", "nothing", "is required for Megatron-LM logs (the lines carry no "
                             "sequence length)", "give --seq-len 4096, or --tokens-per-step")
        parsed = parts.filter(pl.col("it").is_not_null())
        if parsed.height and parsed["global_batch_size"].null_count() == parsed.height:
            parts = _tokens_from_consumed(parts, opts, out, label)
        else:
            parts = parts.with_columns((pl.col("global_batch_size") * opts.seq_len).alias("tokens"))
            out.notes.append(f"tokens per step = global batch size · seq_len ({opts.seq_len:g})")
        out.tokens_derived = True  # a batch-size ramp rises record after record: not a cumulative count
    if opts.gpus is None:
        raise InputError("gpus", "nothing", "is required for Megatron-LM logs (the lines carry no GPU count)",
                         "give --gpus K (GPUs allocated)")
    parts = parts.drop(["it", "ts", "_bar"])
    return finish(parts, opts, out)



def _tokens_from_consumed(parts: Any, opts: ReadOptions, out: LogRead, label: str) -> Any:
    """Lines without 'global batch size': samples per step from the cumulative 'consumed samples'
    (its change over the change in iteration between lines; the first line, consumed / iteration),
    times --seq-len. Neither field: an error that names them and gives the fix."""
    import polars as pl

    good = parts.filter(pl.col("_malformed").is_null() & pl.col("consumed_samples").is_not_null())
    if good.height == 0:
        raise InputError("global_batch_size", label, "is not in the Megatron-LM iteration lines (nor 'consumed "
                         "samples'), so tokens per step are unknown",
                         "give --tokens-per-step T, the global batch × the sequence length")
    ds, dc = good["step"].diff(), good["consumed_samples"].diff()
    per = (dc / ds).to_list()
    if per:
        per[0] = good["consumed_samples"][0] / good["step"][0] if good["step"][0] else None
    per = [p if p is not None and p > 0 and p == p else None for p in per]
    samples = pl.Series("samples", per, dtype=pl.Float64).forward_fill().backward_fill()
    parts = parts.join(good.select("line").with_columns((samples * opts.seq_len).alias("tokens")), on="line",
                       how="left")
    out.warnings.append(("tokens-from-consumed-samples",
                         f"the lines have no 'global batch size': tokens per step = the change in 'consumed "
                         f"samples' per iteration · seq_len ({opts.seq_len:g}); give --tokens-per-step for exact "
                         "figures"))
    return parts
