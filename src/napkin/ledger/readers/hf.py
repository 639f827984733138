"""Hugging Face Trainer ``trainer_state.json``: its ``log_history``.

The clock, in order of preference: ``napkin/t_wall``, which napkin's
``NapkinTrainerCallback`` adds to every entry (with GPUs and tokens); ``--start`` and
``--end`` of the run, given; ``train_runtime`` on every entry (transformers 5 writes it, the
seconds since the Trainer started, when ``include_num_input_tokens_seen`` is on), a clock
per entry; the end-of-training summary's ``train_runtime``, spread over the steps run. The
report says which it took. Tokens per step come from ``--tokens-per-step`` or, when the
trainer counted them, from the change in ``num_input_tokens_seen`` between entries.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError, quote
from napkin.ledger.readers import LogRead, ReadOptions, Source, Unparseable
from napkin.ledger.readers.common import finish, interpolate_time, is_text, rename, time_to_seconds
from napkin.units import MEBI

MAX_BYTES = int(256 * MEBI)  # a trainer_state.json of a million log entries is about 200 MB

# Keys only the end-of-training summary has (Trainer._finalize_training: train_loss, total_flos).
# Not train_runtime: transformers 5 adds train_runtime and train_tokens_per_second to every
# training entry when include_num_input_tokens_seen is on.
SUMMARY_KEYS = ("train_loss", "total_flos")


def is_summary(entry: dict) -> bool:
    """Whether a log entry is the Trainer's end-of-training summary, not a training step."""
    return any(k in entry for k in SUMMARY_KEYS)


def decode(data: bytes, label: str) -> Any:
    """trainer_state.json, with the NaN and Infinity that Python's json writes (a diverged
    grad_norm) read as floats."""
    import json

    import msgspec

    try:
        return msgspec.json.decode(data)
    except RecursionError:
        raise Unparseable("log", label, "is nested too deeply to be a trainer_state.json",
                          "give the trainer_state.json of a Trainer run") from None
    except msgspec.DecodeError as exc:
        try:  # Python's own parser takes NaN/Infinity (msgspec is strict JSON)
            return json.loads(data)
        except (ValueError, RecursionError):
            pass
        raise Unparseable("log", label, f"is not valid JSON ({quote(exc)})", "give a trainer_state.json") from None


def read(src: Source, opts: ReadOptions, label: str) -> LogRead:
    import polars as pl

    out = LogRead(format="hf", path=label, location="entry")
    state = decode(src.read_bounded(MAX_BYTES), label)
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError("log", label, "has no log_history list", "give the trainer_state.json of a Trainer run")
    rows: list[dict] = []
    lines: list[int] = []
    summary: dict = {}
    for i, entry in enumerate(history, start=1):
        if not isinstance(entry, dict):
            out.skip([i], "not an object")
            continue
        if is_summary(entry):
            summary = entry
            continue
        if any(k.startswith("eval_") for k in entry):
            continue  # evaluation entries are not training steps
        rows.append({k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                     and is_text(k)})
        lines.append(i)
    if not rows:
        raise InputError("log", label, "has no training entries in log_history", "log with logging_steps > 0")
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    df = pl.DataFrame({"line": lines, **{k: [_num(r.get(k)) for r in rows] for k in keys}},
                      schema_overrides={"line": pl.Int64, **{k: pl.Float64 for k in keys}})
    df = rename(df, opts, out, cumulative_aliases=False)
    if "step" not in df.columns:
        raise InputError("step", label, "is missing from log_history entries", "log with a Trainer, which writes step")
    df = _clock(df, opts, out, summary)
    if "tokens" not in df.columns and opts.tokens_per_step is None and "num_input_tokens_seen" in df.columns:
        seen = df["num_input_tokens_seen"]
        d_steps = df["step"].diff()
        d_seen = seen.diff()
        per_step = (d_seen / d_steps).fill_null(seen / df["step"])
        df = df.with_columns(pl.when(per_step > 0).then(per_step).otherwise(None).alias("tokens"))
        out.tokens_derived = True
        out.notes.append("tokens per step from the change in num_input_tokens_seen (counts padding if the "
                         "trainer did)")
    if "gpus_allocated" not in df.columns and opts.gpus is None:
        raise InputError("gpus_allocated", label, "is not in trainer_state.json", "give --gpus K (GPUs allocated)")
    if "tokens" not in df.columns and opts.tokens_per_step is None:
        raise InputError("tokens", label, "is not in trainer_state.json",
                         "give --tokens-per-step T (global batch × sequence length)")
    return finish(df, opts, out)


def _num(v: Any) -> float | None:
    """A log value as a float; an integer past float range (a corrupt entry) as None, skipped by field."""
    try:
        return float(v) if v is not None else None
    except OverflowError:
        return None


def _clock(df: Any, opts: ReadOptions, out: LogRead, summary: dict) -> Any:
    """t_wall from the best clock the state has (see the module), saying which."""
    import polars as pl

    if "t_wall" in df.columns:
        return time_to_seconds(df, out)
    if opts.start is not None or opts.end is not None:
        return interpolate_time(df, opts, out, missing="the Trainer logs no wall clock per step")
    if "train_runtime" in df.columns and df["train_runtime"].null_count() < df.height:
        runtime = df["train_runtime"]
        back = (runtime.diff() < 0).fill_null(False)  # the clock starts again: a run resumed from a checkpoint
        sessions = int(back.sum())
        if sessions:
            ends = runtime.shift(1).filter(back)  # each session's last clock, added to the ones after it
            offset = pl.Series([0.0] * df.height).scatter(back.arg_true(), ends).cum_sum()
            runtime = runtime + offset
            out.warnings.append(("downtime-not-counted", f"train_runtime starts again {sessions} time(s) (runs "
                                 "resumed from a checkpoint): the sessions are joined end to start, so the time "
                                 "between them (restarts, queueing) is not in the paid time"))
        out.time_absolute = False
        out.notes.append("t_wall from each entry's train_runtime: the seconds since the Trainer started (its own "
                         "clock: set-up and queueing before it are not in the paid time)")
        origin, first = opts.start_step or 0, df["step"].min()
        if first is not None and first > origin:  # the Trainer started at step 0 (or --start-step) at time 0
            out.origin = (origin, 0.0)
            out.notes.append(f"time 0 (the Trainer's start) is the run at step {origin}: the steps from {origin} to "
                             f"the first logged step {first:g} are paid and counted")
        return df.with_columns(runtime.alias("t_wall"))
    total = summary.get("train_runtime")
    if isinstance(total, (int, float)) and not isinstance(total, bool) and 0 < total < float("inf"):
        rate = summary.get("train_steps_per_second")
        last = df["step"].max()
        if isinstance(rate, (int, float)) and rate > 0 and last and rate * total < 0.99 * (last - (opts.start_step or 0)):
            raise InputError("t_wall", out.path, f"is not in the hf log, and the summary's train_runtime "
                             f"({total:g} s) covers only the last {rate * total:.0f} of {last:g} steps (a run "
                             "resumed from a checkpoint)", "give --start and --end of the whole run")
        out.time_absolute = False
        out.notes.append(f"t_wall inferred: the summary's train_runtime ({total:g} s, the Trainer's own clock) "
                         "spread over the steps run")
        return interpolate_time(df, opts, out, missing="", span=(0.0, float(total), "0 and the summary's "
                                                                                      "train_runtime"))
    return interpolate_time(df, opts, out, missing="the Trainer logs no wall clock per step, and no train_runtime")
