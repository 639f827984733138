"""Readers: every log format becomes one table of step records.

A step record says "step ``step`` had finished at wall time ``t_wall`` (seconds), with
``gpus_allocated`` GPUs paid for from then on, and the step held ``tokens`` tokens".
Every reader returns a :class:`LogRead`: a polars DataFrame with those four columns,
``line`` (where the record came from: a line number, a Parquet row or an event index)
and whatever else the log carried (loss, learning rate, ...), plus the lines it skipped
and why. Nothing is dropped silently: a malformed line is skipped, counted and named.

Formats: ``csv``, ``jsonl``, ``parquet`` (generic, columns named step, t_wall, gpus_allocated, tokens_per_step, or
``--map col=field``), ``hf`` (trainer_state.json), ``lightning`` (CSVLogger
metrics.csv), ``megatron`` and ``torchtitan`` (stdout lines), ``tensorboard``
(event files; optional extra). ``auto`` sniffs and says what it chose.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable

from napkin.errors import InputError, quote

FORMATS = ("auto", "csv", "jsonl", "parquet", "hf", "lightning", "megatron", "torchtitan", "tensorboard")
FIELDS = ("step", "t_wall", "gpus_allocated", "tokens")
MAX_SKIPPED_SHOWN = 20
EPOCH_MIN_S = 1e8  # t_wall at or above this is Unix seconds (1973 on); below it, seconds since start
EPOCH_MS_MIN = 1e11  # Unix milliseconds look like this
LINE_FORMATS = ("csv", "jsonl", "megatron", "torchtitan", "lightning")  # read a piece at a time


class Unparseable(InputError):
    """A whole-file log (trainer_state.json, Parquet) that does not parse. Finished, it is
    malformed; while a trainer rewrites it, it is half-written, and ``watch`` tries again."""


@dataclass
class ReadOptions:
    """What the command line says about a log that the log itself may not."""

    format: str = "auto"
    mapping: dict[str, str] = field(default_factory=dict)  # log column -> canonical field
    tokens_per_step: float | None = None
    gpus: int | None = None
    seq_len: float | None = None
    start: float | None = None  # Unix seconds
    end: float | None = None
    start_step: int | None = None  # the step at --start (default 0)
    tokens_cumulative: bool = False  # the tokens column counts tokens seen so far
    progress: Callable[[str, int, int], None] | None = None  # (label, bytes read, bytes in all)
    budget: Any = None  # lines.Budget shared by the logs of one report


@dataclass
class LogRead:
    """One log read into step records, with everything the reader had to say about it.

    ``frames`` holds the records frame by frame (a :class:`~napkin.ledger.readers.lines.FrameStore`,
    in memory or spilled to a temporary file); ``frame`` is all of them as one DataFrame, for a
    small log. Columns: line, step, t_wall, gpus_allocated, tokens, and what else the reader kept (a CSV
    without quotes keeps only the fields; JSON Lines and the others keep the log's other columns)."""

    frames: Any = None
    format: str = ""
    path: str = ""
    location: str = "line"  # what `line` numbers: line | row | entry | event
    skipped_count: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)  # the first few (line, reason)
    duplicates: int = 0  # lines the reader itself found repeated (a step line printed by every rank)
    time_absolute: bool = True
    notes: list[str] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    sniffed: str = ""  # why auto chose this format
    clock: str = ""  # the t_wall resolution when the log says it (dates without a time: a day)
    origin: tuple[int, float] | None = None  # (step, t_wall) placed at --start before the first record
    tokens_derived: bool = False  # the reader worked out tokens per step (not a column of the log)
    tokens_column: bool = False  # tokens per step are a column of the log, read as it is
    columns: list[str] | None = None  # every column of the log (where not all are read), for messages
    clock_per_record: bool = True  # False: times spread over the run, not read per record (no per-day figures)

    def skip(self, lines: list[int], reason: str, count: int | None = None) -> None:
        self.skipped_count += len(lines) if count is None else count
        room = MAX_SKIPPED_SHOWN - len(self.skipped)
        self.skipped.extend((int(n), reason) for n in lines[:max(room, 0)])

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    @property
    def frame(self) -> Any:
        df = None if self.frames is None else self.frames.concat()
        if df is None:
            import polars as pl

            return pl.DataFrame(schema={"line": pl.Int64, "step": pl.Int64, "t_wall": pl.Float64,
                                        "gpus_allocated": pl.Float64, "tokens": pl.Float64})
        return df

    @frame.setter
    def frame(self, df: Any) -> None:
        from napkin.ledger.readers.lines import FrameStore

        self.frames = FrameStore(frames=[df])

    @property
    def records(self) -> int:
        return 0 if self.frames is None else self.frames.height


