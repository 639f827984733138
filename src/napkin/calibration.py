"""Calibration: efficiencies measured on a real machine, in place of guesses.

``napkin measure --save calibration.toml`` writes one; ``napkin train --calibration F``
and ``napkin serve --calibration F`` read it and use the measured figures instead of an
assumed MFU or bandwidth efficiency, labelling those inputs "measured on <device>,
<date>" (``Calibration.label``) with basis ``"measured"``.

The file is plain TOML, written by hand here (no writer dependency) and read with
tomllib. Values are in base units (FLOP/s, byte/s, fractions). A missing file, bad
TOML or a missing or mistyped field is an InputError naming the field::

    device = "NVIDIA H100 80GB HBM3"
    catalog_key = "h100-sxm"
    date = "2026-05-01"
    memory_bytes_per_s = 2.9e12
    bandwidth_fraction = 0.866
    training_mfu = 0.41
    training_mfu_params = 124e6

    [versions]
    torch = "2.13.0"

    [peak_flops_per_s]          # measured matmul ceiling per precision
    bf16 = 7.4e14

    [matmul_fraction_of_peak]   # ceiling / catalog dense peak (absent on a CPU)
    bf16 = 0.75

    [allreduce_bus_bytes_per_s] # message size -> bus bandwidth
    "64MB" = 3.6e11
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgspec

from napkin.errors import InputError

__all__ = ["Calibration", "check_writable", "dumps", "load", "save", "save_merged"]


class Calibration(msgspec.Struct, kw_only=True):
    """Measured efficiencies of one device, with when and with what they were measured."""

    device: str
    """The device as the driver names it ("NVIDIA H100 80GB HBM3", or the CPU model)."""
    date: str
    """ISO date of the measurement (YYYY-MM-DD)."""
    versions: dict[str, str] = {}
    """Software versions (napkin, torch, python, CUDA) the figures were taken with."""
    peak_flops_per_s: dict[str, float] = {}
    """Measured matmul ceiling per precision (FLOP/s): the best over a sweep of shapes."""
    matmul_fraction_of_peak: dict[str, float] = {}
    """Measured ceiling / the catalog's dense peak, per precision (empty with no catalog peak)."""
    memory_bytes_per_s: float
    """Measured copy bandwidth, bytes read plus bytes written per second."""
    bandwidth_fraction: float | None = None
    """Measured copy bandwidth / the catalog's memory bandwidth (None with no catalog entry)."""
    training_mfu: float | None = None
    """MFU of a short training run (model FLOPs over the catalog peak, or the measured ceiling on a CPU)."""
    training_mfu_params: float | None = None
    """Parameters N (the matmul weights, head included) of the model the training MFU was measured on."""
    allreduce_bus_bytes_per_s: dict[str, float] = {}
    """All-reduce bus bandwidth per message size label ("1MB", "64MB")."""
    source_path: str = ""
    """The file this calibration was read from (set by ``load``; not written)."""
    # -- optional context beyond the shared interface --------------------------------
    catalog_key: str | None = None
    """The catalog accelerator the device maps to ("h100-sxm"), or None (a CPU, an unknown part)."""
    training_precision: str = ""
    """Precision of the training run behind ``training_mfu``."""
    training_mfu_basis: str = ""
    """What the training MFU's denominator was: "catalog peak" or "measured ceiling"."""
    flops_convention: str = ""
    """The model-FLOPs convention of ``training_mfu`` ("causal": 6N + 6·L·d·T per token)."""
    training_mfu_by_convention: dict[str, float] = {}
    """The same run's MFU counted as 6N, causal and full: use the one a plan counts FLOPs by."""
    allreduce_ranks: int | None = None
    """Ranks in the group the all-reduce was measured over."""
    allreduce_backend: str = ""
    """torch.distributed backend of the all-reduce (nccl, gloo)."""
    contended: bool = False
    """True when the machine was busy with other work while measuring."""

    @property
    def label(self) -> str:
        """``measured on <device>, <date>``: the note on every input taken from here."""
        return f"measured on {self.device}, {self.date}"

    @property
    def allreduce_setup(self) -> str:
        """"over 8 ranks (nccl)", or what of it the file records."""
        ranks = f"over {self.allreduce_ranks} ranks" if self.allreduce_ranks else "over an unrecorded number of ranks"
        return ranks + (f" ({self.allreduce_backend})" if self.allreduce_backend else "")

    def allreduce_bus_at(self, size_bytes: float) -> tuple[str, float] | None:
        """(label, bus bandwidth) of the measured message size nearest ``size_bytes`` (by ratio).

        The bus bandwidth is the one-direction link rate of a ring all-reduce
        (busbw = size / t · 2(n − 1)/n), the rate napkin's all-reduce model divides by.
        None when the file has no all-reduce figures.
        """
        import math as _m

        from napkin import units

        best: tuple[float, str, float] | None = None
        for label, rate in self.allreduce_bus_bytes_per_s.items():
            try:
                size = units.parse(label, "bytes", f"calibration.allreduce_bus_bytes_per_s.{label}")
            except InputError:
                continue
            distance = abs(_m.log(size / size_bytes))
            if best is None or distance < best[0]:
                best = (distance, label, rate)
        return None if best is None else (best[1], best[2])

    def fit_warnings(self, gpu: Any = None, *, uses: str, precision: str | None = None,
                     peak_by_hand: bool = False) -> list[tuple[str, str]]:
        """(code, message) for each reason this file's figures may not carry over to a plan.

        ``uses`` names what the plan takes from it ("its training MFU"); ``gpu`` is the
        plan's Accelerator; ``precision`` the plan's training precision (for the MFU); ``peak_by_hand``: the
        plan's peak was given (then an MFU over a measured ceiling multiplies the user's peak, not a datasheet's).
        A CPU file applied to an H100 plan, a busy machine, an MFU over a measured ceiling
        rather than a datasheet peak, another precision: each is said, never silent.
        """
        out: list[tuple[str, str]] = []
        if gpu is not None and self.catalog_key != gpu.key:
            where = (f"{self.device} ({self.catalog_key})" if self.catalog_key
                     else f"{self.device}, which is not a part in the catalog")
            out.append(("calibration-device", f"the calibration was measured on {where}, not the {gpu.name} this "
                                              f"plan is priced on: {uses} may not carry over; measure on the part "
                                              f"you will run on"))
        if "MFU" in uses and self.training_mfu_basis == "measured ceiling" and not peak_by_hand:
            out.append(("calibration-basis", "the calibration's training MFU is over the device's measured matmul "
                                             "ceiling, not a datasheet peak, while this plan multiplies it by the "
                                             "datasheet peak"))
        if "MFU" in uses and precision and self.training_precision and self.training_precision != precision:
            out.append(("calibration-precision", f"the calibration's training MFU was measured at "
                                                 f"{self.training_precision}, not the plan's {precision}"))
        if self.contended:
            out.append(("contended-calibration", f"{self.source_path or 'the calibration'} was measured on a "
                                                 f"contended machine (contended = true): its efficiencies "
                                                 f"understate the device"))
        return out

    def training_mfu_for(self, convention: str) -> float | None:
        """The training MFU counted under ``convention`` (6N, causal, full), or None if not measured."""
        if convention in self.training_mfu_by_convention:
            return self.training_mfu_by_convention[convention]
        return self.training_mfu if convention == self.flops_convention.split(":")[0] else None

    def matmul_fraction(self, precision: str) -> float | None:
        """Measured matmul fraction of peak at ``precision`` (None if not measured)."""
        return self.matmul_fraction_of_peak.get(precision)


