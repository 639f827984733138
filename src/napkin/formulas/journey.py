"""Formulas the one-prompt journey needs beyond flops, memory, roofline and comm."""

from __future__ import annotations

from napkin.formulas.flops import FORWARD_FLOPS_PER_PARAM
from napkin.formulas.serving import ALLREDUCES_PER_LAYER
from napkin.units import MILLION


def api_bill_usd(input_tokens: float, *, output_tokens: float, usd_per_million_input: float,
                 usd_per_million_output: float) -> float:
    """usd = T_in · p_in / 1e6 + T_out · p_out / 1e6

    Trap: pricing the whole request at the input rate; output tokens are decode, held
    serially on the machine, and list at ~5× the input price.
    Source: the provider's dated per-million-token list prices (catalog/prices.toml, each with its
    source); e.g. 1,000 in at $3/M + 300 out at $15/M = $0.003 + $0.0045 = $0.0075.
    """
    return input_tokens * usd_per_million_input / MILLION + output_tokens * usd_per_million_output / MILLION


def prefill_seconds_at_mfu(prefill_flops: float, *, n_gpus: float, dense_flops_per_s: float, mfu: float) -> float:
    """t = prefill FLOPs / (n_gpus · peak · MFU)   (the napkin rule of a prefill)

    The prompt's FLOPs at one assumed fraction of the node's dense peak: 810 TFLOP at 40% of
    8 × 1,979 TFLOP/s (6.3 PFLOP/s) is about 129 ms.
    Trap: one MFU for every prompt: a short prompt reaches far less than a long one (fixed
    per-layer costs, the weight read, the all-reduces), and attention grows with T², so the
    operator model's prefill (`napkin serve`, the journey's prefill_s) departs from this rule at both
    ends; and the sparse peak (2x) halves the answer.
    Source: Kaplan et al. 2020 (arXiv:2001.08361), 2N FLOPs per token; Chowdhery et al. 2022, PaLM
    (arXiv:2204.02311), appendix B (MFU); Dubey et al. 2024, The Llama 3 Herd of Models
    (arXiv:2407.21783), Table 4: 38-43% MFU on H100s.
    """
    return prefill_flops / (n_gpus * dense_flops_per_s * mfu)


def decode_intensity_flops_per_byte(batch: float, *, bytes_per_param: float) -> float:
    """intensity ≈ 2 · B / bytes_per_param  (FLOP per weight byte read, one decode step)

    Every weight is read once per step and used for one multiply-accumulate per
    sequence in the batch. The KV cache reads are left out, so this is an upper bound.
    Trap: expecting batch-1 decode to use the tensor cores: at FP8 it is 2 FLOP/byte
    against an H100 ridge near 590, about 0.3% of the bar.
    Source: Williams, Waterman & Patterson 2009, Roofline (CACM 52(4)); Pope et al. 2022
    (arXiv:2211.05102), section 2: each weight byte is used for ~2 FLOPs per sequence, then
    discarded.
    """
    return FORWARD_FLOPS_PER_PARAM * batch / bytes_per_param


def batch_at_ridge(ridge_flops_per_byte: float, *, bytes_per_param: float) -> float:
    """B* = ridge · bytes_per_param / 2: the decode batch at which weight reads stop binding

    Below B* a decode step costs the same time whatever the batch (the weights are read
    once either way); above it compute binds and the time grows with B.
    Trap: at FP8 the bar is half as high in batch as at BF16 for the same ridge, since
    each weight byte then carries one parameter, not half of one.
    Source: Williams, Waterman & Patterson 2009, Roofline (CACM 52(4)), with the decode intensity 2B
    / bytes_per_param; Pope et al. 2022 (arXiv:2211.05102), section 2.
    """
    return ridge_flops_per_byte * bytes_per_param / FORWARD_FLOPS_PER_PARAM


def tp_allreduce_bytes_per_token(d_model: float, *, n_layers: float, bytes_per_value: float,
                                 n_ranks: float) -> float:
    """bytes per rank per token = 2 · L · 2 · (n − 1) / n · d_model · bytes

    Tensor parallelism all-reduces one activation vector (d_model values) twice a layer;
    a ring moves 2 · (n − 1) / n of it per rank each time.
    One rank (n = 1) moves nothing.
    Trap: the volume per rank does not fall with more ranks, while each rank's share of
    the arithmetic does: TP past one NVLink domain is latency- and link-bound.
    Source: Shoeybi et al. 2019, Megatron-LM (arXiv:1909.08053), section 3: two all-reduces per
    layer forward; the ring volume of Patarasuk & Yuan 2009 (JPDC 69(2)).
    """
    per_allreduce = 2.0 * (n_ranks - 1.0) / n_ranks * d_model * bytes_per_value
    return ALLREDUCES_PER_LAYER * n_layers * per_allreduce


def energy_joules(seconds: float, *, n_gpus: float, watts_per_gpu: float, share: float = 1.0) -> float:
    """E = n_gpus · P · t · share

    An upper bound for the accelerators alone: every GPU at its rated power for the whole
    time; ``share`` is the fraction of the node this request holds (1/B at batch B).
    Trap: quoting a batch-1 figure as "energy per prompt": a served prompt shares each
    step with the batch, which divides it by tens; host, cooling (PUE) and idle capacity
    are left out and would add.
    Source: Elsworth et al. 2025, Measuring the environmental impact of delivering AI at Google
    scale (arXiv:2508.15734): the median Gemini Apps text prompt measured at 0.24 Wh; TDP from the
    accelerator's datasheet.
    """
    return n_gpus * watts_per_gpu * seconds * share
