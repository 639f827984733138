"""The bill request: one API request (or an agent's task) and, with --self-hosted, the replica to set it against."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin.request import field

S = msgspec.Struct

MAX_CALLS = 10_000  # each call is priced on its own (tiers move with its length): a task is a loop, not a fleet


class BillRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str | None, field("name", "API model in the price catalog (`napkin catalog prices`)",
                                       positional=True)] = None
    input: Annotated[float, field("count", "input tokens of the request (the whole prompt)", ge=0)] = 1000.0
    output: Annotated[float, field("count", "output tokens the user sees", ge=0)] = 300.0
    reasoning: Annotated[float, field("count", "reasoning tokens the model generates before its answer: billed as "
                                               "output, never shown", ge=0)] = 0.0
    cached: Annotated[float, field("count", "input tokens read from the provider's prompt cache", ge=0)] = 0.0
    cache_write: Annotated[float, field("count", "input tokens written to the prompt cache by this request",
                                        ge=0)] = 0.0
    batch: Annotated[bool, field("bool", "use the provider's batch API discount")] = False
    compare: Annotated[bool, field("bool", "bill the same request on every catalog model")] = False
    calls: Annotated[int, field("int", "calls in an agent's task (each re-sends the growing history)", gt=0,
                                le=MAX_CALLS)] = 1
    history_growth: Annotated[float, field("count", "tokens the history grows by per call", ge=0)] = 0.0
    input_price: Annotated[float | None, field("usd_per_million", "input price by hand (instead of the catalog)",
                                               ge=0)] = None
    output_price: Annotated[float | None, field("usd_per_million", "output price by hand (instead of the catalog)",
                                                ge=0)] = None
    self_hosted: Annotated[bool, field("bool", "put the serving calculator's cost beside the API's")] = False
    serve_model: Annotated[str | None, field("name", "open model to self-host (default: the API model's weights)")] = None
    gpu: Annotated[str | None, field("name", "accelerator for --self-hosted")] = None
    gpus: Annotated[int | None, field("int", "GPUs per self-hosted replica", gt=0)] = None
    tp: Annotated[int | None, field("int", "tensor-parallel degree of the self-hosted replica", gt=0)] = None
    precision: Annotated[str, field("precision", "weight precision of the self-hosted model")] = "bf16"
    price: Annotated[float | None, field("usd_per_hour", "price of one GPU-hour for --self-hosted", gt=0)] = None
    utilization: Annotated[float, field("fraction", "fraction of the hour the self-hosted replica generates")] = 1.0
    concurrency: Annotated[int | None, field("int", "sequences the self-hosted replica decodes together "
                                                    "(default: the most that fit, at most 64)", gt=0)] = None
    as_of: Annotated[str | None, field("text", "date to age the prices from, YYYY-MM-DD (default: today)")] = None
