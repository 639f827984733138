"""Training economics as charts: marginal against loaded cost, the sensitivity tornado, a ranking.

Each builder takes a ``train`` or ``compare`` report (or its JSON) and returns a
Vega-Lite spec, so the page redraws it from the same numbers the CLI prints.
"""

from __future__ import annotations

from typing import Any

from napkin.charts import write_chart  # noqa: F401  (re-exported for callers)

from napkin.charts import SCHEMA  # noqa: E402
FINAL_RUN = "final run"


def _results(report: Any) -> dict:
    if hasattr(report, "results"):
        return dict(report.results)
    return dict(report)


def cost_rows(report: Any) -> list[dict]:
    """Stacked segments of two bars: marginal (the final run) and loaded (everything)."""
    d = _results(report)
    parts = d.get("cost_breakdown_usd") or {}
    rows = []
    if FINAL_RUN in parts:
        rows.append({"bar": "marginal", "segment": FINAL_RUN, "order": 0, "usd": parts[FINAL_RUN]})
    for i, (name, usd) in enumerate(parts.items()):
        rows.append({"bar": "loaded", "segment": name, "order": i, "usd": usd})
    return rows


def cost_chart(report: Any) -> dict:
    """Marginal against loaded cost as two horizontal stacked bars, with $/M tokens in the title."""
    d = _results(report)
    per_m = d.get("usd_per_million_tokens") or {}
    title = "Marginal vs loaded cost"
    if per_m:
        title += f": ${per_m.get('marginal', 0):.4g}/M vs ${per_m.get('loaded', 0):.4g}/M advanced tokens"
    return {
        "$schema": SCHEMA,
        "title": title,
        "width": 520,
        "height": 110,
        "data": {"values": cost_rows(d)},
        "mark": "bar",
        "encoding": {
            "y": {"field": "bar", "type": "nominal", "title": None, "sort": ["marginal", "loaded"]},
            "x": {"field": "usd", "type": "quantitative", "stack": "zero", "title": "USD",
                  "axis": {"format": "$,.0f"}},
            "color": {"field": "segment", "type": "nominal", "title": None, "legend": {"orient": "bottom"},
                      "scale": {"domain": list((d.get("cost_breakdown_usd") or {}))}},
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": [{"field": "segment", "type": "nominal"},
                        {"field": "usd", "type": "quantitative", "format": "$,.0f"}],
        },
    }


def tornado_rows(report: Any) -> list[dict]:
    """Two bars per input (−20% and +20%) running from the base loaded $/M to the moved one."""
    rows = []
    for i, s in enumerate(_results(report).get("sensitivity") or []):
        base = s["base_usd_per_million"]
        for change, key, value in (("-20%", "low_usd_per_million", "low_value"),
                                   ("+20%", "high_usd_per_million", "high_value")):
            rows.append({"input": s["input"], "rank": i, "change": change, "from": base, "to": s[key],
                         "input_value": s[value]})
    return rows


def tornado_chart(report: Any) -> dict:
    """The inputs ranked by how far ±20% moves loaded cost per million tokens."""
    rows = tornado_rows(report)
    base = rows[0]["from"] if rows else 0.0
    return {
        "$schema": SCHEMA,
        "title": f"Loaded $/M tokens (base ${base:.4g}) with each input moved ±20%",
        "width": 520,
        "height": {"step": 22},
        "data": {"values": rows},
        "layer": [
            {"mark": "bar",
             "encoding": {
                 "y": {"field": "input", "type": "nominal", "title": None,
                       "sort": {"field": "rank", "op": "min", "order": "ascending"}},
                 "x": {"field": "from", "type": "quantitative", "title": "loaded USD per million advanced tokens",
                       "scale": {"zero": False}},
                 "x2": {"field": "to"},
                 "color": {"field": "change", "type": "nominal", "title": "input moved",
                           "scale": {"domain": ["-20%", "+20%"], "range": ["#4c78a8", "#f58518"]}},
                 "tooltip": [{"field": "input"}, {"field": "change"}, {"field": "input_value", "title": "value"},
                             {"field": "to", "title": "loaded $/M", "format": "$.4f"}],
             }},
            {"data": {"values": [{"base": base}]}, "mark": {"type": "rule", "color": "#222"},
             "encoding": {"x": {"field": "base", "type": "quantitative"}}},
        ],
    }


def train_charts(report: Any) -> dict[str, dict]:
    """Charts of a train report: the cost bars, and the tornado when --sensitivity ran."""
    out: dict[str, dict] = {}
    if cost_rows(report):
        out["cost"] = cost_chart(report)
    if tornado_rows(report):
        out["sensitivity"] = tornado_chart(report)
    return out


def compare_chart(report: Any) -> dict:
    """Marginal $/M tokens per part, cheapest first; guessed MFUs are marked."""
    d = _results(report)
    rows = [{"gpu": r["gpu"], "rank": r["rank"], "usd_per_million": r["usd_per_million_tokens"],
             "mfu": r["mfu"], "mfu_basis": r["mfu_basis"]} for r in d.get("ranking") or []]
    return {
        "$schema": SCHEMA,
        "title": "Marginal cost per million advanced tokens",
        "width": 520,
        "height": {"step": 26},
        "data": {"values": rows},
        "mark": "bar",
        "encoding": {
            "y": {"field": "gpu", "type": "nominal", "title": None,
                  "sort": {"field": "rank", "op": "min", "order": "ascending"}},
            "x": {"field": "usd_per_million", "type": "quantitative", "title": "USD per million tokens"},
            "color": {"field": "mfu_basis", "type": "nominal", "title": "MFU",
                      "scale": {"domain": ["given", "guess"], "range": ["#4c78a8", "#bab0ac"]}},
            "tooltip": [{"field": "gpu"}, {"field": "usd_per_million", "format": "$.4f"},
                        {"field": "mfu", "format": ".0%"}, {"field": "mfu_basis"}],
        },
    }


def compare_charts(report: Any) -> dict[str, dict]:
    return {"cost-per-million": compare_chart(report)} if _results(report).get("ranking") else {}