@dataclass
class Source:
    """A log to read: a regular file (opened without blocking) or an upload's bytes."""

    path: str
    label: str
    content: bytes | None = None
    progress: Callable[[int], None] | None = None
    limit: int | None = None  # read no further than this byte (a growing log: up to its last complete line)

    @property
    def size(self) -> int:
        size = len(self.content) if self.content is not None else os.path.getsize(self.path)
        return size if self.limit is None else min(size, self.limit)

    def open(self) -> BinaryIO:
        import io

        from napkin.files import open_regular

        fh = io.BytesIO(self.content) if self.content is not None else open_regular(self.path, "log")
        return fh if self.limit is None else _Upto(fh, self.limit)  # type: ignore[return-value]

    def head(self, n: int = 0) -> bytes:
        n = n or SNIFF_BYTES
        if self.content is not None:
            return self.content[:n]
        with self.open() as fh:
            return fh.read(n)

    def chunks(self) -> Any:
        """The log as runs of whole lines (see :class:`~napkin.ledger.readers.lines.LineChunks`)."""
        from napkin.ledger.readers.lines import LineChunks, cr_only

        fh = self.open()
        return fh, LineChunks(fh, cr_only=cr_only(self.head()), progress=self.progress)

    def read_bounded(self, max_bytes: int) -> bytes:
        if self.content is not None:
            if len(self.content) > max_bytes:
                raise InputError("log", self.label, f"is larger than napkin reads for this format ({max_bytes:,} "
                                 "bytes)", "give the log it should be; a larger one is not one of these")
            return self.content
        from napkin.files import read_bounded

        return read_bounded(self.path, "log", max_bytes)


class _Upto:
    """A binary file read no further than ``limit`` bytes (the part of a growing log already whole)."""

    def __init__(self, fh: Any, limit: int):
        self.fh, self.limit = fh, limit

    def read(self, n: int = -1) -> bytes:
        left = self.limit - self.fh.tell()
        return self.fh.read(left if n < 0 else min(n, left)) if left > 0 else b""

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.fh.seek(offset, whence)

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.fh.tell()

    def fileno(self) -> int:
        return self.fh.fileno()

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> _Upto:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def read_log(path: str, opts: ReadOptions | None = None, *, content: bytes | None = None,
             name: str | None = None, limit: int | None = None) -> LogRead:
    """Read ``path`` (or ``content``, an uploaded log named ``name``) into step records; ``limit``: read no
    further than this byte."""
    from napkin.files import regular_file

    opts = opts or ReadOptions()
    if opts.format not in FORMATS:
        raise InputError("format", opts.format, "must be one of " + ", ".join(FORMATS))
    label = name or path
    if content is None:
        if not os.path.lexists(path):
            raise InputError("log", path, "does not exist", "give the path of a step log")
        if os.path.isdir(path):
            path = _resolve_dir(path, opts.format)
            label = path
        if not os.path.isdir(path):
            regular_file(path, "log")
    progress = None
    if opts.progress is not None:
        size = len(content) if content is not None else (os.path.getsize(path) if not os.path.isdir(path) else 0)
        progress = (lambda done, lab=label, total=size: opts.progress(lab, done, total)) if size else None
    src = Source(path, label, content, progress, limit)
    if not os.path.isdir(path) or content is not None:
        _check_not_empty(src)
    fmt, why = (opts.format, "") if opts.format != "auto" else sniff(path, content, name, src)
    import importlib

    module, name = {"csv": ("csv", "read"), "jsonl": ("jsonl", "read"), "parquet": ("table", "read_parquet"),
                    "hf": ("hf", "read"), "lightning": ("lightning", "read"), "megatron": ("megatron", "read"),
                    "torchtitan": ("torchtitan", "read"), "tensorboard": ("tensorboard", "read")}[fmt]
    reader = getattr(importlib.import_module(f"napkin.ledger.readers.{module}"), name)
    if fmt == "tensorboard" and content is not None:
        raise InputError("format", "tensorboard", "cannot be read from an upload", "give the path of the event file")
    out = reader(src, opts, label)
    out.sniffed = why
    if why:
        out.notes.insert(0, f"format: {fmt} (auto: {why})")
    return out


def _check_not_empty(src: Source) -> None:
    """An empty log (or one of blank lines) says so, whatever its format."""
    if src.size > SNIFF_BYTES:
        return
    content = src.head()
    if not content.strip():
        from napkin.ledger.records import NotEnoughRecords

        raise NotEnoughRecords("log", src.label, "is empty" if not content else "is empty (blank lines only)",
                               "give a log with step records; `napkin ledger watch` waits for a run still "
                               "starting")


def check_delimiter(label: str, first_line: str) -> None:
    """A header split by ';' or tabs, not commas: say so (it would read as one column)."""
    if "," in first_line:
        return
    for sep, said in ((";", "';'"), ("\t", "a tab")):
        if len(first_line.split(sep)) > 1:
            raise InputError("delimiter", first_line.strip()[:80].replace("\t", "\\t"), f"is {said} in {quote(label)}, not a comma",
                             "write the log comma-separated: tr " + ("';' ','" if sep == ";" else "'\\t' ','")
                             + f" < {quote(label)} > steps.csv")


