"""The grid: every (GPU, precision) x (GPUs per replica, TP degree) x prompt x output x batch on numpy
arrays, through the serve calculator's scheduler (formulas.scheduling) on the operator model
(formulas.operators).

Layout (hardware, pair, prompt, output, batch): a pair is a (GPUs per replica, TP degree) the model
admits (TP within the replica and dividing the heads, no more stages than layers), ordered by GPUs
then TP, so cells run in the order of the (hardware, GPUs, TP, prompt, output, batch) grid the plan
counts. Each term is computed on the shape it depends on: the scheduler's side of the steady state
(which tokens ride in which step) on (pair, prompt, output, batch), once; the hardware's rates per
row; only the operators' roofline max() and their sum meet every cell. That part runs in chunks of
a few thousand cells, so numpy's temporaries stay in cache and are reused instead of paging in
fresh memory; every cell keeps only what the plan reads (TTFT, TPOT, tokens/s and a status), and
each chunk hands over its cheapest cells and its Pareto candidates (select.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from napkin import catalog
from napkin.calculators import replica as rep
from napkin.derivation import Report
from napkin.formulas import memory as mem
from napkin.formulas import operators as op
from napkin.formulas import scheduling as sch
from napkin.formulas import serving as sv
from napkin.formulas.comm import CURVE_LOG2_BYTES, row_sweeps
from napkin.hardware import bytes_per_value

from . import select
from .hardware import columns, curve_at, hardware_rows, ring_bus, ring_latency, rows_of
from .request import PlanServeRequest, _scale_out, grid_size, replica_sizes

CHUNK_CELLS = 24_576  # cells per chunk: ~200 kB a temporary, inside the caches of a laptop or a server core

# status of a cell: not a valid split of the model, valid but out of memory, fits, meets the mean objectives
INVALID, VALID, FITS, MEETS = 0, 1, 2, 3


@dataclass
class Axes:
    """The grid's axes: hardware rows, (GPUs, TP) pairs, and the prompt, output and batch values."""

    hw: list[dict]
    pairs: list[tuple[int, int]]
    sizes: list[int]
    prompt: Any
    output: Any
    batch: Any
    configurations: int = 0  # the cells the plan counts (request.grid_size): every (hardware, GPUs, TP) with
    # every workload and batch, valid or not

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.hw), len(self.pairs), len(self.prompt), len(self.output), len(self.batch))

    def values(self) -> tuple[Any, Any, Any]:
        """Prompt, output and batch values shaped to their axes."""
        return (self.prompt.reshape(1, 1, -1, 1, 1), self.output.reshape(1, 1, 1, -1, 1),
                self.batch.reshape(1, 1, 1, 1, -1))


@dataclass
class Grid:
    """Every cell's TTFT, TPOT, tokens/s and status, with the cells each chunk handed over."""

    axes: Axes
    model: Any
    tpot: Any
    ttft: Any
    tps: Any
    status: Any  # INVALID / VALID / FITS / MEETS
    picks: Any  # flat indices of the cheapest cells that meet the objectives (a superset of the ranking)
    front: Any  # select.Front: the exact Pareto front of the cells that fit
    chunks: int = 0
    cut: float = math.inf  # the lowest $/M (at the utilisation target) of the cells that meet but were not picked
    per_workload: Any = None  # flat indices of the candidates for each (prompt, output)'s cheapest cell
    counts: dict[str, int] = field(default_factory=dict)


def axes(req: PlanServeRequest, r: Report, m: Any) -> Axes:
    import numpy as np

    hw = hardware_rows(req, r)
    sizes = replica_sizes(req.max_gpus)
    pairs = [(n, t) for n in sizes for t in sizes
             if t <= n and n % t == 0 and m.n_heads % t == 0 and n / t <= m.n_layers]
    as_array = lambda v: np.array(sorted(set(float(x) for x in (v if isinstance(v, list) else [v]))))  # noqa: E731
    return Axes(hw, pairs, sizes, as_array(req.prompt), as_array(req.output),
                np.array(sorted(set(req.batch)), dtype=float), grid_size(req, len(hw)))


