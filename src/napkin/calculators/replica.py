"""A serving replica as the operator model sees it: its layer shapes, its rates and its memory.

Shared layer (any calculator, the planner and `napkin validate` use it): it resolves, for one
model on one accelerator at a TP degree and precisions, every number
:mod:`napkin.formulas.operators` takes, each recorded once in the Report with where it came
from — given, measured (`napkin measure --save` calibration), a published measurement of the
accelerator family (catalog/efficiency.toml), fitted to published serving runs, or the
datasheet — and it builds the separable step cost the load simulation runs on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# the ring over PCIe lives in calculators/pcie_ring.py; its names are the replica's too
from napkin.calculators.pcie_ring import over_pcie, pcie_hop, pcie_ring_bus, pcie_ring_latency  # noqa: F401
from napkin.catalog import efficiency as eff
from napkin.derivation import Report
from napkin.formulas import operators as op
from napkin.formulas.comm import padded_curve
from napkin.formulas import simulation as sim
from napkin.hardware import Accelerator
from napkin.model import ModelSpec
from napkin.units import format as fmt


@dataclass(frozen=True)
class Efficiencies:
    """The achieved fractions and fixed costs a replica's kernels run at."""

    gemm: float  # η_max of the attention projections' and LM head's GEMMs, at their compute precision
    mlp_gemm: float  # η_max of the MLP's (or experts') GEMMs
    expert_gemm: float  # η_max of the routed experts' grouped GEMMs: mlp_gemm · the fitted grouped-GEMM fraction
    gemm_half_tokens: float
    bandwidth: float
    attention: float
    allreduce_bus: float
    allreduce_latency_s: float
    per_layer_s: float
    per_layer_decode_s: float
    per_step_s: float
    elementwise_passes: float
    allreduce_curve: tuple[float, ...] | None = None  # the family's measured bus bandwidth by message size


def on_sweep_board(g: Accelerator) -> bool:
    """Whether g is on the kind of board its family's published all-reduce sweep ran on: an 8-GPU (or larger)
    scale-up domain at the family's fastest link. A bridged PCIe pair or an H800 (NVLink cut to 400 GB/s) is not:
    its all-reduces keep the α-β ring (the link's rate and latency)."""
    fam = eff.family(g.key)
    if not fam.allreduce_curve_busbw or g.scale_up_domain < 8:
        return False
    return (g.link_bytes_per_s_bidirectional or 0.0) >= sweep_board_link(fam.key)


def sweep_board_link(family: str) -> float:
    """The bidirectional link of the board a family's sweep ran on: its fastest 8-GPU scale-up domain."""
    from napkin import catalog

    return max((x.link_bytes_per_s_bidirectional or 0.0 for k, x in catalog.gpus().items()
                if eff.family(k).key == family and x.scale_up_domain >= 8), default=0.0)


def tp_path(g: Accelerator, tp: int, *, rate: float, scale_out: float) -> str:
    """What a TP group larger than g's scale-up domain crosses, and the rate per GPU its ring runs at (the
    slowest hop's: formulas.serving.tp_link_bytes_per_s), in words for warnings and notes."""
    per_gpu = f"{fmt(rate, 'bytes_per_s')} per GPU"
    host = g.host_link_bytes_per_s_per_direction
    if host is None:
        return f"the scale-out network at {per_gpu}"
    if tp <= (g.host_link_domain or 0):
        return f"PCIe at {per_gpu}"
    slower = "PCIe's" if host <= scale_out else "the NIC's"
    return f"PCIe and the scale-out network at {per_gpu} ({slower}, the slower hop)"


