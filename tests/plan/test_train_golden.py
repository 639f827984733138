"""`napkin plan train`, one configuration of each kind, against values derived by hand in the test.

Every efficiency the time model uses is pinned here (PINNED), so each expected value is the
arithmetic written beside it, not whatever the defaults are today. Byte counts are exact
integers; times are the hand arithmetic to 1e-9. The formulas: Korthikanti et al. 2022
(activations), Narayanan et al. 2021 (pipeline), ZeRO (Rajbhandari et al. 2020), ring
collectives (bus bandwidth), as cited in napkin.formulas.
"""

from __future__ import annotations

import pytest

from napkin.derivation import Report
from napkin.plan.train_eval import evaluate, figures
from napkin.plan.train_request import PlanTrainRequest
from napkin.plan.train_resolve import resolve
from napkin.plan.train_setup import with_overrides
from napkin.request import parse_request

PINNED = dict(gemm_peak_fraction=0.8, gemm_training_fraction=0.9, gemm_tokens_half=128.0, attention_efficiency=0.55,
              attention_training_fraction=0.5, bandwidth_efficiency=0.86, collective_efficiency=0.82,
              scale_out_efficiency=0.92, scale_out_bytes_per_s=50e9, latency_s=10e-6, dp_overlap=1.0,
              cp_overlap=1.0, tp_exposed=1.0, ep_exposed=1.0, pp_exposed=1.0, runtime_bytes=2e9,
              usable_fraction=0.9)
H100_PEAK, H100_BW, NVLINK = 989.5e12, 3.35e12, 450e9  # catalog: dense bf16, HBM, NVLink 4 one way
NVLINK_BUS = NVLINK * 0.82  # 369 GB/s achieved by a ring inside the board
NIC_BUS = 50e9 * 0.92  # 46 GB/s: one 400 Gb/s NIC at 92%


def one(raw: dict, **degrees: float) -> tuple:
    S, *_ = resolve(parse_request(PlanTrainRequest, raw), Report("golden"))
    S = with_overrides(S, **PINNED)
    e = evaluate(S, **degrees)
    return S, e, {k: float(v) for k, v in e["memory"].items()}


def test_zero3_on_8_gpus_llama_3_1_8b():
    """Llama 3.1 8B on one HGX H100 board: FSDP (ZeRO-3) over 8, full recompute, 8k sequences, micro-batch 1."""
    S, e, mem = one({"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": [8], "seq_len": 8192,
                     "global_batch": "8seq"}, tp=1, pp=1, cp=1, ep=1, dp=8, zero=3, recompute=2, micro_batch=1,
                    interleave=1, sp=0)
    N = 8_030_261_248  # 32 · 218,112,000 per layer + 2 · 525,336,576 (embedding, untied head) + 4,096 (final norm)
    assert mem["weights"] == N * 2 / 8 == 2_007_565_312
    assert mem["gradients"] == N * 4 / 8 == 4_015_130_624
    assert mem["optimizer"] == N * 12 / 8 == 12_045_391_872
    T = 8192  # tokens of the micro-batch on one GPU
    checkpoint = T * 4096 * 2  # full recompute keeps each layer's input: 67,108,864 B
    logits = T * (4096 * 2 + 4 * 128_256)  # the last stage's head input and fp32 logits: 4,269,801,472 B
    # one layer without recompute (the working set while it is recomputed):
    replicated = T * 4096 * (4 * 2)  # norm inputs, QKV and MLP inputs: 268,435,456
    attention = T * (2 * (2 * 4096 + 2 * 1024) + 32 * 4)  # Q, out-proj input, K, V (GQA 8 heads), fp32 LSE
    mlp = T * 2 * 3 * 14336  # fused SwiGLU keeps 3 f-wide tensors: 704,643,072
    working = replicated + attention + mlp - checkpoint  # 1,074,790,400
    assert mem["activations"] == 32 * checkpoint + logits + working == 7_492_075_520
    layer_params = (218_112_000 * 32 + 4096) / 32  # attention, MLP and norms per layer, final norm spread
    assert mem["buffers"] == 2e9 + layer_params * (2 * 2 + 4)  # runtime + ZeRO-3 prefetch of a layer
    assert mem["buffers"] == 3_744_897_024  # 2e9 + 218,112,128 · 8
    assert mem["total"] == 2_007_565_312 + 4_015_130_624 + 12_045_391_872 + 7_492_075_520 + 3_744_897_024
    assert bool(e["fits"]) and mem["total"] <= 0.9 * 80e9
    # step time: GEMMs at η = 0.8 · 0.9 · T / (T + 128) = 0.708923; attention at 0.55 · 0.5; elementwise at 86% of HBM
    eta = 0.8 * 0.9 * T / (T + 128)
    gemm = 2 * T * 4096 * (6144 + 4096 + 2 * 14336 + 14336) / (H100_PEAK * eta)  # QKV, out, gate+up, down: 5.094 ms
    attn = 4 * T * T * 4096 * 0.5 / (H100_PEAK * 0.55 * 0.5)  # causal flash, forward: 2.020 ms
    ew = (T * 4096 * 20 + 2 * T * (4096 + 1024) * 2 + 3 * T * 14336 * 2) / (H100_BW * 0.86)  # 0.536 ms
    forward = gemm + attn + ew
    layer = forward + (2 * gemm + 2.5 * attn + 2 * ew) + forward  # forward, backward, recomputed forward
    head = 3 * 2 * T * 4096 * 128_256 / (H100_PEAK * eta) + 16 * T * 128_256 / (H100_BW * 0.86)
    optimizer = N / 8 * 30 / (H100_BW * 0.86)  # Adam on the owned shard: 30 B per parameter
    assert float(e["microbatch_compute_s"]) == pytest.approx(32 * layer + head, rel=1e-9)
    assert float(e["parts"]["compute"]) == pytest.approx(32 * layer + head + optimizer, rel=1e-9)
    # FSDP traffic: (n − 1)/n · (2 gathers of bf16 weights + a reduce-scatter of fp32 gradients), inside the board
    dp_raw = 7 / 8 * (2 * 2 * N + 4 * N) / NVLINK_BUS + 10e-6  # 0.1523 s, hidden by the 1.05 s micro-batch
    assert float(e["dp_raw_s"]) == pytest.approx(dp_raw, rel=1e-9)
    assert float(e["parts"]["dp_comm"]) == 0.0
    assert float(e["step"]) == pytest.approx(32 * layer + head + optimizer, rel=1e-9)
    f = figures(S, e)
    assert float(f["mfu"]) == pytest.approx(6 * N * 8 * T / float(e["step"]) / (8 * H100_PEAK), rel=1e-12)
    assert float(f["hfu"]) == pytest.approx(float(f["mfu"]) * 8 / 6, rel=1e-12)  # full recompute: +2N of 6N


