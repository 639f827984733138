"""One forward step of a transformer replica as a sum of operators, each on its own roofline.

A step (a decode step, a prefill, or a mixed step of continuous batching) runs, per layer,
the QKV and output projections, the MLP (or the routed experts), attention over the KV
cache, the element-wise kernels (norms, rotary, activation, residual adds) and, under
tensor parallelism, two all-reduces; then the LM head once. Each is a separate kernel, so
the step takes the *sum* of their times, and each operator takes the larger of its memory
time and its compute time:

    t_op   = max(bytes / (bandwidth · η_bw), FLOPs / (peak · η(shape)))
    t_step = L · (Σ_layer ops + t_layer) + t_lm_head + t_step_fixed

Every function takes floats or numpy arrays (the planner sweeps batch, TP degree and GPU
type at once), so none branches on a value. Symbols (per GPU, after tensor parallelism):

    M   tokens in the step (decoding sequences + prefill tokens)      K, N  a linear layer's in/out width
    η_max  a GEMM's best fraction of the dense peak                  M_½  tokens at which η is half of η_max
    C   cached tokens attention reads in the step (Σ over decoding sequences of their context)
    Π   causal query-key pairs of the step's prefill tokens
"""

from __future__ import annotations

from typing import Any, NamedTuple

from napkin.formulas._array import all_zero, gate_or_true, same_values
from napkin.formulas._array import maximum as _maximum

ACTIVATION_BYTES = 2.0  # bf16 activations between kernels, whatever the weight format
_TINY = 1e-30  # keeps 0/0 (an operator with no tokens, a dense model's experts) at 0, not NaN
ROUTE_PASSES = 3.0  # an MoE layer's routing copies a token: k · d read and written (permute), k · d read back (finalize)


class LayerShapes(NamedTuple):
    """The widths one GPU multiplies in one layer, after tensor parallelism (plain numbers or arrays).

    Built by :meth:`napkin.model.ModelSpec.layer_shapes`; ``moe_fraction`` is the share of the
    layers whose MLP is routed experts (0 for a dense model).
    """

    d_model: Any
    qkv_out: Any  # (h + 2·h_kv) · d_h / tp
    attn_out_in: Any  # h · d_h / tp
    mlp_in_out: Any  # (2 if gated else 1) · d_ff / tp, dense layers
    mlp_out_in: Any  # d_ff / tp
    n_experts: Any  # routed experts E (0: dense)
    top_k: Any  # experts per token k
    expert_in_out: Any  # (2 if gated else 1) · d_ff_expert / tp
    expert_out_in: Any  # d_ff_expert / tp
    shared_in_out: Any  # shared experts' (gated) width / tp (0: none)
    shared_out_in: Any
    moe_fraction: Any  # L_moe / L
    kv_bytes_per_token: Any  # one layer's cached bytes per token on this GPU (K and V, or MLA's latent)
    attn_flops_per_kv_token: Any  # 4 · h · d_attn / tp: QKᵀ and AV for one query against one key
    vocab_out: Any  # V / tp
    n_layers: Any
    bytes_per_weight: Any  # of the attention projections and the LM head
    mlp_bytes_per_weight: Any  # of the MLP and experts (a checkpoint may keep them at another precision)


class Rates(NamedTuple):
    """What one GPU achieves: peaks and bandwidths with their efficiencies, and the fixed costs."""

    dense_flops_per_s: Any  # at the weights' compute precision
    attention_flops_per_s: Any  # the peak attention runs at (bf16, or fp8 where the kernel is fp8)
    memory_bytes_per_s: Any
    bandwidth_efficiency: Any  # η_bw
    gemm_efficiency: Any  # η_max
    gemm_half_tokens: Any  # M_½
    attention_efficiency: Any  # η of attention kernels against attention_flops_per_s
    link_bytes_per_s: Any  # one direction, after its achieved fraction (∞: no TP)
    allreduce_latency_s: Any
    per_layer_s: Any  # fixed cost of one layer's kernels in a step with prompt tokens (launched one by one)
    per_layer_decode_s: Any  # the same in a decode-only step (replayed as a CUDA graph by serving engines)
    per_step_s: Any  # fixed cost per step (scheduling, sampling, host)
    elementwise_passes: Any  # reads and writes of an M × d activation per layer by element-wise kernels
    mlp_flops_per_s: Any  # the peak the MLP's (or experts') GEMMs run at: their own precision's
    mlp_gemm_efficiency: Any  # and its η_max
    allreduce_curve: Any = None  # measured bus bandwidth at 2^15 .. 2^34 bytes (comm.CURVE_LOG2_BYTES); None: α-β
    expert_gemm_efficiency: Any = None  # η_max of the routed experts' grouped GEMMs (None: the MLP's)