def workload(m: Any, *, prompt: Any, output: Any, chunk: float, pp: Any, B: Any, prefix: Any) -> dict[str, Any]:
    """The scheduler's side of the steady state of continuous batching at concurrency B (no hardware in it):
    the decoding sequences, the share of steps with prompt tokens, and the tokens of each step's operators."""
    new = prompt - prefix
    held = m.kv_held_tokens(prompt + output / 2.0)
    window = sv.prefill_attention_flops(m.n_layers, d_attn=m.d_attn, new_tokens=new, cached_tokens=prefix,
                                        **m.window()) / (4.0 * m.n_layers * m.d_attn) / sch.prefill_pairs(
        new, cached_tokens=prefix)
    bd = sch.decode_sequences(B, prompt_tokens=prompt, output_tokens=output, chunk_tokens=chunk, cached_tokens=prefix)
    c = sch.prefill_tokens_per_step(bd, prompt_tokens=prompt, output_tokens=output, cached_tokens=prefix)
    micro = sv.microbatch(bd, pp=pp) / bd

    def step(tokens: Any, pairs: Any, logits: Any) -> dict[str, Any]:
        return {"tokens": tokens * micro, "kv_tokens": bd * held * micro, "prefill_pairs": pairs * window * micro,
                "logits": logits * micro}

    c, q = sch.prompt_steps(c, new_tokens=new, room=chunk - bd)
    mixed = step(bd + c, c / new * sch.prefill_pairs(new, cached_tokens=prefix), bd + c / new)
    decode = step(bd, 0.0 * bd, bd)
    n, tokens, pairs = sch.prefill_chunk_plan(new, room=chunk - bd, cached_tokens=prefix)
    # the request's first chunk rides whole in one micro-batch, beside that micro-batch's share of the decoding
    first = {"tokens": bd * micro + tokens, "kv_tokens": bd * held * micro, "prefill_pairs": pairs * window,
             "logits": bd * micro + 1.0 / n}
    return {"bd": bd, "q": q, "n_chunks": n, "output": output, "mixed": mixed, "decode": decode, "chunk": first,
            # the requests each step holds, whose host work (--host-per-request) it may wait for, as serve counts them
            "requests": {"mixed": bd + c / new, "decode": bd, "chunk": bd * micro + 1.0},
            # a prompt that rides whole in one step: its first chunk is the mixed step, priced once
            "chunk_is_mixed": all(_same(mixed[k], first[k]) for k in mixed)}


def times(w: dict[str, Any], *, shapes: Any, rates: Any, t: Any, parts: bool = False,
          host: float | None = None) -> dict[str, Any]:
    """TTFT, TPOT and tokens/s of the workload's steps on the hardware (and, with ``parts``, the steps' mean
    memory, compute and all-reduce time, which say what binds); ``host``: the host's time per request in a
    step (--host-per-request), a step lasting the longer of the GPU's work and the host's."""
    def ops(inputs: dict[str, Any]) -> dict[str, Any]:
        return op.step_operators(inputs["tokens"], kv_tokens=inputs["kv_tokens"],
                                 prefill_pairs=inputs["prefill_pairs"], logits=inputs["logits"], shapes=shapes,
                                 rates=rates, tp=t)

    def step(inputs: dict[str, Any]) -> Any:  # the time alone: the operators' work is not kept
        return op.step_seconds(inputs["tokens"], kv_tokens=inputs["kv_tokens"], prefill_pairs=inputs["prefill_pairs"],
                               logits=inputs["logits"], shapes=shapes, rates=rates, tp=t)

    if parts:
        mixed, decode = ops(w["mixed"]), ops(w["decode"])
        t_mixed, t_decode = op.total_seconds(mixed), op.total_seconds(decode)
    else:
        t_mixed, t_decode = step(w["mixed"]), step(w["decode"])
    t_first = t_mixed if w["chunk_is_mixed"] else step(w["chunk"])
    if host:
        n = w["requests"]
        t_mixed, t_decode, t_first = (sch.host_bound_step_seconds(v, requests=n[k], host_per_request_s=host)
                                      for k, v in (("mixed", t_mixed), ("decode", t_decode), ("chunk", t_first)))
    bd, q = w["bd"], w["q"]
    tpot = sch.continuous_step_seconds(t_mixed, decode_step_s=t_decode, prefill_request_s=0.0,
                                       decode_seqs=bd, output_tokens=w["output"], prompt_share=q)
    out = {"tpot": tpot, "tps": bd / tpot, "ttft": sch.continuous_ttft_seconds(t_first, n_chunks=w["n_chunks"])}
    if parts:
        out.update(decode=t_decode, chunk=t_first, n_chunks=w["n_chunks"])
        def mean(attr: str, names: tuple[str, ...]) -> Any:  # over the steps: a share q carry prompt tokens
            return sum(q * getattr(mixed[k], attr) + (1 - q) * getattr(decode[k], attr) for k in names)

        gemm = ("qkv", "attention_out", "mlp", "lm_head", "attention")
        out.update(memory=mean("memory_s", gemm), compute=mean("compute_s", gemm),
                   comm=mean("seconds", ("allreduce",)))
    return out


