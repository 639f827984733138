"""The card of numbers every AI engineer should know, computed.

Every row is read off a journey run for the same model, accelerator and inputs, so each
value comes with its formula and the rung where it was earned; ``--model`` and ``--gpu``
recompute the whole card for another pair. Only the bytes-per-parameter rows are
computed here (the weights at four precisions), from the same formula as rung 2.
"""

from __future__ import annotations

from typing import Any

from napkin import calculators, units
from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.formulas import memory as mem
from napkin.hardware import BYTES_PER_VALUE

CARD_PRECISIONS = ("fp32", "bf16", "fp8", "int4")

# (journey result key, label, rung key, formula when the result has no step of its own)
ROWS: list[tuple[str, str, str, str | None]] = [
    ("characters_per_token", "characters per token ({encoding})", "tokens", None),
    ("words_per_token", "words per token", "tokens", None),
    ("question_share", "the question's share of the prompt", "tokens", None),
    ("@weights", "", "weights", None),  # the bytes-per-parameter rows go here
    ("free_bytes", "left for the KV cache on {gpus_used} × {gpu}", "weights", None),
    ("load_s", "load the weights from disk", "weights", None),
    ("node_usd_per_hour", "rent of the node, busy or idle", "weights", None),
    ("mac_flops", "one multiply-accumulate", "memory_wall", "a · b + c"),
    ("mac_s", "one MAC at the {compute_precision} peak", "memory_wall", None),
    ("dense_flops_per_s", "dense {compute_precision} peak, one {gpu}", "memory_wall", "datasheet, dense (not sparse)"),
    ("memory_bytes_per_s", "memory bandwidth, one {gpu}", "memory_wall", "datasheet"),
    ("ridge_flops_per_byte", "ridge point, FLOP per byte", "memory_wall", None),
    ("decode_intensity_flops_per_byte", "batch-1 decode, FLOP per byte", "memory_wall", None),
    ("weight_read_s", "read every weight once", "memory_wall", None),
    ("flops_per_token", "FLOPs per token", "prefill", None),
    ("prefill_napkin_s", "prefill of the {prompt_tokens}-token prompt at {mfu} MFU", "prefill", None),
    ("prefill_s", "prefill of the {prompt_tokens}-token prompt, operator model", "prefill", None),
    ("prefill_tokens_per_s", "prefill rate, one prompt", "prefill", None),
    ("kv_bytes_per_token", "KV cache per token ({kv_precision})", "prefill", None),
    ("max_context_kv_bytes", "KV cache at full context", "prefill", None),
    ("decode_floor_s_per_token", "decode floor per token", "decode", None),
    ("decode_floor_share", "share of the floor one request reaches", "decode", None),
    ("decode_tokens_per_s", "decode speed, one user", "decode", None),
    ("batch_at_ridge", "batch where decode turns compute-bound, at the datasheet ridge", "decode", None),
    ("batch_speedup", "throughput gain at batch {batch}", "decode", None),
    ("tp_allreduce_bytes_per_token", "all-reduce volume per token per GPU", "decode", None),
    ("tp_allreduce_share", "all-reduces' share of a one-user decode step", "decode", None),
    ("meter_flops", "Σ FLOPs of one request", "decode", None),
    ("usd", "API bill for the request", "bill", None),
    ("output_over_input_price", "output price over input price", "bill", None),
    ("gpu_usd_per_million_tokens_all_in", "GPU cost per million output tokens, prompts included, at batch {batch}",
     "bill", None),
    ("flops_per_usd", "FLOPs per dollar", "bill", None),
    ("energy_j", "energy per request, batched", "bill", None),
    ("train_flops", "6ND, the training run", "training", None),
    ("requests_per_training_run", "requests that equal one training run", "training", None),
]


def _formulas(journey: Report) -> dict[str, str]:
    """Each step's formula without its trailing note: ``a / b  (why)`` -> ``a / b``."""
    out: dict[str, str] = {}
    for step in journey.steps:
        out.setdefault(step.name, step.formula.split("  (")[0])
    return out


def _label(template: str, journey: Report) -> str:
    ctx: dict[str, Any] = {k: journey.get(k) for k in ("encoding", "gpus_used", "gpu", "compute_precision", "batch",
                                                       "kv_precision")}
    ctx["mfu"] = units.format(journey.get("mfu", 0.0), "fraction")
    ctx["prompt_tokens"] = f"{journey.get('prompt_tokens', 0):,}"
    return template.format(**ctx)


def card_rows(journey: Report) -> list[dict]:
    """The card's rows: value, unit, formula and the rung that earned it."""
    formulas = _formulas(journey)
    rungs = {x["key"]: x for x in journey["rungs"]}  # number and title of each rung, as the journey walked them
    rows: list[dict] = []

    def add(key: str, name: str, value: Any, unit: str | None, formula: str, rung: str) -> None:
        rows.append({"key": key, "name": name, "value": value, "unit": unit,
                     "value_text": units.fmt_auto(value, unit), "formula": formula,
                     "rung": rungs[rung]["n"], "rung_key": rung, "rung_title": rungs[rung]["title"]})

    n = journey["params"]
    for key, template, rung, formula in ROWS:
        if key == "@weights":
            for p in CARD_PRECISIONS:
                b = BYTES_PER_VALUE[p]
                word = "byte" if b == 1 else "bytes"
                add(f"weights_bytes_{p}", f"weights at {p} ({b:g} {word} per parameter)",
                    mem.weights_bytes(n, bytes_per_param=b), "bytes", f"N · {b:g} {word}", "weights")
            continue
        if key not in journey.results:
            continue
        add(key, _label(template, journey), journey[key], journey.units.get(key),
            formula or formulas.get(key, ""), rung)
    return rows


def build_card(journey: Report) -> Report:
    """The card of a journey already run: its rows, with the journey's working merged in."""
    r = Report(f"Numbers every AI engineer should know: {journey['model']} on {journey['gpus_used']} × "
               f"{journey['gpu']} ({journey['precision']})", command="card")
    for k in ("model", "gpu", "gpus", "gpus_used", "precision", "kv_precision"):
        r.set(k, journey[k], journey.units.get(k))
    r.set("rows", card_rows(journey))
    r.merge(journey)
    return r


def run_card(req: Any) -> Report:
    """The card of a journey run on the same request (the journey composed through the registry)."""
    return build_card(calculators.get("journey").run(req))


def charts(report: Report) -> dict[str, dict]:
    from napkin.charts.journey import card_spec

    return {"card": card_spec(report["rows"], report.title)}


CARD = Calculator(
    "card", calculators.get("journey").request, run_card, "The card",
    "Numbers every AI engineer should know, each computed from a journey with its formula and rung.",
    establishes="the napkin constants of one model on one accelerator, each with its working",
    needs_measuring="MFU and achieved bandwidth on your own node (napkin measure)",
    charts=charts,
)
