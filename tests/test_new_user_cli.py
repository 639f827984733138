"""Exact output of what a new user tripped on (issue 16): prices that decide an answer and their age,
check's precision and MFU digits, MFU conventions, memory's KV cache, serve by hand, tokens,
a FLOP budget, nodes, and what each prints. Prices are aged from NAPKIN_TODAY (tests/conftest.py).

Regenerate one constant NAME from NAME_ARGS with /work/proto/regen_exact.py after a deliberate change.
"""

from __future__ import annotations

import json

import pytest

CHECK_2M_ARGS = ['check', '--params', '70B', '--tokens', '15T', '--claimed-usd', '2M']
CHECK_2M = (
    'Check: 70B params on 15T tokens; claimed $2M\n'
    '  params                            70B\n'
    '  tokens                            15T\n'
    '  claimed_usd                       $2M\n'
    '  gpu                               h100-sxm\n'
    '  precision                         bf16\n'
    '  train_flops                       6.3e24 FLOP\n'
    '  gpu_hours_at_mfu                  4.421M\n'
    '  compute_usd                       $13.04M\n'
    '  implied_usd_per_gpu_hour          $0.4523/h\n'
    '  implied_gpu_hours                 678k\n'
    '  implied_mfu                       261%\n'
    '  most_favourable_gpu               mi300x\n'
    '  most_favourable_usd_per_gpu_hour  $1.50/h\n'
    '  most_favourable_implied_mfu       100.4%\n'
    '  verdict_implied_mfu               100.4%\n'
    '  verdict                           inconsistent\n'
    "  verdict_reason                    the claimed cost needs MFU 100.4% on Instinct MI300X (the most favourable part in the catalog) at $1.50/h (the lowest price its catalog source documents): more than the GPUs' dense peak, so 6·N·D cannot fit in it; on H100 SXM at its own $2.95/h it would need MFU 261%\n"
    '  verdict_assumptions               [Instinct MI300X dense bf16 peak 1.307 PFLOP/s, every paid hour productive (goodput 1), price $1.50/h for Instinct MI300X, the lowest price its catalog source documents]\n'
    '  omitted                           [failed and abandoned runs, ablations, data pipeline, post-training, salaries]\n'
    "warning [stale-price]: the catalog prices of the H100 SXM ($2.95/h, 2026-05-20, 195 days), the Instinct MI300X ($1.99/h, 2026-05-18, 197 days) are older than 180 days: GPU-hour prices move 20-40% in a year; check today's rates and give --price\n"
    'assumed: gpu = h100-sxm; precision = bf16; mfu = 40%; goodput = 100%\n'
    "note: precision bf16 assumed: a run that computed in fp8 (DeepSeek-V3 did) has the H100 SXM's fp8 peak, 1.979 PFLOP/s against 989.5 TFLOP/s, and needs half the MFU; `--precision fp8` reads the claim at it\n"
)

CHECK_2M_FP8_ARGS = ['check', '--params', '70B', '--tokens', '15T', '--claimed-usd', '2M', '--precision', 'fp8']
CHECK_2M_FP8 = (
    'Check: 70B params on 15T tokens; claimed $2M\n'
    '  params                            70B\n'
    '  tokens                            15T\n'
    '  claimed_usd                       $2M\n'
    '  gpu                               h100-sxm\n'
    '  precision                         fp8\n'
    '  train_flops                       6.3e24 FLOP\n'
    '  gpu_hours_at_mfu                  2.211M\n'
    '  compute_usd                       $6.522M\n'
    '  implied_usd_per_gpu_hour          $0.9047/h\n'
    '  implied_gpu_hours                 678k\n'
    '  implied_mfu                       130%\n'
    '  most_favourable_gpu               mi300x\n'
    '  most_favourable_usd_per_gpu_hour  $1.50/h\n'
    '  most_favourable_implied_mfu       50.2%\n'
    '  verdict_implied_mfu               50.2%\n'
    '  claimed_over_compute              0.7969\n'
    "  verdict                           plausible only as one final run's compute\n"
    "  verdict_reason                    the claimed cost needs MFU 50.2% on Instinct MI300X (the most favourable part in the catalog) at $1.50/h (the lowest price its catalog source documents), not above the ~60% that large runs reach, but it is 0.80× one run's compute there at MFU 40%: it leaves nothing for what a production cost adds (see omitted); on H100 SXM at its own $2.95/h it would need MFU 130%\n"
    '  verdict_assumptions               [Instinct MI300X dense fp8 peak 2.615 PFLOP/s, every paid hour productive (goodput 1), price $1.50/h for Instinct MI300X, the lowest price its catalog source documents, MFU 40% (reference)]\n'
    '  omitted                           [failed and abandoned runs, ablations, data pipeline, post-training, salaries]\n'
    "warning [stale-price]: the catalog prices of the H100 SXM ($2.95/h, 2026-05-20, 195 days), the Instinct MI300X ($1.99/h, 2026-05-18, 197 days) are older than 180 days: GPU-hour prices move 20-40% in a year; check today's rates and give --price\n"
    'assumed: gpu = h100-sxm; mfu = 40%; goodput = 100%\n'
)

