"""Compute-optimal size, over-training, and when serving compute overtakes training.

With C = 6·N·D and a target of r tokens per parameter (D = r·N), the budget fixes
both: N = sqrt(C / (6·r)), D = r·N. Every function takes floats or numpy arrays.
"""

from __future__ import annotations

from typing import Any

from napkin.formulas.flops import FORWARD_FLOPS_PER_PARAM, TRAIN_FLOPS_PER_PARAM

CHINCHILLA_TOKENS_PER_PARAM = 20.0  # Hoffmann et al. 2022: ~20 tokens per parameter


def compute_optimal_params(train_flops: Any, *, tokens_per_param: Any = CHINCHILLA_TOKENS_PER_PARAM) -> Any:
    """N* = sqrt(C / (6 · r))

    From C = 6·N·D with D = r·N. r = 20 is the Chinchilla ratio; give your own.
    Trap: reading the ratio as a law; it minimises loss for a fixed training budget and
    ignores what the model costs to serve afterwards.
    Source: Hoffmann et al. 2022, Training Compute-Optimal Large Language Models (arXiv:2203.15556):
    about 20 tokens per parameter; e.g. 405B → 8.1T tokens at 20:1.
    """
    return (train_flops / (TRAIN_FLOPS_PER_PARAM * tokens_per_param)) ** 0.5


def compute_optimal_tokens(train_flops: Any, *, tokens_per_param: Any = CHINCHILLA_TOKENS_PER_PARAM) -> Any:
    """D* = r · N* = sqrt(C · r / 6)

    Trap: taking D* as unique tokens; it counts advanced tokens, repeats included.
    Source: Hoffmann et al. 2022 (arXiv:2203.15556); 6·N*·D* gives back C.
    """
    return tokens_per_param * compute_optimal_params(train_flops, tokens_per_param=tokens_per_param)


def tokens_per_param(n_tokens: Any, *, n_params: Any) -> Any:
    """r = D / N

    Trap: dividing by total parameters of an MoE model; use the active count for
    compute, and say which.
    Source: Dubey et al. 2024, The Llama 3 Herd of Models (arXiv:2407.21783): Llama 3.1 405B on
    15.6T tokens, 38.5 tokens per parameter.
    """
    return n_tokens / n_params


def overtraining_factor(n_tokens: Any, *, n_params: Any,
                        target_tokens_per_param: Any = CHINCHILLA_TOKENS_PER_PARAM) -> Any:
    """over-training = (D / N) / r

    1 is compute-optimal; above 1 the run trains a smaller model longer than the
    budget's optimum, spending training compute to buy a model cheaper to serve.
    Trap: calling it waste; it is a trade against every token the model will serve.
    Source: Sardana & Frankle 2023, Beyond Chinchilla-Optimal: Accounting for Inference in Language
    Model Scaling Laws (arXiv:2401.00448); e.g. 405B on 15.6T tokens is 1.9× past 20:1 (15.6T /
    8.1T).
    """
    return n_tokens / n_params / target_tokens_per_param


def serving_flops(active_params: Any, *, served_tokens: Any) -> Any:
    """C_serve = 2 · N_active · S

    Trap: 6N per served token (that is training); and total instead of active
    parameters for an MoE model. Attention over the cache is extra at long context.
    Source: Kaplan et al. 2020 (arXiv:2001.08361), table 1 (C_forward ≈ 2N per token).
    """
    return FORWARD_FLOPS_PER_PARAM * active_params * served_tokens


def crossover_tokens(training_tokens: Any) -> Any:
    """S× = 6·N·D / (2·N) = 3 · D

    The served tokens whose compute equals the training run's; N cancels.
    Trap: comparing per-token cost (6N against 2N) and concluding training dominates;
    a model serving billions of tokens a day passes 3·D within years.
    Source: Sardana & Frankle 2023 (arXiv:2401.00448); e.g. 8B on 15T tokens: 45T served tokens, 12
    years at 10B a day, one year at 120B a day.
    """
    return TRAIN_FLOPS_PER_PARAM / FORWARD_FLOPS_PER_PARAM * training_tokens
