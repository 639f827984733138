"""What does a training token cost? Time, GPU-hours, marginal and loaded cost of a planned run.

D is the *advanced* token count (the planning denominator); data cost is spread over
*unique* tokens. Every figure names its denominator. ``--sensitivity`` moves each input
by ±20% and ranks them by how far loaded cost per million tokens moves (a tornado);
``vary`` gives the answer at each value of one or more inputs.

One idea per file:

    request.py       TrainRequest: every input, declared once
    inputs.py        the accelerator, price, FLOPs per token, tokens and MFU, each with its basis
    auto_goodput.py  --goodput auto: goodput from failure rates at the cluster's own size
    cluster.py       --gpus gives the wall time, --deadline the GPUs it needs
    run.py           the steps from FLOPs to cost, energy and training state
    sensitivity.py   the tornado
    vary.py          the sweep
    plans.py         plan files: what --save writes and how its defaults read back
    report.py        the Report's table and text
"""

from __future__ import annotations

from napkin.calculators import Calculator
from napkin.calculators.train.auto_goodput import peak_cluster
from napkin.calculators.train.plans import plan_values, save_plan, thaw_defaults
from napkin.calculators.train.report import TrainReport
from napkin.calculators.train.request import TrainRequest
from napkin.calculators.train.run import charts, run_train
from napkin.calculators.train.sensitivity import Inputs, sensitivity, sensitivity_text
from napkin.calculators.train.vary import parse_vary, vary_rows, vary_text

__all__ = ["TRAIN", "Inputs", "TrainReport", "TrainRequest", "parse_vary", "peak_cluster", "plan_values",
           "run_train", "save_plan", "sensitivity", "sensitivity_text", "thaw_defaults", "vary_rows", "vary_text"]

TRAIN = Calculator(
    "train", TrainRequest, run_train, "Training cost",
    "Cost, time and cluster size of a planned training run: marginal and loaded $ per million tokens.",
    establishes="what the final run's compute costs at the stated MFU, goodput and price, and what the whole "
                "model costs with the overheads written down",
    needs_measuring="MFU and goodput from a short full-scale trial; your loaded GPU-hour; last quarter's "
                    "experiment, eval and idle spend for the overhead multipliers",
    charts=charts,
)
