"""The tensor-parallel all-reduce: a one-shot kernel or the ring at the family's measured bus bandwidth.

Golden values are rows of the published sweeps the catalog stores (Bekman, ml-engineering,
network/README.md, 'Real network throughput': nccl-tests all_reduce_perf on one 8 x A100 node,
and all_reduce_bench.py on one 8 x H200 node); invariants are hypothesis properties.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from napkin import calculate
from napkin.catalog import efficiency as eff
from napkin.formulas import comm

A100 = eff.family("a100-sxm-80gb")
H200 = eff.family("h200")
A100_RING = 300e9 * A100.allreduce_bus  # NVLink 3, one direction, at its large-message fraction (234 GB/s)


def a100(message, n=8):
    return comm.tp_allreduce_seconds(message, n_ranks=n, link_bytes_per_s=A100_RING, latency_s=A100.allreduce_latency_s,
                                     curve=comm.padded_curve(A100.allreduce_curve_busbw))


def test_the_ring_takes_the_time_nccl_tests_measured():
    """8 x A100, nccl-tests: '8_388_608  133.5  62.82  109.93' and '67_108_864  684.6  98.02  171.54' (size B,
    time us, algbw, busbw). At those sizes the ring is faster than a one-shot kernel, and its time is the table's."""
    assert a100(8_388_608.0) == pytest.approx(133.5e-6, rel=2e-3)
    assert a100(67_108_864.0) == pytest.approx(684.6e-6, rel=2e-3)
    # the large-message figure alone would say 62.6 us at 8 MiB: half the measured time
    assert 1.75 * 8_388_608 / A100_RING + A100.allreduce_latency_s == pytest.approx(72.8e-6, rel=1e-2)


def test_small_messages_take_the_one_shot_kernel():
    """32 KiB (one decode token of a 16,384-wide model): the ring measured 43.83 us; a one-shot kernel reads the
    7 other buffers (7 x 32 KiB over 234 GB/s, 1.0 us) after one 10.14 us latency."""
    t = a100(32_768.0)
    assert t == pytest.approx(A100.allreduce_latency_s + 7 * 32_768 / A100_RING, rel=1e-12)
    assert t == pytest.approx(11.12e-6, rel=1e-3)


def test_between_measured_sizes_the_time_is_linear_in_the_size():
    """Half-way between 16 MiB (276.6 us) and 32 MiB (424.0 us) the time is the mean of the two measured times;
    below the smallest measured size (32 KiB, 43.83 us) the ring takes that time (a latency floor)."""
    lo, hi = 16_777_216.0, 33_554_432.0
    curve = comm.padded_curve(A100.allreduce_curve_busbw)
    mid = comm.measured_ring_seconds((lo + hi) / 2, n_ranks=8, curve=curve)
    assert mid == pytest.approx((276.6e-6 + 424.0e-6) / 2, rel=2e-3)
    assert comm.measured_ring_seconds(4096.0, n_ranks=8, curve=curve) == pytest.approx(43.83e-6, rel=2e-3)
    # on 2 ranks the ring moves 2 · 1/2 of the message, not 2 · 7/8: 1/1.75 of the 8-rank time
    two = comm.measured_ring_seconds(lo, n_ranks=2, curve=curve)
    assert two == pytest.approx(276.6e-6 / 1.75, rel=2e-3)


def test_a_sweep_that_dips_is_padded():
    """The A100 table: 101.9 us at 1 MiB, 101.4 us at 2 MiB. A 1 MiB message can be padded to 2 MiB, so it takes
    at most 101.4 us: the padded curve's time at 1 MiB is the 2 MiB one."""
    padded = comm.padded_curve(A100.allreduce_curve_busbw)
    t1 = 1.75 * 2 ** 20 / padded[5]
    t2 = 1.75 * 2 ** 21 / padded[6]
    assert t1 == pytest.approx(t2, rel=1e-12) and t2 == pytest.approx(101.4e-6, rel=2e-3)


