"""Which device is this, and what does the catalog say it can do?

A CUDA device reports a marketing name ("NVIDIA H100 80GB HBM3"); ``catalog_key_for``
maps it to a catalog entry ("h100-sxm") so measured figures sit beside the datasheet's
dense peak. A CPU has no catalog peak: the measured matmul ceiling stands in for it,
and the output says so.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from typing import Any

from napkin.units import MEBI

# (pattern on the driver's name, catalog key), first match wins: the specific before the general.
CUDA_NAMES: tuple[tuple[str, str], ...] = (
    (r"GH200", "gh200"),
    (r"GB200", "gb200"),
    (r"GB300", "gb300"),
    (r"B300", "b300"),
    (r"B200", "b200"),
    (r"H200\s*NVL", "h200-nvl"),
    (r"H200", "h200"),
    (r"H100\s*NVL", "h100-nvl"),
    (r"H100\s*PCIe", "h100-pcie"),
    (r"H100", "h100-sxm"),  # "NVIDIA H100 80GB HBM3" is the SXM part
    (r"H800", "h800"),
    (r"A100.*PCIE.*40GB|A100.*40GB.*PCIE", "a100-pcie-40gb"),
    (r"A100.*PCIE|A100.*80GB.*PCIE", "a100-pcie-80gb"),
    (r"A100.*40GB", "a100-sxm-40gb"),
    (r"A100", "a100-sxm-80gb"),
    (r"L40S", "l40s"),
    (r"L40", "l40"),
    (r"L4\b", "l4"),
    (r"A10G", "a10g"),
    (r"A10\b", "a10"),
    (r"V100", "v100"),
    (r"T4\b", "t4"),
    (r"RTX\s*5090", "rtx-5090"),
    (r"RTX\s*4090", "rtx-4090"),
    (r"MI355X", "mi355x"),
    (r"MI325X", "mi325x"),
    (r"MI300X", "mi300x"),
    (r"MI250X", "mi250x"),
)

DEFAULT_CACHE_BYTES = 32 * MEBI  # when the last-level cache size cannot be read


def catalog_key_for(device_name: str) -> str | None:
    """The catalog key a driver's device name maps to, or None (a CPU, an unknown part)."""
    for pattern, key in CUDA_NAMES:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return key
    return None


@dataclass(frozen=True)
class Device:
    """The device measured: what it is called, how it maps to the catalog, its cache."""

    kind: str  # "cpu" | "cuda"
    name: str
    threads: int
    cache_bytes: float  # last-level cache (L3 on a CPU, L2 on a GPU)
    memory_bytes: float | None
    catalog_key: str | None  # the key, when the catalog has the entry
    mapped_key: str | None  # what the name maps to, in the catalog or not
    note: str
    index: int = 0

    @property
    def torch_device(self) -> str:
        return f"cuda:{self.index}" if self.kind == "cuda" else "cpu"

    @property
    def accelerator(self) -> Any:
        """The catalog Accelerator, or None."""
        if self.catalog_key is None:
            return None
        from napkin import catalog

        return catalog.gpu(self.catalog_key)

    def catalog_peak(self, precision: str) -> float | None:
        """Dense catalog peak at ``precision``, or None (no entry, or the part lacks it)."""
        acc = self.accelerator
        if acc is None or not acc.supports(precision):
            return None
        return acc.peak(precision)

    @property
    def catalog_bandwidth(self) -> float | None:
        acc = self.accelerator
        return None if acc is None else acc.memory_bytes_per_s

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "threads": self.threads,
                "cache_bytes": self.cache_bytes, "memory_bytes": self.memory_bytes,
                "catalog_key": self.catalog_key, "note": self.note}


def cpu_threads() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def cpu_cache_bytes() -> float:
    """The largest cache the kernel reports (the LLC); a default if unreadable."""
    best = 0.0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            if not entry.startswith("index"):
                continue
            with open(os.path.join(base, entry, "size")) as fh:
                text = fh.read().strip()
            mult = {"K": 1024.0, "M": MEBI, "G": 1024.0 * MEBI}.get(text[-1:].upper(), 1.0)
            num = text[:-1] if text[-1:].isalpha() else text
            best = max(best, float(num) * mult)
    except (OSError, ValueError):
        pass
    return best or DEFAULT_CACHE_BYTES


def cpu_memory_bytes() -> float | None:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def resolve(device: str = "auto") -> Device:
    """The device to measure: ``auto`` picks CUDA when torch sees one, else the CPU.

    Raises InputError for ``cuda`` on a machine without one.
    """
    import torch

    from napkin.errors import InputError

    want = (device or "auto").lower()
    if want not in ("auto", "cpu", "cuda") and not want.startswith("cuda:"):
        raise InputError("device", device, "must be auto, cpu or cuda")
    if want == "auto":
        want = "cuda" if torch.cuda.is_available() else "cpu"
    if want.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError("device", device, "is not available: this PyTorch sees no CUDA device",
                             f"torch {torch.__version__}; use --device cpu, or a CUDA build of PyTorch")
        index = int(want.split(":", 1)[1]) if ":" in want else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        name = torch.cuda.get_device_name(index)
        mapped = catalog_key_for(name)
        key, note = _in_catalog(mapped, name)
        return Device("cuda", name, cpu_threads(), float(getattr(props, "L2_cache_size", 0) or 50 * MEBI),
                      float(props.total_memory), key, mapped, note, index)
    name = cpu_name()
    return Device("cpu", name, cpu_threads(), cpu_cache_bytes(), cpu_memory_bytes(), None, None,
                  "a CPU has no catalog peak: fractions are of the measured matmul ceiling")


def _in_catalog(mapped: str | None, name: str) -> tuple[str | None, str]:
    from napkin import catalog
    from napkin.errors import UnknownName

    if mapped is None:
        return None, f"{name!r} maps to no catalog entry: fractions are of the measured ceiling"
    try:
        acc = catalog.gpu(mapped)
    except UnknownName:
        return None, (f"{name!r} maps to {mapped!r}, which the catalog does not hold yet: "
                      f"fractions are of the measured ceiling")
    return acc.key or mapped, f"{name!r} is the catalog's {acc.key or mapped} ({acc.source})"
