"""The routed experts' grouped GEMMs run at a fitted fraction of a dense GEMM's efficiency.

Mixtral 8x7B (32 layers, d 4,096, 8 experts of width 14,336, 2 per token) is the hand-checked case. The
fraction is fitted leave-sources-out (catalog/efficiency.toml [fitted]); its grid spans what published
grouped-GEMM kernels reach against dense ones: vLLM's tuned kernel for Qwen3-30B-A3B's small experts, 193
TFLOP/s at 8,192 tokens on an L40S (26% of its FP8 peak, vLLM pull request #53710), against 74% for a large
dense GEMM, a ratio of 0.35.
"""

from __future__ import annotations

import pytest

import napkin
from napkin.catalog import efficiency as eff
from napkin.formulas import operators as op
from napkin.validation import fit


def rates(eta_e):
    return op.Rates(dense_flops_per_s=1e15, attention_flops_per_s=1e15, memory_bytes_per_s=1e12,
                    bandwidth_efficiency=1.0, gemm_efficiency=0.8, gemm_half_tokens=0.0, attention_efficiency=1.0,
                    link_bytes_per_s=float("inf"), allreduce_latency_s=0.0, per_layer_s=0.0, per_layer_decode_s=0.0,
                    per_step_s=0.0, elementwise_passes=0.0, mlp_flops_per_s=1e15, mlp_gemm_efficiency=0.8,
                    expert_gemm_efficiency=eta_e)


def mixtral_shapes():
    return napkin.catalog.model("mixtral-8x7b").layer_shapes(1, kv_bytes_per_value=1.0, bytes_per_weight=1.0)


def test_a_compute_bound_expert_gemm_takes_its_flops_over_the_grouped_rate():
    """8,192 tokens pick 2 of 8 experts: 2,048 rows per expert. Each expert's two GEMMs do
    2 · 2,048 · 4,096 · (28,672 + 14,336) FLOPs; at 1 PFLOP/s, η_max 0.8 (no M-dependence: M_½ = 0) and
    η_e 0.5 the 8 experts take 8 · that / (1e15 · 0.8 · 0.5) seconds, twice the dense rate's time."""
    shapes = mixtral_shapes()
    flops = 8 * 2 * 2048 * 4096 * (28672 + 14336)
    half = op.mlp_time(8192.0, shapes=shapes, rates=rates(0.8 * 0.5))
    full = op.mlp_time(8192.0, shapes=shapes, rates=rates(None))
    assert half.flops == full.flops == pytest.approx(flops)
    assert full.compute_s == pytest.approx(flops / (1e15 * 0.8))
    assert half.compute_s == pytest.approx(2 * full.compute_s)
    assert half.seconds == pytest.approx(max(half.memory_s, half.compute_s))


def test_a_memory_bound_expert_gemm_is_unchanged():
    """At 8 tokens the experts stream their weights: the grouped rate does not enter."""
    shapes = mixtral_shapes()
    assert op.mlp_time(8.0, shapes=shapes, rates=rates(0.8 * 0.5)).seconds == \
        pytest.approx(op.mlp_time(8.0, shapes=shapes, rates=rates(None)).seconds)


def test_the_fraction_is_fitted_and_recorded_only_for_mixture_of_experts_models():
    f = eff.fitted()
    assert 0.3 <= f.expert_gemm_efficiency <= 1.0
    grid = fit.GRID["expert_gemm_efficiency"]
    assert max(grid) == 1.0 and min(grid) <= 0.35  # from a dense GEMM's efficiency down past the published 0.35
    moe = napkin.serve(model="mixtral-8x7b", gpu="h100-sxm", gpus=2, batch=64)
    dense = napkin.serve(model="llama-3.1-8b", gpu="h100-sxm", batch=64)
    fitted = {a.name: a.value for a in moe.assumptions if a.basis == "fitted"}
    assert fitted["expert_gemm_efficiency"] == f.expert_gemm_efficiency
    assert "expert_gemm_efficiency" not in {a.name for a in dense.assumptions}


def test_each_fold_carries_its_own_fraction():
    """Out of sample: each fold's points run at the fraction fitted on the other fold's sources."""
    folds = eff.fitted().folds
    assert set(folds) == {"a", "b"}
    assert all("expert_gemm_efficiency" in v for v in folds.values())


def test_a_model_without_shared_experts_moves_no_shared_bytes():
    """8 tokens pick 8 · (1 − (3/4)^8) = 7.2 of the 8 experts; each touched expert's two GEMMs read their
    weights once (fp8: 1 byte) and their rows of activations in and out (2 bytes); Mixtral has no shared
    expert, so nothing else moves."""
    touched = 8 * (1 - 0.75 ** 8)
    weights = touched * (4096 * 28672 + 14336 * 4096)
    rows = 8 * 2  # tokens · k, spread over the touched experts
    activations = rows * ((4096 + 28672) + (14336 + 4096)) * 2
    t = op.mlp_time(8.0, shapes=mixtral_shapes(), rates=rates(None))
    assert t.bytes == pytest.approx(weights + activations)


def test_each_token_is_copied_to_its_experts_and_back_through_memory():
    """Beyond the expert GEMMs' own rows in and out: the permute kernel reads and writes each token's k = 2
    copies of d = 4,096 values, the finalize kernel reads the k outputs back (TensorRT-LLM's
    expandInputRowsKernel and finalizeMoeRoutingKernel): 3 · k · d values a token, besides the SwiGLU's
    k · (28,672 + 14,336). At 8 tokens, 2 bytes a value, 1 TB/s: 8 · 2 · (2 · 43,008 + 3 · 2 · 4,096) bytes."""
    t = op.elementwise_time(8.0, shapes=mixtral_shapes(), rates=rates(None))
    routing = 8 * 2 * 3 * 2 * 4096
    assert t.bytes == pytest.approx(8 * 2 * 2 * (28672 + 14336) + routing)
    assert t.seconds == pytest.approx(t.bytes / 1e12)
    dense = napkin.catalog.model("llama-3.1-8b").layer_shapes(1, kv_bytes_per_value=1.0, bytes_per_weight=1.0)
    assert op.elementwise_time(8.0, shapes=dense, rates=rates(None)).bytes == pytest.approx(8 * 2 * 3 * 14336)
