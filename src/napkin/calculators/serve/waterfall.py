"""The optimisation waterfall: changes applied one at a time, in order, to the same workload, each
step the serve calculator run again, with its tokens/s, $/M and what binds."""

from __future__ import annotations

from typing import Any

import msgspec

from napkin.derivation import Report
from napkin.errors import InputError, NapkinError

from .request import WATERFALL_KNOBS, ServeRequest


def waterfall_steps(raw: list[str]) -> list[tuple[str, str, str]]:
    """(field, value, label) of each NAME=VALUE step, in the order given; a knob may repeat.

    The steps arrive split at commas (a list field): a thousands group goes back on the value
    before it (``batch=1,024``), as for every NAME=VALUE field (napkin.request._split_pairs).
    """
    from napkin.request import _split_pairs

    pieces = [str(p) for p in _split_pairs(",".join(str(p) for p in raw))]
    steps = []
    for label in pieces:
        if "=" not in label:
            raise InputError("waterfall", label, "must be NAME=VALUE", "e.g. batch=64,precision=fp8,batch=128")
        raw_key, raw_val = (x.strip() for x in label.split("=", 1))
        key = raw_key.replace("-", "_")
        key = {"mfu": "gemm_efficiency"}.get(key, key)  # the field's older name, as --mfu still is
        if key not in WATERFALL_KNOBS:
            raise InputError("waterfall", f"{raw_key}={raw_val}", "has a knob napkin does not vary",
                             "use one of " + ", ".join(k.replace("_", "-") for k in WATERFALL_KNOBS))
        if not raw_val:
            raise InputError("waterfall", label, "has no value", f"write {raw_key}=VALUE")
        steps.append((key, raw_val, f"{raw_key}={raw_val}"))
    return steps


def run_waterfall(r: Report, req: ServeRequest) -> None:
    """Apply each change in turn to the same workload; record tokens/s, $/M and what binds.

    A step that does not fit in memory is marked so (fits false, no throughput, cost or
    speed-up) rather than shown with the speed it would have if it fit; the next step that
    fits is compared with the last one that did.
    """
    from napkin.request import fields, parse_value

    infos = {f.name: f for f in fields(ServeRequest)}
    cur = msgspec.structs.replace(req, waterfall=[])
    rows = [waterfall_row("baseline", cur, r)]
    for key, raw_val, label in waterfall_steps(req.waterfall):
        try:  # an error inside a step names the step, not the base input of the same name
            value = parse_value(infos[key], raw_val)
            changes: dict[str, Any] = {key: value}
            # tp=N follows the base command's rules: a replica whose GPUs were never given (only --tp, or neither)
            # has as many GPUs as its TP degree, so the step brings them (and the cost); a replica of given --gpus
            # keeps them, so a TP degree beyond them is refused, as `serve --gpus 2 --tp 8` is
            if key == "tp" and cur.gpus is not None and value > cur.gpus:
                raise InputError("tp", value, f"exceeds the GPUs of the replica ({cur.gpus})",
                                 f"use tp at most {cur.gpus}, or put gpus={value} before it")
            cur = msgspec.structs.replace(cur, **changes)
            rows.append(waterfall_row(label, cur, r))
        except InputError as exc:
            raise InputError("waterfall", label, f"has a step whose {exc.field} {exc.problem}",
                             exc.fix or "fix that step") from None
        except NapkinError as exc:
            raise InputError("waterfall", label, f"has a step that cannot run: {exc}") from None
    last: dict | None = None  # the last step that fits
    for row in rows:
        if not row["fits"]:
            after = f"; the next step that fits is compared with {last['step']}" if last else ""
            r.warn("waterfall-does-not-fit", f"step {row['step']} does not fit ({row['why']}): it shows no tokens/s, "
                                             f"$/M or speed-up{after}")
        elif row is not rows[0]:
            row["speedup"] = row["tokens_per_s"] / last["tokens_per_s"] if last else None
        if row["fits"]:
            last = row
    r.set("waterfall", rows)
    r.note("waterfall: each change is applied on top of the ones before it, in the order given, to the same prompt "
           "and output lengths")


def waterfall_row(label: str, req: ServeRequest, r: Report) -> dict:
    from .run import run_serve  # the calculator itself, on the request as it stands after this step

    sub = run_serve(req)
    seen = {w.code for w in r.warnings}
    for w in sub.warnings:  # what a step brings (TP beyond the scale-up domain, ...), once per kind
        if w.code not in seen and w.code != "does-not-fit":
            r.warn(w.code, f"at waterfall step {label}: {w.message}")
            seen.add(w.code)
    fits = bool(sub["fits"])
    mb = sub["max_batch"]
    row = {"step": label, "batch": req.batch, "gpus": sub["gpus"], "fits": fits, "max_batch": mb}
    if not fits:
        ctx = req.prompt + req.output
        why = (f"the weights alone overflow {sub['gpus']} x {sub['gpu']}" if mb == 0 else
               f"at most {mb:,} sequences of {ctx:,.0f} tokens fit on {sub['gpus']} x {sub['gpu']}, not {req.batch:,}")
        return {**row, "tokens_per_s": None, "tpot_s": None, "ttft_s": None, "usd_per_million_output_tokens": None,
                "binds": "memory capacity", "why": why}
    return {**row, "tokens_per_s": sub["tokens_per_s"], "tpot_s": sub["tpot_s"], "ttft_s": sub["ttft_s"],
            "usd_per_million_output_tokens": sub.get("usd_per_million_output_tokens"), "binds": sub["bound"]}