def steady_state(m: Any, *, prompt: Any, output: Any, chunk: float, rates: Any, shapes: Any, t: Any, pp: Any, B: Any,
                 prefix: Any, host: float | None = None) -> dict[str, Any]:
    """TTFT, TPOT and tokens/s of continuous batching at concurrency B, on arrays: the serve calculator's
    scheduler (formulas.scheduling) on the operator model (formulas.operators); the figures `napkin serve`
    prints for the same configuration."""
    w = workload(m, prompt=prompt, output=output, chunk=chunk, pp=pp, B=B, prefix=prefix)
    return times(w, shapes=shapes, rates=rates, t=t, parts=True, host=host)


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    return a is b or (np.shape(a) == np.shape(b) and bool(np.array_equal(a, b)))


@dataclass
class Chunk:
    """A block of the grid: some hardware rows, and the (GPUs, TP) pairs of one TP degree (so the layer
    shapes and the link are the same along its pairs, and no operand varies along the pairs alone)."""

    rows: slice
    pairs: Any  # indices into Axes.pairs
    tp: float
    n: Any  # GPUs per replica, shaped (1, pairs, 1, 1, 1)


class _Context:
    """What every chunk shares: the model and the axes' columns; per TP degree, the workload and the KV
    bytes each cell holds per GPU."""

    def __init__(self, req: PlanServeRequest, m: Any, ax: Axes):
        import numpy as np

        self.req, self.m, self.ax = req, m, ax
        self.H = columns(ax.hw, 5)
        self.has_link = np.array([h["has_link"] for h in ax.hw]).reshape(-1, 1, 1, 1, 1)
        self.P, self.O, self.B = ax.values()
        self.prefix = np.minimum(req.cached_prefix, self.P - 1)
        self.b_kv = bytes_per_value(req.kv_precision, "kv_precision")
        self.W = mem.served_weights_bytes(m.params, n_embedding_head=m.embedding_head_params(),
                                          bytes_per_param=self.H["b_w"])
        self._by_tp: dict[float, tuple[dict[str, Any], Any]] = {}

    def per_tp(self, c: Chunk) -> tuple[dict[str, Any], Any]:
        """The workload of the chunk's pairs and each cell's KV bytes per GPU (the same for every row)."""
        if c.tp not in self._by_tp:
            m, P, O, B = self.m, self.P, self.O, self.B
            pp = c.n / c.tp
            shards = sv.kv_shards(c.tp, n_kv_heads=m.n_kv_heads, latent=m.attention == "mla")
            ctx_max = P + O
            # one sequence's own tokens and the shared prefix, each capped by a sliding window if the model has one
            kv_gpu = m.kv_bytes_per_token(self.b_kv) * (m.kv_shared_prefix_tokens(self.prefix, ctx_max)
                                                        + B * m.kv_held_tokens(ctx_max - self.prefix)) / (pp * shards)
            w = workload(m, prompt=P, output=O, chunk=self.req.chunk, pp=pp, B=B, prefix=self.prefix)
            self._by_tp[c.tp] = (w, kv_gpu)
        return self._by_tp[c.tp]

    def link(self, c: Chunk) -> Any:
        """A TP group beyond the scale-up domain all-reduces over the scale-out network."""
        H = self.H
        return sv.tp_link_bytes_per_s(c.tp, scale_up_domain=H["domain"][c.rows],
                                      link_bytes_per_s_per_direction=H["link"][c.rows],
                                      scale_out_bytes_per_s_per_gpu=_scale_out(self.req),
                                      host_link_bytes_per_s_per_direction=H["host_link"][c.rows],
                                      host_link_domain=H["host_domain"][c.rows])

    def rates(self, c: Chunk) -> Any:
        H = self.H
        import numpy as np

        raw = self.link(c)
        link = raw * ring_bus(H, c.rows, c.tp, raw)
        rates = {k[5:]: rows_of(v, c.rows) for k, v in H.items() if k.startswith("rate_")}
        if c.tp > 1:  # a ring over PCIe pays its steps' fixed time
            rates["allreduce_latency_s"] = ring_latency(self.req, H, c.rows, c.tp, raw, rates["allreduce_latency_s"])
        curve = curve_at(H, c.rows, c.tp)
        if c.tp > 1:  # the all-reduce timed once per kind of row (link, latency, sweep), then gathered to the rows
            h = np.size(link)
            sweeps = np.full((h, len(CURVE_LOG2_BYTES)), np.nan) if curve is None else \
                np.broadcast_to(np.asarray(curve, dtype=float), (h,) + (1,) * (np.ndim(link) - 1) + (
                    len(CURVE_LOG2_BYTES),)).reshape(h, -1)
            curve = row_sweeps(np.ravel(link), np.broadcast_to(np.ravel(rates["allreduce_latency_s"]), (h,)), sweeps,
                               n_ranks=float(c.tp))
        return op.Rates(**rates, link_bytes_per_s=link, allreduce_curve=curve)

    def shapes(self, c: Chunk) -> Any:
        return self.m.layer_shapes(c.tp, kv_bytes_per_value=self.b_kv, bytes_per_weight=self.H["b_w"][c.rows])

    def valid(self, c: Chunk) -> Any:
        """A TP group needs a link between its GPUs."""
        return (c.tp == 1) | self.has_link[c.rows]

    def fits(self, c: Chunk) -> Any:
        w, mem_gpu, f = self.W[c.rows] / c.n, self.H["mem"][c.rows], self.req.kv_free_fraction
        if f is None:
            return w + self.per_tp(c)[1] <= mem_gpu * self.req.usable
        buffers, _ = rep.engine_buffers(self.m, int(c.tp), float(self.req.chunk))
        return w + self.per_tp(c)[1] <= sv.usable_of_free(mem_gpu, weights_bytes_per_gpu=w, buffer_bytes=buffers,
                                                          fraction=f)


