"""`napkin validate` as a chart: predicted against measured on log axes, with a ±10% band.

Each point is one published measurement; its colour is the kind of figure (throughput, TPOT,
TTFT, latency), its shape the accelerator family. Points on the diagonal are exact; the grey
band holds predictions within 10% of the measurement. Throughputs (tokens/s) and times
(seconds) share the axes: they sit in different decades.
"""

from __future__ import annotations

from typing import Any

from napkin.charts import SCHEMA

BAND = 0.10


def validate_rows(report: Any) -> list[dict]:
    d = report.to_dict() if hasattr(report, "to_dict") else dict(report)
    rows = []
    for kind in ("serving", "training"):
        for p in d.get(kind) or []:
            rows.append({"id": p["id"], "kind": kind, "group": p["group"], "family": p.get("family", ""),
                         "measured": p["measured"], "predicted": p["predicted"],
                         "ratio": p["predicted"] / p["measured"], "error": p["error"]})
    return rows


def validate_chart(report: Any) -> dict:
    """Predicted against measured per point, both on log axes, with the 1:1 line and the ±10% band."""
    rows = validate_rows(report)
    lo = min((r["measured"] for r in rows), default=1e-3) / 2
    hi = max((r["measured"] for r in rows), default=1e5) * 2
    steps = 60
    band = [{"x": lo * (hi / lo) ** (i / steps)} for i in range(steps + 1)]
    for b in band:
        b.update(low=b["x"] * (1 - BAND), high=b["x"] * (1 + BAND))
    log = {"type": "log"}
    return {
        "$schema": SCHEMA,
        "title": {"text": "napkin's predictions against published measurements",
                  "subtitle": "each point one measured run (tokens/s or seconds); grey band: within ±10%; "
                              "out of sample"},
        "width": 480, "height": 480,
        "layer": [
            {"data": {"values": band}, "mark": {"type": "area", "color": "#dddddd", "opacity": 0.7},
             "encoding": {"x": {"field": "x", "type": "quantitative", "scale": log},
                          "y": {"field": "low", "type": "quantitative", "scale": log},
                          "y2": {"field": "high"}}},
            {"data": {"values": band}, "mark": {"type": "line", "color": "#888888", "strokeDash": [4, 3]},
             "encoding": {"x": {"field": "x", "type": "quantitative", "scale": log},
                          "y": {"field": "x", "type": "quantitative", "scale": log}}},
            {"data": {"values": rows}, "mark": {"type": "point", "filled": True, "size": 60},
             "encoding": {
                 "x": {"field": "measured", "type": "quantitative", "scale": log, "title": "measured"},
                 "y": {"field": "predicted", "type": "quantitative", "scale": log, "title": "predicted"},
                 "color": {"field": "group", "type": "nominal", "title": "figure"},
                 "shape": {"field": "family", "type": "nominal", "title": "accelerator"},
                 "tooltip": [{"field": "id"}, {"field": "measured"}, {"field": "predicted"},
                             {"field": "error", "format": "+.1%"}]}},
        ],
    }
