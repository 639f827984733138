"""Accelerators and numeric precisions.

An Accelerator holds *dense* peaks per precision. Datasheets often print the 2:4
structured-sparsity figure, which is twice the dense one; the catalog stores only the
dense figure and the factor (``sparsity_factor``), so a hand-typed sparse peak can be
recognised and warned about.
"""

from __future__ import annotations

import msgspec

from napkin.errors import InputError, UnsupportedPrecision

# Bytes per stored value. int4/fp4 are half a byte: never integer-divide bits by 8.
BYTES_PER_VALUE: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp6": 0.75,
    "fp4": 0.5,
    "int4": 0.5,
}

PRECISION_ALIASES = {
    "float32": "fp32", "f32": "fp32", "float16": "fp16", "half": "fp16", "f16": "fp16",
    "bfloat16": "bf16", "float8": "fp8", "e4m3": "fp8", "e5m2": "fp8", "nvfp4": "fp4",
    "mxfp4": "fp4", "q4": "int4", "4bit": "int4", "8bit": "int8", "awq": "int4", "gptq": "int4",
}

# The tensor-core precision a weight format computes at when the part has no native
# peak for the storage format (int4 weights are dequantised and multiplied in bf16).
COMPUTE_FALLBACK = {"int4": "bf16", "fp4": "fp8", "fp6": "fp8", "int8": "bf16", "fp8": "bf16",
                    "fp32": "tf32", "tf32": "fp32", "fp16": "bf16", "bf16": "fp16"}


def precision(name: str, field: str = "precision") -> str:
    """Canonical precision name (``bfloat16`` -> ``bf16``); InputError if unknown."""
    key = str(name).strip().lower()
    key = PRECISION_ALIASES.get(key, key)
    if key not in BYTES_PER_VALUE:
        raise InputError(field, name, "is not a precision napkin knows",
                         "use one of " + ", ".join(BYTES_PER_VALUE))
    return key


def bytes_per_value(name: str, field: str = "precision") -> float:
    """Bytes one parameter (or cache value) takes at a precision: bf16 -> 2.0, int4 -> 0.5."""
    return BYTES_PER_VALUE[precision(name, field)]


MAX_NODE = 72  # a scale-up domain larger than a rack (a TPU pod) is not a unit a cluster is rented in


class Accelerator(msgspec.Struct, kw_only=True, frozen=True):
    """One accelerator (per chip, or per GPU for multi-die packages such as GB200)."""

    key: str = ""
    name: str
    vendor: str
    dense_flops_per_s: dict[str, float]
    memory_bytes: float
    memory_bytes_per_s: float
    # What the software stack reports, where a public printout gives it (the datasheet's round
    # "80GB" is 80e9; an H100 SXM reports 81,559 MiB). memory_bytes_reported is the driver's total
    # (nvidia-smi / rocm-smi); memory_bytes_runtime the CUDA/HIP runtime's total
    # (cudaMemGetInfo, torch.cuda.mem_get_info), 0.4-0.8 GiB lower, which PyTorch and vLLM budget
    # against. None where no printout was found: fall back to memory_bytes. The sources are in
    # memory_reported_source; weakly sourced figures are marked there.
    memory_bytes_reported: float | None = None
    memory_bytes_runtime: float | None = None
    memory_reported_source: str = ""
    link_bytes_per_s_bidirectional: float | None = None
    link_name: str = ""
    link_over_pcie: bool = False  # the GPU-to-GPU link is PCIe itself (no NVLink: an L40S server)
    # GPUs that share the scale-up link (an NVLink/NVSwitch board, an NVL72 rack, a
    # bridged PCIe pair, a TPU ICI slice). A collective over more ranks leaves it and
    # runs at the slowest link it crosses (the scale-out NIC, PCIe or DCN).
    scale_up_domain: int
    scale_up_source: str = ""
    # A card whose scale-up domain is a bridged pair reaches the other cards of its server over its host
    # link (PCIe), not the scale-out network: up to host_link_domain GPUs per server.
    host_link_bytes_per_s_bidirectional: float | None = None
    host_link_domain: int | None = None
    host_link_source: str = ""
    # GPUs rented together in one node, where it is not the scale-up domain (a TPU host: 8 v5e chips)
    gpus_per_node: int | None = None
    gpus_per_node_source: str = ""
    tdp_watts: float | None = None
    sparsity_factor: float | None = None
    form_factor: str = ""
    year: int | None = None
    aliases: list[str] = []
    source: str
    note: str = ""

    def peak(self, prec: str, field: str = "precision") -> float:
        """Dense peak FLOP/s at ``prec``; UnsupportedPrecision if the part lacks it."""
        p = precision(prec, field)
        if p in self.dense_flops_per_s:
            return self.dense_flops_per_s[p]
        if p == "fp16" and "bf16" in self.dense_flops_per_s:
            return self.dense_flops_per_s["bf16"]
        if p == "bf16" and "fp16" in self.dense_flops_per_s:
            return self.dense_flops_per_s["fp16"]
        have = ", ".join(self.dense_flops_per_s)
        raise UnsupportedPrecision(
            field, prec, f"is not supported by the {self.name}",
            f"its dense peaks are at {have}",
        )

    def supports(self, prec: str) -> bool:
        try:
            self.peak(prec)
        except InputError:
            return False
        return True

    @property
    def link_bytes_per_s_per_direction(self) -> float | None:
        """One direction of the scale-up link: half the bidirectional rating."""
        if self.link_bytes_per_s_bidirectional is None:
            return None
        return self.link_bytes_per_s_bidirectional / 2

    @property
    def host_link_bytes_per_s_per_direction(self) -> float | None:
        """One direction of the host link (PCIe) between cards of one server beyond the scale-up domain."""
        if self.host_link_bytes_per_s_bidirectional is None:
            return None
        return self.host_link_bytes_per_s_bidirectional / 2

    def __post_init__(self) -> None:
        if self.scale_up_domain < 1:
            raise InputError("scale_up_domain", self.scale_up_domain, "must be at least 1",
                             "1 is a part with no scale-up link (its link is PCIe)")

    def sparse_peak(self, prec: str) -> float | None:
        """The datasheet's structured-sparsity figure (never used as a peak)."""
        if not self.sparsity_factor or not self.supports(prec):
            return None
        return self.peak(prec) * self.sparsity_factor

    @property
    def node_size(self) -> int:
        """GPUs a cluster of this part is rented in: its node (gpus_per_node), else its scale-up domain
        (an HGX board of 8, an NVL72 rack of 72), else 1 where the domain is a whole pod (a TPU slice
        is sized in chips)."""
        if self.gpus_per_node:
            return self.gpus_per_node
        return self.scale_up_domain if self.scale_up_domain <= MAX_NODE else 1

    def ridge_flops_per_byte(self, prec: str) -> float:
        return self.peak(prec) / self.memory_bytes_per_s
