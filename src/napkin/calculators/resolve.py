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
from napkin.formulas import flops
from napkin.hardware import COMPUTE_FALLBACK, Accelerator
from napkin.model import ModelSpec
from napkin.request import basis_of
from napkin.units import format as fmt

ATTENTION_WARN = 0.05  # warn when 6N leaves out an attention term this large
# Above this, an "MFU" is more likely a hardware activity counter than model FLOPs over peak: the
# highest sustained MFU a large dense run has published is MegaScale's 55.2% (175B on 12,288 GPUs,
# Jiang et al. 2024, NSDI), PaLM's 46.2% (Chowdhery et al. 2022), Llama 3 405B's 38-43%.
MFU_COUNTER_ABOVE = 0.75


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



def warn_if_stale_price(report: Report, entry: Any, what: str) -> None:
    """Warn when a catalog price that decides the answer is older than catalog.STALE_AFTER_DAYS.

    ``entry`` is any dated price (a GpuHourPrice, an offer); ``what`` names the part ("the H100 SXM").
    """
    warn_if_stale_prices(report, [(entry, what)])


def warn_if_stale_prices(report: Report, entries: list[tuple[Any, str]]) -> None:
    """One warning for every catalog price in ``entries`` older than catalog.STALE_AFTER_DAYS (none if none is).

    Trap: a price is a date, not a constant: GPU-hour list prices moved 20-40% in a year, so a
    ranking or a cost read from an old price can be wrong by more than the gaps it shows.
    """
    old: list[str] = list(getattr(report, "_stale_prices", []))  # one warning for all of a report's old prices
    for entry, what in entries:
        age = catalog.price_age_days(entry.date)
        if age > catalog.STALE_AFTER_DAYS:
            value = getattr(entry, "usd_per_gpu_hour", None)
            shown = f"{fmt(value, 'usd_per_hour')}, " if value is not None else ""
            if f"{what} ({shown}{entry.date}, {age} days)" not in old:
                old.append(f"{what} ({shown}{entry.date}, {age} days)")
    if not old:
        return
    report._stale_prices = old  # type: ignore[attr-defined]
    report.warnings = [w for w in report.warnings if w.code != "stale-price"]
    whose = f"the catalog price of {old[0]} is" if len(old) == 1 else f"the catalog prices of {', '.join(old)} are"
    report.warn("stale-price", f"{whose} older than {catalog.STALE_AFTER_DAYS} days: GPU-hour prices move 20-40% "
                               "in a year; check today's rate" + ("s" if len(old) > 1 else "") + " and give --price")


def resolve_flops_per_token(r: Report, m: ModelSpec | None, n: float, convention: str,
                            seq_len: float | None) -> tuple[float, float]:
    """(flops_per_token, attention part) under the stated convention; recorded in the report."""
    r.set("flops_convention", convention)
    attn = 0.0
    if convention != "6N":
        if m is None:
            raise InputError("flops_convention", convention, "needs the model's layers and attention width",
                             "give --model NAME, or use --flops-convention 6N")
        if seq_len is None:
            raise InputError("seq_len", "nothing", f"is required with --flops-convention {convention}",
                             "give --seq-len 8192")
        factor = 6 if convention == "causal" else 12
        d_attn = m.d_attn  # MLA: the mean of its query-key and value widths
        value = flops.attention_flops_per_token(m.n_layers, d_attn=d_attn, seq_len=seq_len, convention=convention,
                                                **m.window())
        if m.window_caps(seq_len):  # sliding-window layers attend over their window, not the whole sequence
            t_w = "2W − W²/T" if convention == "causal" else "W"
            attn = r.step("attention_flops_per_token", f"{factor} · d_attn · ((L − L_w) · T + L_w · ({t_w}))  "
                          f"({convention}; L_w layers see a window of W)", value=value, unit="flops", L=m.n_layers,
                          L_w=m.n_sliding_layers, W=(m.sliding_window, "count"), d_attn=d_attn, T=(seq_len, "count"),
                          cites=flops.attention_flops_per_token)
        else:
            attn = r.step("attention_flops_per_token", f"{factor} · L · d_attn · T  ({convention})", value=value,
                          unit="flops", L=m.n_layers, d_attn=d_attn, T=(seq_len, "count"),
                          cites=flops.attention_flops_per_token)
        fpt = r.step("flops_per_token", "6 · N + attention",
                     value=flops.train_flops_per_token(n, attention_flops=attn), unit="flops", N=(n, "count"),
                     attention=(attn, "flops"), cites=flops.train_flops_per_token)
        return fpt, attn
    fpt = r.step("flops_per_token", "6 · N  (no attention term)", value=flops.train_flops_per_token(n),
                 unit="flops", N=(n, "count"), cites=flops.train_flops_per_token)
    if seq_len is not None:
        if m is None:
            r.note("seq_len is unused under the 6N convention without --model")
        else:
            extra = flops.attention_flops_per_token(m.n_layers, d_attn=m.d_attn, seq_len=seq_len,
                                                    convention="causal", **m.window())
            if extra / fpt >= ATTENTION_WARN:
                r.warn("attention-ignored",
                       f"6N leaves out attention: at seq_len {fmt(seq_len, 'count')} the causal term adds "
                       f"{extra / fpt:.0%} to flops_per_token (use --flops-convention causal)")
    return fpt, attn


