"""Progress on a terminal while a big log is read: one line on stderr, rewritten in place.

Shown only where a person is watching: when stderr is a terminal and the output is not
JSON (``napkin ledger report --json`` and anything piped stays clean). Logs under
``SHOW_FROM_BYTES`` are read faster than a line could be read, so they show nothing. The
line is cleared when the report is ready.
"""

from __future__ import annotations

import time
from typing import Any, Callable, TextIO

from napkin.errors import quote

SHOW_FROM_BYTES = 32_000_000  # a log smaller than this is read in well under a second
EVERY_S = 0.1  # at most ten redraws a second


class Progress:
    """``update(label, done, total)`` while reading; ``stage(text)`` for the work after; ``close()`` at the end."""

    def __init__(self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic):
        self.stream, self.clock = stream, clock
        self.last = float("-inf")
        self.shown = False

    def update(self, label: str, done: int, total: int) -> None:
        if total < SHOW_FROM_BYTES:
            return
        now = self.clock()
        if now - self.last < EVERY_S and done < total:
            return
        self.last = now
        from napkin import units

        width = 30
        filled = int(width * done / total) if total else width
        self._draw(f"reading {quote(label)} [{'#' * filled}{'.' * (width - filled)}] {done / total:.0%} "
                   f"({units.format(float(done), 'bytes')} of {units.format(float(total), 'bytes')})")

    def stage(self, text: str) -> None:
        if self.shown:
            self._draw(text)

    def _draw(self, text: str) -> None:
        self.stream.write("\r\x1b[2K" + text)
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False


def for_terminal(stream: Any, *, as_json: bool) -> Progress | None:
    """A Progress on ``stream`` when a person is watching it (a terminal, and not --json), else None."""
    if as_json:
        return None
    try:
        return Progress(stream) if stream.isatty() else None
    except (AttributeError, ValueError):  # a closed or odd stream
        return None
