"""Achieved efficiencies by accelerator family (catalog/efficiency.toml), typed.

``family(gpu_key)`` gives the measured fractions of a part's datasheet peaks that the operator
model runs at (a part without published measurements gets ``[family.unmeasured]``, flagged);
``shape()`` the curve parameters; ``runtime()`` what an engine holds outside weights and KV;
``fitted()`` the parameters fitted to published serving runs, with the out-of-sample error that
comes with them.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path

import msgspec

from napkin.errors import NapkinError

FILE = Path(__file__).with_name("efficiency.toml")


class Family(msgspec.Struct, kw_only=True, frozen=True):
    key: str
    gpus: list[str]
    gemm: dict[str, float]
    gemm_source: str
    bandwidth: float
    bandwidth_source: str
    attention: float
    attention_source: str
    allreduce_bus: float
    allreduce_source: str
    allreduce_latency_s: float
    allreduce_latency_source: str
    allreduce_curve_busbw: list[float] = []  # bus bandwidth at 2^15 .. 2^34 bytes (formulas.comm.CURVE_LOG2_BYTES)
    allreduce_curve_source: str = ""
    allreduce_curve_label: str = ""  # the sweep in a few words, for notes
    note: str = ""
    # {gpu key: {field: value}}: a part of the family with its own published measurement (an
    # A100 PCIe card held to 300 W reaches less of the same datasheet peak than the SXM module)
    parts: dict[str, dict] = {}
    own: list[str] = []  # the fields a part's own measurement replaced (set by ``family``)

    def __post_init__(self) -> None:
        from napkin.formulas.comm import CURVE_LOG2_BYTES

        if self.allreduce_curve_busbw and len(self.allreduce_curve_busbw) != len(CURVE_LOG2_BYTES):
            raise ValueError(f"allreduce_curve_busbw has {len(self.allreduce_curve_busbw)} values, not one per size "
                             f"2^{CURVE_LOG2_BYTES[0]} .. 2^{CURVE_LOG2_BYTES[-1]} bytes")
        for gpu, own in self.parts.items():
            if gpu not in self.gpus:
                raise ValueError(f"parts.{gpu}: not one of this family's gpus {self.gpus}")
            odd = sorted(set(own) - (set(self.__struct_fields__) - {"key", "gpus", "parts", "own"}))
            if odd:
                raise ValueError(f"parts.{gpu}: unknown field(s) {', '.join(odd)}")

    @property
    def measured(self) -> bool:
        return self.key != "unmeasured"

    def on(self, field: str, part_name: str) -> str:
        """Where a figure was measured, for the assumptions: the part itself or its family."""
        return f"the {part_name}" if field in self.own else f"the {self.key} family"

    def gemm_at(self, precision: str) -> float:
        """The GEMM fraction at a compute precision (fp16/bf16 stand for each other; else the unmeasured value)."""
        for p in (precision, {"fp16": "bf16", "bf16": "fp16"}.get(precision, precision)):
            if p in self.gemm:
                return self.gemm[p]
        return families()["unmeasured"].gemm.get(precision, 0.70)


class Shape(msgspec.Struct, kw_only=True, frozen=True):
    gemm_shape_factor: float
    gemm_shape_factor_source: str
    gemm_half_tokens: float
    gemm_half_tokens_source: str
    elementwise_passes: float
    elementwise_passes_source: str


class Runtime(msgspec.Struct, kw_only=True, frozen=True):
    """What a serving engine holds outside weights and KV (activations, collective buffers, the CUDA
    context), for an engine whose KV budget is a fraction of the memory left free after loading."""

    activation_factor: list[float]  # at TP 1, 2, 4, 8
    activation_factor_moe: list[float]
    activation_floor_bytes: float
    collective_bytes: list[float]
    context_bytes: float
    source: str

    @staticmethod
    def _at(table: list[float], tp: int) -> float:
        """The figure listed at the largest degree of 1, 2, 4, 8 not above ``tp``."""
        return table[min(max(int(tp), 1).bit_length() - 1, len(table) - 1)]

    def factor(self, tp: int, *, moe: bool) -> float:
        return self._at(self.activation_factor_moe if moe else self.activation_factor, tp)

    def collective(self, tp: int) -> float:
        return self._at(self.collective_bytes, tp)


class Pcie(msgspec.Struct, kw_only=True, frozen=True):
    """The fixed time of one step of a tensor-parallel ring over PCIe, with its source."""

    hop_latency_s: float
    hop_latency_source: str


class Fitted(msgspec.Struct, kw_only=True, frozen=True):
    """Parameters fitted to published serving runs (``napkin validate --fit``), with their folds.

    ``folds`` maps a fold name to its sources and the parameters fitted *without* them, so each
    point is predicted out of sample; the top-level values are fitted on every source.
    """

    per_layer_s: float
    per_layer_decode_s: float
    per_step_s: float
    # the fraction of the dense GEMMs' best efficiency the routed experts' grouped GEMMs reach (1: as a dense GEMM)
    expert_gemm_efficiency: float = 1.0
    # the fraction of PCIe's one-direction rate a TP ring reaches at decode-sized messages, where the ring runs over
    # PCIe (cards with no NVLink; bridged pairs beyond their pair); 0.65 (a stored table without it): the rate 8 L40S
    # copy at around a PCIe ring (flashinfer pull request #4870)
    pcie_allreduce_bus: float = 0.65
    method: str = ""
    folds: dict[str, dict] = {}

    def values(self) -> dict[str, float]:
        """{parameter: value}: every fitted figure (not the method's words, not the folds), in field order."""
        return {k: getattr(self, k) for k in self.__struct_fields__ if k not in ("method", "folds")}


@functools.cache
def _table() -> dict:
    from napkin.catalog.compiled import load_toml

    return load_toml(FILE)


@functools.cache
def families() -> dict[str, Family]:
    out = {}
    for key, entry in _table()["family"].items():
        try:
            out[key] = msgspec.convert({**entry, "key": key}, Family)
        except msgspec.ValidationError as exc:
            raise NapkinError(f"catalog efficiency.toml [family.{key}]: {exc}") from None
    return out


@functools.cache
def _by_gpu() -> dict[str, str]:
    return {g: key for key, fam in families().items() for g in fam.gpus}


@functools.cache
def family(gpu_key: str) -> Family:
    """The measured family of an accelerator (gpus.toml key), or ``unmeasured``; a part the family
    lists under ``parts`` gets its own figures in place of the family's."""
    fam = families()[_by_gpu().get(gpu_key, "unmeasured")]
    own = fam.parts.get(gpu_key)
    if not own:
        return fam
    try:
        return msgspec.convert({**msgspec.structs.asdict(fam), **own, "parts": {}, "own": sorted(own)}, Family)
    except msgspec.ValidationError as exc:
        raise NapkinError(f"catalog efficiency.toml [family.{fam.key}.parts.\"{gpu_key}\"]: {exc}") from None


@functools.cache
def shape() -> Shape:
    return msgspec.convert(_table()["model"], Shape)


@functools.cache
def runtime() -> Runtime:
    return msgspec.convert(_table()["runtime"], Runtime)


@functools.cache
def pcie() -> Pcie:
    return msgspec.convert(_table()["pcie"], Pcie)


BASELINE = Path(__file__).parents[1] / "validation" / "baseline.json"


@functools.cache
def error_bars() -> dict:
    """{figure: {family or 'all': {median, max, n}}}: the out-of-sample errors of the last `napkin validate`
    (validation/baseline.json), which every serving answer cites; {} if none is stored."""
    import json

    try:
        return json.loads(BASELINE.read_text())
    except FileNotFoundError:
        return {}


@functools.cache
def _stored() -> Fitted:
    return msgspec.convert(_table()["fitted"], Fitted)


_override: list[Fitted] = []


def fitted() -> Fitted:
    """The fitted parameters (inside ``fitted_as``, the ones being tried)."""
    return _override[-1] if _override else _stored()


@contextlib.contextmanager
def fitted_as(params: Fitted) -> Iterator[None]:
    """Run with other fitted parameters: how `napkin validate` predicts a fold out of sample."""
    _override.append(params)
    try:
        yield
    finally:
        _override.pop()
