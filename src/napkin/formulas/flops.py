"""FLOPs of training and inference, and MFU."""

from __future__ import annotations

import math

from napkin.formulas._array import minimum as _minimum

FORWARD_FLOPS_PER_PARAM = 2.0  # one multiply-accumulate per weight per token
TRAIN_FLOPS_PER_PARAM = 6.0  # 2 forward + 4 backward
CONVENTIONS = ("6N", "causal", "full")


def train_flops(n_params: float, *, n_tokens: float) -> float:
    """C = 6 · N · D

    Trap: 2·N·D is inference; the backward pass is the other two thirds of training.
    Source: Kaplan et al. 2020, Scaling Laws for Neural Language Models (arXiv:2001.08361), section
    2.1 (C ≈ 6NBS); e.g. 70B on 15T tokens: 6.3e24.
    """
    return TRAIN_FLOPS_PER_PARAM * n_params * n_tokens


def attention_flops_per_token(n_layers: float, *, d_attn: float, seq_len: float, convention: str,
                              window_tokens: float = math.inf, window_layers: float = 0.0) -> float:
    """Training attention FLOPs per token: 0 (6N), 6·d·((L − L_w)·T + L_w·T_w) (causal) or
    12·d·((L − L_w)·T + L_w·T_w) (full), T_w = 2W − W²/T (causal) or W (full) for W < T, else T.

    d is the attention width (heads · head dim), T the sequence length, L_w of the L layers attend over a
    sliding window of W tokens. The score and value products cost 2·2·T·d per token per layer forward,
    halved by the causal mask; the backward pass doubles the forward. A windowed layer's query sees at most
    W keys (on average W − W²/(2T) under the causal mask, against T/2 without a window).
    Trap: 6N alone undercounts at long context: at T = 8k on Llama 2 7B the causal term is 16% of 6N
    (6·32·4096·8192 = 6.4 GFLOP against 40.4). Sliding-window layers attend over their window, not T.
    Source: Kaplan et al. 2020 (arXiv:2001.08361), table 1 (2·L·T·d forward per token, times 3 with
    the backward pass: causal); Chowdhery et al. 2022, PaLM (arXiv:2204.02311), appendix B
    (12·L·H·Q·T: full).
    """
    if convention == "6N":
        return 0.0 * seq_len
    if convention not in ("causal", "full"):
        raise ValueError(f"unknown FLOPs convention {convention!r}; use one of {CONVENTIONS}")
    factor = 6.0 if convention == "causal" else 12.0
    w = _minimum(window_tokens, seq_len)
    t_window = (2.0 * w - w * w / seq_len) if convention == "causal" else w
    return factor * d_attn * ((n_layers - window_layers) * seq_len + window_layers * t_window)


def train_flops_per_token(n_params: float, *, attention_flops: float = 0.0) -> float:
    """flops_per_token = 6 · N + attention term

    Trap: for MoE, N is the active (routed) parameter count, not the total.
    Source: Kaplan et al. 2020 (arXiv:2001.08361), section 2.1: 2N forward, twice that backward.
    """
    return TRAIN_FLOPS_PER_PARAM * n_params + attention_flops


def forward_flops_per_token(active_params: float) -> float:
    """flops_per_token = 2 · N_active

    Trap: for an MoE model, use the routed subset: DeepSeek-V3 is 37B active of 671B.
    Source: Kaplan et al. 2020 (arXiv:2001.08361), table 1 (C_forward ≈ 2N); DeepSeek-AI 2024,
    DeepSeek-V3 (arXiv:2412.19437): 37B activated of 671B.
    """
    return FORWARD_FLOPS_PER_PARAM * active_params


def prefill_flops(active_params: float, *, prompt_tokens: float, attention_flops: float = 0.0) -> float:
    """prefill_flops = 2 · N_active · T (+ the attention term)

    Trap: total instead of active parameters for MoE; and the attention term at long context.
    Source: Kaplan et al. 2020 (arXiv:2001.08361), table 1 (2N per token forward); e.g. 70B with an
    8k prompt: 1.15e15.
    """
    return FORWARD_FLOPS_PER_PARAM * active_params * prompt_tokens + attention_flops


def model_flops_utilization(flops_per_token: float, *, tokens_per_step: float, step_s: float,
                            n_gpus: float, dense_flops_per_s: float) -> float:
    """MFU = (flops_per_token · tokens_per_step / step_s) / (n_gpus · peak)

    Trap: counting recomputed activations (HFU) as model FLOPs makes the GPUs look busier
    than the model is; and "4M tokens" may mean 4e6 or 4·2^20 (a 5% difference).
    Source: Chowdhery et al. 2022, PaLM (arXiv:2204.02311), appendix B; e.g. 70B, 4M tokens in 2.07
    s on 2,048 H100s: MFU ≈ 40%.
    """
    return flops_per_token * tokens_per_step / step_s / (n_gpus * dense_flops_per_s)


def hfu_full_recompute(mfu: float) -> float:
    """HFU = MFU · 8 / 6   (full activation recomputation: one more forward pass, 2N more per token)

    Hardware FLOPs utilisation counts what the GPUs computed, recomputed activations
    included; with full recomputation each token costs 8N instead of the model's 6N.
    Trap: reporting HFU as MFU: it flatters the run by a third and cannot be compared with
    another run's MFU.
    Source: Chowdhery et al. 2022, PaLM (arXiv:2204.02311), appendix B (MFU and HFU);
    Korthikanti et al. 2022 (arXiv:2205.05198), on full recomputation's extra forward pass.
    """
    return mfu * 8 / 6
