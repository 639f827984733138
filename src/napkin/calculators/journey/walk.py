"""The walk: each rung is a Report of its own, closed into the journey's report with its working,
and a meter that adds the FLOPs each rung spends. ``Trip`` carries what later rungs need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from napkin import units
from napkin.derivation import Report, Step
from napkin.hardware import Accelerator
from napkin.model import ModelSpec

from .request import RUNG_TITLES, JourneyRequest


@dataclass
class Trip:
    """One prompt's figures as the rungs earn them (each rung fills its own)."""

    req: JourneyRequest
    m: ModelSpec
    g: Accelerator
    n_gpus: int
    grown: bool = False  # n_gpus was raised to what the weights and the KV cache need (its rounding is noted)
    prompt_tokens: int = 0
    n_total: float = 0.0
    n_active: float = 0.0
    bytes_per_param: float = 0.0
    kv_bytes_per_value: float = 0.0
    weights: float = 0.0
    active_weights: float = 0.0
    free: float = 0.0
    node_usd_per_hour: float = 0.0
    peak: float = 0.0
    node_peak: float = 0.0
    node_bw: float = 0.0
    ridge: float = 0.0
    flops_per_token: float = 0.0
    effective_flops_per_s: float = 0.0
    prefill_flops: float = 0.0
    prefill_s: float = 0.0
    kv_bytes_per_token: float = 0.0
    decode_flops: float = 0.0
    answer_s: float = 0.0
    batch_tokens_per_s: float = 0.0
    replica: Any = None  # napkin.calculators.replica.Replica: the node as one tensor-parallel group
    prefill_pairs: float = 0.0  # causal query-key pairs of the prompt's prefill, per layer
    held_avg: float = 0.0  # tokens' worth of KV a sequence holds at the answer's mean context

    @property
    def context(self) -> int:
        """Tokens one sequence holds at the end of the answer."""
        return self.prompt_tokens + self.req.output_tokens


def _fmt_sub(v: Any) -> str:
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], (str, type(None))):
        return units.fmt_auto(v[0], v[1])
    return units.fmt_auto(v, None)


def working(step: Step) -> str:
    """``formula   [x = 1, y = 2]``: a step without its name and result."""
    subs = ", ".join(f"{k} = {_fmt_sub(v)}" for k, v in step.values.items())
    return step.formula + (f"   [{subs}]" if subs else "")


class Walk:
    """Collects rungs into the top report and keeps the meter."""

    def __init__(self, report: Report):
        self.report = report
        self.rungs: list[dict] = []
        self.meter = 0.0

    def start(self, key: str) -> Report:
        return Report(RUNG_TITLES[key], command="journey")

    def close(self, key: str, r: Report, rung_flops: float) -> None:
        self.meter += rung_flops
        by_name = {s.name: s for s in r.steps}
        figures, kinds, work = {}, {}, {}
        for k, v in r.results.items():
            figures[k] = v
            kinds[k] = r.units.get(k)
            if k in by_name:
                work[k] = working(by_name[k])
        derivation = []
        for s in r.steps:
            d = s.to_dict()
            d["text"] = s.text()
            d["working"] = working(s)
            derivation.append(d)
        self.rungs.append({
            "n": len(self.rungs) + 1, "key": key, "title": RUNG_TITLES[key],
            "flops": rung_flops, "meter_flops": self.meter,
            "figures": figures, "units": kinds, "working": work,
            "derivation": derivation, "notes": list(r.notes),
        })
        self.report.merge(r)
        for k, v in r.results.items():
            self.report.set(k, v, r.units.get(k))