def test_tp8_pp16_dp8_gpt3_175b():
    """GPT-3 175B on 1,024 H100s: TP 8 · PP 16 (interleaved 2) · DP 8, selective recompute, sequence parallel."""
    S, e, mem = one({"model": "gpt-3-175b", "gpu": "h100-sxm", "gpus": [1024], "seq_len": 2048,
                     "global_batch": "1536seq"}, tp=8, pp=16, cp=1, ep=1, dp=8, zero=1, recompute=1, micro_batch=1,
                    interleave=2, sp=1)
    # busiest stage: 96 / 16 = 6 layers of 1,812,099,328 + token and position embedding 642,723,840 (the first
    # stage; the last holds the tied head's copy, 617,558,016), over TP 8
    stage = (6 * 1_812_099_328 + 642_723_840) / 8
    assert mem["weights"] == stage * 2 == 2_878_829_952
    assert mem["gradients"] == stage * 4
    assert mem["optimizer"] == stage * 12 / 8  # ZeRO-1 over the 8 data-parallel ranks
    T = 2048
    per_layer = T * 12288 * 32 / 8  # sbh · 32 / t: Korthikanti's 34/t without the two dropout masks
    m = 1536 / 8  # micro-batches per step: 192
    in_flight = (16 * (2 + 1) - 1) * 6 / 2  # interleaved: 47 chunks of 3 layers = 141 = 96 · (1 + 15/32)
    assert in_flight == 96 * (1 + 15 / 32)
    lse = T * 96 / 8 * 4  # selective recompute drops flash's fp32 log-sum-exp too: the working set
    assert mem["activations"] == in_flight * per_layer + lse == 14_193_623_040
    assert mem["total"] == 2_878_829_952 + stage * 4 + stage * 12 / 8 + 2e9 + 14_193_623_040
    # TP: (4 + SP's re-gather 1) all-reduces' worth of 2·(7/8)·T·h·2 bytes per layer, 10 collectives
    tp_layer = 5 * 2 * 7 / 8 * T * 12288 * 2 / NVLINK_BUS + 10 * 10e-6  # 1.2935 ms
    assert float(e["tp_layer_s"]) == pytest.approx(tp_layer, rel=1e-9)
    assert float(e["parts"]["tp_comm"]) == pytest.approx(m * 6 * tp_layer, rel=1e-9)  # 1.490 s
    # pipeline: 2 sends of T·h·2/t bytes per micro-batch per chunk, across boards on one NIC
    p2p = T * 12288 * 2 / 8 / NIC_BUS + 10e-6
    assert float(e["parts"]["pp_comm"]) == pytest.approx(2 * m * 2 * p2p, rel=1e-9)  # 0.1127 s
    # bubble: (p − 1)/(m · v) of the m micro-batches' time, i.e. (p − 1)/v micro-batches: 7.5
    assert float(e["parts"]["pp_bubble"]) == pytest.approx(15 / 2 * float(e["microbatch_s"]), rel=1e-9)
    # DP (ZeRO-1): reduce-scatter fp32 gradients, all-gather bf16 weights, (7/8) of 6 B per stage parameter;
    # the DP group has one rank per board (TP fills it), so it runs at one NIC
    dp_raw = 7 / 8 * stage * 6 / NIC_BUS + 10e-6  # 0.1643 s
    assert float(e["dp_raw_s"]) == pytest.approx(dp_raw, rel=1e-9)
    assert float(e["parts"]["dp_comm"]) == pytest.approx(dp_raw - float(e["microbatch_compute_s"]), rel=1e-9)


