"""Predict a published serving measurement with `napkin serve`, run as the engine ran it.

Each point of serving.toml is turned into a serve request: its model, accelerator, replica
layout, precisions, lengths and batch, with the scheduler, token budget, concurrency cap and
memory fraction of its engine's profile (engines.toml). The prediction is what the serve
calculator answers, through the registry: the same code path a user's question takes.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from typing import Any

from napkin.validation import HERE

GROUPS = {"output_tokens_per_s": "throughput", "total_tokens_per_s": "throughput", "requests_per_s": "throughput",
          "tpot_s": "tpot", "itl_s": "tpot", "ttft_s": "ttft", "e2e_latency_s": "latency"}


@dataclass(frozen=True)
class Outcome:
    """A point's prediction, or why it is not modelled."""

    value: float | None
    reason: str = ""
    batch: int = 0  # sequences in flight on one replica in napkin's model of the run


@functools.cache
def points() -> list[dict]:
    with open(HERE / "serving.toml", "rb") as fh:
        return tomllib.load(fh)["point"]


@functools.cache
def profiles() -> dict[str, dict]:
    with open(HERE / "engines.toml", "rb") as fh:
        return tomllib.load(fh)["profile"]


def profile_of(p: dict) -> tuple[str, dict] | None:
    """The engine profile whose (engine, version prefix, scenario) matches the point."""
    for name, prof in profiles().items():
        for engine, version, scenario in prof["match"]:
            if (engine == p["engine"] and p["engine_version"].startswith(version)
                    and (version or not p["engine_version"]) and scenario in ("*", p["scenario"])):
                return name, prof
    return None


def why_not(p: dict) -> str:
    """Why a point cannot be predicted from what its source states ('' when it can)."""
    if not p.get("model_key"):
        return "the model is not in the catalog"
    if not p.get("gpu"):
        return "the accelerator is not in the catalog"
    if not p["input_tokens"] or not p["output_tokens"]:
        return "the source publishes no mean input length for its dataset"
    if not p["tp"]:
        return "the source does not state the parallel layout"
    if p.get("attention_dp") and p["gpus"] > 1 and not p.get("ep"):
        return "attention data parallelism with an expert-parallel degree the source does not state"
    if p["metric"] not in GROUPS:
        return f"metric {p['metric']} is not predicted"
    if profile_of(p) is None:
        return f"no documented scheduler profile for {p['engine']} {p['engine_version'] or '(version not stated)'}" \
               f" in its {p['scenario']} scenario"
    if p["scheduling"] == "static" and not p["batch"]:
        return "a static batch of unstated size"
    return ""


def request_of(p: dict, prof: dict) -> dict[str, Any]:
    """The serve request that reproduces the point's run (batch to be completed by ``predict``)."""
    tp, pp = p["tp"], p.get("pp") or 1
    raw: dict[str, Any] = {
        "model": p["model_key"], "gpu": p["gpu"], "gpus": tp * pp, "tp": tp, "precision": p["precision"],
        "kv_precision": p.get("kv_precision", p["precision"]), "prompt": float(p["input_tokens"]),
        "output": float(p["output_tokens"]),
        "scheduling": "static" if p["scheduling"] == "static" else prof["scheduling"]}
    if "kv_free_fraction" in prof:
        raw["kv_free_fraction"] = prof["kv_free_fraction"]
    else:
        raw["usable"] = prof["usable"]
    host = prof.get("host_per_request", {}).get(p["gpu"])
    if host and not p.get("request_rate") and not (p["scenario"] == "server" and prof.get("arrivals") == "poisson"):
        raw["host_per_request"] = host
    if p.get("mlp_precision"):
        raw["mlp_precision"] = p["mlp_precision"]
    return raw


_RUNS: dict[tuple, Any] = {}


