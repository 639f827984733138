"""Invariants of the training planner's formulas and search (hypothesis), and Korthikanti et al. 2022's
Table 2 reproduced by the activation formulas for every GPT shape drawn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from napkin.derivation import Report
from napkin.formulas import activations as A
from napkin.formulas import parallelism as P
from napkin.plan.train_eval import evaluate, figures
from napkin.plan.train_request import PlanTrainRequest
from napkin.plan.train_resolve import resolve
from napkin.request import parse_request

pow2 = st.sampled_from([1, 2, 4, 8])


def korthikanti(s, b, h, a, t, *, sp, selective, full, flash=False, dropout=True):
    """The activation formulas for a GPT layer (MHA, GeLU 4h, LayerNorm), in bytes at 16 bits."""
    T = s * b
    if full:
        return A.checkpoint_activation_bytes(T, d_model=h, tp=t, sequence_parallel=sp)
    rep = A.replicated_activation_bytes(T, d_model=h, tp=t, sequence_parallel=sp, dropout=float(dropout))
    att = A.attention_activation_bytes(T, seq_len=s, n_heads=a, d_attn=h, d_kv=h, tp=t, kv_shards=t,
                                       flash=float(flash), dropout=float(dropout), selective=float(selective))
    mlp = A.mlp_activation_bytes(T, d_ff_active=4 * h, d_model=h, tp=t, ff_tensors=2.0)
    return rep + att + mlp


@given(s=st.sampled_from([512, 2048, 4096]), b=st.integers(1, 8), h=st.sampled_from([1024, 4096, 12288]),
       a=st.sampled_from([16, 32, 96]), t=pow2)
def test_activations_are_korthikanti_table_2(s, b, h, a, t):
    """Korthikanti et al. 2022, Table 2, activation bytes per layer (s sequence, b micro-batch, h hidden, a heads)."""
    sbh = s * b * h
    assert korthikanti(s, b, h, a, 1, sp=False, selective=False, full=False) == pytest.approx(
        sbh * (34 + 5 * a * s / h))  # no parallelism
    assert korthikanti(s, b, h, a, t, sp=False, selective=False, full=False) == pytest.approx(
        sbh * (10 + 24 / t + 5 * a * s / (h * t)))  # tensor parallel
    assert korthikanti(s, b, h, a, t, sp=True, selective=False, full=False) == pytest.approx(
        sbh * (34 / t + 5 * a * s / (h * t)))  # tensor + sequence parallel
    assert korthikanti(s, b, h, a, t, sp=False, selective=True, full=False) == pytest.approx(
        sbh * (10 + 24 / t))  # tensor parallel + selective recompute
    assert korthikanti(s, b, h, a, t, sp=True, selective=True, full=False) == pytest.approx(
        sbh * 34 / t)  # tensor + sequence parallel + selective recompute
    assert korthikanti(s, b, h, a, t, sp=False, selective=False, full=True) == pytest.approx(sbh * 2)  # full


@given(s=st.sampled_from([2048, 8192]), h=st.sampled_from([4096, 8192]), a=st.sampled_from([32, 64]), t=pow2)
def test_flash_attention_stores_no_square_and_selective_saves_nothing_more(s, h, a, t):
    with_flash = korthikanti(s, 1, h, a, t, sp=True, selective=False, full=False, flash=True, dropout=False)
    unfused = korthikanti(s, 1, h, a, t, sp=True, selective=False, full=False, flash=False, dropout=False)
    assert unfused - with_flash == pytest.approx(s * a / t * (2 * s - 4))  # the softmax output (2 B) for LSE (4 B)
    selective = korthikanti(s, 1, h, a, t, sp=True, selective=True, full=False, flash=True, dropout=False)
    assert with_flash - selective == pytest.approx(s * a / t * 4)  # only the LSE


@given(p=st.integers(1, 64), v=st.integers(1, 8), m=st.integers(1, 512))
def test_bubble_fraction_of_the_step_is_in_0_1(p, v, m):
    frac = P.bubble_fraction(p, n_microbatches=m, interleave=v)
    assert frac == (p - 1) / (m * v)
    share = frac / (1 + frac)  # of the whole step: (p − 1) / (m · v + p − 1)
    assert 0 <= share < 1


@given(L=st.sampled_from([32, 80, 96, 126]), p=st.sampled_from([1, 2, 4, 8, 16]), v=st.integers(1, 4),
       m=st.integers(1, 256))
def test_layers_in_flight(L, p, v, m):
    Ls = P.stage_layers(L, pp=p)
    assert Ls * p >= L and (Ls - 1) * p < L  # the busiest stage holds ceil(L / p) layers
    got = P.layers_in_flight(Ls, pp=p, interleave=v, n_microbatches=m)
    if v == 1 and m >= p:
        assert got == Ls * p  # 1F1B: p micro-batches of the stage's layers
    assert got <= Ls * (1 + (p - 1) / (p * v)) * p + 1e-9 or v == 1
    assert got <= m * Ls + 1e-9  # never more micro-batches than exist


def setup(model="llama-3.1-70b", gpus=512, seq=4096, batch="512seq"):
    req = parse_request(PlanTrainRequest, {"model": model, "gpu": "h100-sxm", "gpus": [gpus], "seq_len": seq,
                                           "global_batch": batch, "batch_tolerance": 0})
    return resolve(req, Report("p"))[0]


S70 = setup()
DEGREES = dict(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4, 8]), cp=st.sampled_from([1, 2]),
               zero=st.integers(0, 3), recompute=st.integers(0, 2), mb=st.sampled_from([1, 2, 4]),
               sp=st.integers(0, 1))


def cfg(tp, pp, cp, zero, recompute, mb, sp, dp=None):
    return dict(tp=tp, pp=pp, cp=cp, ep=1, dp=dp or 512 // (tp * pp * cp), zero=zero, recompute=recompute,
                micro_batch=mb, interleave=1, sp=sp)


@settings(max_examples=60)
@given(**DEGREES)
def test_memory_falls_as_a_degree_grows(tp, pp, cp, zero, recompute, mb, sp):
    """Each degree grown with the others held (the cluster grows with it) lowers the memory per GPU."""
    base = evaluate(S70, **cfg(tp, pp, cp, zero, recompute, mb, sp, dp=8))["memory"]
    if tp < 8:  # TP halves the weights and the split activations (all of them with SP)
        more = evaluate(S70, **cfg(2 * tp, pp, cp, zero, recompute, mb, sp, dp=8))["memory"]
        assert float(more["weights"]) < float(base["weights"]) and float(more["total"]) < float(base["total"])
    if pp < 8:  # PP halves the layers a stage holds
        more = evaluate(S70, **cfg(tp, 2 * pp, cp, zero, recompute, mb, sp, dp=8))["memory"]
        assert float(more["weights"]) < float(base["weights"]) and float(more["total"]) <= float(base["total"])
    more = evaluate(S70, **cfg(tp, pp, 2 * cp, zero, recompute, mb, sp, dp=8))["memory"]  # CP halves the tokens
    assert float(more["activations"]) < float(base["activations"])
    more = evaluate(S70, **cfg(tp, pp, cp, zero, recompute, mb, sp, dp=16))["memory"]  # DP shards ZeRO's states
    assert float(more["total"]) <= float(base["total"])
    assert (float(more["optimizer"]) < float(base["optimizer"])) == (zero >= 1)
    if zero < 3:  # one more ZeRO stage never adds memory
        assert float(evaluate(S70, **cfg(tp, pp, cp, zero + 1, recompute, mb, sp, dp=8))["memory"]["total"]) <= float(
            base["total"])
    if recompute < 2:
        assert float(evaluate(S70, **cfg(tp, pp, cp, zero, 2, mb, sp, dp=8))["memory"]["activations"]) < float(
            base["activations"])


@settings(max_examples=60)
@given(**DEGREES)
def test_step_parts_fits_and_utilisation(tp, pp, cp, zero, recompute, mb, sp):
    e = evaluate(S70, **cfg(tp, pp, cp, zero, recompute, mb, sp))
    parts = {k: float(v) for k, v in e["parts"].items()}
    assert all(v >= 0 for v in parts.values())
    assert float(e["step"]) == pytest.approx(sum(parts.values()), rel=1e-12)
    assert 0 <= parts["pp_bubble"] / float(e["step"]) < 1
    assert bool(e["fits"]) == (float(e["memory"]["total"]) <= S70.usable_bytes)
    f = figures(S70, e)
    assert 0 < float(f["mfu"]) <= float(f["hfu"]) < 1
    assert float(f["tokens_per_s"]) == pytest.approx(float(e["config"]["batch"]) * 4096 / float(e["step"]))


def test_grid_agrees_with_one_configuration_at_a_time():
    """The broadcast grid and the scalar evaluation are the same code: every cell equals its own evaluation."""
    from napkin.plan.train_search import INTERLEAVES, MICRO_BATCHES, Space, degree_rows, grid

    space = Space(fixed={"tp": None, "pp": None, "cp": None, "ep": 1, "dp": None}, zero=(0, 1, 2, 3),
                  recompute=(0, 1, 2), micro_batch=MICRO_BATCHES, interleave=INTERLEAVES, sp=(0, 1),
                  tp_beyond_domain=False)
    g = grid(degree_rows(S70, 512, space), space)
    e = evaluate(S70, **g)
    shape = np.broadcast(*[v for v in g.values()]).shape
    step = np.broadcast_to(e["step"], shape)
    total = np.broadcast_to(e["memory"]["total"], shape)
    rng = np.random.default_rng(0)
    for flat in rng.integers(0, step.size, 40):
        i = np.unravel_index(flat, shape)
        one = evaluate(S70, **{k: float(np.broadcast_to(v, shape)[i]) for k, v in g.items()})
        assert float(one["step"]) == pytest.approx(float(step[i]), rel=1e-12)
        assert float(one["memory"]["total"]) == pytest.approx(float(total[i]), rel=1e-12)