def engine_buffers(m: ModelSpec, tp: int, step_tokens: float) -> tuple[float, dict[str, Any]]:
    """(bytes, the inputs as a derivation step names them) an engine holds per GPU outside weights and KV for a
    step budget of ``step_tokens`` on TP ``tp``: formulas.serving.engine_buffer_bytes at catalog/efficiency.toml's
    [runtime] figures. `serve` shows the step; `plan serve` sizes its fit with the same bytes."""
    from napkin.formulas import serving as sv

    rt = eff.runtime()
    factor, collective = rt.factor(tp, moe=m.is_moe), rt.collective(tp)
    value = sv.engine_buffer_bytes(step_tokens, d_attn=m.d_attn, factor=factor, floor_bytes=rt.activation_floor_bytes,
                                   collective_bytes=collective, context_bytes=rt.context_bytes)
    return value, {"T": (step_tokens, "count"), "d_attn": (m.d_attn, "count"), "c": factor,
                   "floor": (rt.activation_floor_bytes, "bytes"), "collective": (collective, "bytes"),
                   "context": (rt.context_bytes, "bytes")}


@dataclass(frozen=True)
class Given:
    """Efficiencies a request gives by hand (None: resolve them); overrides fitted and catalog values."""

    gemm: float | None = None
    bandwidth: float | None = None
    allreduce_latency_s: float | None = None
    per_layer_s: float | None = None
    per_step_s: float | None = None
    calibration: str | None = None


def by_hand(g: Accelerator, *, precision: str, peak: float | None = None, bandwidth: float | None = None,
            memory: float | None = None) -> Accelerator:
    """``g`` with its datasheet figures replaced by figures given by hand, for a part the catalog does not
    describe (an SRAM-based part such as a Groq LPU or a Cerebras wafer, a future part).

    ``peak`` is the dense FLOP/s at ``precision`` (the precision the matmuls run at); the part's other
    precisions keep the catalog's ratios to it. ``bandwidth`` replaces the memory bandwidth, ``memory``
    the capacity per GPU (the runtime's and driver's figures go with it). Unchanged when none is given.
    """
    if peak is None and bandwidth is None and memory is None:
        return g
    import msgspec

    changes: dict[str, Any] = {}
    given = []
    if peak is not None:
        scale = peak / g.peak(precision)
        changes["dense_flops_per_s"] = {p: v * scale for p, v in g.dense_flops_per_s.items()} | {precision: peak}
        changes["sparsity_factor"] = None
        given.append("peak")
    if bandwidth is not None:
        changes["memory_bytes_per_s"] = bandwidth
        given.append("bandwidth")
    if memory is not None:
        changes.update(memory_bytes=memory, memory_bytes_reported=None, memory_bytes_runtime=None,
                       memory_reported_source="")
        given.append("memory")
    words = given[0] if len(given) == 1 else ", ".join(given[:-1]) + " and " + given[-1]
    return msgspec.structs.replace(g, name=f"{g.name} with {words} by hand", **changes)


def memory_capacity_bytes(g: Accelerator, r: Report | None = None) -> float:
    """The memory the runtime reports (what engines budget against), else the driver's, else the datasheet's."""
    if g.memory_bytes_runtime:
        value, what = g.memory_bytes_runtime, "total the CUDA/HIP runtime reports (what vLLM and PyTorch budget)"
    elif g.memory_bytes_reported:
        value, what = g.memory_bytes_reported, "total the driver reports"
    else:
        value, what = g.memory_bytes, "datasheet figure (no printout of what the runtime reports was found)"
    if r is not None:
        src = f"{g.name} {what}" + (f": {g.memory_reported_source}" if g.memory_reported_source and
                                    value != g.memory_bytes else "")
        r.assume("memory_bytes", value, src, unit="bytes", basis="catalog")
    return value


