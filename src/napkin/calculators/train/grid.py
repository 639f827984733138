"""`napkin train --vary` as arrays: the whole grid through the train formulas at once.

One plan per combination (:func:`~napkin.calculators.train.vary.plan_rows`) is the reference.
Most varied inputs enter a plan's answer only through :mod:`napkin.formulas.training`, which is
arithmetic on floats or arrays alike: MFU, goodput, the price, a peak by hand, the parameters
(without a model), the tokens (without unique tokens), fixed and data spend, each overhead, and
the cluster (GPUs, a deadline, its --max-gpus). Those *array inputs* become numpy arrays, one
axis each; every other varied input (a GPU, a model, a precision, ...) is a *block*: one plan
per combination of them resolves everything else (the peak, FLOPs per token, the defaults and
their records) and the formulas then run once over the block's arrays. A row becomes a dict
only when it is read.

Where arrays could not give the reference's rows exactly (--goodput auto, whose goodput and
cluster size depend on each other; unique tokens or epochs with varied tokens; a model with
varied parameters; a value the request refuses; a figure past what a float holds) nothing is
evaluated here and the reference runs instead, raising its own errors.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from napkin.errors import InputError, NapkinError
from napkin.formulas import training as T

ARRAY_INPUTS = ("mfu", "goodput", "price", "peak", "params", "tokens", "fixed_usd", "data_usd",
                "gpus", "deadline", "max_gpus")
CLUSTER = ("gpus", "deadline", "max_gpus")  # left out of a block's plan: the cluster is sized here


def _is_auto(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "auto"


def _arrays_apply(base_raw: dict[str, Any], axes: list[tuple[str, list[str]]]) -> bool:
    """Whether arrays give the reference's rows: no --goodput or --mfu auto (each follows the cluster, the
    model and the sequence), and no varied input tied to another."""
    names = [n for n, _ in axes]
    given = set(base_raw) | set(names)
    for auto in ("goodput", "mfu"):
        if _is_auto(base_raw.get(auto)) or any(_is_auto(v) for n, vals in axes if n == auto for v in vals):
            return False
    if "tokens" in names and given & {"unique_tokens", "epochs"}:
        return False  # tokens checked against unique tokens · epochs
    if "params" in names and "model" in given:
        return False
    if base_raw.get("assumed"):
        return False  # a saved plan's frozen defaults: thawed per plan
    if "flops" in given:
        return False  # a FLOP budget: its tokens follow the parameters, or it has no tokens at all
    return not ({"gpus", "deadline"} <= set(names))  # both varied: every plan refuses the pair


def _array_values(name: str, labels: list[str]) -> np.ndarray:
    """The values of a varied array input as its plan reads them (the same parse, bounds and errors)."""
    from napkin.calculators.train.inputs import parse_goodput
    from napkin.calculators.train.request import TrainRequest
    from napkin.request import fields, parse_value

    infos = {f.name: f for f in fields(TrainRequest)}
    if name.startswith("overhead."):
        key = name.split(".", 1)[1]
        values = [parse_value(infos["overhead"], {key: v})[key] for v in labels]
    elif name == "goodput":
        values = [parse_goodput(parse_value(infos["goodput"], v)) for v in labels]
    else:
        values = [parse_value(infos[name], v) for v in labels]
    return np.asarray(values, dtype=np.int64 if name in ("gpus", "max_gpus") else np.float64)


class Block:
    """The answers of one combination of the block inputs, over the array inputs (numpy broadcasting)."""

    def __init__(self, columns: dict[str, Any], keys: list[str], per_million: list[str]):
        self.columns, self.keys, self.per_million = columns, keys, per_million


class GridRows(Sequence):
    """The rows of a sweep: a flat array per answer over the grid (product order); each row a dict when read,
    equal to the row of its own plan."""

    BATCH = 4096  # rows made at once when iterating

    def __init__(self, axes: list[tuple[str, list[str]]], echo: list[list[Any]], columns: dict[str, np.ndarray],
                 keys: list[str], per_million: list[str]):
        self.axes, self.echo, self.columns, self.keys, self.per_million = axes, echo, columns, keys, per_million
        self.shape = tuple(len(v) for _, v in axes)
        self._len = math.prod(self.shape)
        self._strides = [math.prod(self.shape[j + 1:]) for j in range(len(self.shape))]

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._len)
            return self._rows(start, stop) if step == 1 else [self[k] for k in range(start, stop, step)]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("row index out of range")
        return self._rows(i, i + 1)[0]

    def __iter__(self) -> Any:
        for start in range(0, self._len, self.BATCH):
            yield from self._rows(start, min(start + self.BATCH, self._len))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GridRows({self._len:,} rows over {', '.join(n for n, _ in self.axes)})"

    def _rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Rows ``start`` to ``stop``, as dicts of Python numbers."""
        flat = np.arange(start, stop)
        echo = [[self.echo[j][p] for p in ((flat // self._strides[j]) % n).tolist()]
                for j, n in enumerate(self.shape)]
        names = [n for n, _ in self.axes]
        values = {k: self.columns[k][start:stop].tolist() for k in self.keys}
        per_m = {k: self.columns["per_million." + k][start:stop].tolist() for k in self.per_million}
        infeasible = self.columns["_infeasible"][start:stop].tolist() if "_infeasible" in self.columns else None
        rows = []
        for r in range(stop - start):
            row = {name: echo[j][r] for j, name in enumerate(names)}
            if infeasible is not None and infeasible[r]:
                row["infeasible"] = self._infeasible_message(start + r)
            else:
                for k in self.keys:
                    row[k] = values[k][r]
                row["usd_per_million_tokens"] = {k: v[r] for k, v in per_m.items()}
            rows.append(row)
        return rows

    def _infeasible_message(self, i: int) -> str:
        """The plan's own words for a deadline no cluster within --max-gpus meets."""
        from types import SimpleNamespace

        from napkin.calculators.train.cluster import infeasible

        c = self.columns
        req = SimpleNamespace(deadline=c["_deadline"][i].item(), max_gpus=c["_max_gpus"][i].item())
        try:
            infeasible(req, c["_d"][i].item(), c["tokens_per_gpu_s"][i].item())
        except InputError as exc:
            return str(exc)
        raise AssertionError("a deadline marked infeasible was met")  # pragma: no cover


def _dtype(values: list[Any]) -> Any:
    """int64 where every block's value is a whole-number type (the plan's ints stay ints), bool, or float64."""
    def kind(v: Any) -> str:
        dt = v.dtype if isinstance(v, (np.ndarray, np.generic)) else np.asarray(v).dtype
        return dt.kind

    kinds = {kind(v) for v in values}
    return np.bool_ if kinds == {"b"} else np.int64 if kinds <= {"i", "u"} else np.float64


def _assemble(axes: list[tuple[str, list[str]]], blocks: dict[tuple, Block], block_axes: list[int]) -> Any:
    """Each answer of every block laid into one array over the whole grid, flat in product order."""
    first = next(iter(blocks.values()))
    if any(set(b.columns) != set(first.columns) for b in blocks.values()):
        return None  # blocks that answer differently: the reference's to sort out
    shape = tuple(len(v) for _, v in axes)
    columns = {}
    for name in first.columns:
        full = np.empty(shape, dtype=_dtype([b.columns[name] for b in blocks.values()]))
        for pick, block in blocks.items():
            where: list[Any] = [slice(None)] * len(shape)
            for j, p in zip(block_axes, pick):
                where[j] = p
            full[tuple(where)] = block.columns[name]  # broadcast over the array axes
        columns[name] = full.reshape(-1)
    return columns


def grid_rows(base_raw: dict[str, Any], axes: list[tuple[str, list[str]]]) -> GridRows | None:
    """The sweep's rows from arrays, or None where only one plan per combination gives them exactly."""
    from napkin.calculators.train.vary import vary_value

    if not _arrays_apply(base_raw, axes):
        return None
    array_axes = [j for j, (n, _) in enumerate(axes) if n in ARRAY_INPUTS or n.startswith("overhead.")]
    block_axes = [j for j in range(len(axes)) if j not in array_axes]
    try:
        echo = [[vary_value(n, v) for v in vals] for n, vals in axes]
        values = {j: _array_values(*axes[j]) for j in array_axes}
    except NapkinError:
        return None  # the reference says which value, where
    shaped = {j: values[j].reshape([len(axes[k][1]) if k == j else 1 for k in array_axes]) for j in array_axes}
    blocks = {}
    for pick in itertools.product(*[range(len(axes[j][1])) for j in block_axes]):
        block = _block(base_raw, axes, dict(zip(block_axes, pick)), shaped)
        if block is None:
            return None
        blocks[pick] = block
    columns = _assemble(axes, blocks, block_axes)
    if columns is None:
        return None
    first = next(iter(blocks.values()))
    return GridRows(axes, echo, columns, first.keys, first.per_million)


def _block(base_raw: dict[str, Any], axes: list[tuple[str, list[str]]], pick: dict[int, int],
           shaped: dict[int, np.ndarray]) -> Block | None:
    """One combination of the block inputs: its plan (the cluster left out), then the formulas over the arrays."""
    from napkin.calculators.train.request import TrainRequest
    from napkin.calculators.train.run import run_one
    from napkin.calculators.train.vary import combination_raw
    from napkin.request import parse_request

    combo = tuple(vals[pick[j]] if j in pick else vals[0] for j, (_, vals) in enumerate(axes))
    raw = combination_raw(base_raw, axes, combo)
    if raw.get("gpus") is not None and raw.get("deadline") is not None:
        return None
    plan_raw = {k: v for k, v in raw.items() if k not in CLUSTER}
    try:
        req = parse_request(TrainRequest, plan_raw)
        rep = run_one(req)
        cluster = parse_request(TrainRequest, {k: raw[k] for k in CLUSTER if k in raw})
    except (NapkinError, OverflowError, ZeroDivisionError):
        return None  # the reference raises it, at the combination where it arises
    x = _inputs(rep, req, cluster, {axes[j][0]: a for j, a in shaped.items()})
    with np.errstate(all="ignore"):
        block = _evaluate(x)
        if block is None or not _state_counts(rep, req, x):
            return None
    return block


def _inputs(rep: Any, req: Any, cluster: Any, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The resolved inputs of a block's plan, with the array inputs in their place."""
    n = arrays.get("params", req.params)
    x = {
        "peak": arrays.get("peak", rep["dense_flops_per_s"]), "mfu": arrays.get("mfu", rep["mfu"]),
        "goodput": arrays.get("goodput", rep["goodput"]), "price": arrays.get("price", rep["price"]),
        "fpt": rep["flops_per_token"] if "params" not in arrays else None, "n": n,
        "d": arrays.get("tokens", rep["advanced_tokens"]), "u": rep.get("unique_tokens"),
        "fixed": arrays.get("fixed_usd", req.fixed_usd),
        "data": arrays.get("data_usd", req.data_usd), "has_data": "data_usd" in arrays or req.data_usd is not None,
        "gpus": arrays.get("gpus", cluster.gpus), "deadline": arrays.get("deadline", cluster.deadline),
        "max_gpus": arrays.get("max_gpus", cluster.max_gpus),
        "overhead": {k: arrays.get("overhead." + k, v) for k, v in req.overhead.items()},
        "node": 1,
    }
    if "gpu" in rep.results:
        from napkin import catalog

        x["node"] = catalog.gpu(rep["gpu"]).node_size
    if x["fpt"] is None:
        from napkin.formulas import flops

        x["fpt"] = flops.train_flops_per_token(n)  # 6N: a model (and so another convention) is a block input
    return x


def _evaluate(x: dict[str, Any]) -> Block | None:
    """run_one's arithmetic from tokens per GPU-second to $ per million tokens, over arrays."""
    d, price = x["d"], x["price"]
    tps = T.tokens_per_gpu_s(x["peak"], mfu=x["mfu"], goodput=x["goodput"], flops_per_token=x["fpt"])
    hours = T.gpu_hours(d, tokens_per_gpu_s=tps)
    columns: dict[str, Any] = {"goodput": x["goodput"], "tokens_per_gpu_s": tps, "gpu_hours": hours}
    keys = ["goodput", "tokens_per_gpu_s", "gpu_hours"]
    if x["gpus"] is not None:
        columns["gpus"] = x["gpus"]
        columns["wall_s"] = T.wall_seconds(d, tokens_per_gpu_s=tps, n_gpus=x["gpus"])
        keys += ["gpus", "wall_s"]
    elif x["deadline"] is not None:
        need = T.gpus_for_deadline(d, tokens_per_gpu_s=tps, deadline_s=x["deadline"])
        infeasible = need > x["max_gpus"]
        if not np.all(np.isfinite(need)) or np.any(need >= 2**53):
            return None
        if x["node"] > 1:  # the plan's cluster in whole nodes of its part
            need = T.whole_nodes(need, gpus_per_node=x["node"])
        columns["gpus_needed"] = need.astype(np.int64) if isinstance(need, np.ndarray) else int(need)
        columns["wall_s"] = T.wall_seconds(d, tokens_per_gpu_s=tps, n_gpus=need)
        keys += ["gpus_needed", "wall_s"]
        columns.update(_infeasible=infeasible, _d=d, _deadline=x["deadline"], _max_gpus=x["max_gpus"])
    columns["price"] = price
    keys.append("price")
    marginal = T.marginal_usd(hours, usd_per_gpu_hour=price)
    data = x["data"]  # the plan's `data_usd or 0.0`: none, or a given 0 (even -0), is 0.0
    data = np.where(data == 0, 0.0, data) if isinstance(data, np.ndarray) else (data or 0.0)
    overhead_sum = sum(x["overhead"].values())
    loaded = T.loaded_usd(marginal, overhead_multiplier=overhead_sum, fixed_usd=x["fixed"] + data)
    columns.update(marginal_usd=marginal, loaded_usd=loaded)
    keys += ["marginal_usd", "loaded_usd"]
    columns["per_million.marginal"] = T.usd_per_million_tokens(marginal, n_tokens=d)
    columns["per_million.loaded"] = T.usd_per_million_tokens(loaded, n_tokens=d)
    per_million = ["marginal", "loaded"]
    if x["has_data"]:
        unique = x["u"] if x["u"] is not None else d  # no unique tokens given: one epoch
        columns["per_million.data_per_unique"] = T.usd_per_million_tokens(data, n_tokens=unique)
        per_million.append("data_per_unique")
    if not all(np.all(np.isfinite(columns[k])) for k in (*keys, *("per_million." + p for p in per_million))) \
            or np.any(marginal == 0):
        return None  # past a float, or a zero the plan divides by: the reference says what happens
    return Block(columns, keys, per_million)


def _state_counts(rep: Any, req: Any, x: dict[str, Any]) -> bool:
    """Whether the plan can count the GPUs that hold the training state of every varied parameter count."""
    if not isinstance(x["n"], np.ndarray) or "min_gpus_for_state" not in rep:
        return True
    from napkin import catalog
    from napkin.formulas import memory as mem

    memory_bytes = catalog.gpu(rep["gpu"]).memory_bytes
    try:
        for n in x["n"].flat:
            int(mem.min_gpus_for_state(mem.training_static_bytes(float(n)), memory_bytes=memory_bytes,
                                       usable=req.usable))
    except OverflowError:
        return False
    return True
