"""Serving charts as Vega-Lite specs: the decode roofline with its operating point, memory per
GPU, the optimisation waterfall and the planner's Pareto front.

Each builder reads only a report's JSON (``to_dict()``), so the web page can redraw the
same chart from the API's answer.
"""

from __future__ import annotations

from typing import Any

from napkin.charts import SCHEMA
from napkin.charts import write_chart  # noqa: F401  (re-exported for the serve CLI)
from napkin.formulas import roofline as roof
from napkin.units import GIGA, TERA


def _d(report: Any) -> dict:
    return report.to_dict() if hasattr(report, "to_dict") else dict(report)


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def roofline_chart(report: Any) -> dict:
    """Attainable TFLOP/s against FLOP per byte, with the decode step and the prefill marked."""
    d = _d(report)
    peak = float(d["dense_flops_per_s"])
    bw = float(d["memory_bytes_per_s"])
    ridge = roof.ridge_flops_per_byte(peak, memory_bytes_per_s=bw)
    decode_i = float(d["decode_step_flops"]) / float(d["decode_step_bytes"])
    prefill_i = float(d["prefill_flops"]) / float(d["weights_bytes"])
    lo = min(ridge / 1000, decode_i / 4)
    hi = max(ridge * 30, prefill_i * 4)

    def tflops(intensity: float) -> float:
        return roof.attainable_flops_per_s(intensity, dense_flops_per_s=peak, memory_bytes_per_s=bw) / TERA

    line = [{"intensity": x, "tflops": tflops(x)} for x in (lo, ridge, hi)]
    points = [
        {"intensity": decode_i, "tflops": tflops(decode_i),
         "label": f"decode, batch {d.get('batch')}: {_num(decode_i)} FLOP/B ({d.get('bound')})"},
        {"intensity": prefill_i, "tflops": tflops(prefill_i), "label": f"prefill: {_num(prefill_i)} FLOP/B"},
    ]
    x = {"field": "intensity", "type": "quantitative", "scale": {"type": "log"},
         "title": "arithmetic intensity (FLOP per byte of weights and KV)"}
    y = {"field": "tflops", "type": "quantitative", "scale": {"type": "log"}, "title": "attainable TFLOP/s per GPU"}
    return {
        "$schema": SCHEMA, "title": f"Decode on the roofline: {d.get('model')} on {d.get('gpu')}",
        "width": 520, "height": 300,
        "layer": [
            {"data": {"values": line}, "mark": {"type": "line", "color": "#4c78a8", "strokeWidth": 2},
             "encoding": {"x": x, "y": y}},
            {"data": {"values": [{"intensity": ridge, "tflops": peak / TERA, "label": f"ridge {ridge:,.0f} FLOP/B"}]},
             "layer": [{"mark": {"type": "rule", "strokeDash": [4, 3], "color": "#888"},
                        "encoding": {"x": {"field": "intensity", "type": "quantitative"}}},
                       {"mark": {"type": "text", "align": "left", "dx": 4, "dy": 12},
                        "encoding": {"x": {"field": "intensity", "type": "quantitative"},
                                     "y": {"field": "tflops", "type": "quantitative"}, "text": {"field": "label"}}}]},
            {"data": {"values": points},
             "layer": [{"mark": {"type": "point", "filled": True, "size": 110, "color": "#e45756"},
                        "encoding": {"x": {"field": "intensity", "type": "quantitative"},
                                     "y": {"field": "tflops", "type": "quantitative"},
                                     "tooltip": [{"field": "label", "type": "nominal"}]}},
                       {"mark": {"type": "text", "align": "left", "dx": 8, "dy": -8, "color": "#e45756"},
                        "encoding": {"x": {"field": "intensity", "type": "quantitative"},
                                     "y": {"field": "tflops", "type": "quantitative"}, "text": {"field": "label"}}}]},
        ],
    }


def memory_chart(report: Any) -> dict:
    """One bar per GPU: weights, KV cache and what is left of the usable memory."""
    d = _d(report)
    w = float(d["weights_bytes_per_gpu"])
    kv = float(d["kv_bytes_per_gpu"])
    usable = float(d["usable_bytes_per_gpu"])
    parts = [("weights", w), ("KV cache", kv)]
    if d.get("draft_weights_bytes"):
        parts.append(("draft", float(d["needed_bytes_per_gpu"]) - w - kv))
    parts.append(("free", max(usable - float(d["needed_bytes_per_gpu"]), 0.0)))
    values = [{"part": p, "gb": b / GIGA, "order": i} for i, (p, b) in enumerate(parts)]
    return {
        "$schema": SCHEMA, "title": f"Memory per GPU ({'fits' if d.get('fits') else 'does not fit'})",
        "width": 520, "height": 80, "data": {"values": values},
        "layer": [
            {"mark": "bar", "encoding": {
                "x": {"field": "gb", "type": "quantitative", "stack": "zero", "title": "GB per GPU"},
                "color": {"field": "part", "type": "nominal", "sort": [p for p, _ in parts],
                          "scale": {"range": ["#4c78a8", "#f58518", "#72b7b2", "#e0e0e0"]}},
                "order": {"field": "order"},
                "tooltip": [{"field": "part"}, {"field": "gb", "format": ",.1f", "title": "GB"}]}},
            {"data": {"values": [{"gb": usable / GIGA}]}, "mark": {"type": "rule", "color": "#e45756"},
             "encoding": {"x": {"field": "gb", "type": "quantitative"}}},
        ],
    }


