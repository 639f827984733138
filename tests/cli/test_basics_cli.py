"""Exact output of the seed-004 commands, and their errors (one line, exit 1, usage errors too)."""

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
        "  context             8,192\n"
        "  sequences           32\n"
        "  kv_total_bytes      85.9 GB\n"
        "  capacity_bytes      320 GB\n"
        "  needed_bytes        227 GB\n"
        "  fits                yes\n"
        "  free_bytes          92.99 GB\n"
        "note: kv_total_bytes is exactly 80 GiB (85.9 GB): GB and GiB differ by 7%\n"
        "note: weights + KV only, against the datasheet capacity: activations, CUDA context and fragmentation take a few GB more per GPU (`napkin serve` counts them: 90% of the capacity the runtime reports)\n"
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
        "  scale_up_domain                 8\n"
        "  bytes_per_rank                  246.8 GB\n"
        "  seconds                         548.3 ms\n"
        "  measured_seconds                511.7 ms\n"
        "assumed: latency = 0 s\n"
        "note: measured_seconds: what the h100 family's published sweep took at this size (the 8 x H200 sweep of "
        "the same NVLink 4 board, Bekman's ml-engineering), 0.93x the floor: NCCL reduces in the NVSwitch (NVLink "
        "SHARP) at large sizes, which the ring's formula does not count\n"
        "note: each rank sends bytes_per_rank and receives as many; the volume per rank tends to 2 × buffer "
        "and does not shrink with more ranks\n"
    )


def test_allreduce_names_what_the_published_sweep_measured(run_cli):
    """8 MiB on 8 x A100: the floor over NVLink 3's 300 GB/s is 48.9 us; nccl-tests measured 133.5 us
    ('8_388_608  133.5  62.82  109.93', Bekman's ml-engineering network README), the time `napkin serve` uses."""
    out = run_cli("allreduce", "--size", "8MiB", "--ranks", "8", "--link", "a100").stdout
    assert "  seconds                         48.93 us\n  measured_seconds                133.5 us\n" in out
    assert "2.7x the floor: the ring's per-chunk latencies dominate below a few hundred MiB" in out
    beyond = run_cli("allreduce", "--size", "8MiB", "--ranks", "16", "--link", "a100").stdout
    assert "measured_seconds" not in beyond  # the sweep is one 8-GPU board's


def test_allreduce_beyond_the_nvlink_bridge_warns(run_cli):
    """The A100 PCIe's NVLink bridge joins 2 cards (NVIDIA NVLink page); 8 ranks of one server cross PCIe Gen4
    (64 GB/s both ways, A100 datasheet), which the warning names with its fix."""
    out = run_cli("allreduce", "--size", "1GB", "--ranks", "8", "--link", "a100-pcie").stdout
    assert out == (
        "Ring all-reduce\n"
        "  link_bytes_per_s_per_direction  300 GB/s\n"
        "  scale_up_domain                 2\n"
        "  bytes_per_rank                  1.75 GB\n"
        "  seconds                         5.833 ms\n"
        "warning [beyond-scale-up-domain]: 8 ranks exceed the A100 PCIe 80GB's scale-up domain of 2 GPUs (NVLink "
        "bridge (2 GPUs), 300 GB/s per direction): the cards of one server beyond it are reached over PCIe, 32 GB/s "
        "each way, and a ring runs at its slowest link: --link-bandwidth 32GB/s --unidirectional\n"
        "assumed: latency = 0 s\n"
        "note: each rank sends bytes_per_rank and receives as many; the volume per rank tends to 2 × buffer "
        "and does not shrink with more ranks\n"
    )
    beyond = json.loads(run_cli("allreduce", "--size", "1GB", "--ranks", "64", "--link", "h100", "--json").stdout)
    assert beyond["scale_up_domain"] == 8
    assert beyond["warnings"][0]["message"].startswith("64 ranks exceed the H100 SXM's scale-up domain of 8 GPUs")


def test_memory_training_fit_exact(run_cli):
    """seed 004: static state is 16 bytes/param, fully sharded; 7B is 112 GB on 8 × 80 GB at 80% usable."""
    out = run_cli("memory", "--params", "7B", "--training", "--gpu", "h100", "--gpus", "8").stdout
    assert out == (
        "Memory\n"
        "  params                    7B\n"
        "  weights_bytes             14 GB\n"
        "  training_static_bytes     112 GB\n"
        "  training_bytes_per_param  bf16 weights: 2, bf16 gradients: 2, fp32 master weights: 4, Adam m (fp32): 4, "
        "Adam v (fp32): 4\n"
        "  min_gpus_for_state        2\n"
        "  capacity_bytes            640 GB\n"
        "  usable_bytes              512 GB\n"
        "  needed_bytes              112 GB\n"
        "  fits                      yes\n"
        "  free_bytes                400 GB\n"
        "assumed: usable = 80%\n"
        "note: activations are extra: they scale with batch × sequence × hidden × layers\n"
        "note: fits counts the static training state only, fully sharded over 8 GPUs at 80% usable: activations "
        "come on top of it\n"
    )
    short = json.loads(run_cli("memory", "--params", "70B", "--training", "--gpu", "h100", "--gpus", "8",
                               "--json").stdout)
    assert short["fits"] is False and short["short_by_bytes"] == pytest.approx(608e9)
    assert short["min_gpus_for_state"] == short["gpus_needed"] == 18
    assert isinstance(short["min_gpus_for_state"], int)


