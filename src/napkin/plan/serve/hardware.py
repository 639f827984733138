"""The hardware axis of the grid: one row per (GPU, precision) with its peak, bandwidth, link,
price and the operator model's rates (resolved once per row, in the shared layer)."""

from __future__ import annotations

import math
from typing import Any

from napkin import catalog, units
from napkin.catalog import efficiency as eff
from napkin.calculators import replica as rep
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.hardware import bytes_per_value

from .request import PlanServeRequest

# the hardware columns the grid broadcasts (besides the operator model's rates, "rate_*")
COLUMNS = ("peak", "bw", "mem", "link", "b_w", "price", "domain", "allreduce_bus", "host_link", "host_domain",
           "pcie")


ALL = "all"  # --price all=2.50/h (or a lone --price 2.50/h): one price for every GPU searched, as compare takes it


def prices(req: PlanServeRequest, r: Report | None = None) -> dict[str, float]:
    """--price by catalog key; a key naming a GPU not searched, or one GPU twice (through an alias), is an error.
    A lone price prices every GPU searched without one of its own (with ``r``: a warning when that is several)."""
    searched = {catalog.gpu(name).key: name for name in req.gpu}
    out: dict[str, float] = {}
    given: dict[str, str] = {}
    every = next((v for k, v in req.price.items() if k.strip().lower() == ALL), None)
    for k, v in req.price.items():
        if k.strip().lower() == ALL:
            continue
        g = catalog.gpu(k, "price")
        pair = f"{k}={v:g}"
        if g.key in out:
            raise InputError("price", pair, f"has the {g.name} twice (also as {given[g.key]})",
                             f"give one price for {g.key}")
        if g.key not in searched:
            raise InputError("price", pair, f"is for the {g.name}, which is not among the GPUs searched "
                                            f"({', '.join(searched)})",
                             f"add {g.key} to --gpu or drop its price")
        out[g.key] = v
        given[g.key] = pair
    if every is not None:
        rest = [k for k in searched if k not in out]
        out.update(dict.fromkeys(rest, every))
        if len(rest) > 1 and r is not None:
            r.warn("one-price-for-all", f"--price {units.format(every, 'usd_per_hour')} is applied to "
                                        f"{', '.join(rest)}: they rent at different prices; give --price NAME=$/H for "
                                        "each, or none for each GPU's catalog price")
    return out


def hardware_rows(req: PlanServeRequest, r: Report) -> list[dict]:
    """One row per (GPU, precision) with its peak, bandwidth, link, price and the operator model's rates."""
    priced = prices(req, r)
    given = rep.Given(gemm=req.gemm_efficiency, bandwidth=req.bandwidth_efficiency,
                      allreduce_latency_s=req.allreduce_latency)
    rows = []
    for name in req.gpu:
        g = catalog.gpu(name)
        price = priced.get(g.key)
        if price is None:
            listed = catalog.gpu_hour_price(g.key)
            if listed is not None:
                price = listed.usd_per_gpu_hour
                # basis "reference": a dated list price stood in for the user's, so the footer's assumed: line shows it
                r.assume(f"price[{g.key}]", price, f"catalog list price of {listed.date}: pass --price "
                                                   f"{g.key}=X for yours", unit="usd_per_hour", basis="reference",
                         source=listed.source)
                resolve.warn_if_stale_price(r, listed, f"the {g.name}")
            else:
                r.note(f"no price for the {g.name}: its configurations are listed by throughput but not ranked by cost")
        for p in req.precision:
            cp = resolve.compute_precision(g, p)
            if cp is None:
                r.note(f"the {g.name} has no compute path for {p} weights: skipped")
                continue
            link = g.link_bytes_per_s_per_direction
            e = rep.efficiencies(g, cp, given=given)
            rates = rep.rates(g, e, compute_precision=cp)
            rows.append({"key": g.key, "name": g.name, "precision": p, "compute_precision": cp,
                         "peak": g.peak(cp), "bw": g.memory_bytes_per_s, "mem": rep.memory_capacity_bytes(g),
                         "link": link if link else math.inf, "has_link": link is not None,
                         "domain": g.scale_up_domain, "allreduce_bus": e.allreduce_bus, "pcie": g.link_over_pcie,
                         "host_link": g.host_link_bytes_per_s_per_direction or math.inf,
                         "host_domain": g.host_link_domain or 0,
                         "b_w": bytes_per_value(p), "price": price if price is not None else math.nan,
                         "curve": e.allreduce_curve,
                         **{f"rate_{k}": v for k, v in rates._asdict().items()
                            if k not in ("link_bytes_per_s", "allreduce_curve")}})
    if not rows:
        raise InputError("gpu", ",".join(req.gpu), "leaves nothing to search", "give GPUs that support the precision")
    return rows


