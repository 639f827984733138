"""Exact output of the seed-004 commands, and their errors (one line, exit 1; usage exit 2)."""

from __future__ import annotations

import json

import pytest


def test_version(run_cli):
    from napkin import __version__

    assert run_cli("--version").stdout == f"napkin, version {__version__}\n"


def test_help_lists_commands(run_cli):
    out = run_cli("--help").stdout
    for name in ("train", "serve", "memory", "roofline", "mfu", "allreduce", "model", "catalog"):
        assert f"  {name} " in out


def test_memory_fit_exact(run_cli):
    out = run_cli("memory", "--model", "llama-3.1-70b", "--context", "8192", "--sequences", "32",
                  "--gpu", "h100", "--gpus", "4").stdout
    assert out == (
        "Memory: Llama 3.1 70B\n"
        "  params              70.55B\n"
        "  weights_bytes       141.1 GB\n"
        "  kv_bytes_per_token  327.7 kB\n"
        "  kv_total_bytes      85.9 GB\n"
        "  capacity_bytes      320 GB\n"
        "  needed_bytes        227 GB\n"
        "  fits                yes\n"
        "  free_bytes          92.99 GB\n"
        "note: kv_total_bytes is exactly 80 GiB (85.9 GB): GB and GiB differ by 7%\n"
        "note: weights + KV only: activations, CUDA context and fragmentation take a few GB more per GPU\n"
    )


def test_memory_does_not_fit_is_a_result(run_cli):
    out = json.loads(run_cli("memory", "--model", "llama-3.1-70b", "--context", "8k", "--sequences", "32",
                             "--gpu", "h100", "--gpus", "2", "--json").stdout)
    assert out["fits"] is False
    assert out["short_by_bytes"] == pytest.approx(out["needed_bytes"] - 160e9)
    assert out["gpus_needed"] == 3


def test_roofline_exact(run_cli):
    out = run_cli("roofline", "--gpu", "h100", "--intensity", "1").stdout
    assert out == (
        "Roofline: H100 SXM bf16\n"
        "  dense_flops_per_s       989.5 TFLOP/s\n"
        "  memory_bytes_per_s      3.35 TB/s\n"
        "  ridge_flops_per_byte    295.4\n"
        "  attainable_flops_per_s  3.35 TFLOP/s\n"
        "  fraction_of_peak        0.339%\n"
        "  bound                   memory\n"
        "note: memory-bound by construction: the fix is fewer bytes (fusion, quantisation) or more FLOPs per "
        "byte (batching), not more threads\n"
    )


def test_allreduce_exact(run_cli):
    out = run_cli("allreduce", "--size", "141GB", "--ranks", "8", "--link", "h100").stdout
    assert out == (
        "Ring all-reduce\n"
        "  link_bytes_per_s_per_direction  450 GB/s\n"
        "  bytes_per_rank                  246.8 GB\n"
        "  seconds                         548.3 ms\n"
        "assumed: latency = 0 s\n"
        "note: each rank sends bytes_per_rank and receives as many; the volume per rank tends to 2 × buffer "
        "and does not shrink with more ranks\n"
    )


def test_explain_shows_the_working(run_cli):
    out = run_cli("memory", "--params", "70B", "--training", "--gpu", "h100", "--explain").stdout
    assert "training_static_bytes = N · 16" in out
    assert "min_gpus_for_state = ceil(static_bytes / (memory · usable)), fully sharded   " \
           "[static_bytes = 1.12 TB, memory = 80 GB, usable = 0.8]   = 18" in out


def test_json_has_derivation_assumptions_warnings(run_cli):
    out = json.loads(run_cli("roofline", "--gpu", "h100", "--peak", "1979T", "--json").stdout)
    assert set(out) >= {"derivation", "assumptions", "warnings", "ridge_flops_per_byte"}
    assert out["warnings"][0]["code"] == "sparse-peak"
    assert out["derivation"][0] == {"name": "ridge_flops_per_byte", "formula": "peak / bandwidth",
                                    "values": {"peak": 1.979e15, "bandwidth": 3.35e12},
                                    "value": pytest.approx(590.746, rel=1e-5), "unit": "number", "note": ""}


