"""Rung 2, the weights: the parameters, their bytes, whether they and this request's KV cache fit the
node (if not, the journey goes on with the GPUs it takes), the load from disk and the node's rent."""

from __future__ import annotations

import math

from napkin import units
from napkin.calculators import resolve
from napkin.calculators.steps import kv_held
from napkin.derivation import Report
from napkin.formulas import memory as mem
from napkin.hardware import bytes_per_value

from .walk import Trip, Walk


def parameters(r: Report, t: Trip) -> None:
    """N (given, or from the architecture), the active count of an MoE, and the weights' bytes."""
    req, m = t.req, t.m
    if req.params is not None:
        t.n_total = t.n_active = req.params
        r.set("params", t.n_total, "count")
        if abs(req.params - m.params) / m.params > 0.01:
            r.warn("params-mismatch", f"--params {req.params:.4g} differs from {m.name}'s computed "
                                      f"{m.params:.4g}; using --params")
        elif req.params != m.params:
            r.note(f"N = {units.format(req.params, 'count')} given; the architecture gives "
                   f"{units.format(m.params, 'count')}")
    else:
        t.n_total, t.n_active = m.params, m.active_params
        r.step("params", "embedding + lm_head + attention + mlp + norms, from the architecture", value=t.n_total,
               unit="count")
        if m.published_params:
            r.note(f"published: {units.format(m.published_params, 'count')} ({m.params_source or m.source})")
    if m.is_moe and req.params is None:
        r.step("active_params", f"params with {m.n_active_experts} of {m.n_experts} routed experts per token",
               value=t.n_active, unit="count")
        r.note("mixture of experts: memory holds every expert, but each token computes with the active ones")
    t.bytes_per_param = b = bytes_per_value(req.precision, "precision")
    r.set("bytes_per_param", b, "number")
    t.weights = r.step("weights_bytes", "N · bytes_per_param", value=mem.weights_bytes(t.n_total, bytes_per_param=b),
                       unit="bytes", N=(t.n_total, "count"), bytes_per_param=b, precision=req.precision,
                       cites=mem.weights_bytes)
    t.active_weights = mem.weights_bytes(t.n_active, bytes_per_param=b)
    if req.params is None and b < 2:
        served = mem.served_weights_bytes(t.n_total, n_embedding_head=m.embedding_head_params(), bytes_per_param=b)
        r.note(f"the napkin rule: every weight at {req.precision}; an engine keeps the embedding and the LM head at 16 "
               f"bits, {units.format(served - t.weights, 'bytes')} more, which `napkin serve` counts")
    t.kv_bytes_per_value = bytes_per_value(req.kv_precision, "kv_precision")


def fit(r: Report, t: Trip) -> float:
    """The node's memory against the weights and this request's KV; the GPUs it takes when they do not fit."""
    req, m, g = t.req, t.m, t.g
    kv_tok_value = m.kv_bytes_per_token(t.kv_bytes_per_value)
    r.set("memory_bytes_per_gpu", g.memory_bytes, "bytes")
    capacity = r.step("capacity_bytes", "gpus · memory_per_gpu", value=t.n_gpus * g.memory_bytes, unit="bytes",
                      gpus=t.n_gpus, memory_per_gpu=(g.memory_bytes, "bytes"))
    held, held_expr = kv_held(r, m, t.context, "(prompt + output)")  # a sliding window caps the cache
    needed = r.step("needed_bytes", f"weights + kv_bytes_per_token · {held_expr}",
                    value=t.weights + kv_tok_value * held, unit="bytes", weights=(t.weights, "bytes"),
                    kv_bytes_per_token=(kv_tok_value, "bytes"), tokens=(t.context, "count"))
    fits = needed <= capacity
    r.set("fits", fits)
    if not fits:
        need = int(math.ceil(needed / g.memory_bytes - 1e-12))
        r.step("gpus_needed", "ceil(needed_bytes / memory_per_gpu)", value=need, unit="count",
               needed_bytes=(needed, "bytes"), memory_per_gpu=(g.memory_bytes, "bytes"))
        r.step("short_by_bytes", "needed − capacity", value=needed - capacity, unit="bytes")
        r.warn("does-not-fit", f"{m.name} at {req.precision} needs {units.format(needed, 'bytes')} for weights and "
                               f"this request's KV cache; {t.n_gpus} × {g.name} hold "
                               f"{units.format(capacity, 'bytes')}. It takes at least {need} GPUs; the rest of the "
                               f"journey runs on {need}")
        t.n_gpus, t.grown = need, True
        pow2 = 1 << (need - 1).bit_length()
        if pow2 != need:
            r.note(f"tensor parallelism splits the {m.n_heads} heads evenly, so a real deployment rounds {need} GPUs "
                   f"up to {pow2}")
        capacity = r.step("capacity_bytes_used", "gpus_needed · memory_per_gpu", value=t.n_gpus * g.memory_bytes,
                          unit="bytes")
    return capacity


def weights(walk: Walk, t: Trip) -> None:
    req = t.req
    r = walk.start("weights")
    parameters(r, t)
    capacity = fit(r, t)
    r.set("gpus_used", t.n_gpus, "count")
    r.step("weights_bytes_per_gpu", "weights_bytes / gpus", value=t.weights / t.n_gpus, unit="bytes",
           gpus=t.n_gpus)
    t.free = r.step("free_bytes", "capacity − weights  (for the KV cache and activations)",
                    value=capacity - t.weights, unit="bytes")
    resolve.assume_field(r, "disk_bandwidth", req, "disk_bandwidth_bytes_per_s")
    r.step("load_s", "weights_bytes / disk_bandwidth", value=t.weights / req.disk_bandwidth, unit="seconds",
           disk_bandwidth=(req.disk_bandwidth, "bytes_per_s"))
    resolve.assume_field(r, "usd_per_gpu_hour", req, "journey_usd_per_gpu_hour")
    t.node_usd_per_hour = r.step("node_usd_per_hour", "gpus · usd_per_gpu_hour  (paid whether it answers or idles)",
                                 value=t.n_gpus * req.usd_per_gpu_hour, unit="usd_per_hour", gpus=t.n_gpus,
                                 usd_per_gpu_hour=(req.usd_per_gpu_hour, "usd_per_hour"))
    r.note("weights are loaded once and stay resident: numbers sitting still compute nothing")
    walk.close("weights", r, 0.0)