def efficiencies(g: Accelerator, compute_precision: str, *, mlp_precision: str | None = None,
                 given: Given = Given(), r: Report | None = None) -> Efficiencies:
    """The fractions of g's peaks its kernels reach: given, measured (calibration), the family's
    published measurements, and the fitted fixed costs; each recorded in ``r`` with its source."""
    fam = eff.family(g.key)
    shape, fit = eff.shape(), eff.fitted()
    factor = shape.gemm_shape_factor
    gemm, gemm_note, gemm_basis = fam.gemm_at(compute_precision) * factor, "", "catalog"
    bw, bw_note, bw_basis = fam.bandwidth, fam.bandwidth_source, "catalog"
    if given.calibration:
        from napkin.calibration import load

        cal = load(given.calibration)
        if r is not None:
            for code, message in cal.fit_warnings(g, uses="its bandwidth and matmul fractions"):
                r.warn(code, message)
        frac = cal.matmul_fraction_of_peak.get(compute_precision)
        if frac is not None:
            gemm, gemm_note, gemm_basis = min(frac, 1.0), cal.label + f" (matmul at {compute_precision})", "measured"
        if cal.bandwidth_fraction is not None:
            bw, bw_note, bw_basis = min(cal.bandwidth_fraction, 1.0), cal.label, "measured"
    if given.gemm is not None:
        gemm, gemm_note, gemm_basis = given.gemm, "given", "given"
    if given.bandwidth is not None:
        bw, bw_note, bw_basis = given.bandwidth, "given", "given"
    mlp_gemm = gemm if mlp_precision in (None, compute_precision) else (
        fam.gemm_at(mlp_precision) * factor if gemm_basis == "catalog" else gemm)
    e = Efficiencies(
        gemm=gemm, mlp_gemm=mlp_gemm, expert_gemm=mlp_gemm * fit.expert_gemm_efficiency,
        gemm_half_tokens=shape.gemm_half_tokens, bandwidth=bw,
        attention=fam.attention, allreduce_bus=fam.allreduce_bus,
        allreduce_latency_s=fam.allreduce_latency_s if given.allreduce_latency_s is None else given.allreduce_latency_s,
        per_layer_s=fit.per_layer_s if given.per_layer_s is None else given.per_layer_s,
        per_layer_decode_s=fit.per_layer_decode_s if given.per_layer_s is None else given.per_layer_s,
        per_step_s=fit.per_step_s if given.per_step_s is None else given.per_step_s,
        elementwise_passes=shape.elementwise_passes,
        allreduce_curve=padded_curve(fam.allreduce_curve_busbw) if on_sweep_board(g) and
        given.allreduce_latency_s is None else None)  # a latency by hand replaces the published figures
    if r is not None:
        _record(r, g, fam, compute_precision, e, given, (gemm_note, gemm_basis), (bw_note, bw_basis))
    return e