VARY_GPU_ARGS = ['train', '--params', '7B', '--tokens', '2T', '--vary', 'gpu=h100,h200,b200']
VARY_GPU = (
    'Training: 7B params on 2T tokens, H100 SXM bf16, as gpu varies\n'
    '  gpu   tokens/GPU-s  GPU-hours  $/GPU-h  marginal  loaded    $/M marginal  $/M loaded\n'
    '  h100  8481/s        65.5k      $2.95/h  $193,233  $193,233  $0.09662/M    $0.09662/M\n'
    '  h200  8481/s        65.5k      $4/h     $262,010  $262,010  $0.131/M      $0.131/M\n'
    '  b200  19286/s       28.81k     $5.25/h  $151,235  $151,235  $0.07562/M    $0.07562/M\n'
    'warning [list-price]: no --price: each part at its catalog reference list price (the $/GPU-h column); a loaded GPU-hour adds power, networking, storage and support (`napkin gpu-hour`)\n'
    "warning [stale-price]: the catalog prices of the H100 SXM ($2.95/h, 2026-05-20, 195 days), the H200 SXM ($4/h, 2026-05-01, 214 days), the B200 (HGX B200, per GPU) ($5.25/h, 2026-03-11, 265 days) are older than 180 days: GPU-hour prices move 20-40% in a year; check today's rates and give --price\n"
    'assumed: mfu = 40%; goodput = 90%; pue = 1\n'
)

VARY_GPU_ONE_PRICE_ARGS = ['train', '--params', '7B', '--tokens', '2T', '--vary', 'gpu=h100,b200', '--price', '2/h']
VARY_GPU_ONE_PRICE = (
    'Training: 7B params on 2T tokens, H100 SXM bf16, as gpu varies\n'
    '  gpu   tokens/GPU-s  GPU-hours  $/GPU-h  marginal  loaded    $/M marginal  $/M loaded\n'
    '  h100  8481/s        65.5k      $2/h     $131,005  $131,005  $0.0655/M     $0.0655/M\n'
    '  b200  19286/s       28.81k     $2/h     $57,613   $57,613   $0.02881/M    $0.02881/M\n'
    "warning [one-price-for-all]: --price $2/h is applied to every part: the parts rent at different prices; drop --price to use each one's catalog price, or vary price with gpu\n"
    'assumed: mfu = 40%; goodput = 90%; pue = 1\n'
)

COMPARE_ONE_PRICE_ARGS = ['compare', '--gpu', 'h100,b200', '--params', '7B', '--tokens', '2T', '--price', '2.50/h']
COMPARE_ONE_PRICE = (
    'Compare: 7B params on 2T tokens, bf16, 6N FLOPs per token\n'
    '  rank  gpu       dense peak     mfu          $/GPU-h  tokens/GPU-s  GPU-hours  $/M tokens  FLOP per $     value  vs h100-sxm\n'
    '  1     b200      2.25 PFLOP/s   40% (guess)  $2.50/h  19286/s       28.81k     $0.03601/M  1.166e18 FLOP  0.910  -56.0%\n'
    '  2     h100-sxm  989.5 TFLOP/s  40% (guess)  $2.50/h  8481/s        65.5k      $0.08188/M  513 PFLOP      0.400  baseline\n'
    'warning [mfu-guessed]: no MFU given for h100-sxm, b200: 0.40 is a guess; a short measured trial on each candidate should replace it\n'
    "warning [one-price-for-all]: --price $2.50/h is applied to h100-sxm, b200: the parts rent at different prices; give --price NAME=$/H for each, or none for each part's catalog price\n"
    'assumed: h100-sxm: mfu = 40%; b200: mfu = 40%; goodput = 90%\n'
    'note: rank with MFU measured in a short full-scale trial on each candidate, never with peaks alone: the MFU gap between a mature and an immature software stack is often larger than the price gap\n'
)

