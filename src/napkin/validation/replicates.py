"""Configurations measured more than once: how far published measurements of one run disagree.

TensorRT-LLM's performance overviews measured many identical configurations again in later
releases (the same GPU, model, precisions, parallel layout and lengths). Where two of them
disagree by more than the documented differences between the releases explain (their memory
fractions and schedulers, which napkin models), no answer per configuration can be close to
both. `napkin validate` reports each such group and the least max error any answer per
configuration could reach on it: the floor under the max error of the whole table.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

from napkin import catalog

# what makes two points the same run for the purpose of a prediction: everything napkin is given,
# except the engine's version (whose documented settings napkin models) and the source
CONFIGURATION = ("engine", "gpu", "model_key", "precision", "kv_precision", "mlp_precision", "tp", "pp", "gpus",
                 "input_tokens", "output_tokens", "metric", "per", "batch", "scenario", "request_rate", "statistic",
                 "attention_dp")


def max_error_floor(q_min: float, q_max: float) -> float:
    """F = (s − 1) / (s + 1),  s = q_max / q_min,  q_i = measured_i / predicted_i

    The least max |c · P_i / m_i − 1| over one factor c applied to every prediction P_i of a
    configuration measured as m_i by several sources: the two extreme ratios bind, and the best
    c = 2 · q_min · q_max / (q_min + q_max) sits where their errors are equal, c / q_min − 1 =
    1 − c / q_max. Where the predictions are equal (the same documented settings), s is the
    measurements' own spread: 166.8 and 384.4 tokens/s for one run give s = 2.30, F = 39.5%.
    Trap: reading one source's large miss as the model's error alone, when another source
    measured the same configuration within a few percent of the prediction; or taking the
    spread over the mean, (max − min) / mean, as the floor: for two points it is 2F, twice it.
    Source: the minimax of two relative errors (Chebyshev's equioscillation for one parameter:
    the optimum balances the two extreme errors).
    """
    s = q_max / q_min
    return (s - 1.0) / (s + 1.0)


def label(p: dict) -> str:
    """One configuration in words: model, GPUs, layout, precision, lengths."""
    m, g = catalog.model(p["model_key"]), catalog.gpu(p["gpu"])
    layout = f"TP {p['tp']}" + (f" PP {p['pp']}" if (p.get("pp") or 1) > 1 else "")
    return (f"{m.name}, {p['gpus']} x {g.name.split(' (')[0]}, {layout}, {p['precision']}, "
            f"{p['input_tokens']:,}/{p['output_tokens']:,}")


def replicates(rows: list[dict], points: list[dict], predict: Callable[[dict], float]) -> list[dict]:
    """Groups of predicted points that measure one configuration in two sources or more, each with the spread
    of its measurements, the spread left once napkin's predictions under one set of parameters (``predict``:
    they differ only by the engines' documented settings) are divided out, and max_error_floor of that; widest
    first."""
    by_id, group_of = {p["id"]: p for p in points}, {r["id"]: r["group"] for r in rows}
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        p = by_id[row["id"]]
        groups[tuple(p.get(k) for k in CONFIGURATION)].append(p)
    out = []
    for members in groups.values():
        if len({p["source"] for p in members}) < 2:
            continue
        members.sort(key=lambda p: (p["engine_version"], p["id"]))
        measured = [p["value"] for p in members]
        q = [p["value"] / predict(p) for p in members]
        named = len({p["model"] for p in members}) > 1  # one architecture published under two names
        out.append({"group": group_of[members[0]["id"]],
                    "configuration": label(members[0]), "n": len(members),
                    "measured": ", ".join(f"{p['engine']} {p['engine_version']}" + (f" ({p['model']})" if named else "")
                                          + f": {p['value']:,.6g}" for p in members),
                    "measured_spread": max(measured) / min(measured), "unexplained_spread": max(q) / min(q),
                    "max_error_floor": max_error_floor(min(q), max(q)), "ids": [p["id"] for p in members]})
    return sorted(out, key=lambda x: (-x["max_error_floor"], x["configuration"]))


def floors(reps: list[dict], *, bar: float) -> dict[str, dict[str, Any]]:
    """{figure: {configurations, floor, over_bar}}: how many configurations each figure has measured twice or more,
    the largest max_error_floor among them, and how many of them no per-configuration answer can bring within
    ``bar`` of every measurement."""
    out: dict[str, dict[str, Any]] = {}
    for r in reps:
        cell = out.setdefault(r["group"], {"configurations": 0, "floor": 0.0, "over_bar": 0})
        cell["configurations"] += 1
        cell["floor"] = max(cell["floor"], r["max_error_floor"])
        cell["over_bar"] += r["max_error_floor"] > bar
    return out
