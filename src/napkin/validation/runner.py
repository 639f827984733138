"""`napkin validate`: napkin's predictions against published measurements, with their error bars.

Every point of validation/serving.toml is predicted by `napkin serve` run as its engine ran it
(validation.serving); the error is predicted / measured − 1. The three parameters fitted to
these measurements (catalog/efficiency.toml [fitted]) are fitted leave-sources-out: the sources
are split in two folds, each fold's points are predicted with the parameters fitted on the
other fold's sources only, so every error reported here is out of sample. `--fit` re-fits them
(a few minutes) and prints the tables to store.
"""

from __future__ import annotations

import math
import statistics
from typing import Annotated, Any

import msgspec

from napkin.calculators import Calculator
from napkin import catalog, units
from napkin.catalog import efficiency as eff
from napkin.derivation import Report
from napkin.request import field

FOLDS = ("a", "b")
EXPLAIN_ABOVE = 0.20  # a point missed by more than this carries a one-line explanation in the dataset
MAX_BAR = 0.30  # the max error a figure aims at: configurations measured apart by more cannot all be within it


class ValidateRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    group: Annotated[str, field("choice", "which measurements: serving, training or all",
                                choices=("serving", "training", "all"))] = "all"
    fit: Annotated[bool, field("bool", "re-fit the fitted parameters leave-sources-out (minutes) and print the "
                                       "tables to store in catalog/efficiency.toml (the command line only: "
                                       "a web request may not start minutes of work)", cli_only=True)] = False


def fold_of(source: str, sources: list[str]) -> str:
    """Sources sorted by name, alternately in fold a and fold b."""
    return FOLDS[sorted(sources).index(source) % 2]


def _params(fold: str | None) -> eff.Fitted:
    """The parameters fitted without the fold's sources (the stored all-source fit when there are none)."""
    f = eff.fitted()
    if fold is None or fold not in f.folds:
        return f
    return msgspec.structs.replace(f, **{k: v for k, v in f.folds[fold].items() if k in f.values()})


def evaluate_serving(params_by_fold: dict[str, eff.Fitted] | None = None) -> tuple[list[dict], list[dict]]:
    """(predicted rows, not-modelled rows) for the serving points, each fold with its own parameters."""
    from napkin.validation import serving as sv

    pts = sv.points()
    sources = sorted({p["source"] for p in pts})
    rows, skipped = [], []
    for p in pts:
        fold = fold_of(p["source"], sources)
        params = (params_by_fold or {}).get(fold) or _params(fold)
        with eff.fitted_as(params):
            out = sv.predict(p)
        if out.value is None:
            skipped.append({"id": p["id"], "metric": p["metric"], "reason": out.reason})
            continue
        err = out.value / p["value"] - 1.0
        rows.append({"id": p["id"], "source": p["source"], "fold": fold, "gpu": p["gpu"],
                     "replica_gpus": p["tp"] * (p.get("pp") or 1),  # one replica's, as serve cites (not the system's)
                     "family": eff.family(p["gpu"]).key, "engine": p["engine"], "metric": p["metric"],
                     "group": sv.GROUPS[p["metric"]], "measured": p["value"], "predicted": out.value, "error": err,
                     "batch": out.batch, "moe": catalog.model(p["model_key"]).is_moe,
                     "explanation": p.get("explanation", "")})
    return rows, skipped


ONE_GPU, SEVERAL_GPUS = "one GPU", "several GPUs"
# a replica's size (TP x PP, not the system's GPUs: MLPerf's 8-GPU systems of one-GPU replicas are one GPU)
SCALES = ((ONE_GPU, lambda n: n == 1), (SEVERAL_GPUS, lambda n: n > 1))


def summary(rows: list[dict]) -> list[dict]:
    """Median and max |error| of the serving points per figure, overall, per accelerator family (and within it
    on one GPU and on several: a tensor-parallel group adds its collectives and the errors differ), and per
    engine."""
    return summary_of(rows, ("throughput", "tpot", "ttft", "latency"), scales=True)


def summary_of(rows: list[dict], groups: tuple[str, ...], *, scales: bool = False) -> list[dict]:
    """Median and max |error| per group, overall, per accelerator family and per engine (or framework); with
    ``scales``, also on one GPU and on several, overall and per family."""
    out = []
    for group in groups:
        mine = [r for r in rows if r["group"] == group]
        if not mine:
            continue
        cuts = [("all", mine)]
        families = sorted({r["family"] for r in mine})
        if scales:
            cuts += [(f"all, {name}", [r for r in mine if on(r["replica_gpus"])]) for name, on in SCALES]
            cuts += [(f"all, {label} models", [r for r in mine if r.get("moe") is moe]) for label, moe in
                     (("dense", False), ("MoE", True))]
        for f in families:
            cuts.append((f"family {f}", [r for r in mine if r["family"] == f]))
            if scales:
                cuts += [(f"family {f}, {name}", [r for r in mine if r["family"] == f and on(r["replica_gpus"])])
                         for name, on in SCALES]
        cuts = [(label, sel) for label, sel in cuts if sel]
        cuts += [(f"engine {e}", [r for r in mine if r["engine"] == e]) for e in sorted({r["engine"] for r in mine})]
        for label, sel in cuts:
            errs = [abs(r["error"]) for r in sel]
            out.append({"group": group, "subset": label, "n": len(sel), "median_error": statistics.median(errs),
                        "max_error": max(errs)})
    return out


