"""napkin's training model against published measured runs (validation/training.toml).

``predict(point)`` runs `napkin plan train`'s model on a point's stated configuration (model,
accelerator, cluster, sequence, batch, degrees) and returns the predicted value of the point's
metric in its units. What the source leaves unstated (a micro-batch, the interleave, the ZeRO
stage, ...) is searched, as `napkin plan train` would choose it. What a framework did that is
not a degree (FlashAttention or an unfused softmax, dropout, gradient sync after the backward
in Megatron-LM 2021-22, the cluster's NIC) is stated per source in SOURCE_FACTS, with the
reason.

``fit(points)`` fits FITTED (the two parameters no publication gives) on the points given, by
minimising the mean over sources of each source's median |log error| on a grid;
``leave_sources_out()`` fits on all sources but one and predicts the one left out, for each
source, so the published error is out of sample. ``python -m napkin.validation.training`` prints
that table.
"""

from __future__ import annotations

import functools
import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from napkin import catalog
from napkin.derivation import Report
from napkin.model import ModelSpec
from napkin.formulas import parallelism as P
from napkin.plan.train_eval import evaluate, layer_times
from napkin.plan.train_request import PlanTrainRequest
from napkin.plan.train_resolve import resolve
from napkin.plan.train_search import INTERLEAVES, MICRO_BATCHES, Space, grid
from napkin.plan.train_setup import TrainSetup, with_overrides
from napkin.request import parse_request

HERE = Path(__file__).parent
# Fitted: the share of the best-case GEMM throughput (train_gemm_peak_fraction, by accelerator) that a
# training step's GEMMs reach, and the same share for the attention kernel. Two physical parameters,
# global, never one per point or per source.
FITTED = ("gemm_training_fraction", "attention_training_fraction")
FIT_GRID = {"gemm_training_fraction": tuple(round(0.50 + 0.025 * i, 3) for i in range(21)),  # 0.50 .. 1.00
            "attention_training_fraction": tuple(round(0.20 + 0.05 * i, 2) for i in range(17))}  # 0.20 .. 1.00
FAMILIES = {"a100-sxm-40gb": "ampere", "a100-sxm-80gb": "ampere", "a100-pcie-80gb": "ampere",
            "h100-sxm": "hopper", "h100-pcie": "hopper", "h200": "hopper", "h800": "hopper"}
# FlashAttention-2's best case by family (Dao 2023, arXiv:2307.08691, section 4: up to 230 TFLOPs/s on A100,
# "up to 335 TFLOPs/s" on H100 without Hopper instructions): for frameworks that ran FA2, not FA3/cuDNN.
FA2_EFFICIENCY = {"ampere": 230 / 312, "hopper": 335 / 989.4}
FIT_STEPS = 2  # the refinement looks this many grid steps each way on every axis
METRICS = ("iteration_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s_per_gpu", "layer_fwd_bwd_s",
           "peak_memory_bytes_per_gpu")
HDR_200G = 200e9 / 8  # one 200 Gb/s HDR InfiniBand NIC per GPU, one direction
# What each source's framework did beyond the degrees, as the publication or the framework's code states it;
# a key that is an id prefix (a source's own rows against its baseline's) wins over the source's.
SOURCE_FACTS: dict[str, dict[str, Any]] = {
    "narayanan-2021": {"flash": False, "dropout": True, "dp_overlap": 0.0, "scale_out_bandwidth": HDR_200G,
                       "why": "Megatron-LM of April 2021: fused scale-mask-softmax (no FlashAttention, 2022), "
                              "GPT-3's dropout 0.1, gradient all-reduce after the backward (overlap came in 2023); "
                              "Selene's DGX A100 nodes: eight 200 Gb/s HDR NICs (NVIDIA DGX A100 User Guide)"},
    "korthikanti-2022": {"flash": False, "dropout": True, "dp_overlap": 0.0, "scale_out_bandwidth": HDR_200G,
                         "why": "the same Megatron-LM (2022) on Selene: unfused softmax, dropout, no DP overlap"},
    "megascale-2024": {"flash": False, "dropout": True, "scale_out_bandwidth": HDR_200G,
                       "why": "the Megatron-LM baseline: GPT-3 175B configuration (dropout 0.1, no --use-flash-attn "
                              "stated); A100 nodes with 200 Gb/s per GPU"},
    "megascale-2024-megascale-": {"flash": True, "dropout": True, "attention_kernel": "fa2",
                                  "scale_out_bandwidth": HDR_200G,
                                  "why": "MegaScale's own rows: FlashAttention-2 (Jiang et al. 2024, section 3.1)"},
    "megatron-lm-readme-2024": {"flash": True, "dropout": True, "why": "Megatron-Core r0.8 with Transformer "
                                "Engine's fused attention; Megatron's default dropout 0.1 (arguments.py)"},
    "mosaicml-llm-foundry": {"flash": True, "dropout": False, "attention_kernel": "fa2",
                             "why": "llm-foundry MPT (2023): FlashAttention-2 or its Triton port (attn_impl "
                                    "flash/triton; FA3 came in 2024), attn_pdrop = resid_pdrop = 0; FSDP FULL_SHARD"},
    "llama3-2024": {"flash": True, "dropout": False, "why": "Llama 3 (section 3.3): FlashAttention, no dropout"},
    "torchtitan-2025": {"flash": True, "dropout": False, "attention_kernel": "fa2",
                        "why": "torchtitan: PyTorch SDPA, whose flash backend is FlashAttention-2; no dropout"},
}