@settings(max_examples=200, deadline=None)
@given(s1=st.floats(1.0, 2.0 ** 36), s2=st.floats(1.0, 2.0 ** 36), n=st.sampled_from([2, 4, 8]),
       fam=st.sampled_from(["a100-sxm-80gb", "h100-sxm", "h200", "b200"]))
def test_time_never_falls_with_size_and_arrays_match_scalars(s1, s2, n, fam):
    f = eff.family(fam)
    curve = comm.padded_curve(f.allreduce_curve_busbw)
    kw = dict(n_ranks=float(n), link_bytes_per_s=450e9 * f.allreduce_bus, latency_s=f.allreduce_latency_s)
    lo, hi = sorted((s1, s2))
    a = comm.tp_allreduce_seconds(lo, curve=curve, **kw)
    b = comm.tp_allreduce_seconds(hi, curve=curve, **kw)
    assert b >= a * (1 - 1e-12)
    arr = comm.tp_allreduce_seconds(np.array([lo, hi]), curve=np.array([curve, curve]), **kw)
    assert arr.tolist() == pytest.approx([a, b], rel=1e-12)
    # a row without a sweep (NaN) is the α-β ring, as a scalar call without one
    none = comm.tp_allreduce_seconds(np.array([lo, lo]), curve=np.array([curve, [np.nan] * len(curve)]), **kw)
    assert none.tolist() == pytest.approx([a, comm.tp_allreduce_seconds(lo, **kw)], rel=1e-12)
    # never slower than either algorithm alone
    assert a <= kw["latency_s"] + (n - 1) * lo / kw["link_bytes_per_s"] * (1 + 1e-12)


def test_without_a_sweep_the_ring_is_alpha_beta():
    """A family with no published sweep (L40S): the ring is α + 2(n − 1)/n · S / r, never slower than one-shot."""
    t = comm.tp_allreduce_seconds(8e6, n_ranks=4, link_bytes_per_s=20e9, latency_s=15e-6)
    assert t == pytest.approx(15e-6 + 1.5 * 8e6 / 20e9, rel=1e-12)


def test_serve_records_the_bus_bandwidth_at_its_decode_message():
    """Llama 3.1 70B at batch 64 on 8 x H100: a decode all-reduce of 64 x 8,192 x 2 B = 1 MiB, where the 8 x H200
    sweep (the same NVLink 4 board) measured 39.93 GB/s; the answer says so and cites the sweep."""
    r = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=8, batch=64)
    a = {x.name: x for x in r.assumptions}["allreduce_bus_at_decode"]
    assert a.value == pytest.approx(39.93e9, rel=1e-3) and a.basis == "catalog"
    assert "ml-engineering" in a.source and "1.049 MB" in a.note
    # by hand, on one GPU, or beyond the domain: no sweep
    one = calculate("serve", model="llama-3.1-8b", gpu="h100")
    assert "allreduce_bus_at_decode" not in {x.name for x in one.assumptions}
    hand = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=8, batch=64, allreduce_latency="5us")
    assert "allreduce_bus_at_decode" not in {x.name for x in hand.assumptions}


def test_bridged_pcie_cards_reach_the_rest_of_the_server_over_pcie():
    """A100 PCIe cards are bridged in pairs (600 GB/s); TP 4 crosses PCIe Gen4 to the other pair (64 GB/s both
    ways: 32 GB/s each way, A100 datasheet), not the 50 GB/s NIC; TP 16 leaves the 8-card server (the NIC, and
    PCIe on the way)."""
    r = calculate("serve", model="llama-3.1-70b", gpu="a100-pcie-80gb", tp=4)
    assert r["tp_link_bytes_per_s"] == 32e9
    w = next(w.message for w in r.warnings if w.code == "beyond-scale-up-domain")
    assert "cross PCIe at 32 GB/s per GPU" in w
    far = calculate("serve", model="llama-3.1-405b", gpu="a100-pcie-80gb", tp=16, precision="fp8", batch=1)
    assert far["tp_link_bytes_per_s"] == 32e9  # min(PCIe, NIC): the PCIe hop is the slower
    assert "the scale-out network" in next(w.message for w in far.warnings if w.code == "beyond-scale-up-domain")