class OperatorTime(NamedTuple):
    """One operator's work on one GPU and its time: the larger roof, or the sum for a latency."""

    bytes: Any  # moved through HBM (or over the link, for an all-reduce)
    flops: Any
    memory_s: Any  # bytes / (bandwidth · η_bw)  (the link's time for an all-reduce)
    compute_s: Any  # FLOPs / (peak · η)
    seconds: Any  # max(memory_s, compute_s), plus any fixed latency


def gemm_efficiency(tokens: Any, *, max_efficiency: Any, half_tokens: Any) -> Any:
    """η(M) = η_max · M / (M + M_½)

    The fraction of the dense peak a GEMM with M rows (tokens) reaches when it is compute-bound:
    small M leaves tiles and SMs idle, large M approaches the best achieved figure η_max. Below
    the ridge the memory roof binds anyway (a decode GEMM streams its weights), so η(M) matters
    from a few hundred tokens up, where measured GEMMs fall short of a sharp roofline.
    Trap: one efficiency for every shape: a single MFU makes short prefills too fast and the
    knee of the roofline too sharp (at M = 256 an H100 GEMM reaches 68% of its best, not 100%).
    Source: η_max per accelerator from measured maximum achievable matmul FLOPS (Bekman,
    ml-engineering, MAMF table); the M-dependence from cuBLAS GEMM sweeps over M published in
    vLLM pull requests #17126 (H100: 68% of MAMF at M = 256) and #19566 (SM100: 63%, 74%, 79% at
    M = 256, 512, 1024).
    """
    return max_efficiency * tokens / (tokens + half_tokens)


def gemm_flops_per_s(tokens: Any, *, rates: Rates) -> Any:
    """achieved = peak · η_max · max(M / (M + M_½), ε)

    The FLOP/s a GEMM with M = ``tokens`` rows reaches (η(M): gemm_efficiency), floored above 0.
    The GEMMs of a step that share M and the rates (QKV and the attention output; an MLP's in and
    out) share it: linear_time takes it as ``achieved``, so a swept grid computes it once for them.
    Trap: the datasheet peak for a GEMM of a few rows (a decode step's M = batch) reaches a
    fraction of it; η(M) carries that.
    Source: as gemm_efficiency (Bekman's MAMF table; vLLM pull requests #17126 and #19566).
    """
    # η_max · (M / (M + M_½)) with the peak: on a swept grid the token axis and the hardware rows meet once
    share = gemm_efficiency(tokens, max_efficiency=1.0, half_tokens=rates.gemm_half_tokens)
    return (rates.dense_flops_per_s * rates.gemm_efficiency) * _maximum(share, _TINY)


