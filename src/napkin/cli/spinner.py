"""A spinner on stderr while a long calculation runs: what it is doing, and for how long.

Shown only where a person is watching (stderr a terminal, and not ``--json``), and only once
the work has taken longer than ``DELAY_S``: a calculation that answers at once draws nothing.
The line is cleared when the work ends, so the answer prints on a clean line.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, TextIO

DELAY_S = 0.5  # quicker work shows nothing
EVERY_S = 0.1
FRAMES = "|/-\\"


class Spinner:
    """``with Spinner("plan serve: searching configurations", stream):`` around the work."""

    def __init__(self, text: str, stream: TextIO, *, delay_s: float = DELAY_S, every_s: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic):
        self.text, self.stream, self.delay_s, self.every_s, self.clock = text, stream, delay_s, every_s, clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.drawn = 0

    def _run(self) -> None:
        start = self.clock()
        if self._stop.wait(self.delay_s):
            return
        i = 0
        while not self._stop.is_set():
            self.stream.write(f"\r\x1b[2K{FRAMES[i % len(FRAMES)]} {self.text} ({self.clock() - start:.1f} s)")
            self.stream.flush()
            self.drawn += 1
            i += 1
            self._stop.wait(self.every_s)

    def __enter__(self) -> "Spinner":
        self._thread = threading.Thread(target=self._run, name="napkin-spinner", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def spinning(text: str | None, *, as_json: bool, stream: Any = None) -> Any:
    """A Spinner on stderr when a person is watching it (a terminal, not --json), else a no-op context."""
    import contextlib

    stream = sys.stderr if stream is None else stream
    if text is None or as_json:
        return contextlib.nullcontext()
    try:
        watching = stream.isatty()
    except (AttributeError, ValueError):
        watching = False
    return Spinner(text, stream) if watching else contextlib.nullcontext()
