"""Physical bounds on a step record: a value past one cannot come from a real run.

A log line whose ``gpus_allocated`` or ``tokens`` is 1e308 is corrupt, not a big run: read
as a figure it turns every total into ``inf``. Such a line is skipped and counted, with
its line number, as a value that is not a number is. The bounds are generous (orders of
magnitude past any run) and each says why it cannot be exceeded.
"""

from __future__ import annotations

from napkin.limits import MAX_DENSE_FLOPS_PER_S, MAX_GPUS  # the ranges every input is held to, with sources
from napkin.units import YEAR
# A model of one parameter still costs 6 FLOPs per token (2 forward, 4 backward: 6N with N = 1).
MIN_FLOPS_PER_TOKEN = 6.0
# Every GPU there could be, at that peak, for a year, on the cheapest token there is: no step holds more.
MAX_TOKENS_PER_STEP = MAX_GPUS * MAX_DENSE_FLOPS_PER_S * YEAR / MIN_FLOPS_PER_TOKEN  # about 5.3e31
# A step counter is a whole number; float64 holds every whole number below 2^53 exactly, and at one step a
# millisecond a run would need 285,000 years to reach it. (A step at or past 2^63 overflows a 64-bit integer.)
MAX_STEP = 2.0**53
# 9999-12-31T23:59:59Z in Unix seconds: a clock past the calendar's last year is corrupt.
MAX_T_WALL_S = 253402300799.0
