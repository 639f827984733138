"""A step lasts the longer of the GPU's work and the host's (--host-per-request).

Source of the published figure: TensorRT-LLM pull request #10273 (2025-12-24): the PyTorch executor on
GB200 at max_batch_size 1536 per rank spends 45.11 ms of host time per iteration (GPT-OSS-120B),
45.11 ms / 1536 = 29.37 us per request. The pattern it explains: TensorRT-LLM 1.0's performance
overview ran Qwen3-30B-A3B (FP4, 128/128 tokens) at 24,107 output tokens/s on a GB200 (Grace host)
and 39,827 on a B200 (x86 host), the same Blackwell GPU, while Llama 3.3 70B ran 12,189 against 11,147.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from napkin import calculate
from napkin.errors import InputError
from napkin.formulas import scheduling as sch
from napkin.validation import serving as vs

PR_10273_PER_REQUEST = 45.11e-3 / 1536


def run(**kw):
    base = dict(model="llama-3.1-8b", gpu="h100-sxm", batch=64, prompt=16, output=300)
    return calculate("serve", **{**base, **kw})


def test_the_published_host_step_is_the_per_request_figure_times_the_batch():
    assert PR_10273_PER_REQUEST == pytest.approx(29.37e-6, rel=1e-3)
    # a GPU step of 30 ms at 1,536 requests waits for the host's 45.11 ms
    assert sch.host_bound_step_seconds(0.030, requests=1536, host_per_request_s=PR_10273_PER_REQUEST) == \
        pytest.approx(45.11e-3)
    # a GPU step longer than the host's work is unchanged
    assert sch.host_bound_step_seconds(0.050, requests=1536, host_per_request_s=PR_10273_PER_REQUEST) == 0.050


@given(gpu=st.floats(0.0, 1.0), requests=st.floats(0.0, 1e5), h=st.floats(0.0, 1e-3))
def test_the_step_is_the_longer_of_the_two(gpu, requests, h):
    t = sch.host_bound_step_seconds(gpu, requests=requests, host_per_request_s=h)
    assert t >= gpu and t >= h * requests and t in (gpu, h * requests)


def test_a_static_batch_on_a_slow_host_makes_one_token_per_sequence_per_host_step():
    """64 sequences at 1 ms of host time each: every step lasts 64 ms (the GPU's is 8.8 ms), so the batch
    makes 64 tokens per 64 ms: 1,000 tokens/s, whatever the GPU."""
    r = run(scheduling="static", host_per_request=1e-3)
    assert r["host_step_s"] == pytest.approx(0.064)
    assert r["tokens_per_s"] == pytest.approx(1000.0)
    assert r["bound"] == "host"
    assert run(scheduling="static")["tokens_per_s"] > 5 * 1000.0  # the GPU alone is far faster


def test_continuous_batching_pays_the_host_for_each_new_request_too():
    """Each step carries the 64 decoding sequences and, on average, 64 / 300 new requests' prompts:
    h · 64 · (1 + 1/300) per step, so tokens/s = 300 / (h · 301)."""
    r = run(host_per_request=1e-3)
    assert r["tokens_per_s"] == pytest.approx(300 / (1e-3 * 301))
    assert r["bound"] == "host"


def test_a_fast_host_changes_nothing():
    assert run(host_per_request=1e-9)["tokens_per_s"] == run()["tokens_per_s"]
    assert run(host_per_request=1e-9)["bound"] != "host"


def test_the_load_simulation_refuses_it_in_one_line():
    with pytest.raises(InputError) as e:
        run(host_per_request=30e-6, rate=2.0)
    assert str(e.value) == ("host_per_request is not simulated under load; got 30 us (drop --host-per-request "
                            "with --rate or --trace (the steady state counts it))")


def test_validation_counts_each_hosts_time():
    """The TensorRT-LLM 1.0 profile carries the Grace host's measured 29.4 us a request for the GB200 runs
    (45.11 ms an iteration at 1,536 requests, TensorRT-LLM pull request #10273), and for the x86 hosts of the
    B200, H100 and H200 runs that figure scaled by PyTorch's host time to dispatch one Linear layer on each,
    13.48 us on a DGX H100 against 37.08 us on a GB200 (TransformerEngine issue #2053): 10.7 us."""
    prof = vs.profiles()["trtllm-bench-1.0"]
    assert prof["host_per_request"]["gb200"] == pytest.approx(45.11e-3 / 1536, rel=2e-3)
    x86 = 29.4e-6 * 13.48 / 37.08
    assert {k: v for k, v in prof["host_per_request"].items() if k != "gb200"} == {
        "b200": pytest.approx(x86, rel=5e-3), "h100-sxm": pytest.approx(x86, rel=5e-3),
        "h200": pytest.approx(x86, rel=5e-3)}
    by_id = {p["id"]: p for p in vs.points()}
    gb = by_id["trtllm-1.0-qwen3-30b-a3b-gb200-fp4-tp1-128-128-tput"]
    b2 = by_id["trtllm-1.0-qwen3-30b-a3b-b200-fp4-tp1-128-128-tput"]
    assert vs.request_of(gb, prof)["host_per_request"] == 29.4e-6
    assert vs.request_of(b2, prof)["host_per_request"] == 10.7e-6
    assert "host_per_request" not in vs.request_of(by_id["trtllm-0.15-llama3.1-8b-h100-fp8-tp1-128-128-tput"],
                                                   vs.profiles()["trtllm-bench-0.15-0.17"])


def plan(**kw):
    base = dict(model="llama-3.1-8b", gpu="h100-sxm", batch="64", prompt=16, output=300, max_gpus=1, rate="10/s")
    return calculate("plan-serve", **{**base, **kw})


def test_plan_serve_counts_the_host_as_serve_does():
    """The planner's grid takes the same bound: 64 sequences at 1 ms of host time each, on one H100, give
    300 / (1 ms · 301) = 996.7 tokens/s a replica in both commands (the GPU alone makes several times that)."""
    row = plan(host_per_request="1ms", tpot="100ms")["ranking"][0]  # its 64 ms steps miss the 50 ms default
    assert (row["gpus"], row["batch"]) == (1, 64)
    one = run(host_per_request=1e-3)
    assert row["tpot_s"] == pytest.approx(1e-3 * 64 * 301 / 300) and row["tpot_s"] == pytest.approx(one["tpot_s"])
    assert 64 / row["tpot_s"] == pytest.approx(one["tokens_per_s"], rel=1e-9)  # 996.7 tokens/s a replica
    assert row["ttft_s"] == pytest.approx(one["ttft_s"], rel=1e-9)
    assert one["ttft_s"] == pytest.approx(65 * 1e-3)  # its chunk's step: 64 decoding + 1 new request's host time
    assert row["bound"] == one["bound"] == "host"
    assert 64 / plan()["ranking"][0]["tpot_s"] > 5 * 996.7


def test_plan_serve_says_the_host_figure_is_given_and_drops_the_error_bar():
    r = plan(host_per_request="30us")
    given_ = {a.name: a for a in r.assumptions}["host_per_request"]
    assert given_.value == pytest.approx(30e-6) and given_.basis == "given"
    assert "best_error_bar" not in r.results and "best_error_bar" in plan().results


def test_plan_serve_refuses_it_under_p99_objectives_in_one_line():
    with pytest.raises(InputError) as e:
        plan(host_per_request="30us", tpot_p99="50ms")
    assert str(e.value) == ("host_per_request is not simulated under load; got 30 us (drop --host-per-request with "
                            "--ttft-p99 or --tpot-p99 (the p99 ranking runs the load simulation); mean objectives "
                            "count it)")
