"""Memory fit as a chart: weights, KV cache and free memory against the cards' capacity.

Built from the ``memory`` calculator's JSON (``report.to_dict()``) so the page can redraw
it from the same numbers the CLI prints. Bytes are shown in GB (10^9 bytes), as the
catalog rates the cards.
"""

from __future__ import annotations

from typing import Any

from napkin.units import GIGA

from napkin.charts import SCHEMA  # noqa: E402

# segment -> (legend label, colour); the order is the stacking order
SEGMENTS = {
    "weights": ("weights", "#4c78a8"),
    "kv": ("KV cache", "#f58518"),
    "training": ("training state (16 B/param)", "#b279a2"),
    "free": ("free", "#9ecf8f"),
}


def _results(report: Any) -> dict:
    return report.to_dict() if hasattr(report, "to_dict") else dict(report)


def memory_rows(report: Any) -> list[dict]:
    """The stacked segments, in GB, from a memory report (or its JSON)."""
    d = _results(report)
    rows: list[dict] = []

    def add(key: str, value: float | None) -> None:
        if value:
            label, _ = SEGMENTS[key]
            rows.append({"segment": label, "order": list(SEGMENTS).index(key), "gb": value / GIGA,
                         "bytes": value})

    if d.get("training_static_bytes") is not None:
        add("training", d["training_static_bytes"])
    else:
        add("weights", d.get("weights_bytes"))
    add("kv", d.get("kv_total_bytes"))
    add("free", d.get("free_bytes"))
    return rows


def memory_chart(report: Any) -> dict:
    """A horizontal stacked bar (weights, KV, free) with the capacity as a dashed rule."""
    d = _results(report)
    rows = memory_rows(d)
    capacity = d.get("capacity_bytes")
    present = {r["segment"] for r in rows}
    domain = [label for label, _ in SEGMENTS.values() if label in present]
    colours = [colour for label, colour in SEGMENTS.values() if label in present]
    bar = {
        "mark": {"type": "bar", "height": 36},
        "encoding": {
            "x": {"field": "gb", "type": "quantitative", "stack": "zero",
                  "title": "GB (10^9 bytes)"},
            "color": {"field": "segment", "type": "nominal", "title": None,
                      "scale": {"domain": domain, "range": colours},
                      "legend": {"orient": "bottom"}},
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": [{"field": "segment", "type": "nominal"},
                        {"field": "gb", "type": "quantitative", "format": ",.1f", "title": "GB"}],
        },
    }
    layers: list[dict] = [bar]
    if capacity:
        layers.append({
            "data": {"values": [{"gb": capacity / GIGA, "label": f"capacity {capacity / GIGA:,.0f} GB"}]},
            "layer": [
                {"mark": {"type": "rule", "color": "#222", "strokeWidth": 2, "strokeDash": [4, 3]},
                 "encoding": {"x": {"field": "gb", "type": "quantitative"}}},
                {"mark": {"type": "text", "align": "right", "dx": -4, "dy": -26, "fontSize": 11},
                 "encoding": {"x": {"field": "gb", "type": "quantitative"}, "text": {"field": "label"}}},
            ],
        })
    title = "Memory against capacity" if capacity else "Memory needed"
    if d.get("fits") is False:
        title += f": does not fit, short by {d.get('short_by_bytes', 0) / GIGA:,.0f} GB"
    return {
        "$schema": SCHEMA,
        "title": title,
        "width": 520,
        "height": 70,
        "data": {"values": rows},
        "layer": layers,
    }


def memory_charts(report: Any) -> dict[str, dict]:
    """Charts of a memory report: {"memory": spec}, or nothing when there is nothing to draw."""
    if not memory_rows(report):
        return {}
    return {"memory": memory_chart(report)}
