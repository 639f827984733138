"""`napkin train` and `napkin compare`: training economics from the shell.

No formulas here: options become a TrainRequest / CompareRequest, the calculators build
the Reports, and this module adds what only a command line needs: ``--vary`` (the answer
for each value of any input), ``--chart out.svg|out.png`` and a plan file that records
the values the run was planned with.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import click

from napkin.cli.common import ALTERNATIVES, calculator_command, emit, write_config
from napkin.errors import InputError

MAX_VARY_ROWS = 1000
PLAN_DEFAULTS = ("gpu", "mfu", "goodput", "price", "pue")  # inputs a plan file freezes when they were defaults

_vary = click.Option(["--vary"], multiple=True, metavar="NAME=V1,V2,...",
                     help="Print the answer for each value of an input (any field; overhead.NAME for one "
                          "overhead); repeat for a grid.")
_chart = click.Option(["--chart"], metavar="OUT.svg|OUT.png",
                      help="Draw the cost bars (the tornado with --sensitivity) to an SVG or PNG file.")


# ------------------------------------------------------------------------------------ --vary
def parse_vary(specs: tuple[str, ...] | list[str]) -> list[tuple[str, list[str]]]:
    """``mfu=0.3,0.4,0.5`` -> [("mfu", ["0.3", "0.4", "0.5"])]; names are checked against the request."""
    from napkin.calculators.train import TrainRequest
    from napkin.errors import closest
    from napkin.request import fields

    names = [f.name for f in fields(TrainRequest)]
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
    from napkin.calculators.train import TrainRequest
    from napkin.request import fields, parse_value

    if name.startswith("overhead."):
        return units.parse(text, "number", name)
    if name == "goodput" and text.lower() != "auto":  # a text field: a fraction, or auto
        return units.parse(text, "fraction", name)
    return parse_value(next(f for f in fields(TrainRequest) if f.name == name), text)


def vary_rows(base_raw: dict[str, Any], axes: list[tuple[str, list[str]]]) -> list[dict]:
    """Run the train calculator for every combination of the varied values.

    A deadline that cannot be met is a row marked infeasible, not an error for the sweep.
    """
    from napkin.calculators.train import TRAIN

    combos = list(itertools.product(*[vals for _, vals in axes]))
    if len(combos) > MAX_VARY_ROWS:
        raise InputError("vary", f"{len(combos):,} combinations", f"exceeds {MAX_VARY_ROWS:,}",
                         "vary fewer values (or use `napkin plan`)")
    rows = []
    for combo in combos:
        raw = dict(base_raw)
        raw["overhead"] = dict(raw.get("overhead") or {})
        row: dict[str, Any] = {}
        for (name, _), value in zip(axes, combo):
            row[name] = vary_value(name, value)
            if name.startswith("overhead."):
                raw["overhead"][name.split(".", 1)[1]] = value
            else:
                raw[name] = value
                for alt in ALTERNATIVES.get(name, ()):  # a varied --gpus replaces the base's --deadline
                    if alt not in [n for n, _ in axes]:
                        raw.pop(alt, None)
        try:
            rep = TRAIN(raw)
        except InputError as exc:
            if "infeasible" not in exc.problem:
                raise
            row["infeasible"] = str(exc)
            rows.append(row)
            continue
        for k in ("goodput", "tokens_per_gpu_s", "gpu_hours", "gpus", "gpus_needed", "wall_s", "marginal_usd",
                  "loaded_usd", "usd_per_million_tokens"):
            if k in rep.results:
                row[k] = rep[k]
        rows.append(row)
    return rows


def vary_text(title: str, axes: list[tuple[str, list[str]]], rows: list[dict]) -> str:
    from napkin.units import format as fmt

    names = [n for n, _ in axes]
    cols: list[tuple[str, str, str]] = []
    if len({r["goodput"] for r in rows if "goodput" in r}) > 1:  # goodput auto: it follows the cluster size
        cols.append(("goodput", "goodput", "fraction"))
    cols += [("tokens_per_gpu_s", "tokens/GPU-s", "per_s"), ("gpu_hours", "GPU-hours", "count")]
    if any("gpus_needed" in r for r in rows):
        cols.append(("gpus_needed", "GPUs needed", "count"))
    if any("wall_s" in r for r in rows):
        cols.append(("wall_s", "wall", "seconds"))
    cols += [("marginal_usd", "marginal", "usd"), ("loaded_usd", "loaded", "usd")]
    head = names + [c[1] for c in cols] + ["$/M marginal", "$/M loaded"]
    table = [head]
    for r, labels in zip(rows, itertools.product(*[vals for _, vals in axes])):
        cells = list(labels)  # as typed: 30%, 3/h
        if "infeasible" in r:
            cells += ["infeasible"] + ["-"] * (len(head) - len(names) - 1)
        else:
            cells += [fmt(r[k], kind) if k in r else "-" for k, _, kind in cols]
            per_m = r["usd_per_million_tokens"]
            cells += [fmt(per_m["marginal"], "usd_per_million"), fmt(per_m["loaded"], "usd_per_million")]
        table.append(cells)
    widths = [max(len(t[i]) for t in table) for i in range(len(head))]
    lines = [f"{title}, as {' and '.join(names)} {'vary' if len(names) > 1 else 'varies'}"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table]
    lines += [f"note: {r['infeasible']}" for r in rows if "infeasible" in r]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ plans
def plan_values(req: Any, report: Any, overridden: set[str] = frozenset()) -> tuple[dict[str, Any], list[str]]:
    """Every input of the plan, defaults frozen at the values they resolved to, and which were defaults.

    ``overridden`` names inputs given on the command line over a ``--config`` plan: a
    default the plan had frozen stops being one when a flag replaces it.
    """
    from napkin.request import fields, to_raw

    given = to_raw(req)
    resolved: dict[str, Any] = {}
    for a in report.assumptions:
        if a.name in PLAN_DEFAULTS and a.name not in given:
            if a.name == "goodput" and req.goodput is not None:
                continue  # --goodput auto stays auto
            resolved[a.name] = a.value
    defaults = {a.name: f"{a.name} ({a.basis}): {a.note}" for a in report.assumptions
                if a.name in PLAN_DEFAULTS and a.basis in ("assumed", "reference")}
    for name in req.assumed:  # carried from the plan read with --config, unless a flag replaced it
        if name not in defaults and name not in overridden:
            defaults[name] = f"{name}: a default when the plan was first saved"
    out = {}
    for info in fields(type(req)):
        if info.name == "assumed":
            continue
        if info.name in given:
            out[info.name] = given[info.name]
        elif info.name in resolved:
            out[info.name] = resolved[info.name]
        elif info.name in ("precision", "flops_convention"):
            out[info.name] = getattr(req, info.name)
    if isinstance(out.get("goodput"), str) and out["goodput"].lower() != "auto":
        out["goodput"] = float(out["goodput"]) if out["goodput"].replace(".", "", 1).isdigit() else out["goodput"]
    if defaults:
        out["assumed"] = sorted(defaults)
    return out, [defaults[k] for k in sorted(defaults)]


def save_plan(path: str, req: Any, report: Any, overridden: set[str] = frozenset()) -> None:
    """Write the plan (every input) as TOML that `--config` reads back; defaults are listed in comments."""
    values, defaults = plan_values(req, report, overridden)
    write_config(path, values, command="train")
    if defaults:
        with open(path, "a") as fh:
            fh.write("# inputs that were defaults when planned (replace them with measurements):\n")
            for line in defaults:
                fh.write(f"#   {line}\n")


# ------------------------------------------------------------------------------------ hooks
def _prepare_train(raw: dict[str, Any], params: dict) -> dict[str, Any]:
    """With --goodput auto the base run needs the cluster size; a --vary of gpus or deadline gives it.

    The base run (title, warnings, assumptions under the table) then takes the varied value most
    likely to be feasible: the fewest GPUs, or the longest deadline.
    """
    if not params.get("vary") or str(raw.get("goodput", "")).strip().lower() != "auto":
        return raw
    if raw.get("gpus") is not None or raw.get("deadline") is not None:
        return raw
    axes = dict(parse_vary(params["vary"]))
    for name, pick in (("gpus", min), ("deadline", max)):
        if name in axes:
            return {**raw, name: pick(axes[name], key=lambda v: vary_value(name, v))}
    return raw


def _write_chart(report: Any, which: tuple[str, ...], path: str, charts: Any) -> None:
    from napkin.charts.train import write_chart

    specs = charts(report)
    for name in which:
        if name in specs:
            write_chart(specs[name], path)
            report.note(f"chart {name!r} written to {path}")
            return
    raise InputError("chart", path, "has nothing to draw", "give the inputs a cost needs")


def _after_train(report: Any, req: Any, params: dict) -> Any:
    from napkin.calculators.train import TRAIN, sensitivity_text
    from napkin.request import to_raw

    ctx = click.get_current_context()
    overridden = {k for k, v in ctx.params.items() if v not in (None, (), [])}
    for a in list(report.assumptions):  # a flag on the line overrides a default frozen in --config's plan
        if a.name in req.assumed and a.name in overridden:
            report.assume(a.name, a.value, "as given", unit=a.unit, basis="given")
    save = ctx.params.get("save")
    if save:
        save_plan(save, req, report, overridden)
    as_json, explain = params.get("as_json"), params.get("explain")
    if params.get("chart"):
        _write_chart(report, ("sensitivity", "cost"), params["chart"], TRAIN.charts)
    if params.get("vary"):
        axes = parse_vary(params["vary"])
        if req.sensitivity:
            raise InputError("vary", " ".join(params["vary"]), "cannot be combined with --sensitivity",
                             "give --vary for the answer at each value, or --sensitivity for the tornado")
        rows = vary_rows(to_raw(req), axes)
        if as_json:
            report.set("vary", {"inputs": [n for n, _ in axes], "rows": rows})
            click.echo(report.to_json())
            return False
        click.echo(vary_text(report.title, axes, rows))
        for w in report.warnings:
            click.echo(f"warning [{w.code}]: {w.message}")
        guessed = [a for a in report.assumptions if a.basis in ("assumed", "reference")
                   and a.name not in {n for n, _ in axes}]
        if guessed:
            from napkin.units import fmt_auto

            click.echo("assumed: " + "; ".join(f"{a.name} = {fmt_auto(a.value, a.unit)}" for a in guessed))
        return False
    emit(report, as_json=as_json, explain=explain)
    if not as_json and not explain and sys.stdout.isatty() and report.results.get("sensitivity"):
        click.echo(sensitivity_text(report.results["sensitivity"]))
    return False


def _after_compare(report: Any, req: Any, params: dict) -> Any:
    from napkin.calculators.compare import COMPARE

    if params.get("chart"):
        _write_chart(report, ("cost-per-million",), params["chart"], COMPARE.charts)
    if params.get("as_json"):
        click.echo(report.to_json())
    else:
        click.echo(report.text())
        if params.get("explain"):
            click.echo("")
            click.echo(report.explain())
    return False


train = calculator_command(
    "train", extra=[_vary, _chart], after=_after_train, prepare=_prepare_train,
    help="Cost, time and cluster size of a planned training run: marginal and loaded $ per million tokens.\n\n"
         "e.g. napkin train --params 7B --tokens 2T --gpu h100 --mfu 0.4 --goodput 0.9 --price 2.50/h "
         "--overhead experiments=0.6,lost=0.15,eval=0.05,idle=0.2 --fixed-usd 60k")
compare = calculator_command(
    "compare", extra=[_chart], after=_after_compare,
    help="Rank accelerators for one training job by cost per million tokens and delivered FLOP per dollar.\n\n"
         "e.g. napkin compare --gpu h100-sxm,h200,b200,mi300x --mfu h100-sxm=0.40,b200=0.35 "
         "--price h100-sxm=2.50,b200=4.50 --params 7B --tokens 2T")