MFU_CAUSAL_ARGS = ['mfu', '--model', 'llama-3.1-70b', '--tokens-per-step', '16Mi', '--step-time', '6s', '--gpus',
                   '2048', '--gpu', 'h100', '--flops-convention', 'causal', '--seq-len', '8Ki']
MFU_CAUSAL = (
    'MFU\n'
    '  params                     70.55B\n'
    '  flops_convention           causal\n'
    '  attention_flops_per_token  32.21 GFLOP\n'
    '  flops_per_token            455.5 GFLOP\n'
    '  model_flops_per_s          1.274 EFLOP/s\n'
    '  available_flops_per_s      2.026 EFLOP/s\n'
    '  mfu                        62.9%\n'
    'note: tokens_per_step read as 16Mi = 16,777,216 (binary); if it meant 16,000,000, MFU would be 59.9%\n'
    'note: MFU counted under the causal convention; the same step under 6N (no attention term) is 58.4%: quote the convention with the figure, and plan with the same one (`napkin train --mfu 62.9% --mfu-convention causal`)\n'
    'note: MFU counts model FLOPs only; with activation recomputation the hardware does more (HFU), which must not be reported as MFU\n'
)

MFU_COUNTER_ARGS = ['train', '--params', '70B', '--tokens', '15T', '--mfu', '0.92', '--gpus', '1000', '--price',
                    '2/h']
MFU_COUNTER = (
    'Training: 70B params on 15T tokens, H100 SXM bf16\n'
    '  params                  70B\n'
    '  flops_convention        6N\n'
    '  flops_per_token         420 GFLOP\n'
    '  advanced_tokens         15T\n'
    '  train_flops             6.3e24 FLOP\n'
    '  gpu                     h100-sxm\n'
    '  precision               bf16\n'
    '  dense_flops_per_s       989.5 TFLOP/s\n'
    '  mfu                     92%\n'
    '  goodput                 90%\n'
    '  tokens_per_gpu_s        1951/s\n'
    '  gpu_hours               2.136M\n'
    '  gpus                    1,000\n'
    '  wall_s                  89 d\n'
    '  price                   $2/h\n'
    '  price_basis             given\n'
    '  marginal_usd            $4.272M\n'
    '  loaded_usd              $4.272M\n'
    '  loaded_over_marginal    1\n'
    '  usd_per_million_tokens  marginal: $0.2848/M advanced, loaded: $0.2848/M advanced\n'
    '  cost_breakdown_usd      final run: $4.272M\n'
    '  energy_kwh              1.495 GWh\n'
    '  cluster_power_w         700 kW\n'
    '  energy_household_years  140\n'
    '  training_static_bytes   1.12 TB\n'
    '  min_gpus_for_state      18\n'
    'warning [mfu-activity-counter]: MFU 92% (bf16) is above what any published large run reached (MegaScale: 55.2% on 12,288 GPUs): is it a hardware activity counter (nvidia-smi GPU utilisation, DCGM SM activity)? Those read near 100% on a run at 40% MFU; MFU is model FLOPs over the dense peak, from the step time (`napkin mfu`)\n'
    'assumed: gpu = h100-sxm; goodput = 90%; pue = 1\n'
    'note: no --overhead given: loaded equals marginal plus fixed spend; experiments, lost work, evaluation and idle capacity typically more than double it (give them as --overhead NAME=multiplier)\n'
    'note: energy counts the GPUs at TDP (an upper bound on board power) times PUE; host CPUs, network and storage are not in it\n'
    'note: min_gpus_for_state is fully sharded (ZeRO-3/FSDP) static state only; activations are extra\n'
)

MEMORY_KV_ARGS = ['memory', '--model', 'llama-3.1-70b', '--context', '8Ki', '--batch', '32', '--gpu', 'h100',
                  '--gpus', '4']
