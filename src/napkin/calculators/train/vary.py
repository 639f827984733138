"""``--vary``: the answer of `napkin train` at each value of one or more inputs (a grid when several).

A request's ``vary`` holds ``NAME=V1,V2,...`` specs (``overhead.NAME`` for one overhead). The
base plan is run first, as it would be alone; then every combination of the varied values,
each as its own train request. A deadline no cluster meets is a row marked infeasible, not
an error for the sweep. The rows carry base units; the text table keeps the values as typed.

The grid is evaluated as arrays through the train formulas (:mod:`~napkin.calculators.train.grid`)
whenever that gives the same rows as one plan per combination (:func:`plan_rows`, the reference),
which it falls back to otherwise. The number of combinations is bounded by the memory their rows
need (:func:`check_size`), not by a count.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from napkin.errors import InputError
from napkin.plan_files import ALTERNATIVES

# Fewer combinations than this are one plan each unless numpy is loaded already: at about 13,000 plans a
# second, importing numpy (about 0.1 s) for a smaller grid would cost more than it saves.
ARRAYS_FROM = 1000
# A row held as arrays (a dozen float64 columns and their temporaries) and printed: as JSON its dict,
# its plain copy and its text peak at 3.4 kB for a row of ten figures (measured with tracemalloc).
BYTES_PER_ROW = 4096 + 256
ROW_KEYS = ("goodput", "tokens_per_gpu_s", "gpu_hours", "gpus", "gpus_needed", "wall_s", "price", "marginal_usd",
            "loaded_usd", "usd_per_million_tokens")


def specs_of(vary: list[str]) -> list[str]:
    """The NAME=V1,V2,... specs of a request's ``vary`` as typed.

    A list field takes comma-separated items, so ``mfu=0.3,0.4`` arrives as ``mfu=0.3``, ``0.4``: a
    piece without ``=`` is a value of the spec before it (one that leads is the start of the next).
    """
    out: list[str] = []
    lead = ""
    for piece in vary:
        if "=" in piece:
            out.append(lead + piece)
            lead = ""
        elif out:
            out[-1] += "," + piece
        else:
            lead += piece + ","
    if lead:
        out.append(lead.rstrip(","))
    return out


def parse_vary(specs: list[str] | tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """``mfu=0.3,0.4,0.5`` -> [("mfu", ["0.3", "0.4", "0.5"])]; names are checked against the request."""
    from napkin.calculators.train.request import TrainRequest
    from napkin.errors import closest
    from napkin.request import fields

    names = [f.name for f in fields(TrainRequest) if f.name != "vary"]
    out = []
    for spec in specs:
        if "=" not in spec:
            raise InputError("vary", spec, "must be NAME=V1,V2,...", "e.g. --vary mfu=0.3,0.4,0.5")
        name, values = spec.split("=", 1)
        name = name.strip().replace("-", "_")
        base = name.split(".", 1)[0]
        if base not in names or (base == "overhead") != ("." in name):
            near = closest(base, names)
            raise InputError("vary", spec, f"does not name an input of train ({name!r})",
                             f"did you mean {', '.join(near)}?" if near else "use a field of `napkin train --help`")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not vals:
            raise InputError("vary", spec, "has no values", "e.g. --vary mfu=0.3,0.4,0.5")
        if name in [n for n, _ in out]:
            raise InputError("vary", spec, f"has {name} twice",
                             f"give all the values of {name} in one --vary {name}=V1,V2,...")
        out.append((name, vals))
    return out


def vary_value(name: str, text: str) -> Any:
    """A varied value in base units, as the JSON rows carry it (``30%`` -> 0.3, ``3/h`` -> 3.0)."""
    from napkin import units
    from napkin.calculators.train.request import TrainRequest
    from napkin.request import fields, parse_value

    if name.startswith("overhead."):
        return units.parse(text, "number", name)
    if name == "goodput" and text.lower() != "auto":  # a text field: a fraction, or auto
        return units.parse(text, "fraction", name)
    return parse_value(next(f for f in fields(TrainRequest) if f.name == name), text)


def base_request(req: Any) -> Any:
    """With --goodput auto the base run needs the cluster size; a vary of gpus or deadline gives it. A vary of
    models (or of sizes) gives the base run its first, in place of a --params (or --model) that the rows drop.

    The base run (title, warnings, assumptions) then takes the varied value most likely to be
    feasible: the fewest GPUs, or the longest deadline. Other requests are returned unchanged.
    """
    if req.vary:  # --vary model=a,b (or params=): the base is the first row's model, as every row drops the other
        axes = dict(parse_vary(specs_of(req.vary)))
        for name, alt in (("model", "params"), ("params", "model")):
            if name in axes:
                pin = {name: vary_value(name, axes[name][0])} | ({} if alt in axes else {alt: None})
                req = msgspec.structs.replace(req, **pin)
    if not req.vary or str(req.goodput or "").strip().lower() != "auto":
        return req
    if req.gpus is not None or req.deadline is not None:
        return req
    axes = dict(parse_vary(specs_of(req.vary)))
    for name, pick in (("gpus", min), ("deadline", max)):
        if name in axes:
            return msgspec.structs.replace(req, **{name: pick(vary_value(name, v) for v in axes[name])})
    return req


def available_memory_bytes() -> float:
    """Memory this process may still take: MemAvailable (Linux), within a cgroup's limit; 4 GiB when unknown."""
    free = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    free = float(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        with open("/sys/fs/cgroup/memory.current") as fh:
            used = float(fh.read().strip())
        if limit != "max":
            free = min(free if free is not None else float("inf"), float(limit) - used)
    except (OSError, ValueError):
        pass
    return free if free is not None else 4.0 * 2**30


def combination_raw(base_raw: dict[str, Any], axes: list[tuple[str, list[str]]], combo: tuple[str, ...]) -> dict:
    """The raw request of one combination: the base's values with the varied ones as typed.

    A varied input replaces the base's alternatives to it (a varied --gpus the base's --deadline)
    unless those vary too."""
    varied = [n for n, _ in axes]
    raw = {k: v for k, v in base_raw.items() if k != "vary"}
    raw["overhead"] = dict(raw.get("overhead") or {})
    for (name, _), value in zip(axes, combo):
        if name.startswith("overhead."):
            raw["overhead"][name.split(".", 1)[1]] = value
        else:
            raw[name] = value
            for alt in ALTERNATIVES.get(name, ()):
                if alt not in varied:
                    raw.pop(alt, None)
    return raw


def check_size(axes: list[tuple[str, list[str]]]) -> int:
    """The number of combinations, or an InputError when their rows would not fit in half the free memory."""
    from napkin.units import format as fmt

    n = 1
    for _, vals in axes:
        n *= len(vals)
    need, free = n * BYTES_PER_ROW, available_memory_bytes()
    if need > free / 2:
        raise InputError("vary", f"{n:,} combinations", f"needs about {fmt(need, 'bytes')} of memory for its rows, "
                         f"more than half the {fmt(free, 'bytes')} free", "vary fewer values at once")
    return n


def vary_rows(base_raw: dict[str, Any], axes: list[tuple[str, list[str]]]) -> Any:
    """The rows of every combination of the varied values, as arrays where the formulas allow it.

    A sequence of row dicts made when read (:class:`~napkin.calculators.train.grid.GridRows`), or the
    list :func:`plan_rows` gives; the same rows either way.
    """
    import sys

    if check_size(axes) >= ARRAYS_FROM or "numpy" in sys.modules:
        from napkin.calculators.train.grid import grid_rows

        rows = grid_rows(base_raw, axes)
        if rows is not None:
            return rows
    return plan_rows(base_raw, axes)


def plan_rows(base_raw: dict[str, Any], axes: list[tuple[str, list[str]]]) -> list[dict]:
    """Run the train calculator for every combination of the varied values: the reference.

    A deadline that cannot be met is a row marked infeasible, not an error for the sweep.
    """
    from napkin.calculators.train.run import run_one
    from napkin.calculators.train.request import TrainRequest
    from napkin.request import parse_request

    rows = []
    for combo in itertools.product(*[vals for _, vals in axes]):
        raw = combination_raw(base_raw, axes, combo)
        row: dict[str, Any] = {name: vary_value(name, value) for (name, _), value in zip(axes, combo)}
        try:
            rep = run_one(parse_request(TrainRequest, raw))
        except InputError as exc:
            if "infeasible" not in exc.problem:
                raise
            row["infeasible"] = str(exc)
            rows.append(row)
            continue
        for k in ROW_KEYS:
            if k in rep.results:
                row[k] = rep[k]
        if str(raw.get("mfu", "")).strip().lower() == "auto":  # planned per row: it follows the cluster size
            row["mfu"] = rep["mfu"]
        rows.append(row)
    return rows


def vary_text(title: str, axes: list[tuple[str, list[str]]], rows: list[dict]) -> str:
    """The sweep as a table: the varied values as typed, then each row's answer."""
    from napkin.units import format as fmt

    names = [n for n, _ in axes]
    cols: list[tuple[str, str, str]] = []
    if "mfu" not in names and len({r["mfu"] for r in rows if "mfu" in r}) > 1:  # mfu auto, planned per row
        cols.append(("mfu", "MFU", "fraction"))
    if len({r["goodput"] for r in rows if "goodput" in r}) > 1:  # goodput auto: it follows the cluster size
        cols.append(("goodput", "goodput", "fraction"))
    cols += [("tokens_per_gpu_s", "tokens/GPU-s", "per_s"), ("gpu_hours", "GPU-hours", "count")]
    if any("gpus_needed" in r for r in rows):
        cols.append(("gpus_needed", "GPUs needed", "count"))
    if any("wall_s" in r for r in rows):
        cols.append(("wall_s", "wall", "seconds"))
    if "price" not in names and ("gpu" in names or len({r["price"] for r in rows if "price" in r}) > 1):
        cols.append(("price", "$/GPU-h", "usd_per_hour"))
    cols += [("marginal_usd", "marginal", "usd"), ("loaded_usd", "loaded", "usd")]
    cols = [c for c in cols if any(c[0] in r for r in rows)]  # a FLOP budget alone has no tokens per GPU-s
    per_million = any("usd_per_million_tokens" in r for r in rows)  # ... and no $/M
    head = names + [c[1] for c in cols] + (["$/M marginal", "$/M loaded"] if per_million else [])
    table = [head]
    for r, labels in zip(rows, itertools.product(*[vals for _, vals in axes])):
        cells = list(labels)  # as typed: 30%, 3/h
        if "infeasible" in r:
            cells += ["infeasible"] + ["-"] * (len(head) - len(names) - 1)
        else:
            cells += [fmt(r[k], kind) if k in r else "-" for k, _, kind in cols]
            if per_million:
                per_m = r["usd_per_million_tokens"]
                cells += [fmt(per_m["marginal"], "usd_per_million"), fmt(per_m["loaded"], "usd_per_million")]
        table.append(cells)
    widths = [max(len(t[i]) for t in table) for i in range(len(head))]
    lines = [f"{title}, as {' and '.join(names)} {'vary' if len(names) > 1 else 'varies'}"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table]
    lines += [f"note: {r['infeasible']}" for r in rows if "infeasible" in r]
    return "\n".join(lines)


def price_per_part(report: Any, req: Any, names: list[str]) -> None:
    """Parts varied: each at its own dated catalog price (the $/GPU-h column), each price's age
    checked; or all at one --price, which a ranking of parts should not be (a warning)."""
    if "gpu" not in names or "price" in names:
        return
    from napkin import catalog
    from napkin.calculators.resolve import warn_if_stale_prices
    from napkin.units import format as fmt

    if req.price is not None:
        report.warn("one-price-for-all", f"--price {fmt(req.price, 'usd_per_hour')} is applied to every part: the "
                                         "parts rent at different prices; drop --price to use each one's catalog "
                                         "price, or vary price with gpu")
        return
    parts = [catalog.gpu(v) for v in dict(parse_vary(specs_of(req.vary)))["gpu"]]
    report.warnings = [w for w in report.warnings if w.code not in ("list-price", "stale-price")]
    report.assumptions = [a for a in report.assumptions if a.name != "price"]
    report.warn("list-price", "no --price: each part at its catalog reference list price (the $/GPU-h column); a "
                              "loaded GPU-hour adds power, networking, storage and support (`napkin gpu-hour`)")
    warn_if_stale_prices(report, [(catalog.gpu_hour_price(g.key), f"the {g.name}") for g in parts
                                  if catalog.gpu_hour_price(g.key) is not None])


def run_vary(req: Any) -> Any:
    """The base plan's Report with the sweep added under ``vary`` (its text is the sweep's table)."""
    from napkin.calculators.train.run import run_one
    from napkin.request import to_raw

    req = base_request(req)
    report = run_one(msgspec.structs.replace(req, vary=[]))
    specs = specs_of(req.vary)
    axes = parse_vary(specs)
    if req.sensitivity:
        raise InputError("vary", " ".join(specs), "cannot be combined with --sensitivity",
                         "give --vary for the answer at each value, or --sensitivity for the tornado")
    rows = vary_rows(to_raw(req), axes)
    price_per_part(report, req, [n for n, _ in axes])
    report.set("vary", {"inputs": [n for n, _ in axes], "rows": rows})
    report.vary_axes = axes
    return report