def columns(hw: list[dict], ndim: int) -> dict[str, Any]:
    """The hardware columns as arrays of shape (hardware, 1, ..., 1): ``ndim`` axes in all. A rate every
    row shares (the fitted fixed costs, the GEMM shape curve) is a plain number, so the operators'
    terms that depend on nothing else stay off the grid's full shape."""
    import numpy as np

    keys = list(COLUMNS) + [k for k in hw[0] if k.startswith("rate_")]
    shape = (len(hw),) + (1,) * (ndim - 1)
    out: dict[str, Any] = {}
    for k in keys:
        values = [float(h[k]) for h in hw]
        shared = k.startswith("rate_") and len(set(values)) == 1
        out[k] = values[0] if shared else np.array(values, dtype=float).reshape(shape)
    out["curve"] = None  # each row's measured all-reduce sweep (a last axis of sizes; NaN: none published)
    if any(h.get("curve") for h in hw):
        n = len(next(h["curve"] for h in hw if h.get("curve")))
        rows = [h["curve"] if h.get("curve") else (math.nan,) * n for h in hw]
        out["curve"] = np.array(rows, dtype=float).reshape(shape + (n,))
    return out


def over_pcie(H: dict[str, Any], rows: Any, tp: Any, link: Any) -> Any:
    """Whether each row's TP ring runs over PCIe, as `napkin serve` takes it (calculators.pcie_ring.over_pcie): cards with no
    NVLink, or bridged cards beyond their pair."""
    import numpy as np

    host = np.asarray(rows_of(H["host_link"], rows))
    bridged = (tp > np.asarray(rows_of(H["domain"], rows))) & np.isfinite(host) & (
        link == np.minimum(host, np.asarray(rows_of(H["link"], rows))))
    return bridged | ((tp > 1) & np.asarray(rows_of(H["pcie"], rows), dtype=bool))


def ring_bus(H: dict[str, Any], rows: Any, tp: Any, link: Any) -> Any:
    """The fraction of each row's TP link its ring reaches: the family's on its scale-up link, PCIe's fitted one
    where the ring runs over PCIe."""
    import numpy as np

    return np.where(over_pcie(H, rows, tp, link), eff.fitted().pcie_allreduce_bus, rows_of(H["allreduce_bus"], rows))


def ring_latency(req: PlanServeRequest, H: dict[str, Any], rows: Any, tp: Any, link: Any, latency: Any) -> Any:
    """Each row's all-reduce fixed time: 2(n − 1) ring steps at PCIe's measured step time where the ring runs over
    PCIe (formulas.comm.ring_latency_seconds, as replica.pcie_ring_latency), ``latency`` (the row's) elsewhere or
    where --allreduce-latency gives it."""
    import numpy as np

    from napkin.formulas.comm import ring_latency_seconds

    if req.allreduce_latency is not None:
        return latency
    pcie = ring_latency_seconds(np.asarray(tp, dtype=float), hop_latency_s=eff.pcie().hop_latency_s)
    return np.where(over_pcie(H, rows, tp, link), pcie, latency)


def curve_at(H: dict[str, Any], rows: Any, tp: int) -> Any:
    """The rows' all-reduce sweeps for a TP group of ``tp`` (NaN where it leaves the scale-up domain, whose
    sweep it is; None when no row has one or nothing is all-reduced)."""
    import numpy as np

    curve = H.get("curve")
    if curve is None or tp == 1:
        return None
    inside = np.asarray(rows_of(H["domain"], rows)) >= tp
    c = np.where(inside[..., None], rows_of(curve, rows), np.nan)
    flat = c.reshape(-1, c.shape[-1])
    return None if np.isnan(flat).all() else c


def rows_of(v: Any, rows: Any) -> Any:
    """A hardware column at some rows (a shared rate is the same number at every row)."""
    return v[rows] if hasattr(v, "shape") else v