MEMORY_KV = (
    'Memory: Llama 3.1 70B\n'
    '  params              70.55B\n'
    '  weights_bytes       141.1 GB\n'
    '  kv_bytes_per_token  327.7 kB\n'
    '  context             8,192\n'
    '  sequences           32\n'
    '  kv_total_bytes      85.9 GB\n'
    '  capacity_bytes      320 GB\n'
    '  needed_bytes        227 GB\n'
    '  fits                yes\n'
    '  free_bytes          92.99 GB\n'
    'note: kv_total_bytes is exactly 80 GiB (85.9 GB): GB and GiB differ by 7%\n'
    'note: weights + KV only, against the datasheet capacity: activations, CUDA context and fragmentation take a few GB more per GPU (`napkin serve` counts them: 90% of the capacity the runtime reports)\n'
)

SERVE_BY_HAND_ARGS = ['serve', '--model', 'llama-3.1-8b', '--gpu', 'h100', '--batch', '16', '--bandwidth', '80TB/s',
                      '--peak', '188T', '--memory', '230MB', '--gpus', '8', '--price', '2/h', '--utilization', '0.5']
SERVE_BY_HAND = (
    'Serve Llama 3.1 8B on 8 x H100 SXM with peak, bandwidth and memory by hand (TP 8)\n'
    '  model                          Llama 3.1 8B\n'
    '  gpu                            H100 SXM with peak, bandwidth and memory by hand\n'
    '  gpus                           8\n'
    '  tp                             8\n'
    '  batch                          16\n'
    '  weights_bytes                  16.06 GB\n'
    '  weights_bytes_per_gpu          2.008 GB\n'
    '  kv_bytes_per_token             131.1 kB\n'
    '  kv_bytes_per_sequence          170.4 MB\n'
    '  kv_total_bytes                 2.726 GB\n'
    '  kv_bytes_per_gpu               340.8 MB\n'
    '  usable_bytes_per_gpu           207 MB\n'
    '  needed_bytes_per_gpu           2.348 GB\n'
    '  fits                           no\n'
    '  short_by_bytes                 17.13 GB\n'
    '  max_batch                      0\n'
    '  prefill_linear_flops           16.06 TFLOP\n'
    '  prefill_attention_flops        262.1 GFLOP\n'
    '  prefill_flops                  16.32 TFLOP\n'
    '  prefill_s                      26.39 ms\n'
    '  prefill_mfu                    41.1%\n'
    '  decode_flops_per_token         16.66 GFLOP\n'
    '  decode_step_bytes              18.47 GB\n'
    '  decode_step_flops              266.6 GFLOP\n'
    '  decode_floor_s                 28.86 us\n'
    '  decode_floor_tokens_per_s      554345/s\n'
    '  scheduling                     continuous\n'
    '  decode_step_s                  4.63 ms\n'
    '  decode_sequences               16\n'
    '  prefill_tokens_per_step        53.33\n'
    '  prompt_step_tokens             1,000\n'
    '  prompt_step_share              5.33%\n'
    '  mixed_step_s                   26.7 ms\n'
    '  cycle_s                        5.807 ms\n'
    '  ttft_s                         26.7 ms\n'
    '  bound                          fixed costs\n'
    '  compute_bound_batch            1\n'
    '  tpot_s                         5.807 ms\n'
    '  tokens_per_s_per_sequence      172.2/s\n'
    '  request_latency_s              1.763 s\n'
    '  tokens_per_s                   2755/s\n'
    '  requests_per_s                 9.184/s\n'
    '  dense_flops_per_s              188 TFLOP/s\n'
    '  memory_bytes_per_s             80 TB/s\n'
    '  replica_usd_per_hour           $16/h\n'
    '  usd_per_request                $0.0009678\n'
    '  usd_per_million_output_tokens  $2.572/M\n'
    '  usd_per_million_input_tokens   $0.1962/M\n'
    '  usd_per_million_tokens_all_in  $3.226/M\n'
    "warning [figures-by-hand]: the peak, bandwidth and memory given by hand replace the H100 SXM's; its kernel efficiencies, fixed costs, link and scale-up domain still apply (measured on GPUs with HBM): give --gemm-efficiency, --bandwidth-efficiency and --layer-overhead for the part, and the error bar does not cover it\n"
    'warning [does-not-fit]: the weights alone do not fit in 8 x H100 SXM with peak, bandwidth and memory by hand at 90% usable: add GPUs or quantise (timings below are what it would do if it fit)\n'
    'assumed: usable = 90%\n'
    'fitted: per_layer_overhead = 160 us; per_layer_decode_overhead = 90 us\n'
    "note: continuous batching, steady state at 16 sequences in flight: every request's prefill is paid in the same GPU time as the decoding; no queue (give --rate for latency under load)\n"
)

