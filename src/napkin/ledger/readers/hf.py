"""Hugging Face Trainer ``trainer_state.json``: its ``log_history``.

The log history has step and loss but no wall clock per entry. napkin's
``NapkinTrainerCallback`` adds ``napkin/t_wall`` (and GPUs, tokens) to every entry;
without it, give ``--start`` and ``--end``. Tokens per step come from
``--tokens-per-step`` or, when the trainer counted them (``include_num_input_tokens_seen``),
from the change in ``num_input_tokens_seen`` between entries.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.ledger.readers import LogRead, ReadOptions, Unparseable
from napkin.ledger.readers.common import finish, interpolate_time, rename, time_to_seconds

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
    except msgspec.DecodeError as exc:
        try:  # Python's own parser takes NaN/Infinity (msgspec is strict JSON)
            return json.loads(data)
        except ValueError:
            pass
        raise Unparseable("log", label, f"is not valid JSON ({exc})", "give a trainer_state.json") from None


def read(data: bytes, opts: ReadOptions, label: str) -> LogRead:
    import polars as pl

    out = LogRead(frame=None, format="hf", path=label, location="entry")
    state = decode(data, label)
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError("log", label, "has no log_history list", "give the trainer_state.json of a Trainer run")
    rows: list[dict] = []
    lines: list[int] = []
    for i, entry in enumerate(history, start=1):
        if not isinstance(entry, dict):
            out.skip([i], "not an object")
            continue
        if is_summary(entry) or any(k.startswith("eval_") for k in entry):
            continue  # the end-of-training summary and evaluation entries are not training steps
        rows.append({k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        lines.append(i)
    if not rows:
        raise InputError("log", label, "has no training entries in log_history", "log with logging_steps > 0")
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    df = pl.DataFrame({"line": lines, **{k: [float(r[k]) if k in r else None for r in rows] for k in keys}},
                      schema_overrides={"line": pl.Int64})
    df = rename(df, opts)
    if "step" not in df.columns:
        raise InputError("step", label, "is missing from log_history entries", "log with a Trainer, which writes step")
    if "t_wall" in df.columns:
        df = time_to_seconds(df, out)
    else:
        df = interpolate_time(df, opts, out, missing="the Trainer logs no wall clock per step")
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