def test_context_parallel_for_long_sequences_llama_3_1_8b():
    """Llama 3.1 8B at 128k tokens on 32 H100s: TP 8 · CP 4, full recompute, one sequence per step."""
    raw = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": [32], "seq_len": 131072, "global_batch": "1seq"}
    S, e, mem = one(raw, tp=8, pp=1, cp=4, ep=1, dp=1, zero=1, recompute=2, micro_batch=1, interleave=1, sp=1)
    T = 131072 // 4  # each CP rank holds a quarter of the sequence: 32,768 tokens
    checkpoint = T * 4096 * 2 / 8  # sequence-parallel checkpoint: 33,554,432 B per layer
    logits = T * (4096 * 2 / 8 + 4 * 128_256 / 8)  # 2,134,900,736 B
    none = T * 4096 * 8 / 8 + T * (2 * (2 * 4096 / 8 + 2 * 1024 / 8) + 32 / 8 * 4) + T * 2 * 3 * 14336 / 8
    assert mem["activations"] == 32 * checkpoint + logits + (none - checkpoint) == 3_746_037_760
    # ring attention: each of 3 exchanges (K, V forward; K, V and their gradients backward) passes the rank's
    # K and V (8 KV heads over TP 8: one head, 128 wide) c − 1 = 3 hops; the CP group is one rank per board
    cp_raw = 3 * 3 * 2 * T * 1024 / 8 * 2 / NIC_BUS + 3 * 3 * 10e-6  # 150,994,944 B: 3.3725 ms
    assert float(e["cp_raw_s"]) == pytest.approx(cp_raw, rel=1e-9)
    assert float(e["parts"]["cp_comm"]) == 0.0  # hidden behind 3.5 · the 32k x 128k attention forward (57 ms)
    # without CP the same layout holds four times the activations
    _, e1, mem1 = one({**raw, "gpus": [8]}, tp=8, pp=1, cp=1, ep=1, dp=1, zero=1, recompute=2, micro_batch=1,
                      interleave=1, sp=1)
    assert mem1["activations"] == 4 * mem["activations"]


def test_moe_with_expert_parallelism_mixtral():
    """Mixtral 8x7B on 64 H100s: TP 2 · EP 8 (within DP 32), ZeRO-1, selective recompute, 4k sequences."""
    S, e, mem = one({"model": "mixtral-8x7b", "gpu": "h100-sxm", "gpus": [64], "seq_len": 4096,
                     "global_batch": "256seq"}, tp=2, pp=1, cp=1, ep=8, dp=32, zero=1, recompute=1, micro_batch=1,
                    interleave=1, sp=1)
    dense = (32 * 41_984_128 + 131_072_000 + 131_072_000) / 2  # attention, norms, routers, embeddings over TP 2
    experts = 32 * 1_409_286_144 / (2 * 8)  # 8 experts of 176,160,768 per layer, over TP 2 · EP 8
    assert dense == 802_818_048 and experts == 2_818_572_288
    assert mem["weights"] == (dense + experts) * 2 == 7_242_780_672
    assert mem["gradients"] == (dense + experts) * 4
    assert mem["optimizer"] == dense * 12 / 32 + experts * 12 / (32 / 8)  # experts shard over DP / EP = 4
    # all-to-all: dispatch and combine, forward and backward: 4 · (7/8) · (T / t) · k · h · 2 bytes
    a2a = 4 * 7 / 8 * (4096 / 2) * 2 * 4096 * 2  # 117,440,512 B per MoE layer per micro-batch
    # EP ranks are TP 2 apart: 4 share a board; the traffic for the other 4 leaves on each rank's NIC
    ep_layer = a2a / (NIC_BUS * 7 / 4) + 4 * 10e-6  # 80.5 GB/s: 1.4989 ms
    assert float(e["ep_layer_s"]) == pytest.approx(ep_layer, rel=1e-9)
    m = 256 / 32
    assert float(e["parts"]["ep_comm"]) == pytest.approx(m * 32 * ep_layer, rel=1e-9)  # 0.3837 s
    f = figures(S, e)
    N_active = 12_879_925_248  # 2 of 8 experts: MFU counts the active parameters
    assert float(f["mfu"]) == pytest.approx(6 * N_active * 256 * 4096 / float(e["step"]) / (64 * H100_PEAK),
                                            rel=1e-12)