@functools.cache
def points() -> list[dict[str, Any]]:
    """The measured points shipped with napkin (validation/training.toml)."""
    with open(HERE / "training.toml", "rb") as fh:
        return tomllib.load(fh)["point"]


def facts_of(point: dict[str, Any]) -> dict[str, Any]:
    """The SOURCE_FACTS entry of a point: its id's longest listed prefix, else its source's."""
    prefixes = [k for k in SOURCE_FACTS if point["id"].startswith(k)]
    return SOURCE_FACTS[max(prefixes, key=len)] if prefixes else SOURCE_FACTS.get(point["source"], {})


def model_of(point: dict[str, Any]) -> ModelSpec:
    if point.get("model_key"):
        return catalog.model(point["model_key"])
    cfg = dict(point["model_config"])
    return ModelSpec(name=point["model"], **cfg)


def _unstated(point: dict[str, Any], name: str) -> bool:
    return name in point.get("unstated", []) or not point.get(name)


@functools.cache
def _setup(pid: str) -> tuple[TrainSetup, Space, ModelSpec]:
    """The point's setup (sourced defaults and the source's facts) and what is left to search."""
    p = _by_id()[pid]
    facts = facts_of(p)
    m = model_of(p)
    precision = "fp8" if p["precision"] == "fp8" else "bf16"
    raw: dict[str, Any] = {"gpu": p["gpu"], "gpus": [p["gpus"]], "seq_len": p["seq_len"],
                           "global_batch": f"{p['global_batch']}seq", "batch_tolerance": 0.0, "precision": precision,
                           "flash": facts.get("flash", True), "dropout": facts.get("dropout", False),
                           "fused_swiglu": True, "usable": 1.0}
    if facts.get("scale_out_bandwidth"):
        raw["scale_out_bandwidth"] = facts["scale_out_bandwidth"]
    for k in ("tp", "pp", "cp", "ep", "dp"):
        if not _unstated(p, k):
            raw[k] = p[k]
    for k in ("micro_batch", "interleave"):
        if not _unstated(p, k):
            raw[k] = p[k]
    if not _unstated(p, "recompute"):
        raw["recompute"] = p["recompute"]
    if "zero" not in p.get("unstated", []):
        raw["zero"] = p["zero"]
    if "sequence_parallel" not in p.get("unstated", []):
        raw["sequence_parallel"] = bool(p["sequence_parallel"]) and (p["tp"] > 1 or _unstated(p, "tp"))
    S, _, _, space, _ = resolve(parse_request(PlanTrainRequest, raw), Report("validate"), model=m)
    if "dp_overlap" in facts:
        S = with_overrides(S, dp_overlap=facts["dp_overlap"])
    if facts.get("attention_kernel") == "fa2" and p["gpu"] in FAMILIES:
        S = with_overrides(S, attention_efficiency=FA2_EFFICIENCY[FAMILIES[p["gpu"]]])
    mbs = space.micro_batch if len(space.micro_batch) == 1 else tuple(sorted(set(MICRO_BATCHES) | {
        b for b in range(1, 65) if p["global_batch"] % b == 0}))
    space = Space(fixed=space.fixed, zero=space.zero, recompute=space.recompute, micro_batch=mbs,
                  interleave=space.interleave if len(space.interleave) == 1 else INTERLEAVES, sp=space.sp,
                  tp_beyond_domain=True)
    return S, space, m


