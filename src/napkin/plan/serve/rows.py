"""The cells a plan prints, as Python objects: only they (the ranking, the front) become dicts; the
cloud of every fitting configuration is handed over lazily (Points)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from napkin.formulas import operators as op
from napkin.formulas.binding import BINDING, binding
from napkin.formulas import serving as sv
from napkin.hardware import bytes_per_value

from . import grid as gr
from .hardware import columns, ring_bus, ring_latency, rows_of
from .request import PlanServeRequest, _scale_out
from .select import cost

HOST = len(BINDING)  # the class past BINDING's: the host binds (--host-per-request)


def cells(req: PlanServeRequest, g: gr.Grid, flat: Any) -> dict[str, Any]:
    """The figures of the cells at grid flat indices ``flat`` (1-d arrays, one entry per cell)."""
    import numpy as np

    ax = g.axes
    h, p, i, j, k = np.unravel_index(np.asarray(flat, dtype=np.int64), ax.shape)
    pairs = np.array(ax.pairs, dtype=float).reshape(-1, 2)
    n, t = pairs[p, 0], pairs[p, 1]
    H = columns(ax.hw, 1)
    out = {"flat": np.asarray(flat), "hw": h, "pair": p, "gpus": n, "tp": t, "pp": np.maximum(n / t, 1.0),
           "prompt": ax.prompt[i], "output": ax.output[j], "batch": ax.batch[k],
           "tpot": g.tpot.reshape(-1)[flat], "ttft": g.ttft.reshape(-1)[flat], "tps": g.tps.reshape(-1)[flat],
           "price": H["price"][h], "domain": H["domain"][h], "link": H["link"][h],
           "host_link": H["host_link"][h], "host_domain": H["host_domain"][h]}
    out.update(cost(req, tps=out["tps"], n=n, price=out["price"], output=out["output"]))
    out["beyond"] = (t > out["domain"]) & (_link(req, out) < out["link"])
    return out


def _link(req: PlanServeRequest, c: dict[str, Any]) -> Any:
    return sv.tp_link_bytes_per_s(c["tp"], scale_up_domain=c["domain"], link_bytes_per_s_per_direction=c["link"],
                                  scale_out_bytes_per_s_per_gpu=_scale_out(req),
                                  host_link_bytes_per_s_per_direction=c["host_link"], host_link_domain=c["host_domain"])


def detail(req: PlanServeRequest, g: gr.Grid, c: dict[str, Any]) -> dict[str, Any]:
    """These cells' steady state again, with its parts: the operators' memory, compute and all-reduce time
    (what binds), the decode step alone, and the prompt's chunk step."""
    import numpy as np

    H = columns(g.axes.hw, 1)
    h = c["hw"]
    curve = None if H["curve"] is None else np.where((H["domain"][h] >= c["tp"])[..., None], H["curve"][h], np.nan)
    rated = {k[5:]: rows_of(v, h) for k, v in H.items() if k.startswith("rate_")}
    raw = _link(req, c)
    rated["allreduce_latency_s"] = ring_latency(req, H, h, c["tp"], raw, rated["allreduce_latency_s"])
    rates = op.Rates(**rated, link_bytes_per_s=raw * ring_bus(H, h, c["tp"], raw), allreduce_curve=curve)
    m = g.model
    shapes = m.layer_shapes(c["tp"], kv_bytes_per_value=bytes_per_value(req.kv_precision, "kv_precision"),
                            bytes_per_weight=H["b_w"][h])
    f = gr.steady_state(m, prompt=c["prompt"], output=c["output"], chunk=req.chunk, rates=rates, shapes=shapes,
                        t=c["tp"], pp=c["pp"], B=c["batch"], prefix=np.minimum(req.cached_prefix, c["prompt"] - 1),
                        host=req.host_per_request)
    # what binds: the decode step of the whole batch at the mean context, classed as `napkin serve` classes it
    b = sv.microbatch(c["batch"], pp=c["pp"])
    held = m.kv_held_tokens(c["prompt"] + c["output"] / 2.0)
    ops = op.step_operators(b, kv_tokens=b * held, prefill_pairs=0.0 * b, logits=b, shapes=shapes, rates=rates,
                            tp=c["tp"])
    f["binding"] = binding(ops)
    if req.host_per_request:  # the host's work for the batch outlasts the GPU's step: `napkin serve` says host
        f["binding"] = np.where(req.host_per_request * b > op.total_seconds(ops), HOST, f["binding"])
    return {k: np.broadcast_to(v, h.shape) for k, v in f.items()}


