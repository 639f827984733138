"""The ``napkin`` command: a lazy click group. Commands load only when called.

No formulas here: each command parses its options into a request Struct, calls a
calculator and prints the Report (a table, ``--json`` or ``--explain``).

This module imports neither click nor a calculator: :func:`main` first offers the command
line to :mod:`napkin.cli.quick`, which answers a plain calculator command (options and
``--json``/``--explain``) with the calculator alone; anything else, and anything it
cannot answer, goes to the click group in :mod:`napkin.cli.group` (``napkin.cli.cli``).
"""

from __future__ import annotations

import sys
from typing import Any

# name -> ("module:attribute" of a click command, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("napkin.cli.demo:demo", "The headline answer: what one training token of the 7B / 2T run costs."),
    "model": ("napkin.cli.basics:model", "A model's architecture, parameters and KV bytes per token."),
    "catalog": ("napkin.cli.basics:catalog", "The reviewed tables of GPUs, models and prices, with sources."),
    "memory": ("napkin.cli.basics:memory", "Weights, KV cache and training state against a GPU's memory."),
    "roofline": ("napkin.cli.basics:roofline", "Ridge point and attainable FLOP/s at an arithmetic intensity."),
    "mfu": ("napkin.cli.basics:mfu", "Model FLOPs utilisation from a step time (and HFU with recompute)."),
    "allreduce": ("napkin.cli.basics:allreduce", "Ring all-reduce bytes per rank and time over a link."),
    "train": ("napkin.cli.train:train", "Cost, time and cluster size of a planned training run."),
    "compare": ("napkin.cli.train:compare", "Rank accelerators for one training job by cost per token."),
    "check": ("napkin.cli.economics:check", "Check a published training cost or GPU-hour claim."),
    "amortise": ("napkin.cli.economics:amortise", "Spread training cost over the tokens a model will serve."),
    "gpu-hour": ("napkin.cli.economics:gpu_hour", "The loaded price of one GPU-hour from capex, power and use."),
    "goodput": ("napkin.cli.economics:goodput", "Goodput and checkpoint interval from failure rates."),
    "optimal": ("napkin.cli.economics:optimal", "Compute-optimal model size and tokens for a budget."),
    "serve": ("napkin.cli.serve:serve", "Memory fit, prefill, decode and $/M tokens for serving."),
    "bill": ("napkin.cli.serve:bill", "An API bill from a dated price catalog."),
    "plan": ("napkin.cli.serve:plan", "Planners: search configurations under SLOs (plan serve)."),
    "ledger": ("napkin.cli.ledger:ledger", "Realised cost of a run from its own logs; drift alerts."),
    "journey": ("napkin.cli.journey:journey", "One prompt through a model, rung by rung, with a FLOPs meter."),
    "card": ("napkin.cli.journey:card", "The numbers every engineer should know, computed."),
    "tokens": ("napkin.cli.journey:tokens", "Count tokens in text or files, offline."),
    "validate": ("napkin.cli.validate:validate", "Predictions against published measurements: the error bars."),
    "measure": ("napkin.cli.measure:measure", "Measure the local accelerator; save a calibration."),
    "web": ("napkin.cli.web:web", "Serve the local web calculator."),
}


WHOLE_PROCESS = False  # main() runs as the process's own command (argv from sys.argv), not inside a caller


def main(argv: list[str] | None = None) -> None:
    import gc

    global WHOLE_PROCESS
    WHOLE_PROCESS = argv is None
    _import_msgspec()
    from napkin.cli.quick import answer

    args = sys.argv[1:] if argv is None else list(argv)
    _one_blas_thread(args)
    gc.disable()  # a start allocates many objects and frees few: collecting them would only cost time
    try:
        answered = answer(args)
    finally:
        gc.enable()
    if answered:
        sys.exit(0)
    # a command's process is short and allocates in bulk (polars, numpy, a derivation): collect cyclic
    # garbage every 100,000 allocations, not every 700 (on a 3M-row log that is 112 collections fewer)
    threshold = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    from napkin.cli.group import cli

    try:
        cli.main(args=argv, prog_name="napkin")
    finally:
        gc.set_threshold(*threshold)


def _one_blas_thread(args: list[str]) -> None:
    """One OpenBLAS thread for the command, unless the environment names a number.

    numpy's OpenBLAS starts its pool of threads when numpy is imported, and they spin before they
    sleep: on a 2-core machine that is about 0.1 CPU-second of every command that imports numpy
    (`ledger report`, `plan serve`, `validate`), taken from the work polars does beside it. napkin's
    numpy is element-wise and never calls BLAS, so the pool does nothing for it. `napkin measure` is
    left as it is (a CPU matmul sweep may run on a BLAS), and so is a library user's ``import napkin``.
    """
    import os

    if not args or args[0] != "measure":
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _import_msgspec() -> None:
    """Import msgspec as it runs where typing_extensions is not installed (a configuration it supports).

    msgspec takes ``get_type_hints``, ``Required`` and ``NotRequired`` from typing_extensions when it can
    import it, and from ``typing`` otherwise; typing_extensions imports ``inspect`` (and with it ``ast``,
    ``dis`` and ``tokenize``), which costs about as much as a bare Python start and more than the answer.
    napkin's types use ``typing`` alone, so in the command's own process msgspec reads them from
    ``typing``; typing_extensions stays importable for anything that asks for it later (the web app).
    A library user's ``import napkin`` never comes here and keeps msgspec as installed.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # `import typing_extensions` fails
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


def __getattr__(name: str) -> Any:
    """``napkin.cli.cli`` (the click group), ``LazyGroup`` and ``usage_line``, from napkin.cli.group on first use."""
    if name in ("cli", "LazyGroup", "usage_line"):
        from napkin.cli import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