TOKENS_SHOW_ARGS = ['tokens', 'How many r are in strawberry?', '--show']
TOKENS_SHOW = (
    'Tokens (o200k_base)\n'
    '  encoding              o200k_base\n'
    '  exact                 yes\n'
    '  source                text\n'
    '  tokens                7\n'
    '  characters            29\n'
    '  words                 6\n'
    '  utf8_bytes            29\n'
    '  characters_per_token  4.143\n'
    '  words_per_token       0.8571\n'
    '  rule_tokens           8\n'
    '  pieces                |How| many| r| are| in| strawberry|?|\n'
    'note: words are whitespace-separated: scripts written without spaces (Japanese, Chinese, Thai) count whole sentences as one word\n'
)

TOKENS_IMAGES_ARGS = ['tokens', '--image-size', '1024x1024', '--image-size', '2048x4096', '--image-size', '200x200']
TOKENS_IMAGES = (
    'Image tokens\n'
    "note: image tokens at each provider's published formula (OpenAI's Images and vision guide; Anthropic's Vision docs; Google's token docs): billed as input tokens at the model's input price\n"
    '\n'
    "input tokens per image, at each provider's formula:\n"
    '  image      width px  height px  OpenAI  Anthropic  Gemini\n'
    '  1024x1024     1,024      1,024     765      1,399   1,032\n'
    '  2048x4096     2,048      4,096   1,105      1,640   4,644\n'
    '  200x200         200        200     255         54     258\n'
)

BUDGET_ARGS = ['train', '--flops', '3.8e25', '--gpus', '16384', '--price', '2/h']
BUDGET = (
    'Training budget: 3.8e25 FLOP\n'
    '  train_flops             3.8e25 FLOP\n'
    '  gpu                     h100-sxm\n'
    '  precision               bf16\n'
    '  dense_flops_per_s       989.5 TFLOP/s\n'
    '  mfu                     40%\n'
    '  goodput                 90%\n'
    '  flops_per_gpu_s         356.2 TFLOP/s\n'
    '  gpu_hours               29.63M\n'
    '  gpus                    16,384\n'
    '  wall_s                  75.36 d\n'
    '  price                   $2/h\n'
    '  price_basis             given\n'
    '  marginal_usd            $59.26M\n'
    '  loaded_usd              $59.26M\n'
    '  energy_kwh              20.74 GWh\n'
    '  cluster_power_w         11.47 MW\n'
    '  energy_household_years  1,936\n'
    'assumed: gpu = h100-sxm; mfu = 40%; goodput = 90%; pue = 1\n'
    'note: energy counts the GPUs at TDP (an upper bound on board power) times PUE; host CPUs, network and storage are not in it\n'
    "note: training compute 3.8e25 FLOP is above 10^25 FLOP: the EU AI Act's presumption of systemic risk for a general-purpose AI model (Regulation (EU) 2024/1689, Article 51(2): cumulative training compute above 10^25 FLOPs; obligations apply from 2 August 2025); it counts all the compute used to train the model, of which this run is a part\n"
    'note: a budget of FLOPs alone: give --params N (or --model) to read it as tokens, D = C / 6N, and a cost per million tokens\n'
)

