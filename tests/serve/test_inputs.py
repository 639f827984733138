"""What serve, plan serve and journey resolve before computing: ModelSpec geometry, the compute precision,
and defaults read from catalog/assumptions.toml with their sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from napkin import calculate, calculators, catalog
from napkin.calculators import resolve
from napkin.derivation import Report
from napkin.hardware import Accelerator

BIN = Path(sys.executable).parent


# ----------------------------------------------------------------------- ModelSpec geometry
def test_attention_width_is_query_heads_times_head_dim_and_mla_averages_its_heads():
    assert catalog.model("llama-3.1-70b").d_attn == 64 * 128
    # DeepSeek-V3 (arXiv:2412.19437): 128 heads, QK heads of 128 + 64 dims, V heads of 128: (192 + 128) / 2 = 160
    assert catalog.model("deepseek-v3").d_attn == 128 * 160


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3", "llama-3.1-8b"])
def test_moe_split_adds_up_to_total_and_to_active(name):
    m = catalog.model(name)
    shared, routed = m.moe_split()
    e, k = m.routing
    assert shared + routed == pytest.approx(m.params, rel=1e-12)
    assert shared + routed * k / e == pytest.approx(m.active_params, rel=1e-12)
    if not m.is_moe:
        assert (routed, m.routing) == (0.0, (1.0, 1.0))


def test_window_as_the_attention_formulas_take_it():
    # Mistral 7B (arXiv:2310.06825): all 32 layers attend over the last 4,096 tokens; Llama 3.1 has no window
    assert catalog.model("mistral-7b").window() == {"window_tokens": 4096.0, "window_layers": 32.0}
    assert catalog.model("llama-3.1-8b").window() == {"window_tokens": float("inf"), "window_layers": 0.0}


# ----------------------------------------------------------------------- compute precision
def test_compute_precision_follows_the_dequantisation_chain():
    h100, a100 = catalog.gpu("h100"), catalog.gpu("a100-sxm-80gb")
    assert resolve.compute_precision(h100, "int4") == "bf16"  # int4 weights are multiplied in bf16
    assert resolve.compute_precision(h100, "fp8") == "fp8"
    assert resolve.compute_precision(a100, "fp8") == "bf16"  # no fp8 tensor cores on Ampere
    assert resolve.compute_precision(catalog.gpu("tpu-v5e"), "fp32") is None  # fp32 -> tf32 -> fp32: no peak
    bare = Accelerator(name="bare", vendor="x", dense_flops_per_s={"int8": 1e15}, memory_bytes=1e9,
                       memory_bytes_per_s=1e12, scale_up_domain=1, source="test")
    assert resolve.compute_precision(bare, "int4") is None


def test_serve_and_journey_word_a_missing_compute_precision_each_their_way():
    with pytest.raises(Exception, match="has no compute precision on the TPU v5e"):
        calculate("serve", model="llama-3.1-8b", gpu="tpu-v5e", precision="fp32")
    with pytest.raises(Exception, match="has no tensor-core peak on the TPU v5e"):
        calculate("journey", model="llama-3.1-8b", gpu="tpu-v5e", gpus=1, precision="fp32")


# ----------------------------------------------------------------------- defaults as sourced data
@pytest.mark.parametrize("calc, field, key", [
    ("serve", "usable", "serve_usable_memory_fraction"),
    ("serve", "chunk", "chunk_tokens"),
    ("plan-serve", "chunk", "chunk_tokens"),
    ("plan-serve", "utilization", "plan_serve_utilization"),
    ("journey", "mfu", "journey_prefill_mfu"),
    ("journey", "disk_bandwidth", "disk_bandwidth_bytes_per_s"),
    ("journey", "usd_per_gpu_hour", "journey_usd_per_gpu_hour"),
    ("journey", "price_in", "api_usd_per_million_input"),
    ("journey", "price_out", "api_usd_per_million_output"),
    ("journey", "system_tokens", "journey_system_tokens"),
])
def test_request_defaults_are_the_catalog_defaults(calc, field, key):
    from napkin.request import fields

    info = next(f for f in fields(calculators.get(calc).request) if f.name == field)
    assert info.default == catalog.default_value(key)


def test_an_assumed_default_carries_its_source_and_a_given_value_does_not():
    r = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=16, tp=16, batch=8, draft="llama-3.2-1b")
    a = {x.name: x for x in r.assumptions}
    assert a["acceptance"].basis == "assumed" and "Leviathan" in a["acceptance"].source
    assert a["gemm_efficiency"].basis == "catalog" and "MAMF" in a["gemm_efficiency"].source
    assert a["allreduce_latency"].replaced_by.startswith("nccl-tests")
    assert a["per_layer_overhead"].basis == "fitted" and "leave-sources-out" in a["per_layer_overhead"].source
    assert "NVIDIA DGX H100 User Guide" in a["scale_out_bandwidth"].source  # TP 16 leaves the 8-GPU board
    given = calculate("serve", model="llama-3.1-70b", gpu="h100", gpus=8, usable=0.8, acceptance=0.6,
                      draft="llama-3.2-1b", price="2/h", utilization=0.5)
    g = {x.name: x for x in given.assumptions}
    for name in ("usable", "acceptance", "utilization"):
        assert (g[name].basis, g[name].source) == ("given", ""), name
    j = {x.name: x for x in calculate("journey").assumptions}
    assert "Samsung 990 PRO" in j["disk_bandwidth"].source and j["disk_bandwidth"].basis == "assumed"


def test_assume_field_records_the_entry_note_and_the_basis():
    from napkin.calculators.journey import JourneyRequest

    r = Report("t")
    resolve.assume_field(r, "mfu", JourneyRequest(), "journey_prefill_mfu")
    resolve.assume_field(r, "disk_bandwidth", JourneyRequest(disk_bandwidth=2e9), "disk_bandwidth_bytes_per_s")
    mfu, disk = r.assumptions
    assert (mfu.value, mfu.basis, mfu.note) == (0.4, "assumed", catalog.default("journey_prefill_mfu").note)
    assert (disk.value, disk.basis, disk.source) == (2e9, "given", "")


# ----------------------------------------------------------------------- --cite on the commands
@pytest.mark.parametrize("argv, formula", [
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--batch", "16"], "operators.step_seconds"),
    (["plan", "serve", "--model", "llama-3.1-70b", "--rate", "10/s", "--gpu", "h100", "--max-gpus", "8"], None),
    (["journey"], "operators.step_seconds"),
    (["bill", "claude-sonnet-4", "--as-of", "2025-10-01"], "bill.api_request_usd"),
])
def test_cite_shows_formulas_and_sources_on_commands_that_print_their_own_tables(argv, formula):
    plain = subprocess.run([str(BIN / "napkin"), *argv, "--explain"], capture_output=True, text=True, check=True)
    cited = subprocess.run([str(BIN / "napkin"), *argv, "--cite"], capture_output=True, text=True, check=True)
    assert "source:" not in plain.stdout
    if formula:
        assert f"formula {formula};" in cited.stdout
    if argv[0] != "bill":
        assert "      source: " in cited.stdout  # a default assumption's source, under its line


@pytest.mark.parametrize("gpu,bandwidth,source", [
    ("h100", 3.35e12, "NVIDIA H100 Tensor Core GPU datasheet"),  # H100 SXM: 3.35 TB/s
    ("mi300x", 5.3e12, "AMD Instinct MI300X"),  # MI300X: 5.3 TB/s
])
def test_the_bandwidth_assumption_names_its_datasheet(gpu, bandwidth, source):
    """The decode floor's bandwidth cites the datasheet as the peak beside it does (review: it read 'H100 SXM HBM
    bandwidth (catalog)', naming no source)."""
    from napkin import calculate

    a = {x["name"]: x for x in calculate("serve", model="llama-3.1-8b", gpu=gpu, batch=8).to_dict()["assumptions"]}
    assert a["memory_bytes_per_s"]["value"] == bandwidth
    assert source in a["memory_bytes_per_s"]["note"] and "(catalog)" not in a["memory_bytes_per_s"]["note"]