def bounds(req: PlanServeRequest, g: gr.Grid, c: dict[str, Any], *, as_arrays: bool = False) -> Any:
    """What binds each cell's decode step (bandwidth, compute, communication or fixed costs), as `napkin serve`
    says it for the same configuration (formulas.binding); as arrays: (communication, compute) masks."""
    if not len(c["flat"]) and not as_arrays:
        return []
    cls = detail(req, g, c)["binding"]
    if as_arrays:
        return cls == BINDING.index("communication"), cls == BINDING.index("compute")
    return [(*BINDING, "host")[int(k)] for k in cls]


def row(g: gr.Grid, c: dict[str, Any], i: int, bound: str, *, at_load: bool = True, axes: bool = False) -> dict:
    """One configuration's figures at one operating point, the same for every column: at the target
    load (the ranking: TPOT with the prompt chunks of the requests each replica takes, tokens/s per GPU
    what each GPU delivers) or at capacity (the Pareto front: the steady state of its batch, so
    tokens/s per GPU = decoding sequences / TPOT / GPUs)."""
    h = g.axes.hw[int(c["hw"][i])]
    n, reps = float(c["gpus"][i]), float(c["replicas"][i])
    tpot = float(c["tpot"][i])
    usd = float(c["usd"][i])
    out: dict[str, Any] = {"gpu": h["key"], "precision": h["precision"], "gpus": int(n), "tp": int(c["tp"][i]),
                           "pp": int(c["pp"][i]), "batch": int(c["batch"][i])}
    if axes:
        out.update(prompt=float(c["prompt"][i]), output=float(c["output"][i]))
    per_gpu = float(c["per_gpu"][i]) if at_load else float(c["tps"][i] / n)
    out.update({"replicas": int(reps), "total_gpus": int(reps * n), "ttft_s": float(c["ttft"][i]), "tpot_s": tpot,
                "tokens_per_s_per_gpu": per_gpu, "tokens_per_s_per_user": 1.0 / tpot,
                "operating_point": "target load" if at_load else "capacity",
                "tp_beyond_scale_up": bool(c["beyond"][i]),
                "fleet_usd_per_hour": float(c["fleet"][i]) if not math.isnan(usd) else None,
                "usd_per_million_tokens_all_in": usd if not math.isnan(usd) else None, "bound": bound})
    return out


class Points(Sequence):
    """Every configuration that fits, as {gpu, tokens_per_s_per_user, tokens_per_s_per_gpu}: made into
    dicts only when read (``to_dict()``, iteration, an index), since a big grid holds millions."""

    def __init__(self, g: gr.Grid):
        self._g = g
        self._rows: list[dict] | None = None

    def __len__(self) -> int:
        return int(self._g.counts["fitting"])

    def _materialise(self) -> list[dict]:
        if self._rows is None:
            import numpy as np

            g = self._g
            fit = np.flatnonzero(g.status.reshape(-1) >= gr.FITS)
            n = np.array(g.axes.pairs, dtype=float).reshape(-1, 2)[:, 0]
            h, p = np.unravel_index(fit, g.axes.shape)[:2]
            x = 1.0 / g.tpot.reshape(-1)[fit]
            y = g.tps.reshape(-1)[fit] / n[p]
            keys = [hw["key"] for hw in g.axes.hw]
            self._rows = [{"gpu": keys[a], "tokens_per_s_per_user": float(b), "tokens_per_s_per_gpu": float(d)}
                          for a, b, d in zip(h.tolist(), x.tolist(), y.tolist())]
        return self._rows

    def __getitem__(self, i: Any) -> Any:
        return self._materialise()[i]

    def __iter__(self) -> Any:
        return iter(self._materialise())

    def to_dict(self) -> list[dict]:
        return self._materialise()

    def __repr__(self) -> str:
        return f"<{len(self):,} configurations that fit: tokens/s per user and per GPU (.to_dict() lists them)>"

    __str__ = __repr__