def test_the_planners_rows_get_their_own_kinds_sweep():
    """The planner times the all-reduce once per kind of row (link, latency, sweep) and gathers it to the rows:
    H100 rows, B200 rows and a row without a sweep (L40S-like, α-β) each get what a scalar call gives them, whether
    the messages are the same on every row or differ by row. (A review found the B200 rows timed on the H100's
    sweep when the rows were mixed: the kinds were numbered, not pointed at their first row.)"""
    h = comm.padded_curve(eff.family("h100-sxm").allreduce_curve_busbw)
    b = comm.padded_curve(eff.family("b200").allreduce_curve_busbw)
    nan = [np.nan] * len(h)
    links = np.array([369e9, 369e9, 684e9, 684e9, 20e9])
    rows = comm.row_sweeps(links, np.array([13e-6] * 4 + [15e-6]), np.array([h, h, b, b, nan]), n_ranks=4.0)
    assert rows.inverse.tolist() == [0, 0, 1, 1, 2]
    message = np.random.default_rng(0).uniform(1e3, 2e9, (1, 3, 7))
    same = comm.tp_allreduce_seconds(message, n_ranks=4.0, link_bytes_per_s=None, latency_s=None, curve=rows)
    each = comm.tp_allreduce_seconds(np.broadcast_to(message, (5, 3, 7)), n_ranks=4.0, link_bytes_per_s=None,
                                     latency_s=None, curve=rows)
    for r, (curve, link, lat) in enumerate([(h, 369e9, 13e-6), (h, 369e9, 13e-6), (b, 684e9, 13e-6),
                                            (b, 684e9, 13e-6), (None, 20e9, 15e-6)]):
        want = [comm.tp_allreduce_seconds(float(m), n_ranks=4.0, link_bytes_per_s=link, latency_s=lat, curve=curve)
                for m in message.ravel()]
        assert same[r].ravel().tolist() == pytest.approx(want, rel=1e-12)
        assert each[r].ravel().tolist() == pytest.approx(want, rel=1e-12)


def test_beyond_the_server_the_words_name_the_pcie_hop_that_sets_the_rate():
    """TP 16 on A100 PCIe cards leaves the 8-card server: its ring crosses PCIe Gen4 (32 GB/s each way, A100
    datasheet: 'PCIe Gen4: 64 GB/s') and the 50 GB/s NIC, so it runs at PCIe's 32 GB/s. The step, the warning, the
    journey's note and the planner's note said the scale-out network's rate was 32 GB/s, or the planner 50 GB/s
    (review: min(scale-up link, scale-out) of 300 and 50 GB/s printed as 32 GB/s)."""

    far = calculate("serve", model="llama-3.1-405b", gpu="a100-pcie-80gb", tp=16, precision="fp8", batch=1)
    step = next(s for s in far.steps if s.name == "tp_link_bytes_per_s")
    assert step.value == 32e9 and "host link" in step.formula and "host_link" in step.values
    w = next(w.message for w in far.warnings if w.code == "beyond-scale-up-domain")
    assert "cross PCIe and the scale-out network at 32 GB/s per GPU (PCIe's, the slower hop)" in w
    j = calculate("journey", model="llama-3.1-405b", gpu="a100-pcie-80gb", gpus=16)
    n = next(n for rung in j["rungs"] for n in rung["notes"] if "16 GPUs span" in n)
    assert "cross PCIe and the scale-out network at 32 GB/s per GPU (PCIe's, the slower hop)" in n
    # the planner: 16 A100 PCIe cards, an 8,000-token prompt within 12 s: only TP 16 is fast enough (10.9 s; TP 8 x 2
    # stages takes 12.4 s)
    p = calculate("plan-serve", model="llama-3.1-405b", gpu="a100-pcie-80gb", max_gpus=16, precision="fp8",
                  price=2, ttft="12s", tpot="1s", prompt=8000, batch="1,2,4", rate="1/s")
    assert p["ranking"][0]["tp"] == 16 and p["ranking"][0]["tp_beyond_scale_up"]
    said = next(n for n in p.notes if n.startswith("the best configuration's TP 16"))
    assert said.endswith("priced as crossing PCIe and the scale-out network at 32 GB/s per GPU (PCIe's, the slower "
                         "hop)")


