"""A log read in bounded pieces: whole lines at a time, and frames that spill to disk.

:class:`LineChunks` reads a binary stream ``CHUNK_BYTES`` at a time and hands out runs of
whole lines, so a 1 GB log never sits in memory at once. A line longer than
``MAX_LINE_BYTES`` is no log line (a binary file, a log with no line ends): it is passed
over without being held, and reported as one skipped line. A log whose lines end in CR
alone (classic Mac OS) is read with CR as the line end.

:class:`FrameStore` keeps the records read so far, frame by frame, in memory up to a byte
budget shared by the logs of one report, and past it in an anonymous temporary file (gone
when the process ends), read back one frame at a time.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO, Callable, Iterator

from napkin.units import MEBI

CHUNK_BYTES = int(8 * MEBI)  # a piece of the log read at once (4 to 16 MiB read fastest on a 2-core machine)
MAX_LINE_BYTES = int(16 * MEBI)  # longer is not a log line
SPILL_AFTER_BYTES = int(160 * MEBI)  # records held in memory before the rest go to a temporary file
TAIL_BYTES = 65536  # the end of a piece looked at first, for its last line end
LONG = object()  # marks an over-long line in the chunk stream


class LineChunks:
    """Iterate ``fh`` as (bytes of whole lines, "\\n"-separated) or ``LONG`` for a line too long to hold."""

    def __init__(self, fh: BinaryIO, *, cr_only: bool = False, size: int | None = None,
                 max_line: int | None = None, progress: Callable[[int], None] | None = None):
        self.fh, self.cr_only, self.progress = fh, cr_only, progress
        self.size, self.max_line = size or CHUNK_BYTES, max_line or MAX_LINE_BYTES
        self.done = 0

    def _read(self, n: int = 0) -> bytes:
        buf = self.fh.read(n or self.size)
        self.done += len(buf)
        if self.progress is not None and buf:
            self.progress(self.done)
        return buf.replace(b"\r", b"\n") if self.cr_only else buf

    def _read_whole_lines(self) -> bytes:
        """The next piece of a seekable stream, ending at the last line end in its last ``TAIL_BYTES``: that
        window is read first, so the piece is read to its size and never cut (a cut copies the piece, and a
        fresh 8 MiB copy costs 4-5x its read). A piece with no line end in that window is read whole."""
        at = self.fh.tell()
        self.fh.seek(self.size - TAIL_BYTES, 1)
        tail = self.fh.read(TAIL_BYTES)
        self.fh.seek(at)
        end = tail.rfind(b"\n")
        if len(tail) < TAIL_BYTES or end < 0:  # the stream ends in the window, or a long line: read it all
            return self._read()
        return self._read(self.size - TAIL_BYTES + end + 1)

    def __iter__(self) -> Iterator[Any]:
        seekable = self.fh.seekable()
        rest = b""
        while True:
            buf = self._read_whole_lines() if seekable and not rest and self.size > TAIL_BYTES else self._read()
            if not buf:
                if rest:
                    yield rest
                return
            data = rest + buf if rest else buf
            if rest and data.find(b"\n") > self.max_line:  # the line held so far ends past the bound
                yield LONG
                data = data[data.find(b"\n") + 1:]
                rest = b""
                if not data:
                    continue
            cut = data.rfind(b"\n") + 1
            if cut == len(data):
                rest = b""
                yield data
            elif cut and seekable and not rest:  # read the part line again with the next piece: no copy kept
                self.fh.seek(cut - len(data), 1)
                self.done -= len(data) - cut
                yield data[:cut]
            elif cut:
                rest = data[cut:]
                yield data[:cut]
            elif len(data) <= self.max_line:
                rest = data
            else:
                yield LONG  # pass over the rest of this line without holding it
                rest = b""
                while True:
                    buf = self._read()
                    if not buf:
                        return
                    cut = buf.find(b"\n") + 1
                    if cut:
                        rest = buf[cut:]
                        break


def cr_only(head: bytes) -> bool:
    """Whether a log's first bytes end their lines in CR alone (no LF anywhere in them)."""
    return b"\r" in head and b"\n" not in head.rstrip(b"\r")


def bad_utf8_lines(data: bytes) -> list[int]:
    """0-based indexes of the lines of ``data`` that are not UTF-8 text (none in the common, ASCII case)."""
    if data.isascii():
        return []
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        pass
    import re

    text = data.decode("utf-8", errors="surrogateescape")  # each invalid byte becomes a lone surrogate
    out, line, pos = [], 0, 0
    for m in re.finditer("[\udc80-\udcff]", text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return out


class Budget:
    """Bytes of records the stores of one report may hold in memory."""

    def __init__(self, limit: int | None = None):
        self.limit = SPILL_AFTER_BYTES if limit is None else limit
        self.used = 0


class FrameStore:
    """Frames in log order: in memory until the budget is spent, then in a temporary file."""

    def __init__(self, budget: Budget | None = None, frames: list[Any] | None = None, watch: Any = None):
        self.budget = budget or Budget()
        self.parts: list[Any] = []  # a DataFrame, or (offset, length) in the spill file
        self.heights: list[int] = []
        self.spill: BinaryIO | None = None
        self.watch = watch  # called with each frame kept (napkin.ledger.early.EarlyPass)
        for f in frames or []:
            self.append(f)

    def append(self, df: Any) -> None:
        if df.height == 0:
            return
        size = df.estimated_size()
        if self.spill is None and self.budget.used + size <= self.budget.limit:
            self.budget.used += size
            self.parts.append(df)
        else:
            import tempfile

            if self.spill is None:
                self.spill = tempfile.TemporaryFile(prefix="napkin-ledger-")
            self.spill.seek(0, io.SEEK_END)
            at = self.spill.tell()
            df.write_ipc(self.spill, compression="uncompressed")
            self.parts.append((at, self.spill.tell() - at))
        self.heights.append(df.height)
        if self.watch is not None:
            self.watch(df)

    def _load(self, i: int) -> Any:
        import polars as pl

        part = self.parts[i]
        if not isinstance(part, tuple):
            return part
        assert self.spill is not None
        self.spill.seek(part[0])
        return pl.read_ipc(io.BytesIO(self.spill.read(part[1])))

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self.parts)):
            yield self._load(i)

    def __len__(self) -> int:
        return len(self.parts)

    @property
    def height(self) -> int:
        return sum(self.heights)

    def first(self) -> Any | None:
        return next(iter(self), None)

    def last(self) -> Any | None:
        return self._load(len(self.parts) - 1) if self.parts else None

    def concat(self) -> Any:
        """Every frame as one DataFrame (for small logs, tests and the store of runs)."""
        import polars as pl

        frames = list(self)
        if not frames:
            return None
        return frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")

    def close(self) -> None:
        if self.spill is not None:
            self.spill.close()
            self.spill = None
