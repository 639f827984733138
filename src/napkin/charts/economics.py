"""Charts for the economics commands: serving against training (amortise), goodput
against cluster size (goodput).

Each builder takes a report (or its JSON) and returns a Vega-Lite spec, so the page
redraws it from the same numbers the CLI prints.
"""

from __future__ import annotations

from typing import Any

from napkin.charts import write_chart  # noqa: F401  (re-exported for callers)
from napkin.units import TERA, format as fmt

from napkin.charts import SCHEMA  # noqa: E402


def _results(report: Any) -> dict:
    if hasattr(report, "to_dict"):
        return report.to_dict()
    return dict(report)


def crossover_rows(report: Any) -> list[dict]:
    """The serving-versus-training figure's bars, in trillions of tokens: the corpus, 3·D, one year at each volume."""
    d = _results(report)
    rows = [
        {"bar": "Pretraining corpus (D)", "order": 0, "kind": "training",
         "tokens_t": d["tokens"] / TERA},
        {"bar": "Served tokens to equal training compute (3·D)", "order": 1, "kind": "crossover",
         "tokens_t": d["crossover_tokens"] / TERA},
    ]
    for i, (p, year) in enumerate(zip(d.get("per_day") or [], d.get("served_per_year_tokens") or [])):
        rows.append({"bar": f"One year at {fmt(p, 'count')} tokens a day", "order": 2 + i, "kind": "serving",
                     "tokens_t": year / TERA})
    return rows


def crossover_chart(report: Any) -> dict:
    """Horizontal bars of tokens (trillions): how much serving it takes to match the training run."""
    rows = crossover_rows(report)
    return {
        "$schema": SCHEMA,
        "title": "How much serving it takes to match the training run",
        "width": 520,
        "height": {"step": 30},
        "data": {"values": rows},
        "layer": [
            {"mark": "bar",
             "encoding": {
                 "y": {"field": "bar", "type": "nominal", "title": None, "axis": {"labelLimit": 320},
                       "sort": {"field": "order", "op": "min", "order": "ascending"}},
                 "x": {"field": "tokens_t", "type": "quantitative", "title": "trillions of tokens"},
                 "color": {"field": "kind", "type": "nominal", "title": None,
                           "scale": {"domain": ["training", "crossover", "serving"],
                                     "range": ["#4c78a8", "#e45756", "#72b7b2"]},
                           "legend": None},
                 "tooltip": [{"field": "bar", "type": "nominal"},
                             {"field": "tokens_t", "type": "quantitative", "title": "trillion tokens",
                              "format": ",.3~f"}]}},
            {"mark": {"type": "text", "align": "left", "dx": 4},
             "encoding": {
                 "y": {"field": "bar", "type": "nominal",
                       "sort": {"field": "order", "op": "min", "order": "ascending"}},
                 "x": {"field": "tokens_t", "type": "quantitative"},
                 "text": {"field": "tokens_t", "type": "quantitative", "format": ",.3~f"}}},
        ],
    }


def goodput_rows(report: Any) -> list[dict]:
    """One point per cluster size: goodput at that size's own optimal interval (Daly 2006)."""
    d = _results(report)
    here = d.get("gpus")
    return [{"gpus": n, "goodput": g, "this_job": n == here}
            for n, g in zip(d.get("cluster_gpus") or [], d.get("goodput_by_cluster") or [])]


def goodput_chart(report: Any) -> dict:
    """Goodput against cluster size (log axis), the job's own size marked."""
    rows = goodput_rows(report)
    return {
        "$schema": SCHEMA,
        "title": "Goodput falls as the cluster grows (same per-GPU failure rate)",
        "width": 520,
        "height": 280,
        "data": {"values": rows},
        "layer": [
            {"mark": {"type": "line", "point": True, "color": "#4c78a8"},
             "encoding": {
                 "x": {"field": "gpus", "type": "quantitative", "scale": {"type": "log"}, "title": "GPUs in the job"},
                 "y": {"field": "goodput", "type": "quantitative", "scale": {"domain": [0, 1]},
                       "axis": {"format": ".0%"}, "title": "goodput at the optimal interval (Daly)"},
                 "tooltip": [{"field": "gpus", "type": "quantitative", "format": ","},
                             {"field": "goodput", "type": "quantitative", "format": ".1%"}]}},
            {"transform": [{"filter": "datum.this_job"}],
             "mark": {"type": "point", "filled": True, "size": 140, "color": "#e45756"},
             "encoding": {"x": {"field": "gpus", "type": "quantitative"},
                          "y": {"field": "goodput", "type": "quantitative"}}},
        ],
    }
