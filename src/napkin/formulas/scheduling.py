"""Which tokens a serving step carries: static batching and continuous (in-flight) batching.

The operators of a step (:mod:`napkin.formulas.operators`) say how long a step with M tokens
takes; the scheduler says which tokens those are. Symbols:

    B   sequences in flight (the concurrency)          P  prompt tokens    O  output tokens
    P_c prompt tokens served from a prefix cache       C  token budget of one step (the chunk)
    B_d sequences decoding in a step                   c  prefill tokens in a step

Static batching: B prompts arrive together, are prefilled in one step, then decode O − 1
steps together; nothing joins until all finish. Continuous batching (Orca; vLLM, SGLang,
TensorRT-LLM in-flight batching): a finished sequence's slot is refilled at once, and every
request's prompt must be prefilled on the same GPUs; with chunked prefill the prompt tokens
ride in the decode steps up to the budget C (mixed steps), otherwise prefills run as steps
of their own and pause decoding. In the steady state each decoding sequence's O tokens bring
one request's P − P_c prefill tokens with them.
"""

from __future__ import annotations

from typing import Any

from napkin.formulas._array import maximum as _maximum


def _minimum(a: Any, b: Any) -> Any:
    from napkin.formulas._array import is_scalar

    if is_scalar(a, b):
        return min(a, b)
    import numpy as np

    return np.minimum(a, b)


def prefill_pairs(new_tokens: Any, *, cached_tokens: Any = 0.0) -> Any:
    """Π = T · (P_c + T/2)

    Causal query-key pairs of a prefill of T new tokens after P_c cached ones: each new token
    sees every cached token and, on average, half of the new ones.
    Trap: the full square T² (no causal mask) doubles the attention FLOPs of a prefill.
    Source: Vaswani et al. 2017 (masked self-attention); the continuous form of Σ_i (P_c + i).
    """
    return new_tokens * (cached_tokens + new_tokens / 2.0)


def static_latency_seconds(prefill_s: Any, *, decode_step_s: Any, output_tokens: Any) -> Any:
    """latency = t_prefill(B · (P − P_c)) + (O − 1) · t_decode(B)

    The batch's prefill emits every sequence's first token; each later token is one decode step
    of the whole batch. TTFT of every request is the whole batch's prefill.
    Trap: the prefill of one prompt as the TTFT of a batch: 32 prompts of 2,048 tokens are
    prefilled together, 32 times the work before anyone's first token.
    Source: NVIDIA TensorRT-LLM gptSessionBenchmark (a batch that arrives together and runs to
    completion); Yu et al. 2022, Orca (OSDI '22), section 2 (the limits of static batching).
    """
    return prefill_s + (output_tokens - 1.0) * decode_step_s


def static_tokens_per_s(batch: Any, *, output_tokens: Any, latency_s: Any) -> Any:
    """tokens/s = B · O / latency

    Trap: B / TPOT leaves out the batch's own prefill: at 2,048 in / 128 out it doubles the answer.
    Source: TensorRT-LLM performance tables (output tokens over the batch's total latency).
    """
    return batch * output_tokens / latency_s


def decode_sequences(concurrency: Any, *, prompt_tokens: Any, output_tokens: Any, chunk_tokens: Any,
                     cached_tokens: Any = 0.0, mixed: Any = True) -> Any:
    """B_d = min(B, C · O / (O + P − P_c))   (mixed steps; B when prefills run as steps of their own)

    In a mixed step each decoding sequence brings (P − P_c) / O prefill tokens with it, so a
    step of B_d decode tokens carries B_d · (1 + (P − P_c)/O) tokens, at most the budget C.
    Trap: taking the concurrency for the decode batch when the budget binds: at 2,048 in /
    128 out with C = 8,192 at most 482 sequences decode per step, whatever the memory holds.
    Source: Agrawal et al. 2024, Sarathi-Serve (OSDI '24), token budget of stall-free batching;
    TensorRT-LLM max_num_tokens.
    """
    new = prompt_tokens - cached_tokens
    bound = chunk_tokens * output_tokens / (output_tokens + new)
    return _minimum(concurrency, bound) * mixed + concurrency * (1 - mixed)