def waterfall_chart(report: Any) -> dict:
    """Tokens/s after each change, as a waterfall: each bar rises (or falls) from the previous level.

    A step that does not fit in memory has no throughput: it is drawn as a grey tick at the
    level of the last step that fit, labelled "does not fit", never as a gain; the next step
    that fits rises or falls from that level.
    """
    d = _d(report)
    rows = d["waterfall"]
    values = []
    prev: float | None = None  # tokens/s of the last step that fit
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        seen[row["step"]] = seen.get(row["step"], 0) + 1
        # a knob may repeat (batch=64,...,batch=64): each step keeps its own column
        step = row["step"] if seen[row["step"]] == 1 else f"{row['step']} ({seen[row['step']]})"
        tps = row.get("tokens_per_s")
        if not row.get("fits", True) or tps is None:
            level = prev or 0.0
            values.append({"step": step, "order": i, "start": level, "end": level, "change": "does not fit",
                           "binds": row.get("binds"), "label": "does not fit", "max_batch": row.get("max_batch"),
                           "tokens_per_s": None, "usd": None})
            continue
        tps = float(tps)
        values.append({"step": step, "order": i, "start": 0.0 if prev is None else prev, "end": tps,
                       "change": "baseline" if prev is None else ("gain" if tps >= prev else "loss"),
                       "binds": row["binds"], "label": row["binds"], "tokens_per_s": tps,
                       "usd": row.get("usd_per_million_output_tokens")})
        prev = tps
    x = {"field": "step", "type": "nominal", "sort": [v["step"] for v in values], "title": None,
         "axis": {"labelAngle": -20}}
    return {
        "$schema": SCHEMA, "title": "Optimisation waterfall: output tokens/s per replica",
        "width": 560, "height": 300, "data": {"values": values},
        "layer": [
            {"mark": {"type": "bar", "width": {"band": 0.7}}, "encoding": {
                "x": x,
                "y": {"field": "start", "type": "quantitative", "title": "tokens/s"},
                "y2": {"field": "end"},
                "color": {"field": "change", "type": "nominal",
                          "scale": {"domain": ["baseline", "gain", "loss", "does not fit"],
                                    "range": ["#4c78a8", "#54a24b", "#e45756", "#9e9e9e"]}},
                "tooltip": [{"field": "step"}, {"field": "tokens_per_s", "format": ",.0f"},
                            {"field": "binds"}, {"field": "usd", "format": "$.3f", "title": "$/M output"}]}},
            {"transform": [{"filter": "datum.change === 'does not fit'"}],
             "mark": {"type": "tick", "color": "#9e9e9e", "thickness": 3},
             "encoding": {"x": x, "y": {"field": "end", "type": "quantitative"},
                          "tooltip": [{"field": "step"}, {"field": "label"},
                                      {"field": "max_batch", "format": ",.0f", "title": "max batch"}]}},
            {"mark": {"type": "text", "dy": -8}, "encoding": {
                "x": x, "y": {"field": "end", "type": "quantitative"}, "text": {"field": "label"}}},
        ],
    }


def pareto_chart(report: Any) -> dict:
    """Tokens/s per GPU against tokens/s per user for every configuration that fits, front as a line."""
    d = _d(report)
    cloud = d.get("pareto_points", [])
    front = d.get("pareto_front", [])
    enc = {"x": {"field": "tokens_per_s_per_user", "type": "quantitative", "scale": {"type": "log"},
                 "title": "tokens/s per user (1 / TPOT)"},
           "y": {"field": "tokens_per_s_per_gpu", "type": "quantitative", "scale": {"type": "log"},
                 "title": "tokens/s per GPU"}}
    return {
        "$schema": SCHEMA, "title": f"Throughput against interactivity: {d.get('model')}",
        "width": 520, "height": 320,
        "layer": [
            {"data": {"values": cloud}, "mark": {"type": "point", "opacity": 0.35, "size": 20},
             "encoding": {**enc, "color": {"field": "gpu", "type": "nominal"}}},
            {"data": {"values": front}, "mark": {"type": "line", "point": True, "color": "#222", "interpolate": "step-after"},
             "encoding": {**enc, "tooltip": [{"field": "gpu"}, {"field": "precision"}, {"field": "gpus"},
                                             {"field": "tp"}, {"field": "batch"},
                                             {"field": "tokens_per_s_per_gpu", "format": ",.0f"},
                                             {"field": "tokens_per_s_per_user", "format": ",.1f"}]}},
        ],
    }


def serve_charts(report: Any) -> dict[str, dict]:
    """Charts of a serve report: roofline and memory, plus the waterfall when one was asked for."""
    d = _d(report)
    out = {"roofline": roofline_chart(d), "memory": memory_chart(d)}
    if d.get("waterfall"):
        out["waterfall"] = waterfall_chart(d)
    return out


def plan_charts(report: Any) -> dict[str, dict]:
    d = _d(report)
    return {"pareto": pareto_chart(d)} if d.get("pareto_front") else {}