def test_the_recorded_decode_message_is_one_pipeline_micro_batch():
    """Llama 3.1 70B at batch 64 on 16 x H100 splits into TP 8 x 2 pipeline stages: each decode step carries a
    micro-batch of 32 sequences, so its all-reduce is 32 x 8,192 x 2 B = 512 KiB, where the 8 x H200 sweep measured
    23.94 GB/s (Bekman, ml-engineering, network README), not the 39.93 GB/s of the 1 MiB a whole batch would be."""
    r = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=16, batch=64)
    assert r["tp"] == 8 and r["pp"] == 2
    a = {x.name: x for x in r.assumptions}["allreduce_bus_at_decode"]
    assert a.value == pytest.approx(23.94e9, rel=1e-3) and "524.3 kB" in a.note


def test_the_pcie_hop_runs_at_what_rings_over_pcie_reach():
    """Beyond their bridged pair, A100 PCIe cards ring over PCIe Gen4 at the fraction of its 32 GB/s each way fitted
    to published runs on PCIe servers (below the 65% that 8 L40S reach copying large messages, flashinfer PR #4870, and
    nccl-tests issue #178's 20 GB/s once a third GPU joins bridged pairs), not the NVLink family's 78%: serve, the
    planner and the journey alike."""
    from napkin.catalog import efficiency as eff

    bus = eff.fitted().pcie_allreduce_bus
    assert 0.3 <= bus <= 0.65  # between the mid-size nccl-tests rings of four PCIe cards and the large-message copies
    r = calculate("serve", model="llama-3.1-70b", gpu="a100-pcie-80gb", tp=4, batch=16)
    a = {x.name: x for x in r.assumptions}["pcie_allreduce_bus"]
    assert (a.value, a.basis) == (bus, "fitted") and "flashinfer" in a.source
    row = next(o for o in r["operators"] if o["step"] == "decode" and o["operator"] == "allreduce")
    assert row["memory_s"] == pytest.approx(80 * 2 * 2 * 3 / 4 * 16 * 8192 * 2 / (32e9 * bus), rel=1e-9)
    inside = calculate("serve", model="llama-3.1-70b", gpu="a100-pcie-80gb", tp=2, batch=16)
    assert "pcie_allreduce_bus" not in {x.name for x in inside.assumptions}  # the bridge: the family's figure
    p = calculate("plan-serve", model="llama-3.1-70b", gpu="a100-pcie-80gb", price=2, batch="16", top=50)
    cell = next(x for x in p["pareto_front"] + p["ranking"] if x["tp"] == 4 and x["gpus"] == 4 and x["batch"] == 16)
    assert cell["tpot_s"] == pytest.approx(calculate("serve", model="llama-3.1-70b", gpu="a100-pcie-80gb", tp=4,
                                                     gpus=4, batch=16, prompt=1000, output=300)["tpot_s"], rel=1e-6)


