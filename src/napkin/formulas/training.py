"""Training economics: throughput per GPU, GPU-hours, marginal and loaded cost, cluster size.

Every function is arithmetic only, so each works on floats and on numpy arrays alike
(the planner sweeps them); none branches on a value.
"""

from __future__ import annotations


from napkin.units import HOUR, MILLION

# a ratio within this of a whole number is that number: 16.000000001 GPUs is 16, not 17
_CEIL_SLACK = 1e-9


def tokens_per_gpu_s(dense_flops_per_s: float, *, mfu: float, goodput: float, flops_per_token: float) -> float:
    """tokens_per_gpu_s = peak · MFU · goodput / flops_per_token

    MFU is the fraction of the dense peak spent on model arithmetic while the job runs;
    goodput is the fraction of paid wall-clock time that makes forward progress.
    Trap: a sparse or wrong-precision peak inflates this by 2x; and MFU alone (without
    goodput) counts restart and checkpoint time as if it trained.
    Source: Chowdhery et al. 2022, PaLM (arXiv:2204.02311), appendix B (MFU: observed tokens/s over the
    peak's, at the model FLOPs per token, 6N plus PaLM's attention term 12·L·H·Q·T); goodput as effective
    training time, Dubey et al. 2024, The Llama 3 Herd of Models (arXiv:2407.21783), section 3.3.4;
    e.g. 989e12 · 0.40 · 0.90 / 42e9 = 8,477 tokens/s.
    """
    return dense_flops_per_s * mfu * goodput / flops_per_token


def gpu_hours(n_tokens: float, *, tokens_per_gpu_s: float) -> float:
    """gpu_hours = D / tokens_per_gpu_s / 3600

    D is advanced tokens: the step counter times tokens per step at the end of the run.
    Trap: processed tokens (recomputed after rollbacks) flatter the figure; count
    allocated GPU time, not busy time.
    Source: reasoning: D tokens at a rate per GPU-second, over 3,600 s/h, counting every allocated
    GPU; e.g. 7B on 2T tokens at 8,477 tokens/GPU·s: 65,536 GPU-hours.
    """
    return n_tokens / tokens_per_gpu_s / HOUR


def marginal_usd(gpu_hours: float, *, usd_per_gpu_hour: float) -> float:
    """marginal_usd = gpu_hours · usd_per_gpu_hour

    What the final run costs if nothing else happens: a real lower bound, not the cost
    of the model.
    Trap: quoting marginal as total; and a list price instead of a loaded hourly price.
    Source: reasoning: allocated GPU-hours at the hour's price; e.g. 65,536 GPU-hours at $2.50:
    $163,840.
    """
    return gpu_hours * usd_per_gpu_hour


def loaded_usd(marginal_usd: float, *, overhead_multiplier: float, fixed_usd: float = 0.0) -> float:
    """loaded_usd = marginal · (1 + Σ overheads) + fixed

    Overheads (experiments, lost work, evaluation, idle capacity, ...) are multipliers on
    the final run's compute; fixed spend (data, licensing) is added once.
    Trap: a plan built on the marginal figure runs out of money by the multiplier.
    Source: Cottier et al. 2024, The rising costs of training frontier AI models (arXiv:2405.21015):
    experiments and staff add to the final run's compute; e.g. $163,840 · (1 + 0.60 + 0.15 + 0.05 +
    0.20) + $60,000 = $387,679.
    """
    return marginal_usd * (1.0 + overhead_multiplier) + fixed_usd


def usd_per_million_tokens(usd: float, *, n_tokens: float) -> float:
    """usd_per_M = usd / tokens · 1e6

    Trap: the denominator. Advanced tokens for planning and hardware comparison, unique
    tokens for data cost; write the definition next to the number.
    Source: reasoning: the cost over the tokens it bought, per million; e.g. $163,840 over 2T
    advanced tokens: $0.082 per million.
    """
    return usd / n_tokens * MILLION


def wall_seconds(n_tokens: float, *, tokens_per_gpu_s: float, n_gpus: float) -> float:
    """wall_s = D / (tokens_per_gpu_s · n_gpus)

    Calendar time of the final run: goodput in tokens_per_gpu_s already counts restarts.
    Trap: scaling is assumed linear in GPUs; communication that does not overlap lowers
    MFU at scale, and that belongs in the MFU given for this cluster size.
    Source: Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters
    Using Megatron-LM (arXiv:2104.04473), section 5.1 (training time ≈ 8TP / (nX), 8 with
    recomputation, 6 without).
    """
    return n_tokens / (tokens_per_gpu_s * n_gpus)


