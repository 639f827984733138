"""How much memory an engine leaves the KV cache, and what a quantized engine keeps at 16 bits.

Hand-derived values: Llama 3.1 70B (config.json: 80 layers, 8 KV heads of 128, hidden 8,192, vocabulary
128,256, untied head) on A100 SXM 80GB, whose runtime reports 84,986,665,370 bytes (the catalog's reading).
The engine buffers are NVIDIA AI Configurator's TensorRT-LLM memory model (ai-dynamo/aiconfigurator,
sdk/backends/trtllm_backend.py and systems/*.yaml, read 2026-12-07): activations 2 · T · d · {11, 6.5, 5, 5}
at TP {1, 2, 4, 8}, at least 70 MiB; NCCL 0 / 342 / 392 / 392 MiB; CUDA context and libraries 551 MiB.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from napkin import calculate, catalog
from napkin.catalog import efficiency as eff
from napkin.errors import InputError
from napkin.formulas import memory as mem
from napkin.formulas import serving as sv

A100_RUNTIME = 84_986_665_370
W70_FP16_TP2 = 70_553_706_496 * 2 / 2  # 70,553,706,496 parameters at 2 bytes over 2 GPUs
KV_SEQ_TP2 = 2 * 80 * 8 * 128 * 2 * 2000 / 2  # 1,000 in + 1,000 out, K and V of 8 heads of 128, split by TP 2


def run(**kw):
    base = dict(model="llama-3.1-70b", gpu="a100-sxm-80gb", gpus=2, tp=2, precision="fp16", kv_precision="fp16",
                prompt=1000, output=1000, batch=1, chunk=8192)
    return calculate("serve", **{**base, **kw})


def test_the_buffers_are_nvidias_published_model():
    rt = eff.runtime()
    assert rt.factor(2, moe=False) == 6.5 and rt.factor(8, moe=False) == 5 and rt.factor(1, moe=True) == 22
    assert rt.factor(3, moe=False) == 6.5 and rt.factor(16, moe=False) == 5  # the listed degree below
    assert rt.collective(1) == 0 and rt.collective(2) == 342 * 2**20 and rt.collective(8) == 392 * 2**20
    assert rt.context_bytes == 551 * 2**20 and rt.activation_floor_bytes == 70 * 2**20
    # 2 · 8,192 tokens · 8,192 · 6.5 = 872,415,232 bytes of activations at TP 2
    assert sv.engine_buffer_bytes(8192.0, d_attn=8192.0, factor=6.5, floor_bytes=70 * 2**20,
                                  collective_bytes=342 * 2**20, context_bytes=551 * 2**20) == \
        872_415_232 + 358_612_992 + 577_765_376
    # a short step sits on the floor
    assert sv.engine_buffer_bytes(16.0, d_attn=4096.0, factor=11, floor_bytes=70 * 2**20, collective_bytes=0,
                                  context_bytes=0) == 70 * 2**20


def test_a_fraction_of_free_memory_holds_twice_the_sequences_of_a_fraction_of_all():
    """TensorRT-LLM's 0.9 is of the memory free after loading; vLLM's 0.9 of all of it (issue 13's pattern:
    70B in fp16 on two 80 GB GPUs was under-predicted by a third until the engine's own convention was used)."""
    buffers = 872_415_232 + 358_612_992 + 577_765_376
    free_kv = 0.9 * (A100_RUNTIME - W70_FP16_TP2 - buffers)
    total_kv = 0.9 * A100_RUNTIME - W70_FP16_TP2
    assert free_kv == pytest.approx(11.37e9, rel=1e-3) and total_kv == pytest.approx(5.94e9, rel=1e-3)
    of_free, of_total = run(kv_free_fraction=0.9), run(usable=0.9)
    assert of_free["max_batch"] == math.floor(free_kv / KV_SEQ_TP2) == 34
    assert of_total["max_batch"] == math.floor(total_kv / KV_SEQ_TP2) == 18
    assert of_free["engine_buffer_bytes_per_gpu"] == buffers
    assert of_free["usable_bytes_per_gpu"] == pytest.approx(W70_FP16_TP2 + free_kv, rel=1e-12)
    (line,) = [a for a in of_free.assumptions if a.name == "kv_free_fraction"]
    assert line.value == 0.9 and line.basis == "given"


def test_usable_and_kv_free_fraction_together_are_refused():
    with pytest.raises(InputError, match="usable.*--kv-free-fraction|kv-free-fraction"):
        run(kv_free_fraction=0.9, usable=0.8)


def test_the_buffers_follow_the_step_budget_and_tp():
    small, large = run(kv_free_fraction=0.9, chunk=2048), run(kv_free_fraction=0.9, chunk=8192)
    assert large["engine_buffer_bytes_per_gpu"] - small["engine_buffer_bytes_per_gpu"] == 2 * 6144 * 8192 * 6.5
    assert small["max_batch"] >= large["max_batch"]
    tp4 = run(kv_free_fraction=0.9, gpus=4, tp=4)
    assert tp4["engine_buffer_bytes_per_gpu"] == 2 * 8192 * 8192 * 5 + 392 * 2**20 + 551 * 2**20


@given(f=st.floats(0.05, 1.0), w=st.floats(0.0, 75e9), b=st.floats(0.0, 10e9))
def test_a_larger_fraction_never_holds_less(f, w, b):
    """While the weights and buffers fit (w + b ≤ 85 GB); past that nothing fits at any fraction."""
    lo = sv.usable_of_free(85e9, weights_bytes_per_gpu=w, buffer_bytes=b, fraction=f * 0.5)
    hi = sv.usable_of_free(85e9, weights_bytes_per_gpu=w, buffer_bytes=b, fraction=f)
    assert hi >= lo - 1e-3
    assert sv.usable_of_free(85e9, weights_bytes_per_gpu=w, buffer_bytes=b, fraction=1.0) == \
        pytest.approx(85e9 - b, abs=1e-3)  # all that is free: everything but the buffers


def test_a_quantized_engine_keeps_the_embedding_and_head_at_16_bits():
    """Llama 3.1 8B: 8,030,261,248 parameters, 2 · 128,256 · 4,096 = 1,050,673,152 of them embedding and head."""
    m = catalog.model("llama-3.1-8b")
    assert m.embedding_head_params() == 2 * 128_256 * 4_096
    fp8 = calculate("serve", model="llama-3.1-8b", gpu="h100-sxm", precision="fp8", batch=8)
    assert fp8["weights_bytes"] == (8_030_261_248 - 1_050_673_152) * 1 + 1_050_673_152 * 2 == 9_080_934_400
    assert any("stay at 16 bits" in n for n in fp8.notes)
    bf16 = calculate("serve", model="llama-3.1-8b", gpu="h100-sxm", precision="bf16", batch=8)
    assert bf16["weights_bytes"] == 8_030_261_248 * 2  # at 16 bits nothing changes
    assert not any("stay at 16 bits" in n for n in bf16.notes)
    # the LM head reads 2 bytes a weight at fp8 as at bf16
    head = {o["operator"]: o for o in fp8["operators"] if o["step"] == "decode"}["lm_head"]
    head16 = {o["operator"]: o for o in bf16["operators"] if o["step"] == "decode"}["lm_head"]
    assert head["bytes"] == head16["bytes"]


def test_tied_embeddings_count_once():
    m = catalog.model("llama-3.2-1b")
    assert m.tied_embeddings and m.embedding_head_params() == m.vocab_size * m.d_model
    assert mem.served_weights_bytes(m.params, n_embedding_head=m.embedding_head_params(), bytes_per_param=0.5) == \
        pytest.approx((m.params - m.vocab_size * m.d_model) * 0.5 + m.vocab_size * m.d_model * 2)


@given(n=st.floats(1e9, 1e12), share=st.floats(0.0, 0.5), b=st.sampled_from([0.5, 1.0, 2.0, 4.0]))
def test_served_weights_never_fall_below_the_napkin_rule_and_agree_at_16_bits(n, share, b):
    w = mem.served_weights_bytes(n, n_embedding_head=n * share, bytes_per_param=b)
    assert w >= mem.weights_bytes(n, bytes_per_param=b) * (1 - 1e-12)
    if b >= 2:
        assert w == pytest.approx(mem.weights_bytes(n, bytes_per_param=b), rel=1e-12)


def test_plan_serve_sizes_the_kv_cache_as_serve_does():
    """The plan's fit check takes the same budget: with TensorRT-LLM's convention two A100s hold 32 sequences of
    2,000 tokens of 70B in fp16 (34 fit), which 0.9 of all memory (18 fit) cannot."""
    kw = dict(model="llama-3.1-70b", gpu="a100-sxm-80gb", precision="fp16", kv_precision="fp16", prompt=[1000],
              output=[1000], batch=[16, 32, 64], max_gpus=2, top=50, confirm=0, price={"a100-sxm-80gb": 1.5},
              rate=1.0, ttft=60.0, tpot=10.0)
    free = calculate("plan-serve", kv_free_fraction=0.9, **kw)
    total = calculate("plan-serve", **kw)
    pairs = lambda r: {(x["gpus"], x["batch"]) for x in r["ranking"]}  # noqa: E731
    assert (2, 32) in pairs(free) and (2, 64) not in pairs(free)
    assert (2, 16) in pairs(total) and (2, 32) not in pairs(total)
    with pytest.raises(InputError, match="kv-free-fraction"):
        calculate("plan-serve", kv_free_fraction=0.9, usable=0.8, **kw)