def flops_per_token_under(m: ModelSpec | None, n: float, convention: str, seq_len: float | None,
                          field_name: str = "flops_convention") -> float:
    """Training FLOPs per token under ``convention`` (6N, causal, full), without recording it.

    For reading an MFU measured under one convention in another: the same step time gives
    MFU_b = MFU_a · fpt_b / fpt_a.
    """
    if convention == "6N":
        return flops.train_flops_per_token(n)
    if m is None or seq_len is None:
        raise InputError(field_name, convention, "needs the model's layers and attention width and the sequence "
                         "length to convert an MFU", "give --model NAME and --seq-len 8192")
    attn = flops.attention_flops_per_token(m.n_layers, d_attn=m.d_attn, seq_len=seq_len,
                                           convention=convention, **m.window())
    return flops.train_flops_per_token(n, attention_flops=attn)


def convert_mfu(r: Report, mfu: float, *, measured: str, plan: str, m: ModelSpec | None, n: float,
                seq_len: float | None) -> float:
    """An MFU measured under one FLOPs convention, read under the plan's (one convention per run).

    MFU counts model FLOPs per token over peak; the step time is what was measured, so the same
    run's MFU under another count of FLOPs per token scales with that count.
    """
    if measured == plan:
        return mfu
    f_measured = flops_per_token_under(m, n, measured, seq_len, "mfu_convention")
    f_plan = flops_per_token_under(m, n, plan, seq_len, "mfu_convention")
    out = r.step("mfu_converted", f"mfu ({measured}) · flops_per_token ({plan}) / flops_per_token ({measured})",
                 value=mfu * f_plan / f_measured, unit="fraction", result=False, mfu=(mfu, "fraction"),
                 **{f"flops_per_token_{plan}": (f_plan, "flops"), f"flops_per_token_{measured}": (f_measured, "flops")},
                 note="one convention per run: the MFU measured under one count of FLOPs, read under the plan's")
    r.warn("mfu-convention", f"--mfu {fmt(mfu, 'fraction')} was measured under the {measured} convention and this "
                             f"plan counts {plan}: read as {fmt(out, 'fraction')} under {plan}")
    return out


def warn_if_activity_counter(r: Report, mfu: float, precision: str = "bf16") -> None:
    """Warn when an MFU is above what any published large run reached: likely an activity counter.

    Trap: nvidia-smi's "GPU utilization" is the share of time any kernel was running, and
    DCGM's SM activity the share of cycles an SM had a warp; both read 90-100% on a run at
    40% MFU. MFU is model FLOPs over the dense peak, from the step time (`napkin mfu`).
    Source: NVIDIA nvidia-smi manual (utilization.gpu); NVIDIA DCGM field
    DCGM_FI_PROF_SM_ACTIVE; Jiang et al. 2024 (MegaScale, 55.2% MFU, the highest published).
    """
    if MFU_COUNTER_ABOVE < mfu <= 1.0:
        r.warn("mfu-activity-counter",
               f"MFU {fmt(mfu, 'fraction')} ({precision}) is above what any published large run reached (MegaScale: "
               "55.2% on 12,288 GPUs): is it a hardware activity counter (nvidia-smi GPU utilisation, DCGM SM "
               "activity)? Those read near 100% on a run at 40% MFU; MFU is model FLOPs over the dense peak, from "
               "the step time (`napkin mfu`)")


def kv_budget_given_once(req: Any) -> None:
    """--usable (a fraction of all memory) and --kv-free-fraction (of what loading leaves) both size the KV
    cache: refuse the pair rather than silently prefer one."""
    if req.kv_free_fraction is not None and basis_of(req, "usable") == "given":
        raise InputError("usable", req.usable, "is given with --kv-free-fraction, and both size the KV cache",
                         "give one: --usable (a fraction of all memory) or --kv-free-fraction (of what is free)")
