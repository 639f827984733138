"""napkin measure on this machine's CPU (torch 2.13 CPU build), and the calibration it writes.

The quick run happens once per module (a few seconds on 2 cores); the other tests read
its JSON. FLOP counts are checked against hand counts; the GPU path of the report and
calibration is checked on a synthetic measurement of an H100 (no GPU in CI).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from napkin import calibration
from napkin.errors import InputError
from napkin.formulas.roofline import decode_tokens_per_s
from napkin.measure import Measurement, Options, report, to_calibration
from napkin.measure import bandwidth as bw
from napkin.measure import collectives as coll
from napkin.measure import decode as dec
from napkin.measure import matmul as mm
from napkin.measure import train_probe as tp
from napkin.measure.device import Device, catalog_key_for, cpu_cache_bytes
from napkin.measure.noise import Meter, Section, Timing
from napkin.units import GIBI, MEBI


# ------------------------------------------------------------------ the quick run, once


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """`napkin measure --quick --json --save F` on the CPU: (JSON, calibration path)."""
    from napkin.cli import cli

    path = tmp_path_factory.mktemp("measure") / "calibration.toml"
    result = CliRunner().invoke(cli, ["measure", "--quick", "--json", "--save", str(path)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout), path


def test_quick_mode_runs_and_names_what_it_measured(quick):
    data, _ = quick
    assert data["device_kind"] == "cpu"
    assert data["catalog_gpu"] == "none"  # a CPU has no catalog peak ...
    assert any("no catalog peak" in n for n in data["notes"])  # ... and the output says so
    assert data["mode"] == "quick"
    assert data["train_counter_ratio"] == pytest.approx(1.0, rel=1e-9)
    assert isinstance(data["contended"], bool)
    assert data["elapsed_s"] > 0  # reported (its speed is a benchmark's business, not a test's)


def test_bf16_ceiling_above_zero_and_names_its_shape(quick):
    data, _ = quick
    assert data["matmul_bf16_ceiling_flops_per_s"] > 0
    assert data["matmul_bf16_median_flops_per_s"] <= data["matmul_bf16_ceiling_flops_per_s"]
    assert data["matmul_bf16_shape"] in {f"{m}x{n}x{k}" for m, n, k in mm.SHAPES[("cpu", True)]}


def test_mfu_is_a_fraction_of_the_measured_ceiling(quick):
    data, _ = quick
    assert 0 < data["train_mfu_of_ceiling"] <= 1.2
    # the MFU is the model's FLOP rate over the ceiling, from the derivation's own numbers
    rate = data["train_flops_per_token"] * data["train_tokens_per_s"]
    assert data["train_mfu_of_ceiling"] == pytest.approx(rate / data["matmul_fp32_ceiling_flops_per_s"], rel=1e-9)
    assert "train_mfu" not in data  # no catalog peak on a CPU: no MFU over one


def test_decode_does_not_beat_the_roofline_for_a_model_larger_than_the_cache(quick):
    data, _ = quick
    assert data["decode_weights_bytes"] > cpu_cache_bytes()
    for b in (1, 4, 16):
        assert 0 < data[f"decode_b{b}_tokens_per_s"] <= data[f"decode_b{b}_roofline_tokens_per_s"]


def test_bandwidth_counts_read_plus_written(quick):
    data, _ = quick
    step = next(s for s in data["derivation"] if s["name"] == "copy_bytes_per_s")
    assert step["value"] == pytest.approx(2 * step["values"]["buffer"] / step["values"]["best_time"], rel=1e-12)
    assert "read + bytes written" in step["formula"]


def test_noise_is_reported_per_section(quick):
    data, _ = quick
    for name in ("matmul", "bandwidth", "train", "decode"):
        assert f"noise_{name}_spread" in data
    assert 0 < data["noise_matmul_cpu_per_wall"] <= 2.5  # 2 threads: about 2 when idle
    assert data["contended"] == any(w["code"] == "contended" for w in data["warnings"])


def test_quick_calibration_file_round_trips(quick):
    data, path = quick
    cal = calibration.load(path)
    assert cal.device == data["device"]
    assert cal.memory_bytes_per_s == data["copy_bytes_per_s"]
    assert cal.peak_flops_per_s["bf16"] == data["matmul_bf16_ceiling_flops_per_s"]
    assert cal.training_mfu == data["train_mfu_of_ceiling"]
    assert cal.training_mfu_basis == "measured ceiling"
    assert cal.training_mfu_params == data["train_params"]
    assert cal.matmul_fraction_of_peak == {} and cal.bandwidth_fraction is None  # nothing to divide by
    assert cal.versions["torch"] == torch.__version__
    assert cal.label == f"measured on {data['device']}, {data['date']}"


# ------------------------------------------------------------------ FLOP counts by hand

TINY = tp.GPTConfig(n_layers=2, d_model=64, n_heads=4, seq_len=32, vocab_size=256, batch=2)


def test_flop_count_of_the_test_model_equals_a_hand_count():
    # N = 12·L·d² + V·d = 12·2·64² + 256·64 = 98,304 + 16,384 = 114,688 (embedding lookups excluded)
    assert TINY.n_params_flops == 114_688
    # causal convention per token: 6·N + 6·L·d·T = 688,128 + 6·2·64·32 = 688,128 + 24,576
    assert tp.model_flops_per_token(TINY, "causal") == 712_704
    # FlopCounterMode over one step of B·T = 64 tokens counts the full square of attention:
    # 6·N·64 + 12·L·d·T·64 = 44,040,192 + 3,145,728
    counted = tp.count_flops(torch, TINY)
    assert counted["total"] == 47_185_920
    assert counted["by_op"] == {"mm": 44_040_192, "bmm": 3_145_728}
    assert tp.counter_expectation(TINY, counted) == (47_185_920, True)


def test_recompute_adds_the_blocks_forward_pass_to_hardware_flops():
    cfg = tp.with_recompute(TINY, True)
    # + 2·N_blocks·64 + (12·L·d·T / 3)·64 = + 12,582,912 + 1,048,576
    assert tp.count_flops(torch, cfg)["total"] == 47_185_920 + 12_582_912 + 1_048_576
    assert tp.model_flops_per_token(cfg) == tp.model_flops_per_token(TINY)  # MFU's numerator is unchanged


def test_counter_blind_to_a_fused_attention_kernel_is_compared_with_6n():
    cfg = tp.GPTConfig(n_layers=2, d_model=64, n_heads=4, seq_len=32, vocab_size=256, batch=2, attention="sdpa")
    counted = tp.count_flops(torch, cfg)
    expected, covers = tp.counter_expectation(cfg, counted)
    # the CPU's fused attention is invisible to torch 2.13's counter: only the 6N part is seen
    assert not covers and expected == counted["total"] == 44_040_192


def test_counter_expectation_for_a_fused_kernel_it_counts():
    """On CUDA the counter sees flash attention, and its backward counts the recomputed scores.

    torch/utils/flop_counter.py, sdpa_backward_flop_count: five products backward (score
    recompute, dP, dV, dQ, dK) against two forward: 4 + 10 = 14·L·d·T per token.
    """
    cfg = tp.GPTConfig(n_layers=2, d_model=64, n_heads=4, seq_len=32, vocab_size=256, batch=2, attention="sdpa")
    counted = {"total": 0.0, "by_op": {"mm": 44_040_192.0, "_scaled_dot_product_flash_attention": 1.0,
                                       "_scaled_dot_product_flash_attention_backward": 1.0}}
    expected, covers = tp.counter_expectation(cfg, counted)
    assert covers and expected == 44_040_192 + 14 * 2 * 64 * 32 * 64


def test_model_parameters_match_the_stated_count():
    model = tp.build_model(torch, TINY)
    assert sum(p.numel() for p in model.parameters()) == TINY.total_params
    assert TINY.total_params - TINY.n_params_flops == TINY.seq_len * 64 + 5 * 64  # position table + norm gains


# ------------------------------------------------------------------ the GPU path, synthetically

H100 = Device("cuda", "NVIDIA H100 80GB HBM3", 2, 50 * MEBI, 80e9, "h100-sxm", "h100-sxm", "catalog h100-sxm")


def _synthetic_h100() -> Measurement:
    """An H100 measurement with hand-picked timings, to check the arithmetic of report and calibration."""
    m = Measurement(H100, Options(device="cuda"), "2026-05-01", {"napkin": "0.1.0", "torch": "2.13.0"})
    shape = mm.ShapeResult(8192, 8192, 8192, Timing((0.0015, 0.0016, 0.0017)))
    m.matmul["bf16"] = mm.MatmulResult("bf16", (shape,), 989.5e12)
    m.bandwidth = bw.BandwidthResult(2 * GIBI, Timing((0.002, 0.0021)), Timing((0.0007, 0.0008)), 3.35e12)
    cfg = tp.SIZES[("cuda", True)]
    m.train = tp.TrainResult(cfg, "bf16", Timing((0.05, 0.05, 0.06)), 1.0, 1.0, True, 989.5e12,
                             m.matmul["bf16"].ceiling_flops_per_s)
    dc = dec.DecodeConfig(4, 6656, 52, 50304, 512, (1, 64), "bf16")
    points = tuple(dec.DecodePoint(b, Timing((t,)), decode_tokens_per_s(
        b, memory_bytes_per_s=3.0e12, weights_bytes=dc.weights_bytes, kv_bytes_per_sequence=dc.kv_bytes_per_sequence),
        dc.weights_bytes, dc.kv_bytes_per_sequence) for b, t in ((1, 0.0015), (64, 0.0032)))
    m.decode = dec.DecodeResult(dc, 3.0e12, points, True)
    m.meter = Meter()
    return m


def test_gpu_report_sets_measured_figures_beside_the_catalog_peak():
    r = report(_synthetic_h100())
    ceiling = 2 * 8192**3 / 0.0015  # 733.0 TFLOP/s
    assert r["matmul_bf16_ceiling_flops_per_s"] == pytest.approx(ceiling, rel=1e-12)
    assert r["matmul_bf16_fraction_of_peak"] == pytest.approx(ceiling / 989.5e12, rel=1e-12)  # 0.7408
    assert r["bandwidth_fraction"] == pytest.approx(2 * 2 * GIBI / 0.002 / 3.35e12, rel=1e-12)  # 0.641
    # GPT-2 small: N = 12·12·768² + 50304·768 = 123,568,128; causal 6N + 6·12·768·1024 per token
    assert r["train_params"] == 123_568_128
    assert r["train_flops_per_token"] == 6 * 123_568_128 + 6 * 12 * 768 * 1024
    mfu = (6 * 123_568_128 + 6 * 12 * 768 * 1024) * 8 * 1024 / 0.05 / 989.5e12
    assert r["train_mfu"] == pytest.approx(mfu, rel=1e-12)  # 0.1321
    assert r["train_mfu_of_ceiling"] == pytest.approx(mfu * 989.5e12 / ceiling, rel=1e-12)
    assert {a.name: a.basis for a in r.assumptions}["dense_bf16_peak_flops_per_s"] == "catalog"


def test_cli_plain_output_exact(run_cli, monkeypatch):
    """The plain-text table of a (synthetic) H100 measurement, exactly as the CLI prints it."""
    monkeypatch.setattr("napkin.measure.run", lambda opts, progress=None: _synthetic_h100())
    out = run_cli("measure", "--device", "cuda")
    assert out.stdout == """\