def _resolve_dir(path: str, fmt: str) -> str:
    """A folder: a Lightning log dir (metrics.csv), an HF checkpoint (trainer_state.json), or TensorBoard."""
    for fname in ("trainer_state.json", "metrics.csv"):
        if os.path.exists(os.path.join(path, fname)) and fmt in ("auto", "hf" if fname.endswith("json") else "lightning"):
            return os.path.join(path, fname)
    events = sorted(f for f in os.listdir(path) if "tfevents" in f)
    if events:
        from napkin.files import regular_file

        for f in events:  # EventAccumulator reads each: a FIFO among them would block it
            regular_file(os.path.join(path, f), "log")
        if fmt not in ("auto", "tensorboard"):
            raise InputError("format", fmt, f"cannot read {quote(path)}, a folder of TensorBoard event files",
                             "give --format tensorboard, or auto")
        return path
    if fmt not in ("auto", "hf", "lightning") and any(os.path.exists(os.path.join(path, f))
                                                       for f in ("trainer_state.json", "metrics.csv")):
        raise InputError("format", fmt, f"cannot read the folder {quote(path)}",
                         "give the log file inside it, or --format auto")
    raise InputError("log", path, "is a folder with no trainer_state.json, metrics.csv or TensorBoard event file",
                     "give the log file itself")


SNIFF_BYTES = 65536  # the head that decides most logs
SCAN_BYTES = 64 * 1024 * 1024  # how far to look for a training line behind a long preamble
MEGATRON_RX = rb"iteration\s+\d+\s*/\s*\d+\s*\|"
TORCHTITAN_RX = rb"step:\s*\d+\s+.*loss:\s*[-\d.]"


def sniff(path: str, content: bytes | None = None, name: str | None = None,
          src: Source | None = None) -> tuple[str, str]:
    """(format, why) from the file name and its first bytes (further in for a training stdout
    whose preamble is long: Megatron-LM prints every argument before its first iteration)."""
    import re

    src = src or Source(path, name or path, content)
    base = os.path.basename(name or path).lower()
    if content is None and os.path.isdir(path):
        return "tensorboard", "a folder of TensorBoard event files"
    if "tfevents" in base:
        return "tensorboard", "the file name is a TensorBoard event file"
    if base.endswith((".parquet", ".pq")):
        return "parquet", "the file name ends in .parquet"
    head = src.head()
    if head.startswith(b"PAR1"):
        return "parquet", "the file starts with the Parquet magic bytes"
    from napkin.ledger.readers.lines import cr_only

    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if cr_only(head):
        text = text.replace("\r", "\n")
    stripped = text.lstrip()
    if base == "trainer_state.json" or (stripped.startswith("{") and '"log_history"' in text):
        return "hf", "a JSON object with log_history (Hugging Face trainer_state.json)"
    if base.endswith((".jsonl", ".ndjson")) or (stripped.startswith("{") and "\n" in stripped):
        return "jsonl", "lines of JSON objects"
    lines_rx = ((MEGATRON_RX, "megatron", "lines match 'iteration N/ M |' (Megatron-LM)"),
                (TORCHTITAN_RX, "torchtitan", "lines match 'step: N  loss: X' (torchtitan)"))
    for rx, fmt, why in lines_rx:
        if re.search(rx, head):
            return fmt, why
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    check_delimiter(os.path.basename(name or path) if content is not None else path, first)
    cols = [c.strip().strip('"') for c in first.split(",")]
    if "step" in cols and "epoch" in cols and "t_wall" not in cols:
        return "lightning", "a CSV header with epoch and step (Lightning CSVLogger metrics.csv)"
    if len(cols) > 1 and _same_commas(lines[:50], complete=len(head) < SNIFF_BYTES):
        return "csv", "a comma-separated header"
    if len(head) == SNIFF_BYTES:  # not a table: a training stdout whose preamble fills the head?
        for rx, fmt, why in lines_rx:
            if _found_further(src, rx):
                return fmt, why + " after a preamble of over 64 KB"
    raise InputError("format", "auto", "could not tell the log's format",
                     "give --format csv|jsonl|parquet|hf|lightning|megatron|torchtitan|tensorboard")


def _found_further(src: Source, rx: bytes) -> bool:
    """Whether a line matching ``rx`` starts within the first SCAN_BYTES (read in chunks)."""
    import re

    if src.content is not None:
        return re.search(rx, src.content[:SCAN_BYTES]) is not None
    with src.open() as fh:
        tail = b""
        for _ in range(SCAN_BYTES // (16 * SNIFF_BYTES)):
            chunk = fh.read(16 * SNIFF_BYTES)
            if not chunk:
                return False
            if re.search(rx, tail + chunk):
                return True
            tail = chunk[-4096:]
    return False


def _same_commas(lines: list[str], *, complete: bool) -> bool:
    """A CSV's first lines: the header's comma count on at least half the data lines (quoted commas
    aside; a stray line or two of a log does not make it another format)."""
    import re

    if not complete and len(lines) > 1:
        lines = lines[:-1]  # the head may end inside a line
    counts = [len(re.sub(r'"(?:[^"]|"")*"', "", ln).split(",")) for ln in lines]
    if len(counts) < 2:
        return True
    return sum(c == counts[0] for c in counts[1:]) >= 0.5 * (len(counts) - 1)