def _choose(S: TrainSetup, space: Space, n_gpus: int) -> dict[str, Any]:
    """The stated configuration, with what is unstated chosen as the planner would: the fastest that fits
    (or, when the memory model says nothing fits a run that did run, the fastest). Its figures, as scalars."""
    from napkin.plan.train_search import degree_rows

    g = grid(degree_rows(S, n_gpus, space), space)
    e = evaluate(S, **g)
    ok = e["valid"] & e["fits"]
    if not ok.any():
        ok = e["valid"] | np.zeros_like(e["fits"])
    score = np.where(ok, e["step"] / e["config"]["batch"], np.inf)
    i = np.unravel_index(int(np.argmin(score)), score.shape)

    def at(x: Any) -> float:
        return float(np.broadcast_to(x, score.shape)[i])

    return {"config": {k: at(v) for k, v in e["config"].items()}, "step": at(e["step"]),
            "memory": at(e["memory"]["total"]), "parts": {k: at(v) for k, v in e["parts"].items()}}


_RUN_FIELDS = ("source", "model", "model_key", "gpu", "gpus", "precision", "seq_len", "global_batch", "micro_batch",
               "tp", "pp", "dp", "cp", "ep", "interleave", "sequence_parallel", "recompute", "zero", "framework")


def _run_key(point: dict[str, Any]) -> tuple:
    """Points that are figures of one run (its MFU and its tokens/s) share one evaluation."""
    return tuple(str(point.get(k)) for k in _RUN_FIELDS) + (str(sorted(point.get("unstated", []))),)


@functools.lru_cache(maxsize=65536)
def _run(pid: str, params: tuple) -> dict[str, Any]:
    S, space, _ = _setup(pid)
    if params:
        S = with_overrides(S, **dict(params))
    p = _by_id()[pid]
    return _choose(S, space, int(p["gpus"]))


@functools.cache
def _by_id() -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in points()}


@functools.cache
def _representative() -> dict[tuple, str]:
    out: dict[tuple, str] = {}
    for p in points():
        out.setdefault(_run_key(p), p["id"])
    return out


def model_flops_per_step(point: dict[str, Any], m: ModelSpec, batch: float, *, with_recompute: bool = False) -> float:
    """Model FLOPs of one step as the source counts them (its flops_convention)."""
    s, L = float(point["seq_len"]), float(m.n_layers)
    tokens = batch * s
    conv = point.get("flops_convention") or "6N"
    if conv == "megatron":  # Narayanan et al. 2021, eq. (3): with full recomputation, logits included
        h, V = float(m.d_model), float(m.vocab_size)
        return 96.0 * batch * s * L * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * L * h))
    n = float(point.get("model_params") or m.active_params)
    d_attn = float(m.n_heads * m.head_dim)
    attn = {"6N": 0.0, "causal": 6.0 * L * d_attn * s, "full": 12.0 * L * d_attn * s}[conv]
    flops = (6.0 * n + attn) * tokens
    if with_recompute:
        rc = point.get("recompute")
        flops += tokens * ((2.0 * n + attn / 3.0) if rc == "full" else (attn / 3.0 if rc == "selective" else 0.0))
    return flops


def defaults() -> dict[str, float]:
    """The fitted parameters as catalog/assumptions.toml holds them."""
    return {name: float(catalog.default_value(f"train_{name}")) for name in FITTED}


def predict(point: dict[str, Any], params: dict | None = None) -> float:
    """The predicted value of ``point``'s metric, in its units, from its stated configuration."""
    rep = _representative().get(_run_key(point), point["id"]) if point["id"] in _by_id() else point["id"]
    params = {k: float(v) for k, v in (params or {}).items()}
    run = _run(rep, tuple(sorted(params.items())))
    S, _, m = _setup(rep)
    c, step = run["config"], run["step"]
    batch, n = c["batch"], float(point["gpus"])
    metric = point["metric"]
    peak = catalog.gpu(point["gpu"]).peak("fp8" if point["precision"] == "fp8" else "bf16")
    if metric == "iteration_s":
        return step
    if metric in ("mfu", "hfu"):
        return model_flops_per_step(point, m, batch, with_recompute=metric == "hfu") / (step * n * peak)
    if metric == "tflops_per_gpu":
        return model_flops_per_step(point, m, batch) / (step * n)
    if metric == "tokens_per_s_per_gpu":
        return batch * float(point["seq_len"]) / step / n
    if metric == "layer_fwd_bwd_s":
        if params:
            S = with_overrides(S, **params)
        cfg = {k: np.asarray(v) for k, v in c.items()}
        per_layer_comm = run["parts"]["tp_comm"] / (c["m"] * float(P.stage_layers(S.n_layers, pp=c["pp"])))
        return float(layer_times(S, cfg)["layer"]) + per_layer_comm
    if metric == "peak_memory_bytes_per_gpu":
        return run["memory"]
    raise ValueError(f"metric {metric!r} is not one napkin predicts ({', '.join(METRICS)})")