def test_memory_sliding_window_exact(run_cli):
    """Mistral 7B v0.1 (config.json sliding_window 4096, every layer): 32Ki tokens hold 4,096 tokens' KV."""
    out = run_cli("memory", "--model", "mistral-7b", "--context", "32Ki").stdout
    assert out == (
        "Memory: Mistral 7B\n"
        "  params              7.242B\n"
        "  weights_bytes       14.48 GB\n"
        "  kv_bytes_per_token  131.1 kB\n"
        "  context             32,768\n"
        "  sequences           1\n"
        "  kv_tokens_held      4,096\n"
        "  kv_total_bytes      536.9 MB\n"
        "note: sliding window: all layers of Mistral 7B cache only the last 4,096 tokens, so one sequence of 32,768 "
        "tokens holds 4,096 tokens' worth of KV, 12% of kv_bytes_per_token × 32,768; held(c) = c − (L_w / L) · "
        "max(c − W, 0) with L_w = 32, L = 32, W = 4,096\n"
    )


def test_mfu_above_one_exact(run_cli):
    out = run_cli("mfu", "--params", "70B", "--tokens-per-step", "4M", "--step-time", "1s", "--gpus", "1024",
                  "--gpu", "h100").stdout
    assert out == (
        "MFU\n"
        "  params                 70B\n"
        "  flops_convention       6N\n"
        "  flops_per_token        420 GFLOP\n"
        "  model_flops_per_s      1.68 EFLOP/s\n"
        "  available_flops_per_s  1.013 EFLOP/s\n"
        "  mfu                    166%\n"
        "warning [mfu-above-one]: MFU 166% is above 100%: the model's arithmetic (1.68 EFLOP/s) exceeds every FLOP "
        "the 1,024 GPUs could do at the 989.5 TFLOP/s dense bf16 peak (1.013 EFLOP/s). Likely: the step time is too "
        "short (time the whole optimiser step, not one micro-batch), tokens per step too large (the global batch, "
        "counted once), too few GPUs counted (--gpus is every GPU in the job), or the peak too low (the wrong "
        "precision: an fp8 run against the bf16 peak, or a hand-typed peak)\n"
        "note: tokens_per_step read as 4M = 4,000,000 (decimal M); if it meant 4Mi = 4,194,304 tokens, MFU would be "
        "174%\n"
        "note: MFU counts model FLOPs only; with activation recomputation the hardware does more (HFU), which must "
        "not be reported as MFU\n"
    )