def linear_time(tokens: Any, *, k: Any, n: Any, bytes_per_weight: Any, rates: Rates, count: Any = 1.0,
                achieved: Any = None, on: Any = None) -> OperatorTime:
    """t = count · max((K·N·b_w + M·(K + N)·b_a) / (bw · η_bw), 2·M·K·N / (peak · η(M)))

    ``count`` identical GEMMs of an [M × K] activation by a [K × N] weight: the weight is read
    once per GEMM, the activations in and out, and 2·M·K·N FLOPs are done; ``achieved`` is
    peak · η(M) (gemm_flops_per_s) when the caller has it already. Given ``on`` (M > 0, the caller's),
    one GEMM's time alone: bytes, FLOPs and roof times None.
    Trap: adding the memory and compute times (a kernel streams and computes at once), or one
    max over the whole step (the weights' GEMMs and the KV cache's attention are different
    kernels: at a large batch the step is their sum).
    Source: Williams et al. 2009 (roofline); NVIDIA, Matrix Multiplication Background User's
    Guide (arithmetic intensity of a GEMM).
    """
    if achieved is None:
        achieved = gemm_flops_per_s(tokens, rates=rates)
    if on is not None and isinstance(count, (int, float)) and count == 1.0:
        # the time alone (a planner's grid): the cell's work is on·X with on 0 or 1, so on multiplies the
        # time at the end (X / c · 1 is X / c; 0 either way): the same value, three array passes fewer
        seconds = _maximum((k * n * bytes_per_weight + tokens * ((k + n) * ACTIVATION_BYTES))
                           / (rates.memory_bytes_per_s * rates.bandwidth_efficiency),
                           ((2.0 * k * n) * tokens) / achieved)
        if on is True and isinstance(n, (int, float)) and n > 0 and isinstance(k, (int, float)) and k > 0:
            return OperatorTime(None, None, None, None, seconds)  # every cell has tokens: nothing to gate
        return OperatorTime(None, None, None, None, seconds * (on * ((n > 0) * (k > 0))))
    # no GEMM without both widths (a model with no shared expert: K = 0 moves no activations either)
    on = (tokens > 0) * (count * ((n > 0) * (k > 0)))  # the constants multiplied first: a swept grid's arrays once
    moved = on * (k * n * bytes_per_weight + tokens * ((k + n) * ACTIVATION_BYTES))
    flops = (2.0 * k * n) * tokens * on
    mem = moved / (rates.memory_bytes_per_s * rates.bandwidth_efficiency)
    comp = flops / achieved
    return OperatorTime(moved, flops, mem, comp, _maximum(mem, comp))


def experts_touched(tokens: Any, *, n_experts: Any, top_k: Any) -> Any:
    """E_touched = E · (1 − (1 − k/E)^M)

    The routed experts at least one of M tokens picks (uniform routing): each must be read
    once in the step, and its GEMM has M·k / E_touched rows.
    Trap: reading only the active parameters at every batch: at 64 tokens DeepSeek-V3 touches
    ~87% of its 256 experts per layer, so a batched MoE step moves like a dense model of its
    total size.
    Source: the expected number of distinct items in M draws of k from E (coupon collector);
    DeepSeek-AI 2024, DeepSeek-V3 (arXiv:2412.19437) for the routing.
    """
    share = top_k / _maximum(n_experts, _TINY)  # k/E; 0 for a dense model (k = 0)
    return n_experts * (1.0 - (1.0 - share) ** tokens)


def _add(*ops: OperatorTime, scale: Any = 1.0, work: bool = True) -> OperatorTime:
    """The operators' sum, field by field; with ``work=False`` the time alone (a planner's grid wants no more)."""
    def total(field: str) -> Any:
        if not work and field != "seconds":
            return None
        out = getattr(ops[0], field)
        for o in ops[1:]:
            out = out + getattr(o, field)
        # a scale of 1 (a constant of the caller, not a swept value) would copy every field once more
        return out if isinstance(scale, (int, float)) and scale == 1.0 else scale * out

    return OperatorTime(*(total(f) for f in OperatorTime._fields))


def _scale(op: OperatorTime, factor: Any) -> OperatorTime:
    return OperatorTime(*(None if v is None else factor * v for v in op))


