"""The journey request: the prompt, the node it runs on, and the assumptions of the worked example
(defaults from catalog/assumptions.toml, each with its source; the kernels' efficiencies from
catalog/efficiency.toml, as `napkin serve` takes them)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.request import field
from napkin.token_count import CHOICES as ENCODING_CHOICES

SEED_PROMPT = "Why is the sky red at sunset but blue at noon?"
SEED_TOKENS_LLAMA3 = 12  # Llama 3's tokenizer splits SEED_PROMPT into 12 tokens

RUNG_TITLES = {
    "tokens": "The tokenizer",
    "weights": "The weights",
    "memory_wall": "The memory wall",
    "prefill": "Prefill",
    "decode": "Decode",
    "bill": "The bill",
    "training": "The training debt",
}


class JourneyRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog model or path to a Hugging Face config.json")] = "llama-3.1-405b"
    params: Annotated[float | None, field("count", "parameters N instead of the architecture's count "
                                                   "for the FLOPs meter and the napkin rules (405B "
                                                   "reproduces the round figures of Llama 3's paper); the "
                                                   "operator model times the architecture", gt=0)] = None
    gpu: Annotated[str, field("name", "accelerator")] = "h100-sxm"
    gpus: Annotated[int, field("int", "GPUs the weights are sharded over", gt=0)] = 8
    precision: Annotated[str, field("precision", "weight precision, and the tensor-core precision of prefill")] = "fp8"
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    prompt: Annotated[str, field("text", "the user's question")] = SEED_PROMPT
    encoding: Annotated[str, field("choice", "tokenizer: o200k, cl100k, or rule (4 characters per token, an estimate)",
                                   choices=ENCODING_CHOICES)] = "o200k"
    system_tokens: Annotated[int, field("int", "tokens of system prompt and scaffolding around the question", ge=0)] = (
        int(catalog.default_value("journey_system_tokens")))
    output_tokens: Annotated[int, field("int", "tokens in the answer", gt=0)] = 300
    price_in: Annotated[float, field("usd_per_million", "API price per million input tokens", ge=0)] = (
        catalog.default_value("api_usd_per_million_input"))
    price_out: Annotated[float, field("usd_per_million", "API price per million output tokens", ge=0)] = (
        catalog.default_value("api_usd_per_million_output"))
    mfu: Annotated[float, field("fraction", "model FLOPs utilisation of the napkin prefill rule (of the dense "
                                            "peak); the operator model's prefill predicts its own")] = (
        catalog.default_value("journey_prefill_mfu"))
    bandwidth_fraction: Annotated[float | None, field(
        "fraction", "fraction of HBM bandwidth the kernels reach (default: measured for the GPU family, "
                    "catalog/efficiency.toml)", aliases=("bandwidth_efficiency",))] = None
    batch: Annotated[int, field("int", "sequences decoded together, for what batching changes", gt=0)] = 64
    disk_bandwidth: Annotated[float, field("bytes_per_s", "read bandwidth of the disk the weights load from", gt=0)] = (
        catalog.default_value("disk_bandwidth_bytes_per_s"))
    usd_per_gpu_hour: Annotated[float, field("usd_per_hour", "rent of one GPU-hour (a round $3/h, not the "
                                                             "catalog's dated price)", ge=0, aliases=("price",))] = (
        catalog.default_value("journey_usd_per_gpu_hour"))
    training_tokens: Annotated[float | None, field("count", "training tokens D (default: the catalog's, where published)",
                                                   gt=0)] = None
    attention: Annotated[bool, field("bool", "add the causal attention term to the meter (2N alone by default)")] = False
