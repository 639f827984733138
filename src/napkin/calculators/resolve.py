"""The shared resolution layer: each input a calculator needs, from where it comes, with its record.

An input is *given* (the user typed it), *measured* (a calibration file from `napkin measure`),
read from a *catalog* (a datasheet peak, a published parameter count, a dated price) or a
*default* assumption (catalog/assumptions.toml, each with its source and the measurement that
replaces it). Whatever the origin, the calculator gets a plain float and the Report gets an
assumption line saying which, so a reader can tell an estimate from a measurement. Trap
warnings that belong to an input (a sparse peak typed by hand) are raised here, once.

Every calculator, planner and the ledger resolve through these functions; none reaches into
another calculator for them.
"""

from __future__ import annotations

from typing import Any

from napkin import catalog
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.hardware import COMPUTE_FALLBACK, Accelerator
from napkin.model import ModelSpec
from napkin.request import basis_of
from napkin.units import format as fmt


def assume_default(report: Report, name: str, key: str | None = None, *, note: str | None = None,
                   unit: str | None = None, basis: str = "assumed") -> Any:
    """Record the default assumption ``key`` (catalog/assumptions.toml) under ``name`` and return its value.

    The assumption line carries the entry's note (or ``note``), and its source and the
    measurement that replaces it travel with it for ``--explain --cite``.
    """
    d = catalog.default(key or name)
    return report.assume(name, d.value, d.note if note is None else note, unit=unit or _unit(d.unit),
                         basis=basis, source=d.source, replaced_by=d.replaced_by)


def given_or_default(report: Report, name: str, given: Any, key: str | None = None, *,
                     given_note: str = "given", unit: str | None = None) -> Any:
    """``given`` recorded as given, or the default assumption ``key`` when it is None."""
    if given is None:
        return assume_default(report, name, key, unit=unit)
    d = catalog.default(key or name)
    return report.assume(name, given, given_note, unit=unit or _unit(d.unit), basis="given")


def assume_field(report: Report, name: str, req: Any, key: str, *, field: str | None = None,
                 note: str | None = None, unit: str | None = None, basis: str | None = None) -> Any:
    """Record a request field whose default is the default assumption ``key``, with the entry's note
    (or ``note``).

    The basis is "assumed" while the field holds its default and "given" once the user
    changes it (``basis`` overrides that); the entry's source and the measurement that
    replaces it travel with the line only while the value is the default's.
    """
    d = catalog.default(key)
    value = getattr(req, field or name)
    default = basis_of(req, field or name) == "assumed"
    return report.assume(name, value, d.note if note is None else note, unit=unit or _unit(d.unit),
                         basis=basis or ("assumed" if default else "given"),
                         source=d.source if default else "", replaced_by=d.replaced_by if default else "")


def _unit(kind: str) -> str | None:
    return None if kind == "name" else kind


def resolve_params(report: Report, model: ModelSpec | None, params: float | None, *, active: bool = False) -> float:
    """N from --params or the model's computed count; recorded in the report."""
    if params is not None:
        report.set("params", params, "count")
        if model is not None and abs(params - model.params) / model.params > 0.01:
            report.warn("params-mismatch", f"--params {params:.4g} differs from {model.name}'s computed {model.params:.4g}; using --params")
        elif model is not None:
            report.note(f"--params {fmt(params, 'count')} used in place of {model.name}'s computed "
                        f"{fmt(model.params, 'count')}; the rest of the architecture is the model's")
        return params
    if model is None:
        raise InputError("model", "nothing", "is required", "give --model NAME|PATH or --params N")
    report.set("params", model.params, "count")
    if model.is_moe:
        report.set("active_params", model.active_params, "count")
    return model.active_params if active else model.params


def peak_of(report: Report, gpu: Accelerator | None, precision: str, given: float | None,
            field_name: str = "peak") -> float:
    """Dense peak FLOP/s: given by hand (checked against sparse figures) or from the catalog."""
    if given is not None:
        warn_if_sparse(report, given, precision)
        report.assume("dense_flops_per_s", given, "given by hand", unit="flops_per_s", basis="given")
        return given
    if gpu is None:
        raise InputError("gpu", "nothing", "is required", f"give --gpu NAME or --{field_name} FLOP/S")
    value = gpu.peak(precision)
    report.assume("dense_flops_per_s", value, f"{gpu.name} dense {precision} peak ({gpu.source})",
                  unit="flops_per_s", basis="catalog")
    return value


def warn_if_sparse(report: Report, peak: float, precision: str) -> None:
    """Warn when a hand-typed peak equals some part's sparse (2:4) datasheet figure."""
    for g in catalog.gpus().values():
        sparse = g.sparse_peak(precision) if g.supports(precision) else None
        if sparse and abs(peak - sparse) / sparse < 0.01:
            report.warn("sparse-peak",
                        f"the peak given ({fmt(peak, 'flops_per_s')}) equals the {g.name}'s {precision} figure "
                        f"with 2:4 sparsity; its dense peak is {fmt(g.peak(precision), 'flops_per_s')}, and a "
                        f"dense run never reaches the sparse one (using it halves the predicted time and the reported MFU)")
            return


def compute_precision(gpu: Accelerator, precision: str) -> str | None:
    """The precision the matmuls of ``precision`` weights run at on ``gpu``: their own when the part has a
    dense peak there, else the next in the dequantisation chain (int4 -> bf16, fp4 -> fp8 -> bf16, ...);
    None when the chain loops without finding a peak. Callers word the error for their command."""
    p, seen = precision, set()
    while not gpu.supports(p):
        seen.add(p)
        nxt = COMPUTE_FALLBACK.get(p)
        if nxt is None or nxt in seen:
            return None
        p = nxt
    return p


def model_or_none(name: str | None, field_name: str = "model") -> ModelSpec | None:
    return catalog.model(name, field_name) if name else None


def gpu_or_none(name: str | None, field_name: str = "gpu") -> Accelerator | None:
    return catalog.gpu(name, field_name) if name else None