Measured: NVIDIA H100 80GB HBM3
  device                                NVIDIA H100 80GB HBM3
  device_kind                           cuda
  catalog_gpu                           h100-sxm
  date                                  2026-05-01
  mode                                  full
  matmul_bf16_ceiling_flops_per_s       733 TFLOP/s
  matmul_bf16_median_flops_per_s        687.2 TFLOP/s
  matmul_bf16_shape                     8192x8192x8192
  matmul_bf16_catalog_peak_flops_per_s  989.5 TFLOP/s
  matmul_bf16_fraction_of_peak          74.1%
  copy_buffer_bytes                     2.147 GB
  copy_bytes_per_s                      2.147 TB/s
  copy_median_bytes_per_s               2.095 TB/s
  read_bytes_per_s                      3.068 TB/s
  catalog_bytes_per_s                   3.35 TB/s
  bandwidth_fraction                    64.1%
  train_model                           L=12 d=768 h=12 T=1024 V=50304 B=8 bf16
  train_params                          123.6M
  train_flops_per_token                 798 MFLOP
  train_counter_ratio                   1
  train_tokens_per_step                 8,192
  train_step_s                          50 ms
  train_tokens_per_s                    163840/s
  train_model_flops_per_s               130.7 TFLOP/s
  train_mfu                             13.2%
  train_mfu_of_ceiling                  17.8%
  train_mfu_by_convention               6N: 12.3%, causal: 13.2%, full: 14.2%
  decode_model                          L=4 d=6656 V=50304 context=512 bf16
  decode_weights_bytes                  4.923 GB
  decode_kv_bytes_per_sequence          54.53 MB
  decode_b1_tokens_per_s                666.7/s
  decode_b1_roofline_tokens_per_s       602.7/s
  decode_b1_fraction_of_roofline        111%
  decode_b64_tokens_per_s               20000/s
  decode_b64_roofline_tokens_per_s      22824/s
  decode_b64_fraction_of_roofline       87.6%
  contended                             no
  elapsed_s                             0 s