def test_cards_with_no_nvlink_ring_over_pcie_at_the_same_fraction():
    """An L40S server has no NVLink: every TP ring crosses PCIe Gen4 and runs at the fitted PCIe fraction, as bridged
    A100 PCIe cards do beyond their pair; one card all-reduces nothing. The planner prices the same step."""
    from napkin.catalog import efficiency as eff

    bus = eff.fitted().pcie_allreduce_bus
    r = calculate("serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", tp=8, batch=16)
    assert {x.name: x.value for x in r.assumptions}["pcie_allreduce_bus"] == bus
    row = next(o for o in r["operators"] if o["step"] == "decode" and o["operator"] == "allreduce")
    assert row["memory_s"] == pytest.approx(80 * 2 * 2 * 7 / 8 * 16 * 8192 * 2 / (32e9 * bus), rel=1e-9)
    one = calculate("serve", model="llama-3.1-8b", gpu="l40s", precision="fp8", batch=16)
    assert "pcie_allreduce_bus" not in {x.name for x in one.assumptions}
    p = calculate("plan-serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", price=2, batch="16", top=50,
                  tpot="100ms")  # TP 8 over PCIe misses the default 50 ms (TP 4 x PP 2 makes it: 46 ms)
    cell = next(x for x in p["pareto_front"] + p["ranking"] if x["tp"] == 8 and x["gpus"] == 8 and x["batch"] == 16)
    assert cell["tpot_s"] == pytest.approx(calculate("serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", tp=8,
                                                     gpus=8, batch=16, prompt=1000, output=300)["tpot_s"], rel=1e-6)


def test_a_ring_over_pcie_pays_a_fixed_time_for_each_of_its_steps():
    """nccl-tests' smallest all-reduce on PCIe Gen4 cards grows with the ring: 8.97 us on 2 RTX 4090s, 18.90 us on 4
    (kalavai-net/kalavai-client scripts/README.md), 42.14-43.47 us on 8 RTX 4090s (NVIDIA/nccl issue #1530) and
    54.18 us on 8 RTX 3090s (issue #1439): 2(n − 1) steps of about 3.2 us (4.5, 3.2, 3.0-3.1 and 3.9 us a step).
    `serve` takes it where the ring runs over PCIe, in place of the family's figure, and the planner prices the same
    step; a latency given by hand stays, and a bridged pair keeps its NVLink figure."""
    from napkin.catalog import efficiency as eff
    from napkin.formulas.comm import ring_latency_seconds

    hop = eff.pcie().hop_latency_s
    assert hop == 3.2e-6
    assert ring_latency_seconds(8, hop_latency_s=hop) == pytest.approx(44.8e-6)
    for n, measured in ((4, 18.90e-6), (8, 42.14e-6), (8, 54.18e-6)):
        assert ring_latency_seconds(n, hop_latency_s=hop) == pytest.approx(measured, rel=0.22)
    r = calculate("serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", tp=8, batch=1)
    assert {x.name: x.value for x in r.assumptions}["pcie_allreduce_latency"] == pytest.approx(44.8e-6)
    row = next(o for o in r["operators"] if o["step"] == "decode" and o["operator"] == "allreduce")
    rate = 32e9 * eff.fitted().pcie_allreduce_bus  # one token's 16 KiB: the ring, faster than the one-shot kernel
    ring, one_shot = 44.8e-6 + 2 * 7 / 8 * 8192 * 2 / rate, 44.8e-6 + 7 * 8192 * 2 / rate
    assert row["seconds"] == pytest.approx(80 * 2 * min(ring, one_shot), rel=1e-9)
    given = calculate("serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", tp=8, batch=1,
                      allreduce_latency=10e-6)
    assert "pcie_allreduce_latency" not in {x.name for x in given.assumptions}
    pair = calculate("serve", model="llama-3.1-70b", gpu="a100-pcie-80gb", tp=2, batch=1)
    assert "pcie_allreduce_latency" not in {x.name for x in pair.assumptions}  # the bridge: the family's figure
    beyond = calculate("serve", model="llama-3.1-70b", gpu="a100-pcie-80gb", tp=4, batch=1)
    assert {x.name: x.value for x in beyond.assumptions}["pcie_allreduce_latency"] == pytest.approx(19.2e-6)
    p = calculate("plan-serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", price=2, batch="1", top=50,
                  tpot="200ms")
    cell = next(x for x in p["pareto_front"] + p["ranking"] if x["tp"] == 8 and x["gpus"] == 8 and x["batch"] == 1)
    assert cell["tpot_s"] == pytest.approx(calculate("serve", model="llama-3.1-70b", gpu="l40s", precision="fp8", tp=8,
                                                     gpus=8, batch=1, prompt=1000, output=300)["tpot_s"], rel=1e-6)
