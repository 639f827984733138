"""Calculators: request Struct in, Report out. No printing, no parsing of unit strings.

Each calculator module defines a module-level ``Calculator`` naming its request Struct
and the function that builds its Report. The registry below maps a command name to
``module:attribute`` so that nothing heavy is imported until that calculator is used;
the CLI and the web app both read it.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import msgspec

from napkin.errors import UnknownName


class Calculator(msgspec.Struct, frozen=True):  # a Struct, not a dataclass: made in C, so a plain answer starts fast
    name: str
    request: type
    run: Callable[[Any], Any]
    title: str
    help: str
    # what a result establishes and what still needs measuring (shown on the web page)
    establishes: str = ""
    needs_measuring: str = ""
    # report -> {chart name: Vega-Lite spec dict}; used by --chart and the web page
    charts: Callable[[Any], dict[str, dict]] | None = None
    # request -> the configurations a planner's grid counts (the web page caps it); None: not a grid
    grid_size: Callable[[Any], int] | None = None

    def __call__(self, raw: dict | None = None, /, **kwargs: Any) -> Any:
        """Run from raw values (unit strings or numbers): ``calc({"params": "7B"})``."""
        from napkin.request import parse_request

        req = parse_request(self.request, {**(raw or {}), **kwargs})
        return self.run(req)


# name -> "module:attribute" of a Calculator
CALCULATORS: dict[str, str] = {
    "model": "napkin.calculators.model:MODEL",
    "memory": "napkin.calculators.memory:MEMORY",
    "roofline": "napkin.calculators.roofline:ROOFLINE",
    "mfu": "napkin.calculators.mfu:MFU",
    "allreduce": "napkin.calculators.allreduce:ALLREDUCE",
    "train": "napkin.calculators.train:TRAIN",
    "compare": "napkin.calculators.compare:COMPARE",
    "check": "napkin.calculators.check:CHECK",
    "amortise": "napkin.calculators.amortise:AMORTISE",
    "gpu-hour": "napkin.calculators.gpu_hour:GPU_HOUR",
    "goodput": "napkin.calculators.goodput:GOODPUT",
    "optimal": "napkin.calculators.optimal:OPTIMAL",
    "serve": "napkin.calculators.serve:SERVE",
    "bill": "napkin.calculators.bill:BILL",
    "plan-serve": "napkin.plan.serve:PLAN_SERVE",
    "plan-train": "napkin.plan.train:PLAN_TRAIN",
    "ledger": "napkin.ledger.calculator:LEDGER",
    "journey": "napkin.calculators.journey:JOURNEY",
    "card": "napkin.calculators.card:CARD",
    "tokens": "napkin.calculators.tokens:TOKENS",
    "validate": "napkin.validation.runner:VALIDATE",
}


def get(name: str) -> Calculator:
    """The Calculator registered under ``name``; imports its module on first use.

    A module that fails to import raises (ImportError naming the calculator): a registered
    calculator that does not load is a broken build, never a calculator quietly left out.
    """
    target = CALCULATORS.get(name)
    if target is None:
        raise UnknownName("calculator", name, list(CALCULATORS))
    module, attr = target.split(":")
    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        raise ImportError(f"calculator {name!r} ({target}) failed to import: {exc!r}") from exc
    calc = getattr(mod, attr, None)
    if not isinstance(calc, Calculator):
        raise ImportError(f"calculator {name!r}: {target} is not a Calculator (got {type(calc).__name__})")
    return calc


def available() -> list[str]:
    """Every registered name, each loaded: one that fails to import raises here, never left out."""
    for name in CALCULATORS:
        get(name)
    return list(CALCULATORS)
