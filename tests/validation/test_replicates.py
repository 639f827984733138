"""Configurations that several published sources measured: the floor their disagreement puts under a max error.

TensorRT-LLM's performance overviews re-measured many configurations in later releases. The golden pair:
Llama 3.1 70B in FP16 on two H100 SXM at TP 2, 2,048 tokens in and 2,048 out, 166.792 output tokens/s in the
v0.14.0 overview (https://github.com/NVIDIA/TensorRT-LLM/blob/v0.14.0/docs/source/performance/perf-overview.md)
and 384.36 in v0.15.0's (https://github.com/NVIDIA/TensorRT-LLM/blob/v0.15.0/docs/source/performance/perf-overview.md).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from napkin.validation.replicates import floors, max_error_floor, replicates

RATIO = st.floats(min_value=0.01, max_value=100.0, allow_nan=False)


@given(RATIO, RATIO, st.floats(min_value=0.001, max_value=1000.0))
def test_no_factor_brings_both_measurements_under_the_floor(q1, q2, c):
    """For any factor c on the predictions, the worse of the two relative errors is at least the floor."""
    lo, hi = min(q1, q2), max(q1, q2)
    worst = max(abs(c / lo - 1.0), abs(c / hi - 1.0))
    assert worst >= max_error_floor(lo, hi) - 1e-12


@given(RATIO, RATIO)
def test_the_floor_is_reached_where_the_two_errors_balance(q1, q2):
    lo, hi = min(q1, q2), max(q1, q2)
    best = 2.0 * lo * hi / (lo + hi)
    assert max(abs(best / lo - 1.0), abs(best / hi - 1.0)) == pytest.approx(max_error_floor(lo, hi), rel=1e-9,
                                                                            abs=1e-12)


def test_the_h100_pair_that_no_answer_can_meet_within_30_percent():
    # equal predictions (one configuration): the floor is the measurements' own spread, 384.36 / 166.792 = 2.304
    assert max_error_floor(166.792, 384.36) == pytest.approx(0.39475, abs=1e-5)


def _point(pid, source, version, value, **over):
    p = {"id": pid, "source": source, "engine": "TensorRT-LLM", "engine_version": version, "value": value,
         "model": "LLaMA v3.1 70B", "model_key": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": 2, "tp": 2, "pp": 1,
         "precision": "fp16", "kv_precision": "fp16", "input_tokens": 2048, "output_tokens": 2048,
         "metric": "output_tokens_per_s", "per": "system", "batch": 0, "scenario": "throughput"}
    return {**p, **over}


def test_replicates_group_one_configuration_across_sources_and_divide_out_the_predictions():
    pts = [_point("a", "trtllm-perf-0.14", "0.14.0", 166.792), _point("b", "trtllm-perf-0.15", "0.15.0", 384.36),
           _point("c", "trtllm-perf-0.15", "0.15.0", 300.0, tp=4, gpus=4),  # another layout: one source alone
           _point("d", "trtllm-perf-0.15", "0.15.0", 100.0, model_key="llama-3.1-8b", gpus=1, tp=1)]
    rows = [{"id": p["id"], "group": "throughput"} for p in pts]
    predicted = {"a": 200.0, "b": 220.0, "c": 1.0, "d": 1.0}  # documented settings: b's engine 10% faster
    reps = replicates(rows, pts, lambda p: predicted[p["id"]])
    assert [r["ids"] for r in reps] == [["a", "b"]]
    (rep,) = reps
    assert rep["configuration"] == "Llama 3.1 70B, 2 x H100 SXM, TP 2, fp16, 2,048/2,048"
    assert rep["measured"] == "TensorRT-LLM 0.14.0: 166.792, TensorRT-LLM 0.15.0: 384.36"
    assert rep["measured_spread"] == pytest.approx(384.36 / 166.792)
    assert rep["unexplained_spread"] == pytest.approx((384.36 / 220.0) / (166.792 / 200.0))
    assert rep["max_error_floor"] == pytest.approx(max_error_floor(166.792 / 200.0, 384.36 / 220.0))
    assert floors(reps, bar=0.30) == {"throughput": {"configurations": 1, "floor": rep["max_error_floor"],
                                                     "over_bar": 1}}
    assert floors(reps, bar=0.40) == {"throughput": {"configurations": 1, "floor": rep["max_error_floor"],
                                                     "over_bar": 0}}