def test_model_shows_the_whole_architecture_exact(run_cli):
    out = run_cli("model", "deepseek-v3").stdout
    assert out == (
        "DeepSeek-V3\n"
        "  name                     DeepSeek-V3\n"
        "  family                   deepseek\n"
        "  n_layers                 61\n"
        "  d_model                  7168\n"
        "  n_heads                  128\n"
        "  n_kv_heads               128\n"
        "  head_dim                 128\n"
        "  attention                mla\n"
        "  q_lora_rank              1536\n"
        "  kv_lora_rank             512\n"
        "  qk_nope_head_dim         128\n"
        "  qk_rope_head_dim         64\n"
        "  v_head_dim               128\n"
        "  gated_mlp                yes\n"
        "  n_experts                256\n"
        "  n_active_experts         8\n"
        "  n_shared_experts         1\n"
        "  d_ff_expert              2048\n"
        "  n_dense_layers           3\n"
        "  d_ff_dense               18432\n"
        "  vocab_size               129280\n"
        "  tied_embeddings          no\n"
        "  position                 rope\n"
        "  norm                     rmsnorm\n"
        "  norms_per_layer          2\n"
        "  max_context              163840\n"
        "  params                   671B\n"
        "  active_params            37.55B\n"
        "  published_params         671B\n"
        "  published_active_params  37B\n"
        "  training_tokens          14.8T\n"
        "  kv_bytes_per_token       70.27 kB\n"
        "  source                   https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json\n"
        "  params_source            DeepSeek-V3 technical report: 671B total, 37B activated (main model, excluding "
        "the 14B MTP module)\n"
        "note: d_ff_dense (18,432) is the feed-forward width of the first 3 layers only, which are dense; the other 58 "
        "route each token to 8 of 256 experts of width d_ff_expert (2,048) plus 1 shared\n"
        "note: Counted here: 671.03B total, 37.55B active. DeepSeek's README_WEIGHTS gives 36.6B activated, which "
        "leaves out the 0.93B input embedding (a table look-up, not a matmul); 37.55B less 0.93B is 36.63B. MLA "
        "caches one 512 + 64 latent per layer per token, shared by all 128 heads.\n"
    )
    js = json.loads(run_cli("model", "mistral-7b", "--json").stdout)
    assert (js["sliding_window"], js["n_sliding_layers"], js["gated_mlp"], js["tied_embeddings"]) == (4096, 32, True,
                                                                                                     False)


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
    (["memory", "--params", "-7B"], "error: params must be > 0; got -7B (give a positive number)\n"),
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
    # numbers past their physical range (napkin.limits) are refused before any arithmetic overflows on them
    (["mfu", "--params", "70B", "--tokens-per-step", "4M", "--step-time", "1e-300s", "--gpus", "1024", "--gpu",
      "h100"],
     "error: step_time must be at least 1 fs; got 1e-300s (nothing real is smaller: check the value and its unit)\n"),
    (["memory", "--model", "llama-3.1-8b", "--context", "1e300", "--sequences", "1000000"],
     "error: context must be at most 1e30 tokens; got 1e300 (over 1e16 times the largest training corpus, Llama 3's "
     "15.6T: check the value)\n"),
    (["card", "--model", "llama-3.1-70b", "--gpus", "1.7e308"],
     "error: gpus must be at most 1e8; got 1.7e308 (more GPUs than 25 years of the world's data-center GPU "
     "shipments: check the value)\n"),
    (["check", "--params", "70B", "--tokens", "5e-324", "--claimed-usd", "500k"],
     "error: tokens must be at least 1 token; got 5e-324 (nothing real is smaller: check the value and its unit)\n"),
    (["journey", "--params", "1.7e308"],
     "error: params must be at most 1e16 parameters; got 1.7e308 (6,000 times the largest published model, "
     "Switch-C's 1.6e12: check the value)\n"),
    (["mfu", "--params", "70B", "--tokens-per-step", "4M", "--step-time", "2s", "--gpus", "8", "--peak", "3.8e-294",
      "--recompute"],
     "error: peak must be at least 1 kFLOP/s; got 3.8e-294 (nothing real is smaller: check the value and its unit)\n"),
    (["train", "--params", "7B", "--tokens", "2.2e-309"],
     "error: tokens must be at least 1 token; got 2.2e-309 (nothing real is smaller: check the value and its unit)\n"),
    (["serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--cached-prefix", "0.5"],
     "error: cached_prefix must be 0 or at least 1 token; got 0.5 (nothing real is smaller: check the value and its "
     "unit)\n"),
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
    assert out.startswith("What does one training token cost? 7B parameters, 2T tokens, H100\n")
    assert "  marginal_usd            $163,756\n" in out
    assert "  loaded_usd              $387,513\n" in out
    assert "derivation:\n  flops_per_token = 6 · N" in out


def test_demo_tour_prints_the_journey_rung_by_rung(run_cli):
    """`make demo` ended in a flat dump of the journey's results (`rungs [7 items]`): the tour prints it as
    `napkin journey` does."""
    out = run_cli("demo").stdout
    tour = out[out.index("One 11-word question through Llama 3.1 405B"):]
    assert "\n1. The tokenizer" in tour and "\n2. The weights" in tour
    assert "[7 items]" not in out


def test_allreduce_measured_only_on_the_board_the_sweep_was_measured_on(run_cli):
    """The h100 family's sweep is the 8 x H200 NVLink 4 board (450 GB/s each way, 18 links, NVSwitch). An H800's
    NVLink is 400 GB/s both ways (200 each way): the sweep's 482 GB/s bus bandwidth at 16 GiB would be 0.41x the
    H800's floor, more than even NVLink SHARP can give (at most 2(n − 1)/n = 1.75x the link). An H100 PCIe pair is
    joined by a bridge, with no NVSwitch to reduce in. Neither prints the other board's measured time."""
    h800 = run_cli("allreduce", "--size", "16GiB", "--ranks", "8", "--link", "h800").stdout
    assert "measured_seconds " not in h800 and "0.41x the floor" not in h800
    assert "the 8 x H200 sweep of the same NVLink 4 board" in h800 and "not that board" in h800
    pair = run_cli("allreduce", "--size", "4GiB", "--ranks", "2", "--link", "h100-pcie").stdout
    assert "measured_seconds " not in pair and "NVSwitch (NVLink SHARP)" not in pair
    sxm = run_cli("allreduce", "--size", "8MiB", "--ranks", "8", "--link", "a100-sxm-80gb").stdout
    assert "  measured_seconds                133.5 us\n" in sxm  # the board nccl-tests ran on
