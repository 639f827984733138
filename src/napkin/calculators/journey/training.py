"""Rung 7, the training debt: the run that made the model, in requests like this one."""

from __future__ import annotations

from napkin.formulas import flops

from .walk import Trip, Walk


def training(walk: Walk, t: Trip) -> None:
    req, m = t.req, t.m
    r = walk.start("training")
    d_train = req.training_tokens or m.training_tokens
    if d_train:
        if req.training_tokens is None:
            r.assume("training_tokens", d_train, f"published for {m.name} ({m.params_source or m.source})",
                     unit="count", basis="catalog")
        r.set("training_tokens", d_train, "count")
        train = r.step("train_flops", "6 · N_active · D", value=flops.train_flops(t.n_active, n_tokens=d_train),
                       unit="flops", N_active=(t.n_active, "count"), D=(d_train, "count"), cites=flops.train_flops)
        r.step("requests_per_training_run", "train_flops / Σ FLOPs of one request", value=train / walk.meter,
               unit="count", train_flops=(train, "flops"), Σ=(walk.meter, "flops"))
        r.step("tokens_per_param", "D / N", value=d_train / t.n_total, unit="number")
        r.note("the training run is a second ledger: its FLOPs are not on this request's meter")
    else:
        r.note(f"no published training tokens for {m.name}: give --training-tokens to see the training debt")
    walk.close("training", r, 0.0)
