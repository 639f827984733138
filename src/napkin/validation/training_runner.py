"""The training section of `napkin validate`: `napkin plan train`'s model against published runs.

Every point of validation/training.toml is predicted from its stated configuration
(validation.training.predict); the two parameters no publication gives are fitted on every
source but the point's own (leave-one-source-out), so each error is out of sample.
"""

from __future__ import annotations

import functools

from napkin.catalog import efficiency as eff
from napkin.derivation import Report

TIMING = ("iteration_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s_per_gpu")
GROUP = {**{m: "step time" for m in TIMING}, "layer_fwd_bwd_s": "layer time",
         "peak_memory_bytes_per_gpu": "memory"}


def training_rows() -> list[dict]:
    """Each training point's out-of-sample prediction (a copy: the leave-sources-out fit runs once a process)."""
    return [dict(row) for row in _training_rows()]


@functools.cache
def _training_rows() -> tuple[dict, ...]:
    from napkin.validation import training as tr

    by_id = {p["id"]: p for p in tr.points()}
    rows = []
    for row in tr.leave_sources_out():
        p = by_id[row["id"]]
        rows.append({"id": row["id"], "source": row["source"], "fold": "others", "gpu": p["gpu"],
                     "family": eff.family(p["gpu"]).key, "engine": p.get("framework", ""), "metric": row["metric"],
                     "group": GROUP.get(row["metric"], row["metric"]), "measured": row["measured"],
                     "predicted": row["predicted"], "error": row["error"], "explanation": p.get("explanation", "")})
    return tuple(rows)


def training_section(r: Report) -> None:
    from napkin.validation.runner import summary_of

    rows = training_rows()
    r.set("training_points", len(rows), "count")
    for s in summary_of(rows, ("step time", "layer time", "memory")):
        if s["subset"] == "all":
            key = s["group"].replace(" ", "_")
            r.set(f"training_{key}_median_error", s["median_error"], "fraction")
            r.set(f"training_{key}_max_error", s["max_error"], "fraction")
            r.set(f"training_{key}_points", s["n"], "count")
    r.set("training_summary", summary_of(rows, ("step time", "layer time", "memory")))
    r.set("training", sorted(rows, key=lambda x: (x["group"], x["id"])))
    r.note("every training error is out of sample: the planner's two fitted parameters (the share of the best GEMM "
           "and of the published attention kernel a training step reaches) are fitted on every other source")