def chunks(ax: Axes) -> list[Chunk]:
    """Blocks of one TP degree's pairs and as many hardware rows as keep them near CHUNK_CELLS cells."""
    import numpy as np

    rows, _, P, O, B = ax.shape
    per_pair = P * O * B
    out = []
    for tp in sorted({t for _, t in ax.pairs}):
        idx = np.array([i for i, (_, t) in enumerate(ax.pairs) if t == tp])
        n = np.array([ax.pairs[i][0] for i in idx], dtype=float).reshape(1, -1, 1, 1, 1)
        step = max(1, CHUNK_CELLS // (len(idx) * per_pair))
        out += [Chunk(slice(h, min(h + step, rows)), idx, float(tp), n) for h in range(0, rows, step)]
    return out


def evaluate_compact(req: PlanServeRequest, r: Report | None = None, *, objectives: dict[str, float],
                     keep: int) -> Grid:
    """Every cell of the grid, chunk by chunk; ``keep`` cheapest cells per chunk are handed to the ranking."""
    import numpy as np

    r = r or Report("plan")
    m = catalog.model(req.model)
    ax = axes(req, r, m)
    ctx = _Context(req, m, ax)
    shape = ax.shape
    tpot, ttft, tps = (np.empty(shape) for _ in range(3))
    status = np.empty(shape, dtype=np.int8)
    picks, per_workload, front, cut = [], [], select.Front(), math.inf
    counts = np.zeros(3, dtype=np.int64)  # valid, fitting, meeting
    blocks = chunks(ax)
    for c in blocks:
        f = times(ctx.per_tp(c)[0], shapes=ctx.shapes(c), rates=ctx.rates(c), t=c.tp, host=req.host_per_request)
        part = (c.rows, c.pairs)
        tpot[part], ttft[part], tps[part] = f["tpot"], f["ttft"], f["tps"]
        fits = ctx.fits(c)
        meets = fits.copy()
        for name, figure, bound in (("ttft", "ttft", np.less_equal), ("tpot", "tpot", np.less_equal),
                                    ("tpot_p99", "tpot", np.less_equal), ("ttft_p99", "ttft", np.less)):
            if name in objectives:  # a p99 is at least the steady state: a necessary condition here
                meets &= bound(f[figure], objectives[name])
        valid = ctx.valid(c)
        st = fits.astype(np.int8)
        st += meets
        st += VALID
        st *= valid
        status[part] = st
        counts += (np.count_nonzero(valid) * (st.size // valid.size), np.count_nonzero(st >= FITS),
                   np.count_nonzero(st == MEETS))
        offset = _offset(shape, c)
        chosen, rest, each = select.cheapest(req, c, ctx.H["price"][c.rows], ctx.O, f, st, keep)
        picks.append(offset(chosen))
        per_workload.append(offset(each))
        cut = min(cut, rest)
        front.add_chunk(f, st >= FITS, c.n, offset)
    return Grid(ax, m, tpot, ttft, tps, status, np.concatenate(picks), front, len(blocks), cut=cut,
                per_workload=np.concatenate(per_workload), counts=tally(ax, counts))


def tally(ax: Axes, n: Any) -> dict[str, int]:
    """The plan's counts: (valid, fitting, meeting the objectives) cells."""
    return {"configurations": ax.configurations, "valid": int(n[0]), "fitting": int(n[1]), "meeting": int(n[2])}


def _offset(shape: tuple[int, ...], c: Chunk) -> Any:
    """Chunk-local flat indices -> the grid's flat indices."""
    import numpy as np

    sub = (c.rows.stop - c.rows.start, len(c.pairs)) + shape[2:]

    def to_grid(local: Any) -> Any:
        idx = list(np.unravel_index(local, sub))
        idx[0] = idx[0] + c.rows.start
        idx[1] = c.pairs[idx[1]]
        return np.ravel_multi_index(tuple(idx), shape)

    return to_grid