def error(point: dict[str, Any], params: dict | None = None) -> float:
    """Signed relative error of the prediction: predicted / measured − 1."""
    return predict(point, params) / float(point["value"]) - 1.0


def _timing(point: dict[str, Any]) -> bool:
    return point["metric"] in ("iteration_s", "mfu", "tflops_per_gpu", "tokens_per_s_per_gpu")


def _objective(pts: list[dict[str, Any]], params: dict[str, float]) -> float:
    """The mean over sources of each source's median |log error|: every publication weighs the same,
    however many rows it printed."""
    by: dict[str, list[float]] = {}
    for p in pts:
        by.setdefault(p["source"], []).append(abs(math.log(predict(p, params) / float(p["value"]))))
    return float(np.mean([np.median(v) for v in by.values()])) if by else math.inf


def fit(pts: list[dict[str, Any]]) -> dict[str, float]:
    """FITTED on ``pts`` (their timing metrics), minimising the mean over sources of the median |log error|:
    every combination of a coarse grid (every fourth value of FIT_GRID), then moves to the best of the
    neighbours within FIT_STEPS grid steps on every axis at once, until none is better.

    Two physical parameters, each a share of a sourced figure (the GEMM throughput a whole training
    step reaches against the best-case GEMM, and the same for the attention kernel), never one per
    point. The two trade against each other, so the search moves on both axes together.
    """
    import itertools

    timed = [p for p in pts if _timing(p)]
    grids = [FIT_GRID[name] for name in FITTED]
    best, at = math.inf, tuple(0 for _ in FITTED)
    for idx in itertools.product(*[range(0, len(g), 4) for g in grids]):
        err = _objective(timed, {n: g[i] for n, g, i in zip(FITTED, grids, idx)})
        if err < best - 1e-12:
            best, at = err, idx
    while True:
        moves = itertools.product(*[range(max(i - FIT_STEPS, 0), min(i + FIT_STEPS, len(g) - 1) + 1)
                                    for i, g in zip(at, grids)])
        step = min(((_objective(timed, {n: g[i] for n, g, i in zip(FITTED, grids, idx)}), idx) for idx in moves))
        if step[0] >= best - 1e-12:
            return {n: g[i] for n, g, i in zip(FITTED, grids, at)}
        best, at = step


def leave_sources_out(pts: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Each point's error with FITTED fitted on the other sources' points (out of sample)."""
    pts = list(points() if pts is None else pts)
    out = []
    for src in sorted({p["source"] for p in pts}):
        params = fit([p for p in pts if p["source"] != src])
        for p in pts:
            if p["source"] == src:
                out.append({"id": p["id"], "source": src, "metric": p["metric"], "measured": float(p["value"]),
                            "predicted": predict(p, params), "params": params})
    for row in out:
        row["error"] = row["predicted"] / row["measured"] - 1.0
    return out


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median and max |error| by (source, metric), and over every timing point (iteration time, MFU,
    TFLOP/s, tokens/s: one step time each)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        groups.setdefault((r["source"], r["metric"]), []).append(abs(r["error"]))
        if r["metric"] in ("iteration_s", "mfu", "tflops_per_gpu", "tokens_per_s_per_gpu"):
            groups.setdefault(("all", "timing"), []).append(abs(r["error"]))
    return [{"source": s, "metric": m, "n": len(v), "median_abs_error": float(np.median(v)),
             "max_abs_error": float(np.max(v))} for (s, m), v in sorted(groups.items())]


if __name__ == "__main__":  # pragma: no cover - the table of the report
    for g in summary(leave_sources_out()):
        print(f"{g['source']:<26} {g['metric']:<27} n={g['n']:<4} median {g['median_abs_error']:6.1%}  "
              f"max {g['max_abs_error']:7.1%}")