@pytest.mark.parametrize("args,message", [
    (["memory", "--params", "7B", "--usable", "80", "--training", "--gpu", "h100"],
     "error: usable must be in (0, 1]; got 80 (did you mean 0.80?)\n"),
    (["memory", "--params", "-7B"], "error: params must be > 0; got -7B (give a positive size)\n"),
    (["memory", "--params", "7B", "--precision", "fp7"],
     "error: precision is not a precision napkin knows; got fp7 (use one of fp32, tf32, bf16, fp16, fp8, int8, "
     "fp6, fp4, int4)\n"),
    (["memory", "--params", "7B", "--gpu", "h100", "--memory", "80Gb"],
     "error: memory is ambiguous: 'Gb' could be bits or bytes; got 80Gb (write GB for bytes or Gbit for bits)\n"),
    (["roofline", "--gpu", "h100", "--precision", "fp4"],
     "error: precision is not supported by the H100 SXM; got fp4 (its dense peaks are at fp32, tf32, bf16, "
     "fp16, fp8, int8)\n"),
    (["mfu", "--params", "70B", "--tokens-per-step", "4M", "--step-time", "2.07GB", "--gpus", "8", "--gpu", "h100"],
     "error: step_time: expected a duration such as 2.07s, 9.3ms, 54d or 3w; got 2.07GB\n"),
    (["allreduce", "--size", "1GB", "--ranks", "8", "--link-bandwidth", "900GB/s"],
     "error: link_bandwidth needs its direction stated; got 900 GB/s (add --bidirectional (a rating like "
     "NVLink's 900 GB/s) or --unidirectional)\n"),
    (["mfu", "--params", "70B", "--step-time", "2s", "--gpus", "8", "--gpu", "h100"],
     "error: tokens_per_step is required; got nothing (give --tokens-per-step)\n"),
])
def test_bad_input_is_one_line_exit_1(run_cli, args, message):
    r = run_cli(*args, code=1)
    assert r.stderr == message
    assert r.stdout == ""


def test_unknown_name_lists_closest(run_cli):
    r = run_cli("memory", "--model", "llama-3.1-70", code=1)
    assert r.stderr.startswith("error: unknown model 'llama-3.1-70'; closest: llama-3.1-70b")
    assert r.stderr.endswith(" (see `napkin catalog models`)\n")
    assert r.stderr.count("\n") == 1


def test_usage_errors_are_one_line_and_exit_1(run_cli):
    r = run_cli("memory", "--no-such-option", code=1)
    assert r.stderr == "error: No such option '--no-such-option'. (see `napkin memory --help`)\n"
    r = run_cli("catalog", "gpu", code=1)
    assert r.stderr == ("error: Invalid value for '{gpus|models|prices}': 'gpu' is not one of 'gpus', 'models', "
                        "'prices'. (see `napkin catalog --help`)\n")
    r = run_cli("trian", code=1)
    assert r.stderr.startswith("error: No such command 'trian'. Did you mean train")
    assert r.stderr.endswith(" (see `napkin --help`)\n") and r.stderr.count("\n") == 1
    r = run_cli("train", "--mfx", "0.3", code=1)
    assert r.stderr == "error: No such option '--mfx'. Did you mean '--mfu'? (see `napkin train --help`)\n"


def test_config_round_trip(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    first = run_cli("memory", "--model", "llama-3.1-70b", "--context", "8k", "--sequences", "32", "--gpu", "h100",
                    "--gpus", "4", "--save", plan, "--json").stdout
    again = run_cli("memory", "--config", plan, "--json").stdout
    assert json.loads(first) == json.loads(again)
    override = json.loads(run_cli("memory", "--config", plan, "--gpus", "2", "--json").stdout)
    assert override["fits"] is False


def test_catalog_json_lists_sources(run_cli):
    rows = json.loads(run_cli("catalog", "gpus", "--json").stdout)
    assert rows and all(r["source"] for r in rows)
    models = json.loads(run_cli("catalog", "models", "--json").stdout)
    assert {"llama-3.1-70b", "deepseek-v3"} <= {m["key"] for m in models}


def test_positional_field_is_also_an_option(run_cli):
    """`napkin bill --model X` (the issue's spelling) and `napkin bill X` are the same request."""
    a = json.loads(run_cli("bill", "claude-sonnet-4", "--input", "1000", "--output", "300", "--json").stdout)
    b = json.loads(run_cli("bill", "--model", "claude-sonnet-4", "--input", "1000", "--output", "300",
                           "--json").stdout)
    assert a == b and b["usd"] == pytest.approx(0.0075)
    r = run_cli("model", "llama-3.1-8b", "--model", "llama-3.1-70b", code=1)
    assert r.stderr.startswith("error: model is given twice")


def test_demo_answers_the_headline_with_its_working(run_cli):
    """cost-7b-2t-marginal / cost-7b-2t-loaded through `napkin demo` (catalog H100 peak, 989.5T)."""
    out = run_cli("demo", "--no-tour").stdout
    assert out.startswith("What does one training token cost? 7B parameters, 2T tokens, H100 (seed 001)\n")
    assert "  marginal_usd            $163,756\n" in out
    assert "  loaded_usd              $387,513\n" in out
    assert "derivation:\n  flops_per_token = 6 · N" in out
