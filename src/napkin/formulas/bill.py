"""API bills: one request's line items under a provider's price sheet, and an agent's growing history.

Pure functions over floats: prices are USD per million tokens, as providers publish them.
"""

from __future__ import annotations

from napkin.units import MILLION


def api_request_usd(*, uncached_tokens: float, cache_write_tokens: float, cache_read_tokens: float,
                    output_tokens: float, usd_per_million_input: float, usd_per_million_cache_write: float,
                    usd_per_million_cache_read: float, usd_per_million_output: float,
                    batch_discount: float = 0.0) -> dict[str, float]:
    """usd = (u · p_in + w · p_write + c · p_read + o · p_out) / 1e6 · (1 − batch discount)

    Each input token falls in exactly one category: uncached, written to the cache, or read
    from it. Returns the line items and their total.
    Trap: billing cached tokens again as input (they are instead of input, not as well); and
    quoting output at the input price: output is 4-8x dearer because decode holds the GPUs
    serially.
    Source: Anthropic API pricing for Claude Sonnet 4 (1,000 in at $3/M + 300 out at $15/M
    = $0.0075), and the providers' pricing pages for cache writes, reads and batch discounts
    (each catalog price names its page).
    """
    keep = 1.0 - batch_discount
    items = {
        "input_usd": uncached_tokens * usd_per_million_input / MILLION * keep,
        "cache_write_usd": cache_write_tokens * usd_per_million_cache_write / MILLION * keep,
        "cache_read_usd": cache_read_tokens * usd_per_million_cache_read / MILLION * keep,
        "output_usd": output_tokens * usd_per_million_output / MILLION * keep,
    }
    items["usd"] = sum(items.values())
    return items


def agent_loop_inputs(input_tokens: float, *, history_growth: float, calls: int) -> list[float]:
    """input of call i = input + i · growth   (i = 0 .. calls − 1)

    An agent re-sends its whole history on every call, so the task's input tokens grow as
    calls · input + growth · calls · (calls − 1) / 2: quadratic in the number of calls.
    Trap: $/token hides this; the honest unit for agents is $/task.
    Source: the chat-completions APIs are stateless: each call carries the whole
    conversation (OpenAI and Anthropic API references, messages parameter).
    """
    return [input_tokens + i * history_growth for i in range(int(calls))]