def mlp_time(tokens: Any, *, shapes: LayerShapes, rates: Rates, keep_work: bool = True, achieved: Any = None,
             on: Any = None) -> OperatorTime:
    """t_mlp = (1 − f_moe) · t_dense(M) + f_moe · (t_experts + t_shared)

    Dense layers run two GEMMs (in, out). An MoE layer runs, for each of the E_touched routed
    experts, the same two GEMMs on M·k / E_touched tokens, plus its shared experts on all M; the
    routed experts' grouped GEMMs reach ``rates.expert_gemm_efficiency`` of the peak (η_e · η_max,
    η_e fitted leave-sources-out: catalog/efficiency.toml [fitted]) where a dense GEMM reaches η_max.
    Trap: counting the routed experts at the batch's M rows: each expert sees only its share, so
    its GEMM is small and memory-bound long after a dense one would be compute-bound; and pricing
    a grouped GEMM of many small problems at a dense GEMM's efficiency (vLLM's tuned kernel for
    Qwen3-30B-A3B's 128 experts reaches 26% of an L40S's FP8 peak at 8,192 tokens, pull request #53710).
    Source: Fedus et al. 2022, Switch Transformers; DeepSeek-V3 (arXiv:2412.19437), shared experts.
    ``keep_work=False`` sums the time alone (bytes, FLOPs and roof times None); ``achieved`` (peak · η(M)
    at the projections' rates) and ``on`` (M > 0), when the caller has them, are reused (see linear_time).
    """
    w = shapes.mlp_bytes_per_weight
    same = same_values(rates.mlp_flops_per_s, rates.dense_flops_per_s) and \
        same_values(rates.mlp_gemm_efficiency, rates.gemm_efficiency)
    rates = rates._replace(dense_flops_per_s=rates.mlp_flops_per_s, gemm_efficiency=rates.mlp_gemm_efficiency)
    # both GEMMs (and the shared experts') have M = tokens: the projections' rate when the MLP runs at theirs
    a = achieved if achieved is not None and same else gemm_flops_per_s(tokens, rates=rates)
    dense = _add(linear_time(tokens, k=shapes.d_model, n=shapes.mlp_in_out, bytes_per_weight=w, rates=rates,
                             achieved=a, on=on),
                 linear_time(tokens, k=shapes.mlp_out_in, n=shapes.d_model, bytes_per_weight=w, rates=rates,
                             achieved=a, on=on), work=keep_work)
    if isinstance(shapes.moe_fraction, (int, float)) and shapes.moe_fraction == 0:
        return dense  # a dense model (a property of the model, not of a value swept): its expert terms are all 0
    touched = experts_touched(tokens, n_experts=shapes.n_experts, top_k=shapes.top_k)
    per_expert = tokens * shapes.top_k / _maximum(touched, _TINY)
    grouped = rates.expert_gemm_efficiency
    ae = gemm_flops_per_s(per_expert, rates=rates if grouped is None else rates._replace(gemm_efficiency=grouped))
    moe = _add(linear_time(per_expert, k=shapes.d_model, n=shapes.expert_in_out, bytes_per_weight=w, rates=rates,
                           count=touched, achieved=ae),
               linear_time(per_expert, k=shapes.expert_out_in, n=shapes.d_model, bytes_per_weight=w, rates=rates,
                           count=touched, achieved=ae),
               linear_time(tokens, k=shapes.d_model, n=shapes.shared_in_out, bytes_per_weight=w, rates=rates,
                           achieved=a),
               linear_time(tokens, k=shapes.shared_out_in, n=shapes.d_model, bytes_per_weight=w, rates=rates,
                           achieved=a), work=keep_work)
    return _add(_scale(dense, 1.0 - shapes.moe_fraction), _scale(moe, shapes.moe_fraction), work=keep_work)


