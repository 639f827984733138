"""Which column of a log is which field: ``--map``, then names the common loggers write.

A column matches a field by its name, case aside, or by an alias another logger writes:
napkin's own callbacks (``napkin/t_wall``), Weights & Biases history exports (``_step``,
``_timestamp``, ``_runtime``, ``train/global_step``, ``train/num_tokens``), the Hugging Face
Trainer (``train/global_step``, ``num_input_tokens_seen``). Where several are present the
first in the list below wins: the trainer's optimiser step before W&B's ``_step`` (which
counts log calls), Unix time before seconds since the start. A count of tokens seen so far
(``train/num_tokens``) becomes tokens per step as its change per step. The report names
every alias it took, so what was inferred is said.
"""

from __future__ import annotations

import re
from typing import Any

from napkin.errors import InputError, quote
from napkin.ledger.readers import FIELDS, LogRead, ReadOptions

# field -> names that mean it, most specific first (compared case-insensitively)
ALIASES: dict[str, tuple[str, ...]] = {
    "step": ("step", "train/global_step", "trainer/global_step", "global_step", "_step"),
    "t_wall": ("t_wall", "napkin/t_wall", "napkin_t_wall", "_timestamp", "timestamp", "_runtime"),
    "gpus_allocated": ("gpus_allocated", "napkin/gpus_allocated", "napkin_gpus_allocated"),
    "tokens": ("tokens", "napkin/tokens", "napkin_tokens"),
}
# counts of tokens seen so far: tokens per step is their change per step
CUMULATIVE_TOKENS = ("train/num_tokens", "num_tokens", "train/num_input_tokens_seen", "num_input_tokens_seen")
QUIET = {"step", "t_wall", "gpus_allocated", "tokens", "napkin/t_wall", "napkin_t_wall", "napkin/gpus_allocated",
         "napkin_gpus_allocated", "napkin/tokens", "napkin_tokens"}  # napkin's own names: taken without a note
BUSY_RX = re.compile(r"busy|active|util|used|working|running", re.IGNORECASE)


class Names:
    """The renames the first piece of a log decides, applied to every later piece."""

    def __init__(self) -> None:
        self.renames: dict[str, str] | None = None
        self.cumulative = False  # a tokens-seen column was taken as tokens


def rename(df: Any, opts: ReadOptions, out: LogRead | None = None, names: Names | None = None, *,
           cumulative_aliases: bool = True) -> Any:
    """Apply --map (log column -> field) and the aliases (see the module); the first call decides."""
    names = names or Names()
    if names.renames is None:
        names.renames = _decide(list(df.columns), opts, out, names, cumulative_aliases)
    renames = {src: dst for src, dst in names.renames.items() if src in df.columns}
    drop = [dst for src, dst in renames.items() if dst in df.columns and dst != src]
    if drop:  # a mapped target that is already a column is replaced by the mapped one
        df = df.drop(drop)
    return df.rename(renames)


def _decide(cols: list[str], opts: ReadOptions, out: LogRead | None, names: Names, cumulative: bool) -> dict:
    for src in opts.mapping:
        if src not in cols:
            raise InputError("map", f"{src}={opts.mapping[src]}", "does not name a column of the log",
                             "columns are: " + quote(", ".join(c for c in cols if c not in ("line", "_malformed"))))
    for src, dst in opts.mapping.items():
        if dst not in FIELDS:
            raise InputError("map", f"{src}={dst}", "must map a column to step, t_wall, gpus_allocated or tokens")
        if dst == "gpus_allocated" and BUSY_RX.search(src) and out is not None:
            out.warnings.append((
                "gpus-busy-mapped",
                f"--map {quote(src)}=gpus_allocated: paid time is allocated GPU time, and '{quote(src)}' reads as "
                "GPUs busy; GPUs allocated but idle (waiting on a straggler, a restart or the data loader) are "
                "paid for too, so a busy count understates the cost: map the GPUs allocated, or give --gpus K"))
    renames = dict(opts.mapping)
    taken = set(renames.values())
    lower: dict[str, str] = {}
    for c in cols:
        lower.setdefault(c.lower(), c)
    said = []
    for dst, candidates in ALIASES.items():
        if dst in taken:
            continue
        if dst in cols:  # the field's own name, exactly: nothing to rename
            taken.add(dst)
            continue
        for cand in candidates:
            src = cand if cand in cols else lower.get(cand)
            if src is not None and src not in renames:
                renames[src] = dst
                taken.add(dst)
                if src not in QUIET:
                    said.append(f"{src} -> {dst}")
                break
    if cumulative and "tokens" not in taken and opts.tokens_per_step is None:
        for cand in CUMULATIVE_TOKENS:
            src = cand if cand in cols else lower.get(cand)
            if src is not None and src not in renames:
                renames[src] = "tokens"
                names.cumulative = True
                said.append(f"{src} -> tokens (a count of tokens seen so far: tokens per step is its change per "
                            "step)")
                break
    if said and out is not None:
        out.note("columns read by name: " + quote("; ".join(said)))
    return renames