def _record(r: Report, g: Accelerator, fam: eff.Family, cp: str, e: Efficiencies, given: Given,
            gemm: tuple[str, str], bw: tuple[str, str]) -> None:
    fit = eff.fitted()
    measure = "`napkin measure --save` on this GPU, then --calibration"
    if not fam.measured:
        r.warn("unmeasured-accelerator", f"no published kernel measurements of the {g.name}: its GEMM, bandwidth "
                                         "and attention efficiencies are the median of measured parts; "
                                         "`napkin measure --save` on one replaces them")
    if gemm[1] == "catalog":
        r.assume("gemm_efficiency", e.gemm, f"best {cp} GEMM over the dense peak measured on {fam.on('gemm', g.name)}, "
                 f"x {eff.shape().gemm_shape_factor:g} at transformer shapes", unit="fraction", basis="catalog",
                 source=f"{fam.gemm_source}; {eff.shape().gemm_shape_factor_source}", replaced_by=measure)
    else:
        r.assume("gemm_efficiency", e.gemm, gemm[0], unit="fraction", basis=gemm[1])
    if bw[1] == "catalog":
        r.assume("bandwidth_efficiency", e.bandwidth, f"achieved over datasheet HBM bandwidth on {fam.on('bandwidth', g.name)}",
                 unit="fraction", basis="catalog", source=fam.bandwidth_source, replaced_by=measure)
    else:
        r.assume("bandwidth_efficiency", e.bandwidth, bw[0], unit="fraction", basis=bw[1])
    r.assume("attention_efficiency", e.attention, f"FlashAttention-class kernels on {fam.on('attention', g.name)}",
             unit="fraction", basis="catalog", source=fam.attention_source,
             replaced_by="a FlashAttention benchmark on this GPU at your head dimension")
    if given.allreduce_latency_s is None:
        r.assume("allreduce_latency", e.allreduce_latency_s, f"a small all-reduce within the {fam.key} family's "
                 "scale-up domain", unit="seconds", basis="catalog", source=fam.allreduce_latency_source,
                 replaced_by="nccl-tests all_reduce_perf at the decode message size, or `torchrun -m napkin.measure "
                             "--collectives`")
    else:
        r.assume("allreduce_latency", e.allreduce_latency_s, "given", unit="seconds", basis="given")
    r.assume("gemm_half_tokens", e.gemm_half_tokens, "tokens at which a GEMM reaches half its best efficiency",
             unit="count", basis="catalog", source=eff.shape().gemm_half_tokens_source,
             replaced_by="a GEMM sweep over the token dimension on this GPU")
    for name, value, gv in (("per_layer_overhead", e.per_layer_s, given.per_layer_s),
                            ("per_layer_decode_overhead", e.per_layer_decode_s, given.per_layer_s),
                            ("per_step_overhead", e.per_step_s, given.per_step_s)):
        if gv is None and name == "per_step_overhead" and value == 0:
            continue  # not fitted (it moved between 0 and 2 ms from fold to fold): no fixed cost per step unless given
        if gv is None:
            r.assume(name, value, "fitted to published serving runs (TensorRT-LLM, vLLM, SGLang), leave-sources-out",
                     unit="seconds", basis="fitted", source=f"napkin validate: {fit.method}",
                     replaced_by="your engine's step times at batch 1 (a profile of one decode step)")
        else:
            r.assume(name, value, "given", unit="seconds", basis="given")


def note_experts(r: Report, m: ModelSpec) -> None:
    """Record the fitted grouped-GEMM fraction where the model has routed experts (a dense model never uses it)."""
    if m.is_moe:
        fit = eff.fitted()
        r.assume("expert_gemm_efficiency", fit.expert_gemm_efficiency, "of a dense GEMM's best efficiency that the "
                 "routed experts' grouped GEMMs reach, fitted to published serving runs, leave-sources-out",
                 unit="fraction", basis="fitted", source=f"napkin validate: {fit.method}",
                 replaced_by="a grouped-GEMM benchmark of your engine's MoE kernel at your expert shape")


def rates(g: Accelerator, e: Efficiencies, *, compute_precision: str, mlp_precision: str | None = None,
          link_bytes_per_s_per_direction: float = math.inf, scale_up: bool = True,
          link_bus: float | None = None, ring_latency_s: float | None = None) -> op.Rates:
    """The operator model's rates for one GPU of ``g`` (attention at bf16, or fp8 where the weights are fp8).

    ``scale_up``: the TP group's all-reduce runs over g's catalogued scale-up link, so the family's
    measured all-reduce sweep applies (not beyond the domain, nor over a link a calibration measured).
    ``link_bus``: the fraction of the link a ring reaches, where it is not the family's scale-up figure: 1 for a
    calibration's measured bus bandwidth (already what the ring reached), PCIe's for the hop between the cards
    of a server beyond their bridge. ``ring_latency_s``: the all-reduce's fixed time where it is not the family's
    (a ring over PCIe: pcie_ring_latency)."""
    attention_precision = "fp8" if compute_precision == "fp8" and g.supports("fp8") else "bf16"
    if not g.supports(attention_precision):
        attention_precision = compute_precision
    mlp_p = mlp_precision or compute_precision
    return op.Rates(
        dense_flops_per_s=g.peak(compute_precision), attention_flops_per_s=g.peak(attention_precision),
        memory_bytes_per_s=g.memory_bytes_per_s, bandwidth_efficiency=e.bandwidth, gemm_efficiency=e.gemm,
        gemm_half_tokens=e.gemm_half_tokens, attention_efficiency=e.attention,
        link_bytes_per_s=link_bytes_per_s_per_direction * (e.allreduce_bus if link_bus is None else link_bus),
        allreduce_latency_s=e.allreduce_latency_s if ring_latency_s is None else ring_latency_s,
        per_layer_s=e.per_layer_s, per_layer_decode_s=e.per_layer_decode_s, per_step_s=e.per_step_s,
        elementwise_passes=e.elementwise_passes,
        mlp_flops_per_s=g.peak(mlp_p), mlp_gemm_efficiency=e.mlp_gemm,
        allreduce_curve=e.allreduce_curve if scale_up else None, expert_gemm_efficiency=e.expert_gemm)


