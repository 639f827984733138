"""The physical range of every number napkin takes: one table, applied to every input by the request layer.

A parameter count, a GPU count, a token count, a price, a bandwidth, a peak: each has a range
no real input leaves. Outside it a value is a typo or an attack, never a plan, and the
arithmetic on it overflows to ``inf`` or divides by an underflowed 0 (``--gpus 1.7e308``,
``--tokens 5e-324``, ``--peak 3.8e-294``). :func:`napkin.request.parse_request` checks each
number against its range after its own bounds (CLI options, ``--config`` files, the web's JSON
and Python calls alike), so a field added to any request Struct gets the range of its name,
or else of its unit kind, with nothing to declare.

Each range is generous (orders of magnitude past any run) and says why nothing is beyond it.
``low`` is the smallest size a value other than 0 may have; 0 itself is the field's own
bounds' to allow or refuse. Within these ranges the products and quotients a calculation forms
stay far inside a float's (about 1e-308 to 1e308).
"""

from __future__ import annotations

from typing import NamedTuple

from napkin.errors import InputError
from napkin.units import YEAR


class Limit(NamedTuple):
    low: float  # the smallest size of a value other than 0
    high: float  # the largest size
    low_text: str  # the bounds as a reader reads them
    high_text: str
    why: str  # why no real input is past ``high`` (said in the error's fix)


# TechInsights (reported by HPCwire, June 2024): 3.85 million data-center GPUs shipped in 2023, all
# vendors. 1e8 is over 25 years of that output: more GPUs than one job could hold.
MAX_GPUS = 1e8
# Blackwell Ultra's dense FP4 is 15 PFLOP/s per GPU (NVIDIA, 2025): 1e17 FLOP/s is over six times any
# accelerator's dense peak at any precision.
MAX_DENSE_FLOPS_PER_S = 1e17
# Switch-C (Fedus et al. 2021) has 1.6e12 parameters, among the largest published; 1e16 is 6,000 times it,
# and its bf16 weights alone (20 PB) would fill 250,000 GPUs of 80 GB.
MAX_PARAMS = 1e16
# A model's width, depth, heads or experts: the largest built are in the tens of thousands (a hidden
# size of 25,600, a vocabulary of 256k); a million is far past any, and keeps products of shapes
# (layers · hidden² · experts) inside a 64-bit integer.
MAX_DIMENSION = 1e6

_GPUS = Limit(1, MAX_GPUS, "1", "1e8", "more GPUs than 25 years of the world's data-center GPU shipments")
_TOKENS = Limit(1, 1e30, "1 token", "1e30 tokens",
                "over 1e16 times the largest training corpus, Llama 3's 15.6T")
_DIMENSION = Limit(1, MAX_DIMENSION, "1", "1e6", "far past the largest model built, whose hidden size is 25,600")

# Quantities by field name (the same name means the same quantity in every request).
BY_NAME: dict[str, Limit] = {
    "params": Limit(1, MAX_PARAMS, "1 parameter", "1e16 parameters",
                    "6,000 times the largest published model, Switch-C's 1.6e12"),
    **{name: _GPUS for name in ("gpus", "max_gpus", "observed_gpus", "ranks", "sizes", "tp", "pp", "cp", "ep",
                                "dp")},
    **{name: _TOKENS for name in ("tokens", "unique_tokens", "training_tokens", "tokens_per_step", "prompt",
                                  "output", "context", "seq_len", "cached_prefix", "served", "per_day", "input",
                                  "cached", "cache_write", "history_growth", "system_tokens", "output_tokens",
                                  "chunk")},
    **{name: _DIMENSION for name in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                                     "experts", "top_k", "expert_ffn", "micro_batch", "interleave")},
    "workers": Limit(1, 4096, "1", "4,096", "more threads or processes than one machine runs"),
    "batch": Limit(1, 1e9, "1", "1e9 sequences", "a billion sequences in one batch is past any server's memory"),
    "sequences": Limit(1, 1e9, "1", "1e9 sequences", "a billion sequences in one batch is past any server's memory"),
    "concurrency": Limit(1, 1e9, "1", "1e9", "a billion requests at once is past any service's load"),
}

