"""From a PlanTrainRequest to what the search holds fixed (TrainSetup) and what it varies (Space).

Every input not given comes from the catalogs or from catalog/assumptions.toml and is
recorded in the report with its source.
"""

from __future__ import annotations

import math
from typing import Any

from napkin import catalog, units
from napkin.calculators.resolve import assume_default, warn_if_stale_price
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import flops as F
from napkin.model import ModelSpec
from napkin.plan.train_request import RECOMPUTE_CHOICES, PlanTrainRequest
from napkin.plan.train_search import INTERLEAVES, MICRO_BATCHES, Space
from napkin.plan.train_setup import (
    WEIGHT_BYTES, TrainSetup, geometry, global_batch_seqs, hand_model, optimizer_bytes, resolve_efficiency,
)

HAND_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "gated_mlp", "experts", "top_k",
               "expert_ffn")


def model_of(req: PlanTrainRequest) -> ModelSpec:
    """The catalog model or config.json, or one built from --layers/--hidden/--heads."""
    by_hand = [f for f in HAND_FIELDS if getattr(req, f) is not None]
    if req.model:
        if by_hand:
            raise InputError(by_hand[0], getattr(req, by_hand[0]), f"is not used beside --model {req.model}",
                             "give the model by name or by its shape, not both")
        return catalog.model(req.model)
    return hand_model(req)


def _goodput(r: Report, req: PlanTrainRequest) -> float:
    """Goodput for the run's wall time, GPU-hours and cost, as `napkin train` takes it (only with --tokens)."""
    if req.goodput is not None:
        return r.assume("goodput", req.goodput, "as given", unit="fraction", basis="given")
    if req.tokens is None:
        return 1.0
    return assume_default(r, "goodput", "training_goodput")


def _sizes(req: PlanTrainRequest, domain: int) -> list[int]:
    """The cluster sizes to search: --gpus, the product of the given degrees, or the candidates for --deadline."""
    if req.gpus:
        if req.deadline is not None:
            raise InputError("deadline", units.format(req.deadline, "seconds"), "is not used beside --gpus",
                             "give --gpus to plan a cluster, or --deadline with --tokens to size one")
        return sorted(set(req.gpus))
    if None not in (req.tp, req.pp, req.cp, req.dp):
        return [req.tp * req.pp * req.cp * req.dp]  # type: ignore[operator]
    if req.deadline is None:
        raise InputError("gpus", "nothing", "is required", "give --gpus N, or --deadline with --tokens")
    if req.tokens is None:
        raise InputError("tokens", "nothing", "is required with --deadline", "give --tokens 15T")
    sizes = {2**i for i in range(0, 31) if 2**i <= req.max_gpus}
    sizes |= {3 * 2**i for i in range(0, 31) if 3 * 2**i <= req.max_gpus and 3 * 2**i >= domain}
    return sorted(sizes)


def space_of(req: PlanTrainRequest, m: ModelSpec) -> tuple[Space, bool]:
    """What is searched (every option not given) and whether FSDP shards within the domain only."""
    if req.fsdp is not None and req.zero is not None and req.zero != 3:
        raise InputError("zero", req.zero, f"contradicts --fsdp {req.fsdp} (FSDP shards like ZeRO-3)",
                         "drop --zero, or use --zero 3")
    if req.ep is not None and req.ep > 1 and not m.is_moe:
        raise InputError("ep", req.ep, f"needs a mixture-of-experts model; {m.name} is dense", "drop --ep")
    if req.interleave is not None and req.interleave > 1 and req.pp == 1:
        raise InputError("interleave", req.interleave, "needs a pipeline (--pp > 1)", "drop --interleave or raise --pp")
    zero = (3,) if req.fsdp else ((req.zero,) if req.zero is not None else (0, 1, 2, 3))
    rc = (RECOMPUTE_CHOICES.index(req.recompute),) if req.recompute else (0, 1, 2)
    mb = (req.micro_batch,) if req.micro_batch else MICRO_BATCHES
    v = (req.interleave,) if req.interleave else INTERLEAVES
    sp = (int(req.sequence_parallel),) if req.sequence_parallel is not None else (0, 1)
    fixed = {k: getattr(req, k) for k in ("tp", "pp", "cp", "ep", "dp")}
    if not m.is_moe:
        fixed["ep"] = 1
    return Space(fixed=fixed, zero=zero, recompute=rc, micro_batch=mb, interleave=v, sp=sp,
                 tp_beyond_domain=req.tp is not None), req.fsdp == "hybrid"


def _price(r: Report, req: PlanTrainRequest, key: str) -> float:
    if req.price is not None:
        return r.assume("price", req.price, "$/GPU-hour as given", unit="usd_per_hour", basis="given")
    listed = catalog.gpu_hour_price(key)
    if listed is None:
        r.note(f"no price for {key}: give --price for GPU-hours in dollars")
        return math.nan
    warn_if_stale_price(r, listed, f"the {catalog.gpu(key).name}")
    return r.assume("price", listed.usd_per_gpu_hour, f"reference list price, {listed.date} ({listed.source}); not a "
                                                      "loaded price", unit="usd_per_hour", basis="reference")