_FLOAT_FIELDS = ("memory_bytes_per_s", "bandwidth_fraction", "training_mfu", "training_mfu_params")
_FRACTIONS = ("bandwidth_fraction", "training_mfu")
_TABLES = ("versions", "peak_flops_per_s", "matmul_fraction_of_peak", "training_mfu_by_convention",
           "allreduce_bus_bytes_per_s")


def load(path: str | Path) -> Calibration:
    """Read a calibration file; InputError naming the field on any problem."""
    from napkin.files import read_toml

    data = read_toml(str(path), "calibration", what="a calibration", fix="write the file with `napkin measure --save`",
                     missing_fix="write one with `napkin measure --save calibration.toml`")
    data.pop("source_path", None)
    for name in ("device", "date", "memory_bytes_per_s"):
        if name not in data:
            raise InputError(f"calibration.{name}", str(path), "is missing from the file",
                             "write the file with `napkin measure --save`")
    try:
        cal = msgspec.convert(data, Calibration, strict=False)
    except msgspec.ValidationError as exc:
        name = _field_of(str(exc))
        why = str(exc).split(" - at ", 1)[0]
        raise InputError(f"calibration.{name}", str(path), f"is not valid ({why})",
                         "write the file with `napkin measure --save`") from None
    _check(cal, str(path))
    cal.source_path = str(path)
    return cal


def _field_of(message: str) -> str:
    """The field named by a msgspec error (``... - at `$.training_mfu```)."""
    if "`$." in message:
        return message.split("`$.", 1)[1].split("`", 1)[0].split("[", 1)[0]
    if "missing required field" in message:
        return message.split("`")[1] if "`" in message else "?"
    return "?"