@dataclass(frozen=True)
class Replica:
    """One replica (a TP group; pipeline stages add memory, not speed) in the operator model's terms."""

    model: ModelSpec
    shapes: op.LayerShapes
    rates: op.Rates
    tp: int

    def step(self, tokens: Any, *, kv_tokens: Any = 0.0, prefill_pairs: Any = 0.0, logits: Any = 0.0) -> Any:
        return op.step_seconds(tokens, kv_tokens=kv_tokens, prefill_pairs=prefill_pairs, logits=logits,
                               shapes=self.shapes, rates=self.rates, tp=self.tp)

    def operators(self, tokens: float, *, kv_tokens: float = 0.0, prefill_pairs: float = 0.0,
                  logits: float = 0.0) -> dict[str, op.OperatorTime]:
        return op.step_operators(tokens, kv_tokens=kv_tokens, prefill_pairs=prefill_pairs, logits=logits,
                                 shapes=self.shapes, rates=self.rates, tp=self.tp)

    def prefill_pairs(self, new_tokens: float, *, cached_tokens: float = 0.0) -> float:
        """Causal query-key pairs of one prompt's prefill, averaged over the layers (a sliding window cuts some)."""
        from napkin.formulas import serving as sv

        m = self.model
        flops = float(sv.prefill_attention_flops(m.n_layers, d_attn=m.d_attn, new_tokens=new_tokens,
                                                 cached_tokens=cached_tokens, causal=True, **m.window()))
        return flops / (4.0 * m.n_layers * m.d_attn)

    def step_cost(self, max_tokens: int) -> sim.StepCost:
        """The separable step cost the load simulation runs on, tabulated for 0 .. max_tokens tokens."""
        import numpy as np

        m = np.arange(int(max_tokens) + 1, dtype=float)
        ops = self.operators(m, logits=m)  # type: ignore[arg-type]  # H(n): the LM head on n = m sequences
        g = sum(np.broadcast_to(o.seconds, m.shape) for k, o in ops.items() if k not in ("attention", "lm_head"))
        h = np.broadcast_to(ops["lm_head"].seconds, m.shape).astype(float)
        a = float(op.attention_time(1.0, prefill_pairs=0.0, shapes=self.shapes, rates=self.rates).seconds)
        b = float(op.attention_time(0.0, prefill_pairs=1.0, shapes=self.shapes, rates=self.rates).seconds)
        prompt = self.shapes.n_layers * (self.rates.per_layer_s - self.rates.per_layer_decode_s)  # G(M) holds decode's
        return sim.StepCost(np.asarray(g, dtype=float), h, a * self.shapes.n_layers, b * self.shapes.n_layers,
                            float(prompt))