def resolve(req: PlanTrainRequest, r: Report, model: ModelSpec | None = None
            ) -> tuple[TrainSetup, ModelSpec, Any, Space, list[int]]:
    """The setup (scalars), the model (``model``, or the request's), the accelerator, the search space and
    the cluster sizes."""
    m = model if model is not None else model_of(req)
    g = catalog.gpu(req.gpu) if req.gpu else catalog.gpu(assume_default(r, "gpu", "default_gpu"))
    peak = r.assume("dense_flops_per_s", g.peak(req.precision), f"{g.name} dense {req.precision} peak ({g.source})",
                    unit="flops_per_s", basis="catalog")
    seq_len = req.seq_len if req.seq_len is not None else assume_default(r, "seq_len", "train_seq_len", unit="count")
    batch_raw = req.global_batch
    if batch_raw is None:
        batch_raw = f"{assume_default(r, 'global_batch', 'train_global_batch_tokens', unit='count'):.0f}"
    G, batch_text = global_batch_seqs(batch_raw, seq_len)
    r.set("batch_sequences", G, "count")
    r.set("batch_tokens", G * seq_len, "count")
    if abs(G - round(G)) > 1e-9:  # 16M tokens of 8,192: 1,953.1 sequences (16Mi is 2,048)
        text = str(batch_raw).strip()
        binary = next((i for i, p in enumerate("kMGT", 1)
                       if text.endswith(p) and abs(G * 1.024**i - round(G * 1.024**i)) < 1e-6), None)
        hint = f"; {text}i tokens would be exactly {G * 1.024**binary:,.0f} sequences" if binary else ""
        r.note(f"{batch_text} is {G:,.2f} sequences of {seq_len:,.0f} tokens: each configuration rounds it to whole "
               f"micro-batches per data-parallel rank, within --batch-tolerance {req.batch_tolerance:.0%}{hint}")
    space, hybrid = space_of(req, m)
    scale_out = req.scale_out_bandwidth or assume_default(r, "scale_out_bandwidth", "scale_out_bytes_per_s_per_gpu")
    eff = resolve_efficiency(r, g, {"gemm_peak_fraction": req.gemm_efficiency,
                                    "attention_efficiency": req.attention_efficiency}, req.precision)
    geo = geometry(m, fused_swiglu=req.fused_swiglu)
    attn = 0.0 if req.flops_convention == "6N" else F.attention_flops_per_token(  # MLA: mean of QK and V widths
        m.n_layers, d_attn=m.d_attn, seq_len=seq_len, convention=req.flops_convention, **m.window())
    link = g.link_bytes_per_s_per_direction or scale_out
    grad = req.gradient_bytes or assume_default(r, "gradient_bytes", "train_gradient_bytes", unit="bytes")
    capacity = g.memory_bytes_runtime or g.memory_bytes
    r.assume("memory_bytes", capacity, f"the {g.name}'s " + (
        "memory as the CUDA/HIP runtime reports it (catalog memory_bytes_runtime)" if g.memory_bytes_runtime
        else "datasheet memory (no runtime printout in the catalog)"), unit="bytes", basis="catalog")
    setup = TrainSetup(
        **geo, gpu=g.key, peak=peak, attention_peak=g.peak("bf16"), memory_bytes=capacity,
        memory_bytes_per_s=g.memory_bytes_per_s, link_bytes_per_s=link, scale_up_domain=float(g.scale_up_domain),
        scale_out_bytes_per_s=scale_out, **eff,
        latency_s=assume_default(r, "collective_latency_s", "allreduce_latency_s"),
        seq_len=seq_len, global_batch_seqs=G, batch_tolerance=req.batch_tolerance,
        weight_bytes=WEIGHT_BYTES[req.precision], grad_bytes=grad, optimizer_bytes=optimizer_bytes(r, req.optimizer),
        act_bytes=2.0, runtime_bytes=assume_default(r, "runtime_bytes", "train_runtime_bytes"),
        usable_fraction=(req.usable if req.usable is not None
                         else assume_default(r, "usable", "train_plan_usable_fraction")),
        flash=float(req.flash), dropout=float(req.dropout), fsdp_hybrid=float(hybrid),
        uneven_stages=float(req.pp is not None),
        flops_per_token=F.train_flops_per_token(m.active_params, attention_flops=attn), attention_flops_per_token=attn,
        flops_convention=req.flops_convention, tokens=req.tokens if req.tokens is not None else math.nan,
        usd_per_gpu_hour=_price(r, req, g.key), goodput=_goodput(r, req))
    if req.usable is not None:
        r.assume("usable", req.usable, "given", unit="fraction", basis="given")
    return setup, m, g, space, _sizes(req, g.scale_up_domain)
