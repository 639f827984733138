"""TensorBoard event files: every scalar, with each event's own wall time.

Read with ``EventAccumulator(path, size_guidance={"scalars": 0})``: 0 keeps every event
(the default keeps a reservoir sample of 10,000, which would invent a smoother run), and
``purge_orphaned_data=False`` keeps the events after a restart (the default purge would
hide a rollback). The records are the events of one tag (``--map TAG=step``, or the tag
with the most events); a tag whose events line up with them one to one is kept as a
column, and ``--map TAG=gpus_allocated`` / ``--map TAG=tokens`` take those fields from tags.
"""

from __future__ import annotations

import os

from napkin.errors import InputError, quote
from napkin.ledger.readers import FIELDS, LogRead, ReadOptions, Source
from napkin.ledger.readers.common import finish


def read(src: Source, opts: ReadOptions, label: str) -> LogRead:
    import polars as pl

    path = src.path
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:  # pragma: no cover - the optional extra
        raise InputError("format", "tensorboard", "needs the tensorboard package",
                         "pip install 'llm-napkin[tensorboard]'") from None
    out = LogRead(format="tensorboard", path=label, location="event")
    acc = EventAccumulator(path, size_guidance={"scalars": 0}, purge_orphaned_data=False)
    acc.Reload()
    tags = acc.Tags().get("scalars", [])
    if not tags:
        raise InputError("log", label, "has no scalar events", "give the folder or file TensorBoard wrote")
    events = {t: acc.Scalars(t) for t in tags}
    mapped = dict(opts.mapping)
    for tag in mapped:
        if tag not in events:
            raise InputError("map", tag, "is not a scalar tag of the event file", "tags are: " + quote(", ".join(tags)))
    anchor = next((s for s, d in mapped.items() if d == "step"), None)
    if anchor is None:
        anchor = max(tags, key=lambda t: (len(events[t]), t.startswith("napkin/t_wall"), t))
        out.notes.append(f"records are the {len(events[anchor])} events of tag '{quote(anchor)}' (the most events; "
                         "--map TAG=step to choose)")
    base = events[anchor]
    cols = {"line": list(range(1, len(base) + 1)), "step": [float(e.step) for e in base],
            "t_wall": [float(e.wall_time) for e in base]}
    steps = [e.step for e in base]
    for tag, evs in events.items():
        if tag == anchor:
            continue
        name = mapped.get(tag, {"napkin/t_wall": "t_wall_logged", "napkin/gpus_allocated": "gpus_allocated",
                                "napkin/tokens": "tokens"}.get(tag, tag))
        if name in ("step", "t_wall"):
            continue
        if [e.step for e in evs] == steps:
            cols[name] = [float(e.value) for e in evs]
        elif name in FIELDS:
            raise InputError("map", tag, f"has {len(evs)} events that do not line up with the {len(base)} of "
                             f"'{quote(anchor)}'", "map a tag logged at the same steps")
    n_events = sum(len(v) for v in events.values())
    out.notes.append(f"read all {n_events} scalar events of {len(tags)} tags from "
                     f"{quote(os.path.basename(label.rstrip('/')) or label)} (no sampling)")
    df = pl.DataFrame(cols, schema_overrides={"line": pl.Int64})
    return finish(df, opts, out)