KINDS = (("dense", False), ("moe", True))  # an answer cites the points of its own kind of model


def baseline_table(rows: list[dict]) -> dict:
    """What `serve` cites as its error bar: {group: {key: {median, max, n}}}, the key 'all', a family ('h100')
    or either on one GPU or on several ('all, one GPU', 'h100, several GPUs'), over every point, and the same
    keys prefixed 'dense: ' or 'moe: ' over the dense or the mixture-of-experts models' points alone."""
    out: dict[str, dict] = {}
    for prefix, sel in [("", rows)] + [(f"{k}: ", [r for r in rows if r["moe"] is moe]) for k, moe in KINDS]:
        for s in summary(sel):
            sub = s["subset"]
            key = sub if sub.startswith("all") else sub.split(" ", 1)[1] if sub.startswith("family") else None
            if key is not None:
                out.setdefault(s["group"], {})[prefix + key] = {"median": round(s["median_error"], 4),
                                                                "max": round(s["max_error"], 4), "n": s["n"]}
    return out


def run_validate(req: ValidateRequest) -> Report:
    r = Report("Validate: predictions against published measurements", command="validate")
    if req.group in ("serving", "all"):
        fold_params = None
        if req.fit:
            from napkin.validation.fit import fit_folds

            fold_params = fit_folds(r)
        rows, skipped = evaluate_serving(fold_params)
        _serving_report(r, rows, skipped)
    if req.group in ("training", "all"):
        from napkin.validation.training_runner import training_section

        training_section(r)
    return r


def _serving_report(r: Report, rows: list[dict], skipped: list[dict]) -> None:
    r.set("serving_points", len(rows), "count")
    r.set("serving_not_modelled", len(skipped), "count")
    for s in summary(rows):
        if s["subset"] == "all":
            r.set(f"serving_{s['group']}_median_error", s["median_error"], "fraction")
            r.set(f"serving_{s['group']}_max_error", s["max_error"], "fraction")
            r.set(f"serving_{s['group']}_points", s["n"], "count")
    r.set("serving_summary", summary(rows))
    r.set("serving", sorted(rows, key=lambda x: (x["group"], x["id"])))
    r.set("serving_skipped", skipped)
    _replicates(r, rows)
    bad = [x["id"] for x in rows if abs(x["error"]) > EXPLAIN_ABOVE and not x["explanation"]]
    if bad:
        r.warn("unexplained", f"{len(bad)} serving points are missed by more than {EXPLAIN_ABOVE:.0%} without an "
                              f"explanation in the dataset: {', '.join(bad[:5])}" + (" ..." if len(bad) > 5 else ""))
    f = eff.fitted()
    r.note(f"every serving error is out of sample: the sources are split into two folds and each fold is predicted "
           f"with the parameters fitted on the other ({f.method or 'leave-sources-out'})")
    r.note("error = predicted / measured − 1; a serving point is predicted by `napkin serve` run with its engine's "
           "documented scheduler, token budget, concurrency cap and memory fraction (validation/engines.toml)")


_UNDER_ONE_FIT: dict[tuple, float] = {}  # (point, stored fit) -> its prediction, for the replicated configurations


def _replicates(r: Report, rows: list[dict]) -> None:
    """The configurations published more than once, and the floor their disagreement puts under each max error."""
    from napkin.validation import replicates as rp
    from napkin.validation import serving as sv

    fit = tuple(eff.fitted().values().values())

    def predict(p: dict) -> float:  # every point of a configuration under the one stored fit
        key = (p["id"], *fit)
        if key not in _UNDER_ONE_FIT:  # its value alone: the folds' runs keep the run cache
            if len(_UNDER_ONE_FIT) > 8192:
                _UNDER_ONE_FIT.clear()
            _UNDER_ONE_FIT[key] = float(sv.predict(p, keep=False).value)  # type: ignore[arg-type]
        return _UNDER_ONE_FIT[key]

    reps = rp.replicates(rows, sv.points(), predict)
    r.set("serving_replicated_configurations", len(reps), "count")
    for group, cell in rp.floors(reps, bar=MAX_BAR).items():
        r.set(f"serving_{group}_max_error_floor", cell["floor"], "fraction")
        if cell["over_bar"]:
            r.note(f"{cell['over_bar']} of the {cell['configurations']} configurations whose {group} several sources "
                   f"measured disagree by more than their engines' documented settings explain: no answer that "
                   f"tells their runs apart only by those settings, as napkin does, is within {MAX_BAR:.0%} of every "
                   f"measurement, so on this data the max {group} error has a floor of "
                   f"{units.format(cell['floor'], 'fraction')} (serving_{group}_max_error_floor)")
    r.set("serving_replicates", [{k: v for k, v in x.items() if k != "ids"} for x in reps])


def _charts(report: Any) -> dict[str, dict]:
    from napkin.charts.validate import validate_chart

    return {"validate": validate_chart(report)}


def finite(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x)


VALIDATE = Calculator(
    "validate", ValidateRequest, run_validate, "Validate",
    "napkin's serving and training predictions against published measurements (MLPerf, TensorRT-LLM, vLLM, "
    "SGLang; Megatron-LM, MosaicML, torchtitan), with the median and max error per group, out of sample.",
    establishes="how far each kind of prediction has been from published measurements of the same configuration",
    needs_measuring="your own runs: a point you measure can be added to validation/serving.toml with its source",
    charts=_charts,
)
