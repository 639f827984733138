"""Training attention FLOPs under a sliding window: a windowed layer's query sees at most W keys."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin import calculate, catalog
from napkin.formulas import flops


def test_mistral_7b_at_32k_attends_over_its_4k_window():
    """Review by hand: all 32 layers of Mistral 7B see a 4,096-token window; causal at T = 32Ki a query sees
    W − W²/(2T) = 3,840 keys on average, so the term is 12 · 4096 · 32 · 3840 = 6.04 GFLOP (not 25.77)."""
    m = catalog.model("mistral-7b")
    got = flops.attention_flops_per_token(32, d_attn=4096, seq_len=32768, convention="causal", **m.window())
    assert got == pytest.approx(12 * 4096 * 32 * 3840, rel=1e-12)
    r = calculate("mfu", model="mistral-7b", tokens_per_step="4Mi", step_time="12s", gpus=64, gpu="h100",
                  flops_convention="causal", seq_len="32Ki")
    assert r["attention_flops_per_token"] == pytest.approx(got, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(L=st.integers(1, 128), lw=st.integers(0, 128), d=st.integers(64, 16384), t=st.integers(1, 1 << 20),
       w=st.integers(1, 1 << 20), conv=st.sampled_from(["causal", "full"]))
def test_a_window_never_adds_work_and_a_wide_one_changes_nothing(L, lw, d, t, w, conv):
    lw = min(lw, L)
    plain = flops.attention_flops_per_token(L, d_attn=d, seq_len=t, convention=conv)
    windowed = flops.attention_flops_per_token(L, d_attn=d, seq_len=t, convention=conv, window_tokens=w,
                                               window_layers=lw)
    assert windowed <= plain * (1 + 1e-12)
    wide = flops.attention_flops_per_token(L, d_attn=d, seq_len=t, convention=conv, window_tokens=t,
                                           window_layers=lw)
    assert wide == pytest.approx(plain, rel=1e-12)
    assert flops.attention_flops_per_token(L, d_attn=d, seq_len=t, convention=conv, window_tokens=math.inf,
                                           window_layers=lw) == plain


def test_mla_attention_counts_its_wider_query_key_heads():
    """Review by hand: DeepSeek-V3's QKᵀ uses 192-wide heads (128 + 64 rope), AV 128-wide: causal at 4Ki the term
    is 3 · 61 · 4096 · (24576 + 16384) = 30.7 GFLOP, not 24.6 at the value width alone."""
    r = calculate("mfu", model="deepseek-v3", flops_convention="causal", seq_len="4Ki", tokens_per_step="4Mi",
                  step_time="10s", gpus=256, gpu="h800")
    assert r["attention_flops_per_token"] == pytest.approx(3 * 61 * 4096 * (24576 + 16384), rel=1e-12)