def attention_time(kv_tokens: Any, *, prefill_pairs: Any, shapes: LayerShapes, rates: Rates,
                   keep_work: bool = True) -> OperatorTime:
    """t = C · max(kv_bytes / (bw · η_bw), 4·h·d_attn / (peak_attn · η_attn)) + Π · 4·h·d_attn / (peak_attn · η_attn)

    One layer's attention. Decode: every decoding sequence's new token reads its cached keys and
    values (C is the sum of their contexts); both the bytes and the FLOPs grow with C, so the
    time is linear in it. Prefill: Π causal query-key pairs at the attention kernel's efficiency
    (FlashAttention keeps the scores on chip, so its time is its FLOPs).
    Trap: the query-head count instead of the KV heads in the bytes (GQA reads h_kv heads); a
    long prefill without its attention (at 32k tokens on an 8B model it is as large as the 2N GEMMs).
    Source: Kwon et al. 2023, PagedAttention (vLLM); Dao 2023, FlashAttention-2 (arXiv:2307.08691);
    Shah et al. 2024, FlashAttention-3 (arXiv:2407.08608).
    ``keep_work=False`` gives the time alone (bytes, FLOPs and roof times None).
    """
    peak = rates.attention_flops_per_s * rates.attention_efficiency
    mem = kv_tokens * shapes.kv_bytes_per_token / (rates.memory_bytes_per_s * rates.bandwidth_efficiency)
    dec_flops = kv_tokens * shapes.attn_flops_per_kv_token
    pre_flops = prefill_pairs * shapes.attn_flops_per_kv_token
    dec = _maximum(mem, dec_flops / peak)
    if not keep_work:  # the time alone (a planner's grid); a decode-only step adds 0/peak, exactly nothing
        return OperatorTime(None, None, None, None, dec if all_zero(prefill_pairs) else dec + pre_flops / peak)
    return OperatorTime(kv_tokens * shapes.kv_bytes_per_token, dec_flops + pre_flops, mem,
                        (dec_flops + pre_flops) / peak, dec + pre_flops / peak)


def elementwise_time(tokens: Any, *, shapes: LayerShapes, rates: Rates, keep_work: bool = True) -> OperatorTime:
    """t = M · (passes · d + a_mlp + f_moe · 3 · k · d) · b_a / (bw · η_bw),   a_mlp = (width in + width out) of
    the MLP's activation

    Norms, rotary embedding and residual adds read and write M × d activations a few times per
    layer; the MLP's activation reads its input width (2 · d_ff for a gated MLP) and writes d_ff.
    An MoE layer also routes each token to its k experts and back: the permute kernel reads and
    writes each of the k copies of the token's d values (sorted by expert, for the grouped GEMM),
    and the finalize kernel reads the k expert outputs back to sum them (its write of d is one of
    the layer's passes): 3 · k · d values a token. None of them reaches the compute roof.
    Trap: ignoring them at a long prefill, where M × d_ff activations are gigabytes per layer; or
    an MoE layer as a dense MLP of its active width, without the routing's copies (top-8 of width
    2,048, Qwen3-30B-A3B's, moves 49k values a token a layer, three times its activations').
    Source: Korthikanti et al. 2022 (arXiv:2205.05198), Table 2 (the element-wise tensors of a
    layer); the pass count is in catalog/efficiency.toml. The routing: TensorRT-LLM's MoE kernels
    (cpp/tensorrt_llm/kernels/mixtureOfExperts: expandInputRowsKernel, finalizeMoeRoutingKernel),
    as MegaBlocks' permute and unpermute (Gale et al. 2022, arXiv:2211.15841).
    """
    dense = shapes.mlp_in_out + shapes.mlp_out_in
    moe = shapes.top_k * (shapes.expert_in_out + shapes.expert_out_in + ROUTE_PASSES * shapes.d_model) \
        + shapes.shared_in_out + shapes.shared_out_in
    widths = rates.elementwise_passes * shapes.d_model + (1.0 - shapes.moe_fraction) * dense \
        + shapes.moe_fraction * moe
    moved = tokens * (widths * ACTIVATION_BYTES)
    mem = moved / (rates.memory_bytes_per_s * rates.bandwidth_efficiency)
    if not keep_work:  # the time alone
        return OperatorTime(None, None, None, None, mem)
    zero = 0.0 * moved  # no compute roof: zeros of the work's shape
    return OperatorTime(moved, zero, mem, zero, mem)


