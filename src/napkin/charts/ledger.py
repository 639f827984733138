"""Realised $/M advanced tokens per day against the plan (and the alert threshold)."""

from __future__ import annotations

from napkin.charts import SCHEMA

from typing import Any


def per_day_chart(days: list[dict[str, Any]], planned: float | None, *, alert: float = 0.10) -> dict:
    """A Vega-Lite spec: one bar per day (red when it alerts), the plan and plan · (1 + alert) as rules."""
    values = [{"date": d["date"], "usd_per_million": d.get("usd_per_million_advanced_tokens"),
               "alert": bool(d.get("alert")), "gpu_hours": d.get("gpu_hours"),
               "goodput_time": d.get("goodput_time")}
              for d in days if d.get("usd_per_million_advanced_tokens") is not None]
    bars = {
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": {"field": "date", "type": "ordinal", "title": "day", "sort": None},
            "y": {"field": "usd_per_million", "type": "quantitative", "title": "realised $ per million advanced tokens"},
            "color": {"field": "alert", "type": "nominal", "title": "drift alert",
                      "scale": {"domain": [False, True], "range": ["#4c78a8", "#e45756"]}},
            "tooltip": [{"field": "date"}, {"field": "usd_per_million", "format": ".4f", "title": "$/M"},
                        {"field": "gpu_hours", "format": ",.1f"}, {"field": "goodput_time", "format": ".1%"}],
        },
    }
    layers: list[dict] = [bars]
    if planned is not None:
        for value, label, dash in ((planned, "plan", []), (planned * (1 + alert), f"plan + {alert:.0%}", [4, 4])):
            layers.append({"data": {"values": [{"y": value, "label": label}]},
                           "mark": {"type": "rule", "strokeDash": dash, "color": "#333"},
                           "encoding": {"y": {"field": "y", "type": "quantitative"},
                                        "tooltip": [{"field": "label"}, {"field": "y", "format": ".4f"}]}})
    return {"$schema": SCHEMA,
            "title": "Realised cost per day" + (" against plan" if planned is not None else ""),
            "width": 480, "height": 240, "data": {"values": values}, "layer": layers}
