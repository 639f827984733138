"""Follow a growing step log: refresh the report, print a line, alert on drift.

Each refresh reads the log's complete lines (a half-written last line is left for the
next refresh, never an error; so is a whole-file log caught half-written, such as a
trainer_state.json being rewritten) and recomputes the report, vectorised. A refresh
prints one status line when the log has grown, an ``ALERT`` line when the latest day's
realised $/M crosses ``plan · (1 + alert)``, and an ``ok`` line when it comes back.

A restart that overwrites the log (``python train.py > train.log``) would silently drop
the cost read so far. So a log found replaced (a line log smaller than at the last read,
another file at the path, or its start changed; any log whose first record changed) keeps
the records read before as an earlier part of the run, joined as separate restart logs
are, and a ``restart:`` line and a report note say so. Records the old file gained after
the last refresh were never read and are not in the cost (the line says when it was read).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

from napkin import units
from napkin.errors import InputError, quote
from napkin.ledger.readers import Unparseable
from napkin.ledger.records import NotEnoughRecords

LINE_FORMATS = ("csv", "jsonl", "megatron", "torchtitan", "lightning")
HEAD_BYTES = 4096  # the start of a line log, which appending never changes


@dataclass
class Update:
    report: Any | None
    lines: list[str]
    waiting: str | None = None


class Watcher:
    """Polls one log; ``poll()`` returns an Update when the log changed, else None."""

    def __init__(self, path: str, req: Any):
        self.path = path
        self.req = req
        self.signature: tuple[int, float] | None = None
        self.alerting: dict[str, bool] = {}
        self.fmt: str | None = None
        self.report: Any | None = None
        self.last_waiting: str | None = None
        self.last_read: Any | None = None  # the log as last read (the current part of the run)
        self.earlier: list[Any] = []  # parts read before the log was overwritten by a restart
        self.seen: tuple[int, int, bytes] | None = None  # (size, inode, head) of the last read line log
        self.restart_lines: list[str] = []  # said with the next update

    def _whole_lines(self) -> tuple[int, bytes]:
        """(bytes up to the last line end, the first HEAD_BYTES) of a line log: its half-written last line waits.
        Read from the end back, a piece at a time: never the whole log in memory."""
        from napkin.files import open_regular

        with open_regular(self.path, "log") as fh:
            head = fh.read(HEAD_BYTES)
            pos = os.fstat(fh.fileno()).st_size
            while pos > 0:
                step = min(65536, pos)
                fh.seek(pos - step)
                i = fh.read(step).rfind(b"\n")
                if i >= 0:
                    cut = pos - step + i + 1
                    return cut, head[:cut]
                pos -= step
        return 0, b""

    def poll(self) -> Update | None:
        from napkin.ledger.inputs import read_options
        from napkin.ledger.report import build_report
        from napkin.ledger.readers import read_log, sniff
        from napkin.ledger.records import combine

        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._wait(f"{quote(self.path)} does not exist yet")
        sig = (st.st_size, st.st_mtime, st.st_ino)
        if sig == self.signature:
            return None
        self.signature = sig
        if self.seen is not None and self.fmt in LINE_FORMATS:
            size, ino, _ = self.seen
            if st.st_size < size:
                self._restarted(f"it shrank from {size:,} to {st.st_size:,} bytes")
            elif st.st_ino != ino:
                self._restarted("another file is at its path")
        if st.st_size == 0:
            return self._wait(f"{quote(self.path)} is empty")
        opts = read_options(self.req)
        if self.fmt is None:
            self.fmt = opts.format if opts.format != "auto" else sniff(self.path)[0]
        opts.format = self.fmt
        try:
            cut, head = self._whole_lines() if self.fmt in LINE_FORMATS else (None, b"")
            if cut is not None and self.seen is not None and head[:len(self.seen[2])] != self.seen[2]:
                self._restarted("its first lines changed")
            if cut == 0:
                return self._wait(f"{quote(self.path)} has no complete line yet")
            read = read_log(self.path, opts, limit=cut)
            if self.last_read is not None and _first(read) != _first(self.last_read):
                self._restarted("its first record changed")
            reads = [*self.earlier, read]
            try:
                report = build_report(self.req, reads, combine(reads, skip_bad_clock=self.req.skip_bad_clock))
            except NotEnoughRecords:
                raise
            except InputError as exc:
                if not self.earlier:
                    raise
                # the parts do not join (their times overlap): say so loudly, report the log as it is now
                report = build_report(self.req, [read], combine([read], skip_bad_clock=self.req.skip_bad_clock))
                self.restart_lines.append(f"WARNING: the earlier part(s) of the run cannot be joined to {quote(self.path)} "
                                          f"({exc}): reporting the file as it is now, without their cost")
                self.earlier = []
        except NotEnoughRecords as exc:
            return self._wait(str(exc))
        except Unparseable as exc:  # a whole file (trainer_state.json) caught while being rewritten
            self.signature = None  # read it again next time even if it has not changed since
            return self._wait(f"{exc} (not complete yet? trying again)")
        if cut is not None:
            self.seen = (cut, st.st_ino, head)
        self.last_read = read
        if self.earlier:
            report.note(f"{quote(self.path)} was overwritten by {len(self.earlier)} restart(s): the records read before "
                        "each are kept as an earlier part of the run (records written after the last refresh "
                        "before it were not read)")
        self.report = report
        self.last_waiting = None
        lines, self.restart_lines = [*self.restart_lines, *self._lines(report)], []
        return Update(report, lines)

    def _restarted(self, why: str) -> None:
        """The log was replaced: keep what was read of it as an earlier part of the run."""
        self.seen = None
        prev, self.last_read = self.last_read, None
        if prev is None or prev.frame is None or prev.frame.height == 0:
            return
        k = len(self.earlier) + 1
        f = prev.frame
        self.earlier.append(dataclasses.replace(prev, path=f"{self.path} (part {k}, overwritten)"))
        cost = "" if self.report is None else f"; {units.fmt_auto(self.report['realised_usd'], 'usd')} so far"
        self.restart_lines.append(
            f"restart: {quote(self.path)} was overwritten ({why}): the {f.height:,} records read before (steps "
            f"{int(f['step'][0]):,} to {int(f['step'][-1]):,}{cost}) are kept as part {k} of the run")

    def _wait(self, why: str) -> Update | None:
        if self.restart_lines:
            lines, self.restart_lines = [*self.restart_lines, f"waiting: {why}"], []
            self.last_waiting = why
            return Update(None, lines, waiting=why)
        if why == self.last_waiting:
            return None
        self.last_waiting = why
        return Update(None, [f"waiting: {why}"], waiting=why)

    def _lines(self, r: Any) -> list[str]:
        now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        per_m = r["usd_per_million_advanced_tokens"]
        parts = [f"[{now}] step {r['last_step']:,}", f"{units.fmt_auto(per_m, 'usd_per_million')} adv"]
        plan = r.get("planned_usd_per_million_tokens")
        if plan is not None:
            parts[-1] += f" (plan {units.fmt_auto(plan, 'usd_per_million')}, {r['drift_ratio'] - 1:+.1%})"
        parts.append(f"time goodput {units.fmt_auto(r['goodput']['time'], 'fraction')}")
        if r.get("mfu_realised") is not None:
            parts.append(f"mfu {units.fmt_auto(r['mfu_realised'], 'fraction')}")
        parts.append(f"{units.fmt_auto(r['realised_usd'], 'usd')} so far")
        lines = ["  ".join(parts)]
        if plan is not None:
            threshold = r.get("drift_alert_threshold", self.req.alert)
            for day in r["per_day"][-2:]:
                was = self.alerting.get(day["date"], False)
                now_alert = bool(day.get("alert"))
                ratio = day.get("drift_ratio")
                if now_alert and not was:
                    what = ("paid GPU time with no forward progress" if ratio is None else
                            f"realised {units.fmt_auto(day['usd_per_million_advanced_tokens'], 'usd_per_million')} "
                            f"is {ratio - 1:.1%} above plan ({units.fmt_auto(plan, 'usd_per_million')})")
                    lines.append(f"ALERT {day['date']}: {what}")
                elif was and not now_alert:
                    lines.append(f"ok {day['date']}: back within {threshold:.0%} of plan")
                self.alerting[day["date"]] = now_alert
        return lines


def watch(path: str, req: Any, *, interval_s: float = 10.0, max_refreshes: int | None = None,
          echo: Callable[[str], None] = print, on_update: Callable[[Any], None] | None = None,
          sleep: Callable[[float], None] = time.sleep) -> Watcher:
    """Poll ``path`` every ``interval_s`` until interrupted (or ``max_refreshes`` polls)."""
    w = Watcher(path, req)
    n = 0
    while True:
        update = w.poll()
        if update is not None:
            for line in update.lines:
                echo(line)
            if update.report is not None and on_update is not None:
                on_update(update.report)
        n += 1
        if max_refreshes is not None and n >= max_refreshes:
            return w
        sleep(interval_s)


def _first(read: Any) -> tuple[float, float] | None:
    """The (step, t_wall) of a read's first record: appending to a log never changes it."""
    f = read.frame
    if f is None or f.height == 0:
        return None
    return (float(f["step"][0]), float(f["t_wall"][0]))