DEADLINE_NODES_ARGS = ['train', '--params', '70B', '--tokens', '1.4T', '--deadline', '30d', '--price', '2/h']
DEADLINE_NODES = (
    'Training: 70B params on 1.4T tokens, H100 SXM bf16\n'
    '  params                  70B\n'
    '  flops_convention        6N\n'
    '  flops_per_token         420 GFLOP\n'
    '  advanced_tokens         1.4T\n'
    '  train_flops             5.88e23 FLOP\n'
    '  gpu                     h100-sxm\n'
    '  precision               bf16\n'
    '  dense_flops_per_s       989.5 TFLOP/s\n'
    '  mfu                     40%\n'
    '  goodput                 90%\n'
    '  tokens_per_gpu_s        848.1/s\n'
    '  gpu_hours               458.5k\n'
    '  deadline_s              30 d\n'
    '  gpus_for_deadline       637\n'
    '  gpus_needed             640\n'
    '  nodes                   80\n'
    '  wall_s                  29.85 d\n'
    '  price                   $2/h\n'
    '  price_basis             given\n'
    '  marginal_usd            $917,036\n'
    '  loaded_usd              $917,036\n'
    '  loaded_over_marginal    1\n'
    '  usd_per_million_tokens  marginal: $0.655/M advanced, loaded: $0.655/M advanced\n'
    '  cost_breakdown_usd      final run: $917,036\n'
    '  energy_kwh              321 MWh\n'
    '  cluster_power_w         448 kW\n'
    '  energy_household_years  29.95\n'
    '  training_static_bytes   1.12 TB\n'
    '  min_gpus_for_state      18\n'
    'assumed: gpu = h100-sxm; mfu = 40%; goodput = 90%; pue = 1\n'
    'note: no --overhead given: loaded equals marginal plus fixed spend; experiments, lost work, evaluation and idle capacity typically more than double it (give them as --overhead NAME=multiplier)\n'
    'note: energy counts the GPUs at TDP (an upper bound on board power) times PUE; host CPUs, network and storage are not in it\n'
    'note: min_gpus_for_state is fully sharded (ZeRO-3/FSDP) static state only; activations are extra\n'
)


@pytest.mark.parametrize("name", ["CHECK_2M", "CHECK_2M_FP8", "VARY_GPU", "VARY_GPU_ONE_PRICE", "COMPARE_ONE_PRICE",
                                  "MFU_CAUSAL", "MFU_COUNTER", "MEMORY_KV", "SERVE_BY_HAND", "TOKENS_SHOW",
                                  "TOKENS_IMAGES", "BUDGET", "DEADLINE_NODES"])
def test_exact(run_cli, name):
    g = globals()
    assert run_cli(*g[name + "_ARGS"]).stdout == "".join(g[name])


# ------------------------------------------------------------------------------ what the outputs must say
def test_check_never_prints_100_percent_beside_more_than_peak(run_cli):
    """100.4% is more than the dense peak; "100%" beside "more than the GPUs' dense peak" misled (issue 16)."""
    out = run_cli(*CHECK_2M_ARGS).stdout
    assert "most_favourable_implied_mfu       100.4%" in out
    assert "MFU 100%" not in out and "MFU 1.00" not in out


def test_check_verdict_flips_with_the_precision_it_states(run_cli):
    """The verdict rests on the precision: bf16 (assumed, and said) reads the $2M claim as inconsistent, fp8 as
    plausible for one run; the assumed line names the precision only when it was not given."""
    bf16, fp8 = run_cli(*CHECK_2M_ARGS).stdout, run_cli(*CHECK_2M_FP8_ARGS).stdout
    assert "verdict                           inconsistent" in bf16 and "precision = bf16" in bf16
    assert "verdict                           plausible only as one final run's compute" in fp8
    assert "precision = fp8" not in fp8 and "precision                         fp8" in fp8


def test_vary_gpu_prices_each_part_at_its_own_price(run_cli):
    r = json.loads(run_cli(*VARY_GPU_ARGS, "--json").stdout)
    from napkin import catalog

    prices = {row["gpu"]: row["price"] for row in r["vary"]["rows"]}
    assert prices == {k: catalog.gpu_hour_price(catalog.gpu(k).key).usd_per_gpu_hour for k in ("h100", "h200", "b200")}
    one = json.loads(run_cli(*VARY_GPU_ONE_PRICE_ARGS, "--json").stdout)
    assert {row["price"] for row in one["vary"]["rows"]} == {2.0}
    assert [w["code"] for w in one["warnings"]] == ["one-price-for-all"]


def test_stale_price_warning_follows_the_date(run_cli, monkeypatch):
    """The H100's catalog price (2026-05-20) is 180 days old on 2026-11-16 and older the day after."""
    monkeypatch.setenv("NAPKIN_TODAY", "2026-11-16")
    assert "stale-price" not in run_cli("train", "--params", "7B", "--tokens", "2T").stdout
    monkeypatch.setenv("NAPKIN_TODAY", "2026-11-17")
    assert "181 days" in run_cli("train", "--params", "7B", "--tokens", "2T").stdout
    monkeypatch.setenv("NAPKIN_TODAY", "17 Nov")
    r = run_cli("train", "--params", "7B", "--tokens", "2T", code=1)
    assert r.stderr == "error: NAPKIN_TODAY is not a date; got 17 Nov (write YYYY-MM-DD)\n"


