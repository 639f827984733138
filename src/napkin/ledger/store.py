"""Runs kept in an embedded SQLite file, so ``napkin ledger runs`` lists them and a report
can span restarts that wrote separate log files.

Default path: ``$XDG_DATA_HOME/napkin/ledger.sqlite3`` (or ``~/.local/share/napkin/...``);
``--store PATH`` or ``NAPKIN_LEDGER_STORE`` choose another. Every report saves its run's
summary and sources, under the log's file name (with its folders when another log of that
name is stored: :meth:`Store.name_for`). With ``--run NAME`` the step records of each log
are kept too (compressed, per source), and each later ``report --run NAME new.log``
reports over all of the run's logs, even when the earlier files are gone.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from typing import Any

from napkin.errors import InputError, quote

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_s REAL NOT NULL,
    updated_s REAL NOT NULL,
    format TEXT,
    options TEXT,
    summary TEXT
);
CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    format TEXT,
    location TEXT,
    time_absolute INTEGER,
    records INTEGER,
    skipped INTEGER,
    skipped_lines TEXT,
    notes TEXT,
    first_t REAL,
    last_t REAL,
    added_s REAL,
    data BLOB,
    UNIQUE (run_id, path)
);
"""
COLUMNS = (("line", "<i8"), ("step", "<i8"), ("t_wall", "<f8"), ("gpus_allocated", "<f8"), ("tokens", "<f8"))


def default_path() -> str:
    env = os.environ.get("NAPKIN_LEDGER_STORE")
    if env:
        return env
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "napkin", "ledger.sqlite3")


