"""The roofline as a chart: attainable FLOP/s against arithmetic intensity, log-log.

Both roofs are straight lines on log-log axes, so the curve is exact with three
points: the left edge, the ridge and the right edge. The operating point (the
intensity given) is marked on the roof it sits under. Built from the ``roofline``
calculator's JSON so the page can redraw it from the same numbers.
"""

from __future__ import annotations

from typing import Any

from napkin.units import TERA

from napkin.charts import SCHEMA  # noqa: E402


def _results(report: Any) -> dict:
    return report.to_dict() if hasattr(report, "to_dict") else dict(report)


def operating_intensity(d: dict) -> float | None:
    """The intensity the report was evaluated at (from its attainable_flops_per_s step)."""
    for step in d.get("derivation", []):
        if step.get("name") == "attainable_flops_per_s":
            value = step.get("values", {}).get("intensity")
            return float(value) if value is not None else None
    return None


def roofline_chart(report: Any) -> dict:
    d = _results(report)
    peak = float(d["dense_flops_per_s"])
    bw = float(d["memory_bytes_per_s"])
    ridge = peak / bw
    point = operating_intensity(d)
    lo = min(ridge / 1000, point / 10 if point else ridge)
    hi = max(ridge * 30, point * 10 if point else ridge)
    roof = [{"intensity": x, "tflops": min(peak, x * bw) / TERA, "roof": "attainable"} for x in (lo, ridge, hi)]
    layers: list[dict] = [
        {"data": {"values": roof},
         "mark": {"type": "line", "color": "#4c78a8", "strokeWidth": 2},
         "encoding": {
             "x": {"field": "intensity", "type": "quantitative", "scale": {"type": "log"},
                   "title": "arithmetic intensity (FLOP per byte)"},
             "y": {"field": "tflops", "type": "quantitative", "scale": {"type": "log"},
                   "title": "attainable TFLOP/s"}}},
        {"data": {"values": [{"intensity": ridge, "tflops": peak / TERA,
                              "label": f"ridge {ridge:,.0f} FLOP/B"}]},
         "layer": [
             {"mark": {"type": "rule", "strokeDash": [4, 3], "color": "#888"},
              "encoding": {"x": {"field": "intensity", "type": "quantitative"}}},
             {"mark": {"type": "text", "align": "left", "dx": 4, "dy": 12, "fontSize": 11},
              "encoding": {"x": {"field": "intensity", "type": "quantitative"},
                           "y": {"field": "tflops", "type": "quantitative"}, "text": {"field": "label"}}},
         ]},
    ]
    if point is not None:
        att = float(d.get("attainable_flops_per_s", min(peak, point * bw)))
        bound = d.get("bound", "memory" if point < ridge else "compute")
        layers.append({
            "data": {"values": [{"intensity": point, "tflops": att / TERA,
                                 "label": f"{point:g} FLOP/B: {att / TERA:,.3g} TFLOP/s ({bound}-bound)"}]},
            "layer": [
                {"mark": {"type": "point", "filled": True, "size": 120, "color": "#e45756"},
                 "encoding": {"x": {"field": "intensity", "type": "quantitative"},
                              "y": {"field": "tflops", "type": "quantitative"},
                              "tooltip": [{"field": "label", "type": "nominal", "title": "operating point"}]}},
                {"mark": {"type": "text", "align": "left", "dx": 10, "dy": 14, "fontSize": 11, "color": "#e45756"},
                 "encoding": {"x": {"field": "intensity", "type": "quantitative"},
                              "y": {"field": "tflops", "type": "quantitative"}, "text": {"field": "label"}}},
            ],
        })
    return {"$schema": SCHEMA, "title": "Roofline", "width": 520, "height": 300, "layer": layers}


def roofline_charts(report: Any) -> dict[str, dict]:
    """Charts of a roofline report: {"roofline": spec}."""
    d = _results(report)
    if d.get("dense_flops_per_s") is None or d.get("memory_bytes_per_s") is None:
        return {}
    return {"roofline": roofline_chart(d)}
