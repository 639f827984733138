"""A trace of requests to simulate: CSV or JSONL rows of prompt and output tokens, optional arrival times."""

from __future__ import annotations

import json
from typing import Any

from napkin.errors import InputError, quote

MAX_TRACE_BYTES = 256 * 1024 * 1024
MAX_TRACE_ROWS = 1_000_000
PROMPT_KEYS = ("prompt", "prompt_tokens", "input", "input_tokens", "input_len", "isl")
OUTPUT_KEYS = ("output", "output_tokens", "output_len", "osl", "completion_tokens")
ARRIVAL_KEYS = ("arrival", "arrival_s", "timestamp", "time", "t")


def _pick(row: dict, keys: tuple[str, ...], line: int, what: str, path: str) -> float | None:
    low = {str(k).strip().lower(): v for k, v in row.items()}
    for k in keys:
        if k in low and low[k] not in (None, ""):
            try:
                v = float(low[k])
            except (TypeError, ValueError):
                raise InputError("trace", f"{path}:{line}", f"has {what} {quote(repr(low[k]))}, not a number") from None
            if not (v >= 0 and v < 1e12):
                raise InputError("trace", f"{path}:{line}", f"has {what} {v:g}, outside 0 .. 1e12")
            return v
    return None


def read_trace(path: str, *, rate: float | None, seed: int, limit: int | None) -> tuple[Any, Any, Any]:
    """(arrival seconds, prompt tokens, output tokens) from a trace file; Poisson arrivals at ``rate``
    where the trace has no times."""
    import numpy as np

    from napkin.formulas.simulation import poisson_arrivals

    from napkin.files import read_bounded

    try:
        text = read_bounded(path, "trace", MAX_TRACE_BYTES).decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise InputError("trace", path, "is not UTF-8 text", "give a CSV or JSONL file") from None
    rows = _rows(text, path)
    if not rows:
        raise InputError("trace", path, "has no requests", "give rows with prompt and output token counts")
    if len(rows) > MAX_TRACE_ROWS:
        raise InputError("trace", path, f"has {len(rows):,} requests, more than {MAX_TRACE_ROWS:,}",
                         "use a shorter trace or --requests")
    prompts, outputs, times = [], [], []
    for i, row in enumerate(rows, 1):
        p, o = _pick(row, PROMPT_KEYS, i, "a prompt length", path), _pick(row, OUTPUT_KEYS, i, "an output length", path)
        if p is None or o is None or p < 1 or o < 1:
            raise InputError("trace", f"{path}:{i}", "needs prompt and output token counts of at least 1",
                             "columns prompt,output (or input_tokens,output_tokens)")
        prompts.append(p)
        outputs.append(o)
        times.append(_pick(row, ARRIVAL_KEYS, i, "an arrival time", path))
    if limit:
        prompts, outputs, times = prompts[:limit], outputs[:limit], times[:limit]
    if all(t is not None for t in times):
        arr = np.asarray(times, dtype=float)
        order = np.argsort(arr, kind="stable")
        return arr[order] - arr[order][0], np.asarray(prompts)[order], np.asarray(outputs)[order]
    if rate is None:
        raise InputError("trace", path, "has no arrival times", "give --rate for Poisson arrivals, or a time column")
    return poisson_arrivals(rate, n_requests=len(prompts), seed=seed), np.asarray(prompts), np.asarray(outputs)


def _rows(text: str, path: str) -> list[dict]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    if lines[0].lstrip().startswith("{"):
        out = []
        for i, ln in enumerate(lines, 1):
            try:
                obj = json.loads(ln)
            except (ValueError, RecursionError):
                raise InputError("trace", f"{path}:{i}", "is not a JSON object on one line") from None
            if not isinstance(obj, dict):
                raise InputError("trace", f"{path}:{i}", "is not a JSON object on one line")
            out.append(obj)
        return out
    import csv

    return list(csv.DictReader(lines))