def replica(m: ModelSpec, g: Accelerator, *, tp: int, bytes_per_weight: float, kv_bytes_per_value: float,
            e: Efficiencies, compute_precision: str, link_bytes_per_s_per_direction: float = math.inf,
            mlp_precision: str | None = None, mlp_bytes_per_weight: float | None = None,
            scale_up: bool = True, link_bus: float | None = None, ring_latency_s: float | None = None) -> Replica:
    shapes = m.layer_shapes(tp, kv_bytes_per_value=kv_bytes_per_value, bytes_per_weight=bytes_per_weight,
                            mlp_bytes_per_weight=mlp_bytes_per_weight)
    return Replica(m, shapes, rates(g, e, compute_precision=compute_precision, mlp_precision=mlp_precision,
                                    link_bytes_per_s_per_direction=link_bytes_per_s_per_direction,
                                    scale_up=scale_up, link_bus=link_bus, ring_latency_s=ring_latency_s), tp)


ERROR_BAR_METRICS = (("tokens_per_s", "throughput"), ("tpot_s", "tpot"), ("ttft_s", "ttft"))


def error_bars(g: Accelerator, gpus: int | None = None, *, moe: bool | None = None) -> dict[str, str]:
    """{answer: its error bar}: the out-of-sample median and max error `napkin validate` stored for each kind
    of answer (throughput, TPOT, TTFT), from the closest cell with three points or more: g's family on a
    replica of that size (one GPU, or several: a tensor-parallel group adds its collectives, and its errors
    differ), g's family, all points on that size, all points; for a dense or a mixture-of-experts model
    (``moe``), first its own kind's points alone (their errors differ most of all), then every kind's."""
    table = eff.error_bars()
    fam = eff.family(g.key).key
    words = g.name.split()
    n_words = next((i + 1 for i, w in enumerate(words) if any(ch.isdigit() for ch in w)), 1)
    name = " ".join(words[:n_words])  # up to the model number: "A100", "RTX PRO 6000", "Instinct MI300X"
    scale = None if gpus is None else "one GPU" if gpus == 1 else "several GPUs"
    tries = ([(f"{fam}, {scale}", f"{scale} {name}"), (fam, name)] if scale else [(fam, name)]) \
        + ([(f"all, {scale}", scale)] if scale else []) + [("all", "")]
    if moe is not None:
        kind = "moe" if moe else "dense"
        word = "MoE" if moe else "dense-model"
        tries = [(f"{kind}: {k}", f"{w} {word}".strip()) for k, w in tries] + tries  # then every kind's
    out: dict[str, str] = {}
    for key, group in ERROR_BAR_METRICS:
        cells = table.get(group, {})
        cell, where = next(((cells[k], w) for k, w in tries if cells.get(k, {}).get("n", 0) >= 3),
                           (cells.get("all"), ""))
        if not cell:
            continue
        where = where.replace("one GPU", "single-GPU").replace("several GPUs", "multi-GPU")
        out[key] = (f"median error {cell['median']:.0%} (max {cell['max']:.0%}) on {cell['n']} published "
                    f"{where + ' ' if where else ''}points, out of sample")
    return out


def operator_rows(ops: dict[str, op.OperatorTime], *, step: str) -> list[dict]:
    """The per-operator table of one step: bytes, FLOPs, memory and compute time, time, what binds."""
    total = float(op.total_seconds(ops)) or 1.0
    rows = []
    for name, o in ops.items():
        sec = float(o.seconds)
        if sec <= 0:
            continue
        mem, comp = float(o.memory_s), float(o.compute_s)
        bound = ("fixed" if mem == comp == 0 else "link" if name == "allreduce" else
                 "bandwidth" if mem >= comp else "compute")
        rows.append({"step": step, "operator": name, "bytes": float(o.bytes), "flops": float(o.flops),
                     "memory_s": mem, "compute_s": comp, "seconds": sec, "share": sec / total, "bound": bound})
    return rows


def describe(ops: dict[str, op.OperatorTime]) -> str:
    """One line: the step's time and its three largest operators."""
    parts = sorted(((float(o.seconds), k) for k, o in ops.items()), reverse=True)[:3]
    return ", ".join(f"{k} {fmt(s, 'seconds')}" for s, k in parts)
