"""Activation memory of training: the bytes autograd keeps from the forward pass for the backward.

Per transformer layer and micro-batch on one GPU, after Korthikanti et al. 2022 ("Reducing
Activation Recomputation in Large Transformer Models", arXiv:2205.05198, section 4 and
Table 2), generalised to the layers trained today. Symbols, mapped once:

    s  sequence length (keys an attention query sees)   T  tokens one GPU holds: s / cp · b
    b  micro-batch (sequences)        h  d_model        a  query heads      t  TP degree
    d_attn  a · d_head (query width)  d_kv  h_kv · d_head (K or V width)     f  d_ff
    B  bytes per activation value (2 for bf16)          masks are one byte per value

Korthikanti's GPT layer (MHA, GeLU MLP of 4h, dropout, 16-bit) stores sbh(34 + 5as/h) bytes:
LayerNorm inputs 4sbh; QKV input 2sbh, Q K V 6sbh, softmax 2as²b, its dropout mask as²b and
output 2as²b, out-projection input 2sbh, dropout mask sbh; MLP input 2sbh, GeLU input and
output 16sbh, dropout mask sbh. Tensor parallelism splits 24sbh + 5as²b of it by t; sequence
parallelism splits the other 10sbh too; selective recomputation drops the 5as²b; full
recomputation keeps only the layer's input, 2sbh. FlashAttention never stores the s² terms
(it keeps the row log-sum-exp, 4 bytes per head and token, and recomputes the scores); GQA
stores K and V at h_kv · d_head; a gated MLP (SwiGLU) stores more f-wide tensors; an MoE
layer stores its dispatched tokens k times. Every function takes floats or numpy arrays.
"""

from __future__ import annotations

from typing import Any

from napkin.formulas._array import where as _where

RECOMPUTE = ("none", "selective", "full")  # the codes 0, 1, 2 the planner sweeps
MASK_BYTES = 1.0  # a dropout mask is one byte per value (torch.native_dropout's bool mask)
LSE_BYTES = 4.0  # FlashAttention's row log-sum-exp is fp32
ROUTER_BYTES = 4.0  # MoE router probabilities kept in fp32 for the backward of the softmax
# f-wide tensors an MLP keeps: GeLU keeps its input and output; SwiGLU as eager PyTorch runs it keeps
# the gate, the up projection, SiLU(gate) and their product (a fused SwiGLU kernel keeps three).
MLP_FF_TENSORS = {"gelu": 2.0, "swiglu": 4.0, "swiglu-fused": 3.0}


def replicated_activation_bytes(tokens: Any, *, d_model: Any, tp: Any = 1.0, sequence_parallel: Any = 0.0,
                                dropout: Any = 0.0, bytes_per_value: float = 2.0) -> Any:
    """bytes = T · h · (4 · B + 2 · dropout) / (t if SP else 1)

    The tensors tensor parallelism does not split: the two norms' inputs (2 · T·h·B), the
    inputs of the QKV projection and of the MLP (2 · T·h·B), and the two dropout masks after
    the attention and MLP blocks (2 · T·h bytes). With B = 2 and dropout this is Korthikanti's
    10sbh; sequence parallelism shards it over the t ranks.
    Trap: dividing it by t without sequence parallelism: Megatron's plain TP keeps these whole
    on every rank (the "10" in sbh(10 + 24/t + 5as/(ht))).
    Source: Korthikanti et al. 2022, sections 4.1-4.2.2 and Table 2.
    """
    per_token = d_model * (4.0 * bytes_per_value + 2.0 * MASK_BYTES * dropout)
    return tokens * per_token / _where(sequence_parallel, tp, 1.0 + 0.0 * tp)


def attention_activation_bytes(tokens: Any, *, seq_len: Any, n_heads: float, d_attn: float, d_kv: float,
                               tp: Any = 1.0, kv_shards: Any = 1.0, flash: Any = 1.0, dropout: Any = 0.0,
                               selective: Any = 0.0, bytes_per_value: float = 2.0) -> Any:
    """bytes = T · [B·(2·d_attn/t + 2·d_kv/ks) + (a/t) · (flash ? 4 : s·(B + dropout·(1 + B))) · (1 − sel)]

    Inside the attention block, split over the t tensor-parallel ranks: Q (T · d_attn), K and V
    (T · d_kv each, over ks = kv_shards ranks: t, or fewer when t exceeds the KV heads and a
    head is copied), the out-projection's input (T · d_attn); then either FlashAttention's
    log-sum-exp (4 bytes per head and token) or the materialised scores: softmax output (B),
    dropout mask (1) and dropout output (B) per head, query and key. Selective recomputation
    recomputes that core and stores none of it. With MHA, dropout and B = 2: 6sbh + 2sbh +
    5as²b, Korthikanti's attention block.
    Trap: the s² term: at s = 8k it is ~90% of an unflashed layer (5as/h = 5 · 64 · 8192 / 8192
    = 320 against 34), which is why FlashAttention or selective recomputation is not optional
    at long context; and K and V at the query width under GQA (8x too much on Llama 3.1 70B).
    Source: Korthikanti et al. 2022, section 4.1 (attention block: 11sbh + 5as²b); Dao et al.
    2022, FlashAttention (arXiv:2205.14135), section 3.1 (stores the output and the softmax
    normalisers, recomputes the scores); the saved tensors of PyTorch's CPU flash kernel
    (query, key, value, output, fp32 logsumexp), counted in tests/plan/test_activations_torch.py.
    """
    linear = bytes_per_value * (2.0 * d_attn / tp + 2.0 * d_kv / kv_shards)
    scores = seq_len * (bytes_per_value + dropout * (MASK_BYTES + bytes_per_value))
    core = n_heads / tp * _where(flash, LSE_BYTES + 0.0 * scores, scores) * (1.0 - selective)
    return tokens * (linear + core)