def prefill_tokens_per_step(decode_seqs: Any, *, prompt_tokens: Any, output_tokens: Any,
                            cached_tokens: Any = 0.0) -> Any:
    """c = B_d · (P − P_c) / O

    Steady state: B_d / O requests finish per step, so as many new ones are prefilled.
    Trap: leaving the prefills out of the throughput: tokens/s = B / TPOT counts a batch that
    never has to read its prompts.
    Source: Little's law over the decode slots; Yu et al. 2022, Orca.
    """
    return decode_seqs * (prompt_tokens - cached_tokens) / output_tokens


def prompt_steps(prefill_tokens: Any, *, new_tokens: Any, room: Any) -> tuple[Any, Any]:
    """(c, q) = (max(p, min(T, room)), p / c)

    With p prompt tokens to prefill per step on average, a prompt of T new tokens rides whole in
    one step when the budget leaves room for it (in chunks of ``room`` otherwise), so a fraction
    q = p / c of the steps carry c prompt tokens each and the rest decode only; when several
    prompts arrive per step (p > T) every step carries them.
    Trap: spreading the prompt thinly over every step: at batch 1 each step would carry 3 of a
    1,000-token prompt and pay a prefill step's fixed costs 300 times instead of once.
    Source: Yu et al. 2022, Orca (iteration-level scheduling); Agrawal et al. 2024,
    Sarathi-Serve (OSDI '24), chunked prefills within a token budget.
    """
    c = _maximum(prefill_tokens, _minimum(new_tokens, _maximum(room, 1.0 + 0.0 * room)))
    return c, prefill_tokens / c


def continuous_step_seconds(mixed_step_s: Any, *, decode_step_s: Any, prefill_request_s: Any, decode_seqs: Any,
                            output_tokens: Any, mixed: Any = True, prompt_share: Any = 1.0) -> Any:
    """t_cycle = q · t_mixed(B_d, c) + (1 − q) · t_decode(B_d)   (mixed)
    or t_decode(B_d) + (B_d / O) · t_prefill_per_request   (prefill steps of their own)

    The mean time each decoding sequence waits per output token (its mean TPOT): a share q of the
    steps carry prompt tokens (prompt_steps), or each decode step pays its share of the separate
    prefill steps that pause it.
    Trap: TPOT of an idle decode batch at full load: the prefills of arriving requests stretch
    the decode steps.
    Source: Agrawal et al. 2024, Sarathi-Serve (generation stalls of prefill-prioritising schedulers).
    """
    blended = prompt_share * mixed_step_s + (1 - prompt_share) * decode_step_s
    separate = decode_step_s + decode_seqs / output_tokens * prefill_request_s
    return blended * mixed + separate * (1 - mixed)


def prefill_chunk_plan(new_tokens: Any, *, room: Any, cached_tokens: Any = 0.0) -> tuple[Any, Any, Any]:
    """(n, tokens per chunk, pairs per chunk) = (⌈T / room⌉, T / n, Π(T, P_c) / n)

    A prompt of T new tokens under chunked prefill takes n steps with at most ``room`` of its
    tokens each (the budget the decode tokens leave); taken as n equal chunks, each carries
    T / n tokens and an n-th of the prompt's causal query-key pairs.
    Trap: the prompt as one step under chunked prefill: a 32k prompt with 8k of budget per step
    takes four steps, each also carrying every decoding sequence's token.
    Source: Agrawal et al. 2024, Sarathi-Serve (OSDI '24), chunked prefills.
    """
    room = _maximum(room, 1.0 + 0.0 * room)
    n = -((-new_tokens) // room)
    return n, new_tokens / n, prefill_pairs(new_tokens, cached_tokens=cached_tokens) / n


def continuous_ttft_seconds(chunk_step_s: Any, *, n_chunks: Any, mixed: Any = True, decode_step_s: Any = 0.0,
                            prefill_batch_s: Any = 0.0) -> Any:
    """TTFT = n · t_step(B_d + T/n)   (mixed),   t_decode / 2 + t_prefill   (separate)

    With no queue: a mixed scheduler gives a new prompt the budget the decode tokens leave, so
    its prefill takes n chunk steps (prefill_chunk_plan), each a step of the decode batch plus a
    chunk; a prefill-first scheduler runs it after the current decode step ends (half a step on
    average), in a prefill step of its own.
    Trap: the idle-replica prefill as the TTFT under load: chunks share steps with decoding.
    Source: Agrawal et al. 2024, Sarathi-Serve; Kwon et al. 2023, vLLM scheduler.
    """
    return n_chunks * chunk_step_s * mixed + (decode_step_s / 2.0 + prefill_batch_s) * (1 - mixed)
