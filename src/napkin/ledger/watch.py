"""Follow a growing step log: refresh the report, print a line, alert on drift.

Each refresh reads the log's complete lines (a half-written last line is left for the
next refresh, never an error; so is a whole-file log caught half-written, such as a
trainer_state.json being rewritten) and recomputes the report, vectorised. A refresh
prints one status line when the log has grown, an ``ALERT`` line when the latest day's
realised $/M crosses ``plan · (1 + alert)``, and an ``ok`` line when it comes back.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

from napkin import units
from napkin.ledger.readers import Unparseable
from napkin.ledger.records import NotEnoughRecords

LINE_FORMATS = ("csv", "jsonl", "megatron", "torchtitan", "lightning")


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

    def _content(self) -> bytes | None:
        with open(self.path, "rb") as fh:
            data = fh.read()
        if self.fmt in LINE_FORMATS:
            cut = data.rfind(b"\n")
            data = data[:cut + 1] if cut >= 0 else b""
        return data

    def poll(self) -> Update | None:
        from napkin.ledger.calculator import build_report, read_options
        from napkin.ledger.readers import read_log, sniff
        from napkin.ledger.records import combine

        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._wait(f"{self.path} does not exist yet")
        sig = (st.st_size, st.st_mtime)
        if sig == self.signature:
            return None
        self.signature = sig
        if st.st_size == 0:
            return self._wait(f"{self.path} is empty")
        opts = read_options(self.req)
        if self.fmt is None:
            self.fmt = opts.format if opts.format != "auto" else sniff(self.path)[0]
        opts.format = self.fmt
        try:
            data = self._content() if self.fmt not in ("parquet", "tensorboard") else None
            if data is not None and not data:
                return self._wait(f"{self.path} has no complete line yet")
            read = read_log(self.path, opts, content=data, name=self.path) if data is not None else \
                read_log(self.path, opts)
            report = build_report(self.req, [read], combine([read]))
        except NotEnoughRecords as exc:
            return self._wait(str(exc))
        except Unparseable as exc:  # a whole file (trainer_state.json) caught while being rewritten
            self.signature = None  # read it again next time even if it has not changed since
            return self._wait(f"{exc} (not complete yet? trying again)")
        self.report = report
        self.last_waiting = None
        return Update(report, self._lines(report))

    def _wait(self, why: str) -> Update | None:
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
        parts.append(f"goodput {units.fmt_auto(r['goodput']['time'], 'fraction')}")
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