def gpus_for_deadline(n_tokens: float, *, tokens_per_gpu_s: float, deadline_s: float) -> float:
    """n_gpus = max(1, ceil(D / (tokens_per_gpu_s · deadline)))

    Whole GPUs, rounded up, at least one (a deadline far longer than one GPU needs is
    still one GPU, not zero); a ratio within 1e-9 of an integer counts as that integer.
    Array-safe (floor division and a comparison, no ``math.ceil`` or ``max``).
    Trap: rounding down misses the deadline; and the deadline is calendar time, so
    goodput must be in tokens_per_gpu_s or the cluster is too small.
    Source: Narayanan et al. 2021 (arXiv:2104.04473), section 5.1, solved for the GPU count n.
    """
    ratio = n_tokens / (tokens_per_gpu_s * deadline_s)
    n = -((_CEIL_SLACK - ratio) // 1.0)
    return n + (n < 1.0) * (1.0 - n)


def delivered_flops_per_usd(dense_flops_per_s: float, *, mfu: float, usd_per_gpu_hour: float,
                            goodput: float = 1.0) -> float:
    """delivered = peak · MFU · goodput / (usd_per_gpu_hour / 3600)   (FLOP of model work per dollar)

    Cost per token is flops_per_token divided by this, so ranking parts by it ranks them
    by cost per token.
    Trap: comparing peaks or prices alone. The MFU gap between a mature and an immature
    software stack is often larger than the price gap between two GPU generations.
    Source: reasoning: cost per token is flops_per_token over this; e.g. 2.2x the peak at 35% MFU
    for 1.8x the price: 2.2 · 0.35 / 1.8 = 0.43 against 0.40, about 7% cheaper per token.
    """
    return dense_flops_per_s * mfu * goodput / (usd_per_gpu_hour / HOUR)


def budget_flops(gpu_seconds: float, *, dense_flops_per_s: float, mfu: float, goodput: float = 1.0) -> float:
    """C = GPU-seconds · peak · MFU · goodput   (the model FLOPs a cluster delivers over a span)

    GPU-seconds are the GPUs times the wall-clock span; MFU is the fraction of the dense peak
    spent on model arithmetic while the job runs, goodput the fraction of the span that advances.
    The inverse of wall_seconds: the compute budget that sizes a compute-optimal model.
    Trap: the sparse or wrong-precision peak doubles the budget; and MFU alone counts restart
    and checkpoint time as if it trained.
    Source: Hoffmann et al. 2022, Training Compute-Optimal Large Language Models (arXiv:2203.15556),
    budgets in FLOPs; Chowdhery et al. 2022, PaLM (arXiv:2204.02311), appendix B (MFU).
    """
    return gpu_seconds * dense_flops_per_s * mfu * goodput


def relative_value(dense_flops_per_s: float, *, mfu: float, usd_per_gpu_hour: float, baseline_flops_per_s: float,
                   baseline_usd_per_gpu_hour: float) -> float:
    """value = (peak / peak_baseline) · MFU / (price / price_baseline)   (model FLOP per dollar, baseline peak = 1)

    A candidate part against the one it would replace: its peak and price as multiples of the
    baseline's, at its own MFU. Ranking by it ranks by cost per token (the baseline's own
    value is its MFU).
    Trap: ranking by peak, or by peak per dollar, without the MFU each part's software stack
    reaches; a part with 2.2x the peak at 35% MFU for 1.8x the price is only 7% cheaper per token.
    Source: reasoning: delivered_flops_per_usd with the baseline's peak and price as units; e.g.
    2.2 · 0.35 / 1.8 = 0.43 against the baseline's 0.40.
    """
    return (dense_flops_per_s / baseline_flops_per_s) * mfu / (usd_per_gpu_hour / baseline_usd_per_gpu_hour)


def whole_nodes(n_gpus: float, *, gpus_per_node: float) -> float:
    """gpus = ceil(n_gpus / gpus_per_node) · gpus_per_node

    A cluster is rented, wired and scheduled in nodes (an HGX board of 8, an NVL72 rack of 72),
    so a plan that needs 363 GPUs pays for 368 on 8-GPU nodes.
    Trap: the GPUs a deadline needs is a lower bound; the five left over in the last node are
    still paid for, and a data-parallel job runs on all of them (a slightly shorter wall time).
    Array-safe (floor division, as gpus_for_deadline).
    Source: reasoning; node sizes from the catalog's scale-up domains (NVIDIA HGX, GB200 NVL72).
    """
    return -((_CEIL_SLACK - n_gpus / gpus_per_node) // 1.0) * gpus_per_node