def _check(cal: Calibration, where: str) -> None:
    for name in _FLOAT_FIELDS:
        v = getattr(cal, name)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise InputError(f"calibration.{name}", v, "must be a positive number", f"in {where}")
    for name in _FRACTIONS:
        v = getattr(cal, name)
        # a measured fraction may exceed 1 a little (boost clocks, a datasheet rounded down)
        if v is not None and v > 2.0:
            raise InputError(f"calibration.{name}", v, "must be a fraction near or below 1",
                             f"in {where}; was a percentage written?")
    for table in _TABLES[1:]:
        for k, v in getattr(cal, table).items():
            if not (math.isfinite(v) and v > 0):
                raise InputError(f"calibration.{table}.{k}", v, "must be a positive number", f"in {where}")


def dumps(cal: Calibration) -> str:
    """The TOML text of a calibration (written by hand: tomllib reads, nothing writes)."""
    _check(cal, "the calibration being written")
    lines = [
        "# napkin calibration: figures measured on this machine by `napkin measure`.",
        "# Base units: FLOP/s, bytes/s, fractions. Read by `napkin train|serve --calibration`.",
        f"device = {_str(cal.device)}",
        f"date = {_str(cal.date)}",
    ]
    if cal.catalog_key:
        lines.append(f"catalog_key = {_str(cal.catalog_key)}")
    lines.append(f"memory_bytes_per_s = {_num(cal.memory_bytes_per_s)}")
    for name in ("bandwidth_fraction", "training_mfu", "training_mfu_params"):
        v = getattr(cal, name)
        if v is not None:
            lines.append(f"{name} = {_num(v)}")
    for name in ("training_precision", "training_mfu_basis", "flops_convention", "allreduce_backend"):
        v = getattr(cal, name)
        if v:
            lines.append(f"{name} = {_str(v)}")
    if cal.allreduce_ranks is not None:
        lines.append(f"allreduce_ranks = {int(cal.allreduce_ranks)}")
    lines.append(f"contended = {'true' if cal.contended else 'false'}")
    for table in _TABLES:
        values = getattr(cal, table)
        lines.append("")
        lines.append(f"[{table}]")
        for k, v in values.items():
            lines.append(f"{_str(str(k))} = {_str(v) if table == 'versions' else _num(v)}")
    return "\n".join(lines) + "\n"


def save(cal: Calibration, path: str | Path) -> None:
    """Write ``cal`` to ``path`` as TOML that ``load`` reads back unchanged."""
    from napkin.files import write_file

    write_file(path, "save", dumps(cal))


def save_merged(cal: Calibration, path: str | Path) -> Calibration:
    """Write ``cal`` to ``path``, keeping the all-reduce figures a calibration already there holds for the same device.

    `napkin measure` times one device; `torchrun -m napkin.measure --collectives` adds the
    all-reduce of a group to the same file. Measuring the device again must not drop them.
    A file that is not a calibration is replaced. Returns what was written.
    """
    import os

    p = Path(path)
    if os.path.isfile(p):
        try:
            old = load(p)
        except InputError:
            old = None
        if old is not None and old.device == cal.device and old.allreduce_bus_bytes_per_s:
            cal.allreduce_bus_bytes_per_s = dict(old.allreduce_bus_bytes_per_s)
            cal.allreduce_ranks = old.allreduce_ranks
            cal.allreduce_backend = old.allreduce_backend
    save(cal, p)
    return cal


def check_writable(path: str | Path) -> None:
    """InputError unless ``path`` is in a folder that exists and can be written (checked before measuring)."""
    import os

    from napkin.files import os_error

    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a name over 255 bytes, a symlink loop: said before the measurement, not after
        raise os_error("save", path, exc) from None
    if not os.path.isdir(folder):
        raise InputError("save", str(path), "is in a folder that does not exist", f"create {folder} first")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise InputError("save", str(path), "cannot be written", "give a path you can write")


def _str(s: Any) -> str:
    # a JSON string is a TOML basic string, except that TOML also wants DEL escaped
    return json.dumps(str(s), ensure_ascii=False).replace("\x7f", "\\u007f")


def _num(v: float) -> str:
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"cannot write {v} to TOML")
    if v == 0 or 1e-3 <= abs(v) < 1e6:
        return repr(v)
    for digits in range(17):  # the shortest scientific form that reads back exactly
        text = f"{v:.{digits}e}"
        if float(text) == v:
            return text
    return repr(v)