# Every other number, by its unit kind.
BY_KIND: dict[str, Limit] = {
    "number": Limit(1e-30, 1e30, "1e-30", "1e30", "no physical input is that large; numbers beyond it overflow"),
    "count": Limit(1e-6, 1e30, "1e-6", "1e30", "no count napkin takes is that large; numbers beyond it overflow"),
    "int": Limit(1, 2.0**53, "1", "9e15", "a whole number past 2^53 is not exact as a float"),
    "bytes": Limit(1, 1e24, "1 B", "1 YB", "a yottabyte is more than all the storage ever built"),
    "flops": Limit(1, 1e35, "1 FLOP", "1e35 FLOP",
                   "a billion times a frontier training run, Llama 3.1 405B's 3.8e25 FLOP"),
    "flops_per_s": Limit(1e3, MAX_DENSE_FLOPS_PER_S, "1 kFLOP/s", "100 PFLOP/s",
                         "six times the fastest accelerator's dense peak, Blackwell Ultra's 15 PFLOP/s "
                         "at FP4; give the peak of one GPU"),
    "bytes_per_s": Limit(1, 1e16, "1 B/s", "10 PB/s",
                         "over 1,000 times the fastest GPU memory, B200's 8 TB/s; give the bandwidth of one "
                         "GPU or link"),
    "seconds": Limit(1e-15, 1e5 * YEAR, "1 fs", "100,000 years", "no run or step lasts that long"),
    "usd": Limit(1e-6, 1e15, "$0.000001", "$1e15",
                 "ten times the world's yearly output, $1.05e14 in 2023 by the World Bank"),
    "usd_per_hour": Limit(1e-6, 1e6, "$0.000001/h", "$1,000,000/h",
                          "over 100,000 times any GPU's hourly list price; give the price of one GPU-hour"),
    "usd_per_million": Limit(1e-9, 1e6, "$1e-9/M", "$1,000,000/M",
                             "over 10,000 times any API's price per million tokens"),
    "usd_per_kwh": Limit(1e-6, 1e3, "$0.000001/kWh", "$1,000/kWh", "over 1,000 times any grid's price"),
    "fraction": Limit(1e-12, 1.0, "1e-12", "1", "a fraction is at most 1"),
    "watts": Limit(1e-3, 1e7, "1 mW", "10 MW", "a thousand times any accelerator's power; give the power of one GPU"),
    "per_s": Limit(1e-9, 1e9, "1e-9/s", "1e9/s", "a billion requests a second is past any service"),
    "joules": Limit(1e-3, 1e25, "1 mJ", "1e25 J", "more than the world's yearly energy use, about 6e20 J"),
}


def limit_for(field: str, kind: str) -> Limit | None:
    """The range of a field: by its name (``gpus``, ``overhead[facility]`` is ``overhead``), else its kind."""
    base = field.split("[", 1)[0].split(".")[-1]
    return BY_NAME.get(base) or BY_KIND.get(kind)


def check(field: str, value: float, kind: str, *, zero_ok: bool, raw: object = None) -> None:
    """InputError naming the field, the value and the fix when ``value`` is outside its physical range.

    ``zero_ok``: the field's own bounds allow 0 (said in the message: "must be 0 or at least ...").
    """
    limit = limit_for(field, kind)
    if limit is None or value == 0:
        return
    size = abs(value)
    if limit.low <= size <= limit.high:
        return
    shown = raw if isinstance(raw, str) else value
    if size > limit.high:
        raise InputError(field, shown, f"must be at most {limit.high_text}", f"{limit.why}: check the value")
    low = f"must be {'0 or ' if zero_ok else ''}at least {limit.low_text}"
    raise InputError(field, shown, low, "nothing real is smaller: check the value and its unit")
