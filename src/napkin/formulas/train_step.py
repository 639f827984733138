"""One training step on the roofline: operator times summed, communication with its overlap.

A layer's forward is its GEMMs (QKV, output projection, the MLP's two), the attention core
and the memory-bound elementwise kernels (norms, residual adds, rotary embedding, the MLP's
activation, an unflashed softmax); each operator takes

    t_op = max(bytes / (bw · η_bw), FLOPs / (peak · η(shape)))

with η(shape) the GEMM efficiency at its token dimension and per-rank width. The backward
doubles the GEMMs and the elementwise traffic and runs the attention core at its backward
ratio; recomputation adds forward work. A step is m micro-batches through the slowest
stage, the pipeline bubble, and the communication left exposed after overlap.

Symbols as in :mod:`napkin.formulas.parallelism` and :mod:`napkin.formulas.activations`.
Every function takes floats or numpy arrays and never branches on a value.
"""

from __future__ import annotations

from typing import Any

from napkin.formulas._array import maximum as _maximum
from napkin.formulas._array import where as _where

BACKWARD_GEMM_RATIO = 2.0  # input and weight gradients: two GEMMs the size of the forward one
BACKWARD_ELEMENTWISE_RATIO = 2.0  # the backward reads the saved tensor and the incoming gradient, writes one
FLASH_BACKWARD_RATIO = 2.5  # FlashAttention's backward: five matmuls to the forward's two (it recomputes S)
# Adam's update reads the fp32 master weight, gradient, m and v and writes weight, m, v and the 16-bit copy
ADAM_UPDATE_BYTES_PER_PARAM = 4.0 * 4 + 3 * 4.0 + 2.0


def gemm_efficiency(tokens: Any, *, peak_fraction: Any, tokens_half: Any) -> Any:
    """η = η_max · M / (M + M½)

    The fraction of the dense peak a GEMM reaches: η_max for large shapes, falling as its token
    dimension M (the micro-batch's tokens on this GPU, or the tokens one expert receives) shrinks
    toward M½, the size at which throughput halves (fixed per-kernel costs, tile quantisation,
    the weights read once per GEMM).
    Trap: one efficiency for every shape: a micro-batch of one short sequence, or an expert that
    receives a few hundred tokens, runs its GEMMs far below the large-shape rate.
    Source: vLLM PR #49363 (H100, bf16, N=12288 K=5376: 352.6 TFLOP/s at M=128, 44% of the
    large-shape rate); DeepGEMM README (H800 fp8: 645 TFLOPS at M=128 against 1426 at 4096).
    """
    return peak_fraction * tokens / (tokens + tokens_half)


def gemm_seconds(tokens: Any, *, n: Any, k: Any, weight_bytes_per_value: float = 2.0,
                 bytes_per_value: float = 2.0, dense_flops_per_s: Any, memory_bytes_per_s: Any,
                 bandwidth_efficiency: Any, efficiency: Any) -> Any:
    """t = max((k·n·B_w + M·(k + n)·B) / (bw · η_bw), 2·M·n·k / (peak · η))

    One GEMM of an M x k activation by a k x n weight: it reads the weight and the input and
    writes the output, and does 2·M·n·k FLOPs.
    Trap: a peak at the wrong precision: bf16 GEMMs on an fp8 peak are twice too fast.
    Source: Williams et al. 2009 (roofline); NVIDIA Matrix Multiplication Background
    User's Guide (arithmetic intensity of a GEMM).
    """
    moved = k * n * weight_bytes_per_value + tokens * (k + n) * bytes_per_value
    return _maximum(moved / (memory_bytes_per_s * bandwidth_efficiency),
                    2.0 * tokens * n * k / (dense_flops_per_s * efficiency))


def attention_core_flops(tokens: Any, *, seq_len: Any, d_attn: float, tp: Any = 1.0, causal_fraction: Any = 0.5) -> Any:
    """FLOPs = 4 · T · s · d_attn · f_causal / t   (forward: QKᵀ and the product with V)

    T queries (this GPU's tokens) against s keys; f_causal = 1/2 when the kernel skips the
    masked half (FlashAttention), 1 when it computes the whole square and masks it.
    Trap: the causal half is a kernel property, not a convention: an unfused softmax
    computes (and stores) the full square.
    Source: Dao et al. 2022, FlashAttention, section 3.1; Kaplan et al. 2020, Table 1.
    """
    return 4.0 * tokens * seq_len * d_attn * causal_fraction / tp