warning [decode-beats-roofline]: decode at batch 1 ran 1.11× the bandwidth roofline: some bytes came from cache, \
or the bandwidth probe was slowed
measured: matmul_bf16_ceiling_flops_per_s = 733 TFLOP/s (best of 3 repeats at 8192x8192x8192)
note: catalog h100-sxm
note: bandwidth convention: copy: bytes read + bytes written (2 × buffer); read: bytes read (1 × buffer)
note: a plan or ledger that counts 6N FLOPs per token (no attention term) must use the 6N MFU: MFU and FLOPs \
per token go together, or the tokens/s they give back is wrong
note: MFU counts model FLOPs per token, 6·N + 6·L·d·T (causal), over step time and peak; it is never read from \
hardware utilisation counters
"""


def test_calibration_round_trips_through_a_file(tmp_path):
    cal = to_calibration(_synthetic_h100())
    path = tmp_path / "h100.toml"
    calibration.save(cal, path)
    back = calibration.load(path)
    assert back.source_path == str(path)
    back.source_path = ""
    assert back == cal
    assert back.catalog_key == "h100-sxm"
    assert back.matmul_fraction_of_peak["bf16"] == pytest.approx(2 * 8192**3 / 0.0015 / 989.5e12, rel=1e-15)
    assert back.training_mfu_basis == "catalog peak"
    # the same run's MFU under each convention: 6N leaves the attention term out of the numerator
    six_n = 6 * 123_568_128 * 8 * 1024 / 0.05 / 989.5e12
    assert back.training_mfu_for("6N") == pytest.approx(six_n, rel=1e-12)
    assert back.training_mfu_for("causal") == back.training_mfu
    assert back.training_mfu_for("full") > back.training_mfu > back.training_mfu_for("6N")
    assert back.label == "measured on NVIDIA H100 80GB HBM3, 2026-05-01"


def test_calibration_changes_napkin_train_as_it_should(run_cli, tmp_path):
    cal = to_calibration(_synthetic_h100())
    path = tmp_path / "h100.toml"
    calibration.save(cal, path)
    args = ("train", "--params", "124M", "--tokens", "10B", "--gpu", "h100", "--gpus", "8", "--json")
    plain = json.loads(run_cli(*args).stdout)
    measured = json.loads(run_cli(*args, "--calibration", str(path)).stdout)
    by_name = {a["name"]: a for a in measured["assumptions"]}
    assert plain["mfu"] == 0.40 and {a["name"]: a for a in plain["assumptions"]}["mfu"]["basis"] == "assumed"
    # train counts 6N FLOPs per token by default, so it takes the run's MFU counted as 6N
    six_n = cal.training_mfu_by_convention["6N"]
    assert measured["mfu"] == six_n < cal.training_mfu
    assert by_name["mfu"]["basis"] == "measured"
    assert by_name["mfu"]["note"] == "measured on NVIDIA H100 80GB HBM3, 2026-05-01"
    # GPU-hours are inversely proportional to MFU, all else equal
    assert measured["gpu_hours"] == pytest.approx(plain["gpu_hours"] * 0.40 / six_n, rel=1e-9)
    # a causal plan takes the causal MFU (the one the measurement states)
    causal = json.loads(run_cli("train", "--model", "gpt2", "--tokens", "10B", "--gpu", "h100", "--gpus", "8",
                                "--flops-convention", "causal", "--seq-len", "1024", "--calibration", str(path),
                                "--json").stdout)
    assert causal["mfu"] == cal.training_mfu
    text = run_cli(*args[:-1], "--calibration", str(path)).stdout
    assert "assumed: mfu" not in text  # the measured MFU is no longer listed as a guess
    # ... and the plain table says where it came from
    assert f"measured: mfu = {six_n * 100:.3g}% (measured on NVIDIA H100 80GB HBM3, 2026-05-01)\n" in text


def test_save_path_is_checked_before_measuring(run_cli, tmp_path, monkeypatch):
    import napkin.measure as M

    monkeypatch.setattr(M, "run", lambda *a, **k: pytest.fail("measured before checking --save"))
    r = run_cli("measure", "--quick", "--save", str(tmp_path / "missing" / "c.toml"), code=1)
    assert r.stderr == (f"error: save is in a folder that does not exist; got {tmp_path / 'missing' / 'c.toml'} "
                        f"(create {tmp_path / 'missing'} first)\n")


def test_a_save_that_fails_late_still_prints_the_measurements(run_cli, tmp_path, monkeypatch):
    import napkin.measure as M
    from napkin.cli import measure as cli_measure

    monkeypatch.setattr(M, "run", lambda *a, **k: _synthetic_h100())

    def refuse(*a, **k):
        raise InputError("save", "c.toml", "cannot be written (disk full)")

    monkeypatch.setattr(cli_measure, "_save", refuse)
    r = run_cli("measure", "--save", str(tmp_path / "c.toml"), code=1)
    assert r.stdout.startswith("Measured: NVIDIA H100 80GB HBM3")
    assert r.stderr == ("error: save could not be written (save cannot be written (disk full); got c.toml); "
                        "the measurements above were not saved\n")


def test_a_cpu_calibration_on_a_gpu_plan_is_said_not_silent(quick, run_cli):
    """Found in review: this CPU's --quick file turned an H100 plan's MFU into the CPU's 14% of its own
    fp32 ceiling with no word. Every reason it may not carry over is a warning now."""
    data, path = quick
    out = json.loads(run_cli("train", "--params", "8B", "--tokens", "1T", "--gpu", "h100-sxm", "--gpus", "64",
                             "--calibration", str(path), "--json").stdout)
    codes = {w["code"] for w in out["warnings"]}
    assert {"calibration-device", "calibration-basis", "calibration-precision"} <= codes
    by_hand = json.loads(run_cli("train", "--params", "8B", "--tokens", "1T", "--peak", "185.9G", "--gpus", "1",
                                 "--calibration", str(path), "--json").stdout)
    assert "calibration-basis" not in {w["code"] for w in by_hand["warnings"]}  # the peak is the user's, not a datasheet's
    device = next(w["message"] for w in out["warnings"] if w["code"] == "calibration-device")
    assert f"measured on {data['device']}, which is not a part in the catalog, not the H100 SXM" in device
    assert ("contended-calibration" in codes) == data["contended"]
    serve = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--calibration", str(path),
                               "--json").stdout)
    assert "calibration-device" in {w["code"] for w in serve["warnings"]}


def test_a_contended_file_says_so_in_every_plan_that_reads_it(run_cli, tmp_path):
    cal = to_calibration(_synthetic_h100())
    cal.contended = True
    cal.allreduce_bus_bytes_per_s = {"16MiB": 300e9}
    cal.allreduce_ranks, cal.allreduce_backend = 8, "nccl"
    path = tmp_path / "busy.toml"
    calibration.save(cal, path)
    for args in (("train", "--params", "124M", "--tokens", "10B", "--gpu", "h100", "--gpus", "8"),
                 ("serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"),
                 ("allreduce", "--size", "16MiB", "--ranks", "8")):
        out = json.loads(run_cli(*args, "--calibration", str(path), "--json").stdout)
        assert [w["code"] for w in out["warnings"]].count("contended-calibration") == 1, args[0]


def test_serve_tp_takes_the_measured_all_reduce_bus_bandwidth(run_cli, tmp_path):
    """Issue 9: serve --calibration uses the measured all-reduce figures for its TP link, at the measured
    size nearest a decode all-reduce (batch · d_model · 2 bytes = 32 · 8192 · 2 = 512 KiB here)."""
    cal = to_calibration(_synthetic_h100())
    cal.allreduce_bus_bytes_per_s = {"64KiB": 20e9, "512KiB": 120e9, "64MiB": 360e9}
    cal.allreduce_ranks, cal.allreduce_backend = 8, "nccl"
    path = tmp_path / "h100.toml"
    calibration.save(cal, path)
    args = ("serve", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "8", "--batch", "32", "--json")
    plain = json.loads(run_cli(*args).stdout)
    measured = json.loads(run_cli(*args, "--calibration", str(path)).stdout)
    link = {a["name"]: a for a in measured["assumptions"]}["link_bytes_per_s_per_direction"]
    assert link["value"] == 120e9 and link["basis"] == "measured"
    assert "at 512KiB over 8 ranks (nccl)" in link["note"]
    assert measured["tpot_s"] > plain["tpot_s"]  # 120 GB/s measured against the catalog's 450 GB/s each way
    # the measured bus bandwidth is what the ring reaches: not multiplied again by the family's 82% (review: it was)
    row = next(o for o in measured["operators"] if o["step"] == "decode" and o["operator"] == "allreduce")
    message = 32 * 8192 * 2
    lat = {a["name"]: a["value"] for a in measured["assumptions"]}["allreduce_latency"]
    assert row["seconds"] == pytest.approx(80 * 2 * (lat + 2 * 7 / 8 * message / 120e9), rel=1e-9)


def test_calibration_feeds_serve_bandwidth_and_prefill_efficiency(tmp_path):
    import napkin

    cal = to_calibration(_synthetic_h100())
    path = tmp_path / "h100.toml"
    calibration.save(cal, path)
    r = napkin.calculate("serve", {"model": "llama-3.1-8b", "gpu": "h100", "calibration": str(path)})
    got = {a.name: a for a in r.assumptions}
    assert got["bandwidth_efficiency"].value == pytest.approx(cal.bandwidth_fraction, rel=1e-12)
    assert got["bandwidth_efficiency"].basis == "measured"
    assert got["gemm_efficiency"].value == pytest.approx(cal.matmul_fraction_of_peak["bf16"], rel=1e-12)
    assert got["gemm_efficiency"].note.startswith(cal.label)


# ------------------------------------------------------------------ calibration errors


@pytest.mark.parametrize("text, field, problem", [
    ('device = "x"\ndate = "2026-01-01"\n', "calibration.memory_bytes_per_s", "is missing from the file"),
    ('device = "x"\ndate = "2026-01-01"\nmemory_bytes_per_s = "fast"\n', "calibration.memory_bytes_per_s",
     "is not valid (Expected `float`, got `str`)"),
    ('device = "x"\ndate = "2026-01-01"\nmemory_bytes_per_s = 1e10\ntraining_mfu = 40\n', "calibration.training_mfu",
     "must be a fraction near or below 1"),
    ('device = "x"\ndate = "2026-01-01"\nmemory_bytes_per_s = -1.0\n', "calibration.memory_bytes_per_s",
     "must be a positive number"),
    ('device = "x\n', "calibration", "is not valid TOML"),
])
def test_bad_calibration_files_name_the_field(tmp_path, text, field, problem):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        calibration.load(path)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field} {problem}")


def test_missing_calibration_is_one_line_from_the_cli(run_cli, tmp_path):
    out = run_cli("train", "--params", "7B", "--tokens", "2T", "--calibration", str(tmp_path / "nope.toml"), code=1)
    assert out.stderr == (f"error: calibration does not exist; got {tmp_path / 'nope.toml'} "
                          f"(write one with `napkin measure --save calibration.toml`)\n")


# ------------------------------------------------------------------ CLI edges


def test_without_torch_one_clear_line(run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    out = run_cli("measure", "--quick", code=1)
    assert out.stderr == "error: napkin measure needs PyTorch: pip install 'llm-napkin[measure]'\n"


def test_unknown_precision_and_missing_cuda_are_one_line(run_cli):
    out = run_cli("measure", "--quick", "--precision", "bf16,fp33", code=1)
    assert out.stderr.startswith("error: precision is not a precision napkin knows; got fp33")
    out = run_cli("measure", "--quick", "--device", "cuda", code=1)
    assert out.stderr.startswith("error: device is not available: this PyTorch sees no CUDA device")


def test_unmeasurable_precisions_are_noted_not_faked():
    assert mm.why_not("tf32", "cpu") == "tf32 is a GPU tensor-core mode; a CPU computes fp32"
    assert mm.why_not("fp8", "cuda").startswith("fp8 needs scaled matmuls")
    assert mm.why_not("bf16", "cpu") is None


# ------------------------------------------------------------------ device names


@pytest.mark.parametrize("name, key", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA GB200", "gb200"),
    ("NVIDIA H800", "h800"),
    ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA L40S", "l40s"),
])
def test_cuda_names_map_to_catalog_entries(name, key):
    from napkin import catalog

    assert catalog_key_for(name) == key
    assert catalog.gpu(key).key == key  # the key is one the catalog holds


def test_unknown_names_map_to_nothing():
    assert catalog_key_for("AMD EPYC 9654 96-Core Processor") is None
    assert catalog_key_for("NVIDIA Quadro P400") is None


# ------------------------------------------------------------------ noise


def test_contention_marks():
    quiet = Section("matmul", 2.0, timings=[Timing((1.0, 1.02, 1.01), (1.95, 1.98, 1.97))])
    assert quiet.cpu_per_wall == pytest.approx(5.9 / 3.03) and not quiet.contended
    starved = Section("matmul", 2.0, timings=[Timing((1.0, 1.02, 1.01), (1.0, 1.0, 1.0))])
    assert starved.contended and "CPU/wall 0.99" in starved.reasons[0]
    jumpy = Section("train", None, timings=[Timing((1.0, 1.3, 1.5))])
    assert jumpy.spread == pytest.approx(0.3) and jumpy.contended


# ------------------------------------------------------------------ decode sizing


def test_decode_model_is_sized_past_the_cache():
    dev = Device("cpu", "cpu", 2, 32 * MEBI, None, None, None, "")
    cfg = dec.default_config(dev, True, "fp32")
    assert cfg.weights_bytes >= 4 * 32 * MEBI
    assert cfg.weights_bytes == 4 * (12 * cfg.n_layers * cfg.d_model**2 + cfg.vocab_size * cfg.d_model)
    assert cfg.kv_bytes_per_sequence == 4 * 2 * cfg.n_layers * cfg.d_model * cfg.context


# ------------------------------------------------------------------ collectives


def test_bus_bandwidth_is_algbw_times_two_n_minus_one_over_n():
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw · 2(n−1)/n; 1 GB in 10 ms over 8 ranks
    assert coll.bus_bytes_per_s(1e9, seconds=0.01, n_ranks=8) == pytest.approx(1e11 * 1.75, rel=1e-12)
    assert coll.bus_bytes_per_s(1e9, seconds=0.01, n_ranks=2) == pytest.approx(1e11, rel=1e-12)


def test_allreduce_uses_the_measured_bus_bandwidth_nearest_the_size(run_cli, tmp_path):
    cal = to_calibration(_synthetic_h100())
    cal.allreduce_bus_bytes_per_s = {"1MiB": 5e10, "64MiB": 3.0e11, "1GiB": 3.6e11}
    cal.allreduce_ranks, cal.allreduce_backend = 8, "nccl"
    path = tmp_path / "cal.toml"
    calibration.save(cal, path)
    assert calibration.load(path).allreduce_bus_at(2e6) == ("1MiB", 5e10)
    data = json.loads(run_cli("allreduce", "--size", "100MB", "--ranks", "8", "--calibration", str(path),
                              "--json").stdout)
    # 64 MiB is the measured size nearest 100 MB: t = 2·7/8 · 100 MB / 300 GB/s = 583.3 us
    assert data["link_bytes_per_s_per_direction"] == 3.0e11
    assert data["seconds"] == pytest.approx(2 * 7 / 8 * 100e6 / 3.0e11, rel=1e-12)
    link = next(a for a in data["assumptions"] if a["name"] == "link_bytes_per_s_per_direction")
    assert link["basis"] == "measured" and link["note"].startswith(cal.label + ": all-reduce bus bandwidth at 64MiB")
    assert not data["warnings"]
    four = json.loads(run_cli("allreduce", "--size", "100MB", "--ranks", "4", "--calibration", str(path),
                              "--json").stdout)
    assert [w["code"] for w in four["warnings"]] == ["calibration-ranks"]


def test_allreduce_with_a_calibration_lacking_collectives_is_one_line(run_cli, tmp_path):
    path = tmp_path / "cal.toml"
    calibration.save(to_calibration(_synthetic_h100()), path)
    out = run_cli("allreduce", "--size", "1GB", "--ranks", "8", "--calibration", str(path), code=1)
    assert out.stderr == (f"error: calibration has no all-reduce figures; got {path} (add them with "
                          f"`torchrun --nproc-per-node N -m napkin.measure --collectives --save FILE`)\n")


def test_collectives_two_gloo_ranks_under_torchrun(tmp_path):
    cal = to_calibration(_synthetic_h100())
    cal.device = coll_device = __import__("napkin.measure.device", fromlist=["cpu_name"]).cpu_name()
    path = tmp_path / "cal.toml"
    calibration.save(cal, path)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "napkin.measure", "--collectives", "--quick", "--sizes", "64KiB,1MiB", "--iters", "3",
           "--save", str(path), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd=Path(__file__).parent)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["ranks"] == 2 and data["backend"] == "gloo" and data["device"] == coll_device
    assert data["allreduce_64KiB_bus_bytes_per_s"] > 0 and data["allreduce_1MiB_bus_bytes_per_s"] > 0
    back = calibration.load(path)
    assert back.allreduce_bus_bytes_per_s == {"64KiB": data["allreduce_64KiB_bus_bytes_per_s"],
                                              "1MiB": data["allreduce_1MiB_bus_bytes_per_s"]}
    assert back.allreduce_ranks == 2 and back.allreduce_backend == "gloo"
    assert back.training_mfu == cal.training_mfu  # the rest of the file is kept


def test_collectives_outside_torchrun_is_one_line():
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")}
    out = subprocess.run([sys.executable, "-m", "napkin.measure", "--collectives"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 1
    assert out.stderr == ("error: collectives needs a process group; got one process (run under torchrun: "
                          "torchrun --nproc-per-node N -m napkin.measure --collectives)\n")


# ------------------------------------------------------------------ properties

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_pos = st.floats(min_value=1e-6, max_value=1e18, allow_nan=False, allow_infinity=False)
_frac = st.floats(min_value=1e-4, max_value=1.5, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(device=st.text(min_size=1, max_size=40), bw_=_pos, frac=_frac, peaks=st.dictionaries(
    st.sampled_from(["fp32", "tf32", "bf16", "fp16"]), _pos, max_size=4), mfu=st.none() | _frac)
def test_calibration_text_round_trips_exactly(device, bw_, frac, peaks, mfu):
    cal = calibration.Calibration(device=device, date="2026-01-02", memory_bytes_per_s=bw_, bandwidth_fraction=frac,
                                  peak_flops_per_s=peaks, training_mfu=mfu, versions={"torch": "2.13.0"})
    import tomllib

    back = calibration.Calibration(**{**tomllib.loads(calibration.dumps(cal))})
    assert back == cal


@settings(max_examples=100, deadline=None)
@given(size=st.floats(min_value=1.0, max_value=1e12), seconds=st.floats(min_value=1e-7, max_value=1e3),
       n=st.integers(min_value=2, max_value=4096))
def test_bus_bandwidth_is_the_link_rate_napkins_ring_model_divides_by(size, seconds, n):
    """Feeding the measured bus bandwidth back into napkin's ring model gives the measured time."""
    from napkin.formulas import comm

    busbw = coll.bus_bytes_per_s(size, seconds=seconds, n_ranks=n)
    t = comm.allreduce_seconds(comm.ring_allreduce_bytes_per_rank(size, n_ranks=n),
                               link_bytes_per_s_per_direction=busbw, n_ranks=n)
    assert t == pytest.approx(seconds, rel=1e-12)
