"""The ledger's figures as Prometheus metrics, for an existing Grafana board.

``napkin ledger watch LOG --prometheus 127.0.0.1:9400`` serves ``/metrics`` with gauges
labelled by run: ``napkin_realised_usd_per_million_tokens``, ``napkin_planned_usd_per_million_tokens``,
``napkin_drift_ratio`` (window="run" and window="day", the latest day), ``napkin_drift_alert``,
``napkin_goodput`` (kind="tokens" and kind="time"), ``napkin_mfu``, ``napkin_realised_usd``,
``napkin_gpu_hours_allocated``, ``napkin_advanced_tokens``, ``napkin_processed_tokens``,
``napkin_restarts``, ``napkin_skipped_lines`` and ``napkin_last_step``.
"""

from __future__ import annotations

import threading
from typing import Any

from napkin.errors import InputError


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    try:
        p = int(port)
    except ValueError:
        raise InputError("prometheus", text, "must be HOST:PORT", "e.g. 127.0.0.1:9400") from None
    if not 0 <= p < 65536:
        raise InputError("prometheus", text, "has a port out of range", "e.g. 127.0.0.1:9400")
    return host or "127.0.0.1", p


def metrics_of(report: Any) -> list[tuple[str, str, dict[str, str], float]]:
    """(name, help, labels, value) for each figure the report has."""
    r = report
    out: list[tuple[str, str, dict[str, str], float]] = []

    def add(name: str, help_: str, value: Any, **labels: str) -> None:
        if value is not None:
            out.append((name, help_, labels, float(value)))

    add("napkin_realised_usd_per_million_tokens", "Realised marginal $ per million advanced tokens",
        r.get("usd_per_million_advanced_tokens"), tokens="advanced")
    add("napkin_realised_usd_per_million_tokens", "Realised marginal $ per million advanced tokens",
        r.get("usd_per_million_processed_tokens"), tokens="processed")
    add("napkin_planned_usd_per_million_tokens", "Planned marginal $ per million advanced tokens",
        r.get("planned_usd_per_million_tokens"))
    add("napkin_drift_ratio", "Realised over planned $ per million tokens (1 = on plan)", r.get("drift_ratio"),
        window="run")
    days = r.get("per_day") or []
    if days and "drift_ratio" in days[-1]:
        add("napkin_drift_ratio", "Realised over planned $ per million tokens (1 = on plan)",
            days[-1]["drift_ratio"], window="day")
        add("napkin_drift_alert", "1 when the latest day drifts above the alert threshold",
            1.0 if days[-1].get("alert") else 0.0)
    good = r.get("goodput") or {}
    add("napkin_goodput", "Advanced over processed tokens, productive over wall time", good.get("tokens"), kind="tokens")
    add("napkin_goodput", "Advanced over processed tokens, productive over wall time", good.get("time"), kind="time")
    add("napkin_mfu", "Realised MFU over allocated GPU time (6N model FLOPs, dense peak)", r.get("mfu_realised"))
    add("napkin_realised_usd", "Realised marginal spend in USD", r.get("realised_usd"))
    add("napkin_gpu_hours_allocated", "Allocated GPU-hours", r.get("gpu_hours_allocated"))
    add("napkin_advanced_tokens", "Tokens of forward progress", r.get("advanced_tokens"))
    add("napkin_processed_tokens", "Tokens of every step run", r.get("processed_tokens"))
    add("napkin_restarts", "Rollbacks and gaps", (r.get("restarts") or {}).get("count"))
    add("napkin_skipped_lines", "Malformed log lines skipped", (r.get("skipped_lines") or {}).get("count"))
    add("napkin_last_step", "Last step in the log", r.get("last_step"))
    return out


class Exporter:
    """A /metrics endpoint serving the latest report's figures."""

    def __init__(self, address: str, run: str):
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError:
            raise InputError("prometheus", address, "needs prometheus-client",
                             "pip install 'llm-napkin[prometheus]'") from None

        host, port = parse_address(address)
        self.run = run
        self._lock = threading.Lock()
        self._metrics: list[tuple[str, str, dict[str, str], float]] = []
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        try:
            self.server, self.thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise InputError("prometheus", address, f"cannot be served ({exc.strerror})",
                             "choose a free port") from None
        self.port = self.server.server_port

    def update(self, report: Any) -> None:
        with self._lock:
            self._metrics = metrics_of(report)

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        with self._lock:
            metrics = list(self._metrics)
        families: dict[str, Any] = {}
        for name, help_, labels, value in metrics:
            keys = ["run", *sorted(labels)]
            if name not in families:  # each name has one label set
                families[name] = GaugeMetricFamily(name, help_, labels=keys)
            fam = families[name]
            fam.add_metric([self.run, *[labels[k] for k in sorted(labels)]], value)
        yield from families.values()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