def allreduce_time(tokens: Any, *, shapes: LayerShapes, rates: Rates, tp: Any,
                   link_time: bool = True) -> OperatorTime:
    """t = 2 · tp_allreduce_seconds(S = M · d · b_a)   (0 at tp = 1)

    Two all-reduces per layer (after attention, after the MLP) of the step's M × d activations, each
    the faster of a one-shot kernel and the ring (:func:`napkin.formulas.comm.tp_allreduce_seconds`):
    the ring at the family's measured bus bandwidth for that message size where a published sweep
    exists (``rates.allreduce_curve``), else at the link's large-message rate plus a fixed latency.
    The ``memory_s`` column is the ring's volume over the link at its large-message rate (None with
    ``link_time=False``: a planner's grid wants the time alone).
    Trap: one-way bytes over the bidirectional rating (900 GB/s of NVLink is 450 each way), and a
    decode all-reduce of a few MiB at the large-message bandwidth (nccl-tests: 2-5x slower).
    Source: Shoeybi et al. 2019, Megatron-LM (two all-reduces per layer); Patarasuk and Yuan
    2009 (ring all-reduce volume); achieved bus bandwidth from nccl-tests (catalog/efficiency.toml).
    """
    from napkin.formulas.comm import tp_allreduce_seconds

    message = tokens * (shapes.d_model * ACTIVATION_BYTES)
    if isinstance(tp, (int, float)) and tp <= 1:  # one GPU: nothing to all-reduce
        seconds: Any = 0.0 * message
    else:
        seconds = tp_allreduce_seconds(message, n_ranks=tp, link_bytes_per_s=rates.link_bytes_per_s,
                                       latency_s=rates.allreduce_latency_s, curve=rates.allreduce_curve, count=2.0)
        if not isinstance(tp, (int, float)):
            seconds = seconds * (tp > 1)
    if not link_time:
        return OperatorTime(None, None, None, None, seconds)
    volume = (2.0 * 2.0 * (tp - 1.0) / tp) * message
    zero = 0.0 * volume
    return OperatorTime(volume, zero, volume / rates.link_bytes_per_s, zero, seconds)


def fixed_time(seconds: Any, *, keep_work: bool = True) -> OperatorTime:
    """t = a fixed cost (kernel launches, synchronisation, scheduling, sampling)

    A step with prompt tokens launches its kernels one by one; serving engines capture the
    decode-only step once as a CUDA graph and replay it, which costs less per layer.
    Trap: a roofline with no fixed cost: a 128-token prefill of a 7B model on an H200 is
    2 ms of arithmetic and about 6 ms measured.
    Source: the per-layer and per-step costs are fitted to published serving runs
    (catalog/efficiency.toml [fitted], `napkin validate --fit`), leave-sources-out.
    """
    if not keep_work:  # the time alone
        return OperatorTime(None, None, None, None, seconds)
    zero = 0.0 * seconds
    return OperatorTime(zero, zero, zero, zero, seconds)


OPERATORS = ("qkv", "attention_out", "mlp", "attention", "elementwise", "allreduce", "layer_overhead", "lm_head",
             "step_overhead")


def step_operators(tokens: Any, *, kv_tokens: Any, prefill_pairs: Any, logits: Any, shapes: LayerShapes,
                   rates: Rates, tp: Any) -> dict[str, OperatorTime]:
    """{operator: its work and time} in one step; their sum is the step's time (see step_seconds)

    qkv, attention_out, mlp (or experts), attention (decode over C cached tokens + prefill over Π
    pairs), elementwise and all-reduce, each times L; per-layer fixed costs times L; the LM head on
    the sequences that emit a token; the per-step fixed cost.
    Trap: one max() over the whole step: the weights, the KV cache and the arithmetic are read and
    done by different kernels, so at a large batch the step is close to the sum of their times.
    Source: the roofline per operator (Williams et al. 2009) summed over kernels, as in Yuan et al.
    2024, LLM Inference Unveiled: Survey and Roofline Model Insights (arXiv:2402.16363).
    """
    per_layer, per_step = _operators(tokens, kv_tokens=kv_tokens, prefill_pairs=prefill_pairs, logits=logits,
                                     shapes=shapes, rates=rates, tp=tp, keep_work=True)
    ops = {k: _scale(o, shapes.n_layers) for k, o in per_layer.items()} | per_step
    return {k: ops[k] for k in OPERATORS}