def test_serve_without_utilization_warns_every_hour_is_busy(run_cli):
    out = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--price", "2/h").stdout
    assert "warning [every-hour-busy]: no --utilization: the $/M figures assume every paid hour is busy (100%)" in out
    assert "every-hour-busy" not in run_cli(*SERVE_BY_HAND_ARGS).stdout  # --utilization given


def test_serve_by_hand_replaces_the_datasheet_in_the_operator_model(run_cli):
    """Twice the bandwidth halves the memory-bound floor of a decode step (the floor is bytes / bandwidth)."""
    base = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--json").stdout)
    fast = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--bandwidth", "6.7TB/s",
                              "--json").stdout)
    assert fast["memory_bytes_per_s"] == 6.7e12
    assert fast["decode_floor_s"] == pytest.approx(base["decode_floor_s"] / 2, rel=1e-9)
    assert "error_bar" in base and "error_bar" not in fast
    peak = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--peak", "1979T",
                              "--json").stdout)
    assert peak["dense_flops_per_s"] == 1979e12


def test_memory_says_what_kv_it_counted(run_cli):
    r = json.loads(run_cli(*MEMORY_KV_ARGS, "--json").stdout)
    assert (r["context"], r["sequences"]) == (8192, 32)
    assert r["kv_total_bytes"] == 327680 * 8192 * 32  # 2·80·8·128·2 bytes per token (worked: kv-per-token-llama31-70b)
    out = run_cli("memory", "--model", "llama-3.1-70b", "--gpu", "h100").stdout
    assert "note: no --context: the KV cache is not counted" in out


def test_train_converts_an_mfu_measured_under_another_convention(run_cli):
    """45% under causal at 8,000 tokens is 45% · 6N / (6N + 6·L·d·T) under 6N (Llama 3.1 70B: L 80, d 8192)."""
    r = json.loads(run_cli("train", "--model", "llama-3.1-70b", "--tokens", "15T", "--mfu", "0.45",
                           "--mfu-convention", "causal", "--seq-len", "8000", "--gpus", "1024", "--price", "2/h",
                           "--json").stdout)
    six_n = 6 * r["params"]
    assert r["mfu"] == pytest.approx(0.45 * six_n / (six_n + 6 * 80 * 8192 * 8000), rel=1e-12)
    assert "mfu-convention" in [w["code"] for w in r["warnings"]]
    same = json.loads(run_cli("train", "--model", "llama-3.1-70b", "--tokens", "15T", "--mfu", "0.45",
                              "--mfu-convention", "6N", "--gpus", "1024", "--price", "2/h", "--json").stdout)
    assert same["mfu"] == 0.45
    err = run_cli("train", "--params", "70B", "--tokens", "15T", "--mfu", "0.45", "--mfu-convention", "causal", code=1)
    assert err.stderr == ("error: mfu_convention needs the model's layers and attention width and the sequence length "
                          "to convert an MFU; got causal (give --model NAME and --seq-len 8192)\n")


def test_budget_reads_as_tokens_with_params(run_cli):
    """3.8e25 FLOPs on 405B parameters is 3.8e25 / (6 · 405e9) = 15.64T tokens (Llama 3.1 405B: 15.6T)."""
    r = json.loads(run_cli("train", "--flops", "3.8e25", "--params", "405B", "--gpus", "16384", "--price", "2/h",
                           "--json").stdout)
    assert r["advanced_tokens"] == pytest.approx(3.8e25 / (6 * 405e9), rel=1e-12)
    alone = json.loads(run_cli(*BUDGET_ARGS, "--json").stdout)
    assert alone["gpu_hours"] == pytest.approx(r["gpu_hours"], rel=1e-12)  # the same work either way
    err = run_cli("train", "--flops", "1e24", "--params", "7B", "--tokens", "2T", code=1)
    assert "give two of --flops, --params and --tokens" in err.stderr


