"""Vega-Lite specs for the journey of one prompt: the FLOPs ladder, and the card as a picture."""

from __future__ import annotations

from typing import Any

from napkin import units
from napkin.charts import SCHEMA

LADDER = [
    ("mac_flops", "one multiply-accumulate"),
    ("flops_per_token", "one token through the model"),
    ("decode_flops", "the answer (decode)"),
    ("prefill_flops", "the prompt (prefill)"),
    ("meter_flops", "Σ one request"),
    ("train_flops", "the training run (6ND)"),
]


def ladder_spec(report: Any) -> dict:
    """FLOPs from one multiply-accumulate to the training run, on a log axis.

    ``report`` is a journey Report or its ``to_dict()``; anything with ``.get``.
    """
    values = []
    for key, label in LADDER:
        v = report.get(key)
        if v:
            values.append({"step": label, "flops": float(v), "text": units.format(float(v), "flops")})
    return {
        "$schema": SCHEMA,
        "title": {"text": "Σ FLOPs, from one multiply-accumulate to the training run",
                  "subtitle": f"{report.get('model', '')} on {report.get('gpus_used', '')} × {report.get('gpu', '')}"},
        "data": {"values": values},
        "width": 520,
        "height": {"step": 28},
        "encoding": {
            "y": {"field": "step", "type": "nominal", "sort": {"field": "flops", "order": "ascending"},
                  "title": None},
            "x": {"field": "flops", "type": "quantitative", "scale": {"type": "log", "domainMin": 1},
                  "title": "FLOP (log scale)", "axis": {"format": ".0e", "tickCount": 8}},
        },
        "layer": [
            {"mark": {"type": "bar", "color": "#4c78a8"}, "encoding": {"x2": {"datum": 1}}},
            {"mark": {"type": "text", "align": "left", "dx": 4}, "encoding": {"text": {"field": "text"}}},
        ],
    }


# (field, header, width in pixels)
CARD_COLUMNS = [("name", "number", 290), ("value_text", "value", 110), ("formula", "formula", 330),
                ("earned", "earned in", 150)]


def card_spec(rows: list[dict], title: str) -> dict:
    """The card as a table: one text column per field, rows banded, for ``--png``/``--svg``."""
    values = [{**{k: r.get(k, "") for k, _, _ in CARD_COLUMNS if k != "earned"},
               "earned": f"{r['rung']}. {r['rung_title']}", "row": i, "band": i % 2}
              for i, r in enumerate(rows)]
    row_h = 20
    height = row_h * max(len(values), 1)

    def column(fld: str, header: str, width: int) -> dict:
        return {
            "width": width, "height": height,
            "title": {"text": header, "anchor": "start", "fontSize": 12},
            "encoding": {"y": {"field": "row", "type": "ordinal", "axis": None}},
            "layer": [
                {"mark": {"type": "rect", "color": "#eef2f7"},
                 "transform": [{"filter": "datum.band == 1"}],
                 "encoding": {"x": {"value": 0}, "x2": {"value": width}}},
                {"mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": 11,
                          "font": "monospace" if fld == "formula" else "sans-serif",
                          "limit": width - 6},
                 "encoding": {"x": {"value": 3}, "text": {"field": fld}}},
            ],
        }

    return {
        "$schema": SCHEMA,
        "title": {"text": title, "anchor": "start", "fontSize": 14},
        "data": {"values": values},
        "hconcat": [column(f, h, w) for f, h, w in CARD_COLUMNS],
        "spacing": 0,
        "config": {"view": {"stroke": None}, "background": "white", "padding": 12},
    }