def mlp_activation_bytes(tokens: Any, *, d_ff_active: float, d_model: float, tp: Any = 1.0,
                         ff_tensors: float = 2.0, moe_copies: float = 0.0, n_experts: float = 0.0,
                         bytes_per_value: float = 2.0) -> Any:
    """bytes = T · [B · (n_f · f_active + 2 · k · h) + 4 · E] / t

    The MLP's f-wide tensors (n_f of them per unit of width: 2 for GeLU, 4 for an eager
    SwiGLU, 3 for a fused one) over the active width f_active (d_ff for a dense layer; the k
    routed plus shared experts' widths for MoE), split by TP; an MoE layer also keeps each
    token's k dispatched copies in and out of its experts (2 · k · h) and the router's fp32
    probabilities (4 · E bytes per token). Dense GPT: 2 · 2 · 4h = 16sbh, Korthikanti's GeLU.
    Trap: counting an MoE layer's activations once per token: each token is processed by k
    experts and stored k times, so Mixtral's MLP keeps 2x a dense 14336-wide MLP's tensors.
    Source: Korthikanti et al. 2022, section 4.1 (MLP block: 19sbh with input and mask);
    Shazeer 2020 (GLU variants: three projections); Fedus et al. 2022 (top-k dispatch copies).
    """
    per_token = bytes_per_value * (ff_tensors * d_ff_active + 2.0 * moe_copies * d_model)
    return tokens * (per_token + ROUTER_BYTES * n_experts) / tp


def checkpoint_activation_bytes(tokens: Any, *, d_model: float, tp: Any = 1.0, sequence_parallel: Any = 0.0,
                                bytes_per_value: float = 2.0) -> Any:
    """bytes = T · h · B / (t if SP else 1)

    Full recomputation keeps only each layer's input (the checkpoint) and recomputes the
    layer in the backward; sequence parallelism shards the checkpoint over the TP ranks.
    Trap: forgetting that the recomputed layer briefly holds its full activations again
    (layer_recompute_working_bytes), and that the recomputation costs a forward pass (HFU).
    Source: Korthikanti et al. 2022, Table 2 ("full activation recompute: sbh · 2");
    Chen et al. 2016 (arXiv:1604.06174), gradient checkpointing.
    """
    return tokens * d_model * bytes_per_value / _where(sequence_parallel, tp, 1.0 + 0.0 * tp)


def layer_activation_bytes(none_bytes: Any, *, selective_bytes: Any, full_bytes: Any, recompute: Any) -> Any:
    """bytes_layer = [none, selective, full][recompute]

    One layer's stored activations under the recomputation choice (0 none, 1 selective,
    2 full), from the three stored amounts: replicated + attention + MLP without recompute,
    the same with the attention core recomputed, and the checkpoint alone.
    Trap: selective recomputation saves nothing under FlashAttention, which already stores no
    scores; its saving is the 5as/h of an unflashed layer.
    Source: Korthikanti et al. 2022, section 5 (selective activation recomputation).
    """
    return _where(recompute == 0, none_bytes, _where(recompute == 1, selective_bytes, full_bytes))


def recompute_working_bytes(none_bytes: Any, *, stored_bytes: Any) -> Any:
    """bytes = none − stored   (one layer, one micro-batch, held while it is recomputed)

    Recomputing a layer in the backward materialises its activations again before its
    gradient is taken: the peak holds one layer's worth beyond what was stored.
    Trap: sizing a fully recomputed run by the checkpoints alone: at s = 8k, b = 1 on 70B with
    TP 8 that misses one unrecomputed layer (hundreds of MB) at the moment of the peak.
    Source: Chen et al. 2016, section 3 (the recomputed segment is live during its backward).
    """
    return none_bytes - stored_bytes


def logits_activation_bytes(tokens: Any, *, vocab_size: float, d_model: float, tp: Any = 1.0,
                            sequence_parallel: Any = 0.0, bytes_per_value: float = 2.0) -> Any:
    """bytes = T · (h · B / (t if SP else 1) + 4 · V / t)

    The last pipeline stage keeps the output layer's input and the fp32 logits (the softmax of
    the cross-entropy), vocabulary-parallel over the TP ranks, for the micro-batch in flight.
    Trap: at V = 128k and s = 8k the fp32 logits of one sequence are 4.2 GB, more than a layer's
    activations: they bind the last stage, not the first.
    Source: Korthikanti et al. 2022, section 4.3 (output layer and cross-entropy: 4sbV/t, fp32).
    """
    return tokens * (d_model * bytes_per_value / _where(sequence_parallel, tp, 1.0 + 0.0 * tp)
                     + 4.0 * vocab_size / tp)