def _run(serve: Any, raw: dict, keep: bool = True) -> Any:
    """The serve report for ``raw`` under the current fitted parameters (points of one run share it); with
    ``keep=False`` a run not yet held is made and not held (a pass over other parameters than the folds')."""
    from napkin.catalog import efficiency as eff

    f = eff.fitted()
    key = (tuple(sorted(raw.items())), *f.values().values())
    if key in _RUNS:
        return _RUNS[key]
    out = serve.run(serve.request(**raw))
    if keep:
        if len(_RUNS) > 4096:
            _RUNS.clear()
        _RUNS[key] = out
    return out


def predict(p: dict, *, keep: bool = True) -> Outcome:
    """The serve calculator's answer for the point's metric, in its units (whole system unless per GPU); ``keep``:
    whether the runs it makes are held for the next call (see _run)."""
    from napkin import calculators

    reason = why_not(p)
    if reason:
        return Outcome(None, reason)
    _, prof = profile_of(p)  # type: ignore[misc]
    serve = calculators.get("serve")
    raw = request_of(p, prof)
    chunk = prof.get("chunk")

    def step_tokens(batch: int) -> dict:  # the engine's token budget, which also sizes its buffers
        if chunk is None:
            return {}
        return {"chunk": int(raw["prompt"] + batch) if chunk == "prompt+batch" else int(chunk)}

    batch = int(p["batch"])
    if not batch:
        batch = 1
        for _ in range(2):  # a budget of prompt + batch tokens sizes buffers that bound the batch: settle it
            probe = _run(serve, {**raw, "batch": 1, **step_tokens(batch)}, keep)
            batch = int(min(prof.get("max_sequences", 4096), probe["max_batch"]))
            if batch < 1:
                return Outcome(None, "the weights do not fit the replica at the engine's memory fraction")
    raw.update(batch=batch, **step_tokens(batch))
    if p.get("request_rate") or (p["scenario"] == "server" and prof.get("arrivals") == "poisson"):
        out = _under_load(serve, raw, p, prof, keep)
        return Outcome(out.value, out.reason, batch)
    return Outcome(_metric(_run(serve, raw, keep), p), batch=batch)


SIMULATED = 600  # requests per simulated run (the first tenth warm-up): enough for a mean or a median


def _under_load(serve: Any, raw: dict, p: dict, prof: dict, keep: bool = True) -> Outcome:
    n = int(prof.get("requests", SIMULATED))
    rate = p.get("request_rate")
    if rate is None:  # all requests at once (QPS INF): arrivals far faster than the replica
        rate = 1e6
    raw.update(rate=rate / (p["gpus"] // raw["gpus"]), requests=n)
    r = _run(serve, raw, keep)
    stat = "p50" if p.get("statistic") == "median" else "mean"
    if p["metric"] == "output_tokens_per_s":
        v = r["achieved_tokens_per_s"] * (p["gpus"] // raw["gpus"])
        return Outcome(v / p["gpus"] if p.get("per") == "gpu" else v)
    key = {"ttft_s": "ttft", "tpot_s": "tpot", "itl_s": "tpot", "e2e_latency_s": "latency"}.get(p["metric"])
    if key is None:
        return Outcome(None, f"metric {p['metric']} is not simulated")
    return Outcome(float(r[f"{key}_{stat}_s"]))


def _metric(r: Any, p: dict) -> float:
    replicas = p["gpus"] // ((p.get("pp") or 1) * p["tp"])
    m = p["metric"]
    if m == "output_tokens_per_s":
        v = r["tokens_per_s"] * replicas
        return v / p["gpus"] if p.get("per") == "gpu" else v
    if m == "total_tokens_per_s":
        return r["tokens_per_s"] * (1 + p["input_tokens"] / p["output_tokens"]) * replicas
    if m == "requests_per_s":
        return r["requests_per_s"] * replicas
    if m in ("tpot_s", "itl_s"):
        return float(r["tpot_s"])
    if m == "ttft_s":
        return float(r["ttft_s"])
    return float(r["request_latency_s"])