class Store:
    def __init__(self, path: str | None = None):
        given = path or os.environ.get("NAPKIN_LEDGER_STORE")
        self.path = path or default_path()
        folder = os.path.dirname(os.path.abspath(self.path))
        if given and not os.path.isdir(folder):  # a typo would start a new store elsewhere: say so
            if os.path.lexists(folder):
                raise InputError("store", self.path, f"is in {quote(folder)}, which is not a folder",
                                 "give --store PATH in an existing folder")
            raise InputError("store", self.path, "is in a folder that does not exist",
                             "create the folder first, or give --store PATH in an existing folder")
        if os.path.exists(self.path) and not os.path.isfile(self.path):
            raise InputError("store", self.path, "is a folder" if os.path.isdir(self.path) else "is not a regular file",
                             "give --store PATH of a store file, or a new name in an existing folder")
        try:
            if not given:
                os.makedirs(folder, exist_ok=True)  # napkin's own folder under $XDG_DATA_HOME
            self.db = sqlite3.connect(self.path)
        except (OSError, sqlite3.Error) as exc:
            raise InputError("store", self.path, f"cannot be opened ({quote(exc)})",
                             "give --store PATH in a writable folder") from None
        self.db.execute("PRAGMA foreign_keys = ON")
        try:
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise InputError("store", self.path, f"is not a napkin ledger store ({quote(exc)})",
                             "give another --store") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------------------- runs
    def run_id(self, name: str, *, create: bool = False) -> int | None:
        row = self.db.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()
        if row:
            return int(row[0])
        if not create:
            return None
        now = time.time()
        cur = self.db.execute("INSERT INTO runs (name, created_s, updated_s) VALUES (?, ?, ?)", (name, now, now))
        return int(cur.lastrowid)

    def name_for(self, path: str) -> tuple[str, str | None]:
        """The run name of a report without ``--run``, and a note to show when it is not the file name.

        The name is the log's file name; when a different file of that name is stored already
        (``runA/log.csv`` then ``runB/log.csv``; every ``trainer_state.json``), its folders are
        added from the nearest until the name is free (``runB/log.csv``), so no report replaces
        another run's. The same file reported again keeps the name it was stored under.
        """
        full = os.path.abspath(path.rstrip("/") or path)
        parts = [p for p in full.split(os.sep) if p]
        base = parts[-1] if parts else full
        mine = self.db.execute("SELECT r.name FROM runs r JOIN sources s ON s.run_id = r.id WHERE s.path = ?"
                               " AND s.data IS NULL ORDER BY r.updated_s DESC", (full,)).fetchall()
        for (name,) in mine:  # a report of this file before (not a --run run, which keeps records)
            if name == full or full.endswith(os.sep + name):
                return name, None if name == base else f"stored as run {name!r} (another {base} is stored already)"
        for k in range(1, len(parts) + 1):
            name = "/".join(parts[-k:])
            if self.run_id(name) is None:
                return name, None if k == 1 else f"stored as run {name!r} (another {base} is stored already)"
        return full, f"stored as run {full!r} (another {base} is stored already)"

    def save_summary(self, name: str, *, fmt: str, options: dict, summary: dict) -> None:
        rid = self.run_id(name, create=True)
        self.db.execute("UPDATE runs SET updated_s = ?, format = ?, options = ?, summary = ? WHERE id = ?",
                        (time.time(), fmt, json.dumps(options, default=str), json.dumps(summary, default=str), rid))
        self.db.commit()

    def set_sources(self, name: str, reads: list[Any], *, keep_records: bool, replace: bool) -> None:
        """Record the run's logs; with ``keep_records`` their step records too. ``replace`` drops the others."""
        rid = self.run_id(name, create=True)
        paths = [os.path.abspath(r.path) for r in reads]
        if replace:
            self.db.execute(f"DELETE FROM sources WHERE run_id = ? AND path NOT IN ({','.join('?' * len(paths))})",
                            (rid, *paths))
        for path, r in zip(paths, reads):
            blob = _pack(r.frames) if keep_records else None
            first_t, last_t = _t_range(r.frames)
            self.db.execute(
                "INSERT INTO sources (run_id, path, format, location, time_absolute, records, skipped, skipped_lines,"
                " notes, first_t, last_t, added_s, data) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (run_id, path) DO UPDATE SET format=excluded.format, location=excluded.location,"
                " time_absolute=excluded.time_absolute, records=excluded.records, skipped=excluded.skipped,"
                " skipped_lines=excluded.skipped_lines, notes=excluded.notes, first_t=excluded.first_t,"
                " last_t=excluded.last_t, added_s=excluded.added_s, data=excluded.data",
                (rid, path, r.format, r.location, int(r.time_absolute), r.records, r.skipped_count,
                 json.dumps(r.skipped), json.dumps({"notes": r.notes, "warnings": r.warnings}), first_t, last_t,
                 time.time(), blob))
        self.db.commit()

    def load_reads(self, name: str, *, exclude: tuple[str, ...] = ()) -> list[Any]:
        """The stored logs of run ``name`` as LogReads (records from the store, not the files)."""
        from napkin.ledger.readers import LogRead

        rid = self.run_id(name)
        if rid is None:
            raise InputError("run", name, "is not in the store", f"see `napkin ledger runs --store {quote(self.path)}`")
        out = []
        excl = {os.path.abspath(p) for p in exclude}
        for row in self.db.execute("SELECT path, format, location, time_absolute, skipped, skipped_lines, notes, data"
                                   " FROM sources WHERE run_id = ? ORDER BY first_t", (rid,)):
            path, fmt, location, absolute, skipped, skipped_lines, notes, data = row
            if path in excl:
                continue
            if data is None:
                raise InputError("run", name, f"has no stored records for {quote(path)}",
                                 "report it again with --run NAME so its records are kept")
            extra = json.loads(notes or "{}")
            r = LogRead(frames=_unpack(data), format=fmt, path=path, location=location or "line",
                        skipped_count=int(skipped or 0), skipped=[tuple(x) for x in json.loads(skipped_lines or "[]")],
                        time_absolute=bool(absolute), notes=list(extra.get("notes", [])),
                        warnings=[tuple(w) for w in extra.get("warnings", [])])
            out.append(r)
        return out

    def runs(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT r.name, r.format, r.created_s, r.updated_s, r.summary, COUNT(s.id), COALESCE(SUM(s.records), 0),"
            " MIN(s.first_t), MAX(s.last_t), SUM(s.data IS NOT NULL) FROM runs r LEFT JOIN sources s ON s.run_id = r.id"
            " GROUP BY r.id ORDER BY r.updated_s DESC").fetchall()
        out = []
        for name, fmt, created, updated, summary, n_src, n_rec, first_t, last_t, kept in rows:
            out.append({"name": name, "format": fmt, "created_s": created, "updated_s": updated,
                        "sources": n_src, "records": int(n_rec), "first_t": first_t, "last_t": last_t,
                        "records_kept": bool(kept), "summary": json.loads(summary or "{}")})
        return out

    def forget(self, name: str) -> None:
        rid = self.run_id(name)
        if rid is None:
            raise InputError("run", name, "is not in the store", "see `napkin ledger runs`")
        self.db.execute("DELETE FROM sources WHERE run_id = ?", (rid,))
        self.db.execute("DELETE FROM runs WHERE id = ?", (rid,))
        self.db.commit()


def _t_range(frames: Any) -> tuple[float | None, float | None]:
    lo = hi = None
    for f in frames or []:
        a, b = float(f["t_wall"].min()), float(f["t_wall"].max())
        lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
    return lo, hi


def _pack(frames: Any) -> bytes:
    """The records as n, then each column whole (little-endian), compressed a piece at a time."""
    import numpy as np

    z = zlib.compressobj(1)
    parts = [z.compress(frames.height.to_bytes(8, "little"))]
    for name, dtype in COLUMNS:
        for f in frames:
            parts.append(z.compress(np.ascontiguousarray(f[name].to_numpy(), dtype=dtype).tobytes()))
    parts.append(z.flush())
    return b"".join(parts)


def _unpack(blob: bytes) -> Any:
    import numpy as np
    import polars as pl

    from napkin.ledger.readers.lines import FrameStore

    raw = zlib.decompress(blob)
    n = int.from_bytes(raw[:8], "little")
    cols, pos = {}, 8
    for name, dtype in COLUMNS:
        arr = np.frombuffer(raw, dtype=dtype, count=n, offset=pos)
        cols[name] = arr
        pos += 8 * n
    return FrameStore(frames=[pl.DataFrame(cols)])