def elementwise_bytes_per_layer(tokens: Any, *, d_model: float, d_attn: float, d_kv: float, d_ff_active: float,
                                mlp_inputs: float, n_heads: float, seq_len: Any, tp: Any = 1.0,
                                kv_shards: Any = 1.0, sequence_parallel: Any = 0.0, rope: float = 1.0,
                                flash: Any = 1.0, dropout: Any = 0.0, bytes_per_value: float = 2.0) -> Any:
    """bytes = T·h·(4B + 2·(3B + dropout))/σ + 2·rope·T·(d_attn/t + d_kv/ks)·B
             + (n_in + 1)·T·f·B/t + (1 − flash)·(a/t)·T·s·(4B + dropout·(2B + 1))   (forward)

    The memory-bound kernels of one layer's forward on one GPU: the two norms (read and write
    T·h), the two residual adds with their dropout (read two, write one, a mask byte), the
    rotary embedding of Q and K, the MLP's activation (GeLU reads f and writes f, SwiGLU
    reads 2f and writes f), and an unflashed core's scale/mask/softmax/dropout over the
    scores. σ = t with sequence parallelism (the norms run on 1/t of the sequence), else 1.
    Trap: treating a layer as its GEMMs: on an H100 a 4096-wide layer's elementwise traffic
    is ~10% of its time, and an unfused softmax at s = 2k is more than its attention GEMMs.
    Source: Korthikanti et al. 2022, section 4.1 (the tensors each kernel reads and writes);
    Dao et al. 2022, section 1 (softmax and dropout are memory-bound).
    """
    sigma = _where(sequence_parallel, tp, 1.0 + 0.0 * tp)
    hidden = tokens * d_model * (4.0 * bytes_per_value + 2.0 * (3.0 * bytes_per_value + dropout)) / sigma
    rotary = 2.0 * rope * tokens * (d_attn / tp + d_kv / kv_shards) * bytes_per_value
    mlp = (mlp_inputs + 1.0) * tokens * d_ff_active * bytes_per_value / tp
    scores = (1.0 - flash) * n_heads / tp * tokens * seq_len * (4.0 * bytes_per_value
                                                              + dropout * (2.0 * bytes_per_value + 1.0))
    return hidden + rotary + mlp + scores


def layer_train_seconds(gemm_s: Any, *, attention_s: Any, elementwise_s: Any, recompute: Any,
                        attention_backward_ratio: Any = FLASH_BACKWARD_RATIO) -> Any:
    """t_layer = F + (2·G + r·A + 2·E) + [0, A, F][recompute],   F = G + A + E

    One layer's forward, backward and recomputation for one micro-batch, from its forward
    GEMM time G, attention-core time A and elementwise time E: the backward doubles the GEMMs
    (input and weight gradients) and the elementwise traffic and runs the core at r times its
    forward (2.5 for FlashAttention, 2 unfused); selective recomputation reruns the core, full
    recomputation the whole forward.
    Trap: pricing full recomputation at nothing: it is a third more arithmetic (4 passes
    instead of 3), which HFU counts and MFU does not.
    Source: Narayanan et al. 2021, section 3.5 (full recomputation: 4 passes); Korthikanti
    et al. 2022, section 5 (selective recomputation); Dao et al. 2022 (backward ratio).
    """
    forward = gemm_s + attention_s + elementwise_s
    backward = BACKWARD_GEMM_RATIO * gemm_s + attention_backward_ratio * attention_s \
        + BACKWARD_ELEMENTWISE_RATIO * elementwise_s
    again = _where(recompute == 2, forward, _where(recompute == 1, attention_s, 0.0 * forward))
    return forward + backward + again


def optimizer_seconds(n_params: Any, *, memory_bytes_per_s: Any, bandwidth_efficiency: Any,
                      bytes_per_param: float = ADAM_UPDATE_BYTES_PER_PARAM) -> Any:
    """t = N_gpu · bytes_per_param / (bw · η_bw)

    The optimizer update of the parameters this GPU owns (its ZeRO shard): a memory-bound
    pass over the fp32 master weights, gradients and moments (Adam: 30 bytes per parameter).
    Trap: it is not free without ZeRO: every data-parallel rank updates every parameter.
    Source: Rajbhandari et al. 2020, section 5.1 (the update runs on the owned partition).
    """
    return n_params * bytes_per_param / (memory_bytes_per_s * bandwidth_efficiency)


def step_seconds(compute_s: Any, *, tp_comm_s: Any = 0.0, pp_bubble_s: Any = 0.0, pp_comm_s: Any = 0.0,
                 dp_comm_s: Any = 0.0, cp_comm_s: Any = 0.0, ep_comm_s: Any = 0.0) -> Any:
    """t_step = compute + TP + bubble + PP + DP + CP + EP   (each communication part as exposed)

    Trap: taking the maximum of compute and communication: only the overlapped part hides;
    what each part leaves exposed adds to the step.
    Source: Narayanan et al. 2021, section 3 (performance model: bubble plus communication on
    the critical path); Isaev et al. 2023, Calculon (SC'23), section 3.
    """
    # grouped so that a planner's grid adds the parts that do not vary with ZeRO before those that do
    return (tp_comm_s + cp_comm_s + ep_comm_s + pp_bubble_s + pp_comm_s) + (compute_s + dp_comm_s)


def recompute_flops_per_token(active_params: Any, *, attention_flops_per_token: Any, recompute: Any) -> Any:
    """extra = [0, A/3, 2N + A/3][recompute]   per token

    The hardware FLOPs recomputation adds, under the run's convention (A is its attention term
    for forward and backward, a third of it the forward): a full forward for full
    recomputation, the attention core's forward for selective.
    Trap: reporting HFU as MFU: full recomputation adds 2N per token, 33% of 6N, that does not
    train the model.
    Source: Korthikanti et al. 2022, section 6 (MFU and HFU); Chowdhery et al. 2022, PaLM,
    appendix B.
    """
    return _where(recompute == 2, 2.0 * active_params + attention_flops_per_token / 3.0,
                  _where(recompute == 1, attention_flops_per_token / 3.0, 0.0 * attention_flops_per_token))