def test_cluster_power_and_household_years_of_llama3(run_cli):
    """Llama 3 405B: 16,384 H100s at 700 W are 11.47 MW of boards; 30.84M GPU-hours at 700 W are 21.6 GWh,
    about 2,000 US household-years at EIA's 10,715 kWh (Dubey et al. 2024, table 4 GPU-hours)."""
    from napkin.formulas import energy as en

    assert en.cluster_power_watts(16384, tdp_watts=700) == 16384 * 700
    kwh = en.gpu_energy_kwh(30.84e6, tdp_watts=700)
    assert en.household_years(kwh, kwh_per_household_year=10715) == pytest.approx(2015, rel=1e-3)


def test_regulatory_notes_at_1e25_and_1e26(run_cli):
    low = run_cli("train", "--flops", "9e24", "--gpus", "1000", "--price", "2/h").stdout
    eu = run_cli("train", "--flops", "2e25", "--gpus", "1000", "--price", "2/h").stdout
    us = run_cli("train", "--flops", "2e26", "--gpus", "1000", "--price", "2/h").stdout
    assert "10^25" not in low and "10^26" not in low
    assert "EU AI Act" in eu and "10^26" not in eu
    assert "rescinded on 20 January 2025" in us and "EU AI Act" in us


def test_deadline_rounds_to_whole_nodes(run_cli):
    """363 GPUs on 8-GPU nodes are 368 (46 nodes); a GB200 cluster rounds to NVL72 racks; a TPU v5e one to hosts
    of 8 chips; a part whose domain is a pod is not rounded."""
    from napkin.formulas.training import whole_nodes

    assert whole_nodes(363, gpus_per_node=8) == 368
    assert whole_nodes(368, gpus_per_node=8) == 368
    from napkin import catalog

    assert [catalog.gpu(k).node_size for k in ("h100", "gb200", "tpu-v5e", "tpu-v5p", "l40s")] == [8, 72, 8, 4, 1]
    r = json.loads(run_cli(*DEADLINE_NODES_ARGS, "--json").stdout)
    assert (r["gpus_for_deadline"], r["gpus_needed"], r["nodes"]) == (637, 640, 80)


def test_tokens_reads_a_path_and_standard_input(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.txt").write_text("How many r are in strawberry?\n")
    r = run_cli("tokens", "q.txt", "--json")
    d = json.loads(r.stdout)
    assert (d["source"], d["tokens"], d["characters"]) == ("q.txt", 7, 30)  # the file whole, its line end too
    assert "'q.txt' names a file, so its contents were counted" in d["notes"][-1]
    assert json.loads(run_cli("tokens", "--text", "q.txt", "--json").stdout)["characters"] == 5
    s = json.loads(run_cli("tokens", "-", "--json", input="How many r are in strawberry?\n").stdout)
    assert s["tokens"] == 7 and "standard input" in s["notes"][-1]


def test_budget_sweeps_and_refuses_what_needs_tokens(run_cli):
    """A FLOP budget varied over parts: GPU-hours, wall time, price and cost, no $/M (no tokens to divide by)."""
    out = run_cli("train", "--flops", "1e24", "--vary", "gpu=h100,b200", "--gpus", "1000").stdout
    assert out.splitlines()[1].split() == ["gpu", "GPU-hours", "wall", "$/GPU-h", "marginal", "loaded"]
    err = run_cli("train", "--flops", "1e24", "--sensitivity", code=1).stderr
    assert err.startswith("error: sensitivity: moves loaded $/M tokens, and a budget of FLOPs alone has no tokens")


@pytest.mark.parametrize("option,shown", [
    (("--unique-tokens", "1T"), "unique_tokens needs a model, and --flops without --params or --model is a budget of "
                                "FLOPs alone; got 1T (give --params N (the budget is then read as tokens), or drop "
                                "--unique-tokens)"),
    (("--seq-len", "4096"), "seq_len needs a model, and --flops without --params or --model is a budget of FLOPs "
                            "alone; got 4,096 (give --params N (the budget is then read as tokens), or drop "
                            "--seq-len)"),
    (("--data-usd", "1M"), "data_usd needs a model, and --flops without --params or --model is a budget of FLOPs "
                           "alone; got $1M (give --params N (the budget is then read as tokens), or drop --data-usd)"),
])
def test_budget_refusal_shows_the_value_as_given(run_cli, option, shown):
    """Fuzz repro: `train --flops 1e24 --unique-tokens 1T` said "got 1e+12", the base-unit float, not the 1T typed."""
    assert run_cli("train", "--flops", "1e24", *option, code=1).stderr == f"error: {shown}\n"
