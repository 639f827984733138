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


def host_bound_step_seconds(gpu_step_s: Any, *, requests: Any, host_per_request_s: Any) -> Any:
    """t_step = max(t_GPU, h · R)

    An engine whose scheduler, sampler bookkeeping and request updates run on the host CPU
    spends h seconds of host time per request in a step (R requests: the decoding sequences
    plus the prompts that ride in it). With the host work of step i + 1 overlapped with the GPU
    work of step i (TensorRT-LLM's overlap scheduler, vLLM V1's async scheduling) the step lasts
    the longer of the two; h = 0 is a host that never binds.
    Trap: a GPU-only step time for a small or sparse model at thousands of sequences: its GPU
    step shrinks with the active parameters, the host's work does not. TensorRT-LLM 1.0 ran
    Qwen3-30B-A3B at 128/128 tokens 40% slower on a GB200 (Grace host) than on a B200 (x86
    host) with the same Blackwell GPU, while the dense Llama 3.3 70B ran 9% faster there.
    Source: TensorRT-LLM pull request #10273 (2025-12-24): GPT-OSS-120B on GB200, the PyTorch
    executor at max_batch_size 1536 per rank, 45.11 ms of host time per iteration: about 29 us
    per request on a Grace host; TransformerEngine issue #2053 (2025-08-11): the same PyTorch
    module costs 37 us of CPU time on GB200 against 13.5 us on an x86 H100 DGX.
    """
    return _maximum(gpu_step_s, host_per_request_s * requests)


# ------------------------------------------------------------------ latency percentiles under Poisson load
def erlang_c(servers: Any, *, offered_load: Any) -> Any:
    """C(c, a) = B / (1 − ρ · (1 − B)),   B = B(c, a) by B(k) = a · B(k−1) / (k + a · B(k−1)), B(0) = 1;  ρ = a / c

    The probability that an arrival finds all c servers busy and waits (Erlang C), with a = λ · S
    the offered load in servers; 1 at or beyond ρ = 1 (the queue grows without bound). Here the
    servers are a replica's sequence slots (its batch) and S is how long a request holds one.
    Array-safe (c may differ per element): the recursion runs to the largest c.
    Trap: one server at the pooled rate (M/M/1 at ρ) for c slots: at ρ = 0.7 that waits 70% of the
    time, while 64 slots at the same load almost never do; or ρ alone, which ignores c.
    Source: Erlang 1917; Kleinrock 1975, Queueing Systems vol. 1, section 3.5 (M/M/m, eq. 3.40),
    with the Erlang B recursion of Jagerman 1974.
    """
    import numpy as np

    c = np.asarray(servers, dtype=float)
    a = np.asarray(offered_load, dtype=float)
    c, a = np.broadcast_arrays(c, a)
    b = np.ones(c.shape)
    at = np.ones(c.shape)
    for k in range(1, int(c.max(initial=0.0)) + 1):
        b = a * b / (k + a * b)
        at = np.where(c == k, b, at)
    rho = a / np.maximum(c, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = at / (1.0 - rho * (1.0 - at))
    return np.where(rho >= 1.0, 1.0, np.clip(out, 0.0, 1.0))


def wait_quantile_seconds(wait_probability: Any, *, servers: Any, service_s: Any, rate_per_s: Any,
                          quantile: float) -> Any:
    """W_q = max(0, ln(C / (1 − q))) / (c / S − λ)   (∞ at or beyond ρ = 1)

    The q-quantile of the wait for a server in an M/M/c queue: P(W > t) = C · exp(−(c/S − λ) · t),
    so no wait at all while C ≤ 1 − q. Exponential service is the conservative choice for a slot
    held for a time that grows with the load.
    Trap: the mean wait for the p99: the tail is ln(C/0.01) times the mean conditional wait, about
    4.6 times at C = 1.
    Source: Kleinrock 1975, Queueing Systems vol. 1, section 3.5 (waiting-time distribution of M/M/m).
    """
    import numpy as np

    spare = np.asarray(servers, dtype=float) / service_s - rate_per_s  # c·μ − λ: requests per second of headroom
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.log(np.maximum(wait_probability, 1e-300) / (1.0 - quantile))
        out = np.maximum(tail, 0.0) / spare
    return np.where(spare > 0, out, np.inf)


def poisson_quantile(mean: Any, *, quantile: float) -> Any:
    """k_q = min{k : P(N ≤ k) ≥ q},   N ~ Poisson(m)

    How many arrivals a window with m expected ones holds at its q-quantile (array-safe; the sum
    of the probabilities runs until every element has reached q).
    Trap: the mean count: a step that expects 0.15 new prompts holds 2 of them one time in a hundred.
    Source: the Poisson distribution of arrivals in a fixed window (Kleinrock 1975, section 2.4).
    """
    import numpy as np

    m = np.asarray(mean, dtype=float)
    p = np.exp(-m)
    cdf = p.copy()
    k = np.zeros(m.shape)
    j = 0
    while bool(np.any(cdf < quantile)) and j < 100_000:
        j += 1
        p = p * m / j
        below = cdf < quantile
        k = np.where(below, j, k)
        cdf = cdf + p
        if not np.any(p[below] > 0):  # a mean so large that exp(−m) underflowed: the normal approximation
            return np.where(cdf < quantile, np.ceil(m + 2.326 * np.sqrt(m)), k)
    return k


def loaded_ttft_quantile_seconds(ttft_s: Any, *, step_s: Any, decode_step_s: Any, n_chunks: Any, wait_s: Any,
                                 co_arrivals: Any) -> Any:
    """TTFT_q = W_q + t_step + TTFT_0 + k_q · (TTFT_0 − n · t_decode)

    A request's time to first token under load, at a quantile, as the sum of its parts' quantiles
    (so an upper bound): the wait for a slot W_q (wait_quantile_seconds), the end of the step in
    progress when it is admitted (a prompt step t_step at most), its own prefill with no queue
    (TTFT_0: n chunk steps, continuous_ttft_seconds), and the prompts of the k_q others that arrived
    during the step before (poisson_quantile at λ · t_step), each adding its own prefill work, the
    part of its steps beyond decoding (TTFT_0 − n · t_decode).
    Trap: TTFT from the prefill alone (the 0% load answer), or from the slot queue alone: below
    saturation the p99 is set by steps that carry several prompts.
    Source: Agrawal et al. 2024, Sarathi-Serve (OSDI '24), scheduling delay of chunked prefills;
    Kwon et al. 2023, vLLM (first-come first-served admission at step boundaries).
    """
    extra = ttft_s - n_chunks * decode_step_s
    return wait_s + step_s + ttft_s + co_arrivals * _maximum(extra, 0.0 * extra)
