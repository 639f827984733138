"""What a ledger request says about its logs, as the readers take it; and the logs read.

Shared by the calculator, ``napkin ledger report`` and ``watch``: the request's times parsed
(ISO or Unix seconds), its options as :class:`~napkin.ledger.readers.ReadOptions`, and every
log of the request read with one memory budget for all of them.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from napkin.errors import InputError, quote


def parse_time(name: str, text: str | None) -> float | None:
    """ISO time (UTC when no offset) or Unix seconds -> Unix seconds."""
    if text is None:
        return None
    s = text.strip()
    try:
        return float(s)
    except ValueError:
        pass
    try:
        t = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(name, text, "is not an ISO time", "e.g. 2024-05-01T10:00:00Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return t.timestamp()


def read_options(req: Any) -> Any:
    from napkin.ledger.readers import ReadOptions

    if req.tokens_cumulative and req.tokens_per_step is not None:
        raise InputError("tokens_cumulative", "given", "cannot be combined with --tokens-per-step (which replaces "
                         "the log's tokens column)", "give one or the other")
    if req.start_step is not None and req.start is None:
        raise InputError("start_step", req.start_step, "places the step at --start, which is not given",
                         "give --start and --end too (logs without a wall clock per step)")
    start, end = parse_time("start", req.start), parse_time("end", req.end)
    if start is not None and end is not None and end <= start:
        raise InputError("end", req.end, f"must be after --start ({quote(req.start)})",
                         "give the run's end time after its start")
    return ReadOptions(format=req.format, mapping=dict(req.map), tokens_per_step=req.tokens_per_step,
                       gpus=req.gpus, seq_len=req.seq_len, start=start,
                       end=end, start_step=req.start_step,
                       tokens_cumulative=req.tokens_cumulative)


def read_all(req: Any, progress: Any = None) -> list[Any]:
    """Every log of the request read into step records (LogRead), in the order given, their records held in
    memory up to one budget for all of them (then in a temporary file); ``progress``: a
    :class:`napkin.ledger.progress.Progress` to show how far the reading is."""
    from napkin.ledger.readers import read_log
    from napkin.ledger.readers.lines import Budget

    opts = read_options(req)
    opts.budget = Budget()
    opts.progress = progress.update if progress is not None else None
    if req.content is not None:
        if req.logs:
            raise InputError("content", "given", "cannot be combined with log paths", "give one or the other")
        name = req.filename or "upload"
        return [read_log(name, opts, content=req.content.encode(), name=name)]
    if not req.logs:
        raise InputError("logs", "nothing", "is required", "give one or more step log files")
    return [read_log(p, opts) for p in req.logs]