def _operators(tokens: Any, *, kv_tokens: Any, prefill_pairs: Any, logits: Any, shapes: LayerShapes,
               rates: Rates, tp: Any, keep_work: bool) -> tuple[dict[str, OperatorTime], dict[str, OperatorTime]]:
    """The step's operators: ({one layer's}, {once per step}); ``keep_work=False`` gives their times alone
    (bytes, FLOPs and roof times None)."""
    L = shapes.n_layers
    w = shapes.bytes_per_weight
    on = tokens > 0
    gate = None if keep_work else gate_or_true(on)  # the time alone: each GEMM's time gated by M > 0 at its end
    a = gemm_flops_per_s(tokens, rates=rates)  # QKV and the attention output: the same M and rates
    per_layer = rates.per_layer_s * (prefill_pairs > 0) + rates.per_layer_decode_s * (prefill_pairs <= 0)
    return {
        "qkv": linear_time(tokens, k=shapes.d_model, n=shapes.qkv_out, bytes_per_weight=w, rates=rates,
                           achieved=a, on=gate),
        "attention_out": linear_time(tokens, k=shapes.attn_out_in, n=shapes.d_model, bytes_per_weight=w,
                                     rates=rates, achieved=a, on=gate),
        "mlp": mlp_time(tokens, shapes=shapes, rates=rates, keep_work=keep_work, achieved=a, on=gate),
        "attention": attention_time(kv_tokens, prefill_pairs=prefill_pairs, shapes=shapes, rates=rates,
                                    keep_work=keep_work),
        "elementwise": elementwise_time(tokens, shapes=shapes, rates=rates, keep_work=keep_work),
        "allreduce": allreduce_time(tokens, shapes=shapes, rates=rates, tp=tp, link_time=keep_work),
    }, {
        "layer_overhead": fixed_time(L * on * per_layer, keep_work=keep_work),
        # a quantized engine keeps the LM head at 16 bits (formulas.memory.served_weights_bytes)
        "lm_head": linear_time(logits, k=shapes.d_model, n=shapes.vocab_out, bytes_per_weight=_maximum(w, 2.0),
                               rates=rates, on=None if keep_work else gate_or_true(logits > 0)),
        "step_overhead": fixed_time(rates.per_step_s * on, keep_work=keep_work),
    }


def total_seconds(ops: dict[str, OperatorTime]) -> Any:
    """t_step = Σ_operators t_op

    How a step's operators combine: one after another, each a kernel of its own. Every command
    sums a step through this function.
    Trap: treating the whole step as one kernel, max(bytes, FLOPs): that hides the KV read behind
    the weights' arithmetic at large batch and comes out about a third short.
    Source: Williams et al. 2009 (roofline), per operator and summed.
    """
    total = 0.0
    for i, op in enumerate(ops.values()):
        total = op.seconds if i == 0 else total + op.seconds  # 0.0 + t is t: no copy of the first
    return total


def step_seconds(tokens: Any, *, kv_tokens: Any, prefill_pairs: Any, logits: Any, shapes: LayerShapes,
                 rates: Rates, tp: Any) -> Any:
    """t_step = Σ_operators t_op   (step_operators' operators, their times alone, combined by total_seconds)

    Trap: treating the whole step as one kernel, max(bytes, FLOPs): that hides the KV read behind
    the weights' arithmetic at large batch and comes out about a third short.
    Source: Williams et al. 2009 (roofline), per operator and summed.
    """
    per_layer, per_step = _operators(tokens, kv_tokens=kv_tokens, prefill_pairs=prefill_pairs, logits=logits,
                                     shapes=shapes, rates=rates, tp=tp, keep_work=False)
    L = shapes.n_layers
    ops = {k: OperatorTime(None, None, None, None, L * o.seconds) for k, o in per_layer.items()} | per_step
    return total_seconds({k: ops[k] for k in OPERATORS})
