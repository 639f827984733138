"""Exact plain-text output of `napkin serve`, `napkin bill` and `napkin plan serve` (stdout is not a
terminal under the test runner), JSON keys, charts, and errors: one line, exit 1."""

from __future__ import annotations

import json
import re

import pytest

SERVE_70B_8XH100_ARGS = ['serve', '--model', 'llama-3.1-70b', '--gpu', 'h100', '--gpus', '8', '--batch', '16', '--price', '2.50/h']
SERVE_70B_8XH100 = (
    'Serve Llama 3.1 70B on 8 x H100 SXM (TP 8)\n'
    '  model                          Llama 3.1 70B\n'
    '  gpu                            H100 SXM\n'
    '  gpus                           8\n'
    '  tp                             8\n'
    '  batch                          16\n'
    '  weights_bytes                  141.1 GB\n'
    '  weights_bytes_per_gpu          17.64 GB\n'
    '  kv_bytes_per_token             327.7 kB\n'
    '  kv_bytes_per_sequence          426 MB\n'
    '  kv_total_bytes                 6.816 GB\n'
    '  kv_bytes_per_gpu               852 MB\n'
    '  usable_bytes_per_gpu           76.56 GB\n'
    '  needed_bytes_per_gpu           18.49 GB\n'
    '  fits                           yes\n'
    '  free_bytes                     464.5 GB\n'
    '  max_batch                      1,106\n'
    '  prefill_linear_flops           141.1 TFLOP\n'
    '  prefill_attention_flops        1.311 TFLOP\n'
    '  prefill_flops                  142.4 TFLOP\n'
    '  prefill_s                      67.24 ms\n'
    '  prefill_mfu                    26.8%\n'
    '  decode_flops_per_token         144.1 GFLOP\n'
    '  decode_step_bytes              147.1 GB\n'
    '  decode_step_flops              2.306 TFLOP\n'
    '  decode_floor_s                 5.49 ms\n'
    '  decode_floor_tokens_per_s      2914/s\n'
    '  scheduling                     continuous\n'
    '  decode_step_s                  16.49 ms\n'
    '  decode_sequences               16\n'
    '  prefill_tokens_per_step        53.33\n'
    '  prompt_step_tokens             1,000\n'
    '  prompt_step_share              5.33%\n'
    '  mixed_step_s                   68.21 ms\n'
    '  cycle_s                        19.25 ms\n'
    '  ttft_s                         68.21 ms\n'
    '  bound                          fixed costs\n'
    '  compute_bound_batch            208\n'
    '  tpot_s                         19.25 ms\n'
    '  tokens_per_s_per_sequence      51.95/s\n'
    '  request_latency_s              5.824 s\n'
    '  tokens_per_s                   831.2/s\n'
    '  requests_per_s                 2.771/s\n'
    '  dense_flops_per_s              989.5 TFLOP/s\n'
    '  memory_bytes_per_s             3.35 TB/s\n'
    '  replica_usd_per_hour           $20/h\n'
    '  usd_per_request                $0.002005\n'
    '  usd_per_million_output_tokens  $5.726/M\n'
    '  usd_per_million_input_tokens   $0.2873/M\n'
    '  usd_per_million_tokens_all_in  $6.684/M\n'
    '  error_bar                      tokens_per_s: median error 7% (max 175%) on 205 published multi-GPU H100 dense-model points, out of sample, tpot_s: median error 7% (max 39%) on 20 published multi-GPU H100 dense-model points, out of sample, ttft_s: median error 13% (max 24%) on 19 published multi-GPU H100 dense-model points, out of sample\n'
    'warning [every-hour-busy]: no --utilization: the $/M figures assume every paid hour is busy (100%); an hour the replica sits idle still costs, so at 40% busy they are 2.5x; give --utilization\n'
    'assumed: usable = 90%; utilization = 100%\n'
    'fitted: per_layer_overhead = 160 us; per_layer_decode_overhead = 90 us\n'
    "note: continuous batching, steady state at 16 sequences in flight: every request's prefill is paid in the same GPU time as the decoding; no queue (give --rate for latency under load)\n"
)

BILL_RECEIPT_ARGS = ['bill', 'claude-sonnet-4', '--input', '1000', '--output', '300', '--as-of', '2025-10-01']
BILL_RECEIPT = (
    'API bill: Claude Sonnet 4 (Anthropic)\n'
    '  model           Claude Sonnet 4\n'
    '  provider        Anthropic\n'
    '  tier            standard\n'
    '  input_usd       $0.003\n'
    '  output_usd      $0.0045\n'
    '  usd             $0.0075\n'
    '  price_date      2025-08-12\n'
    '  price_age_days  50\n'
    '  price_source    https://docs.anthropic.com/en/docs/about-claude/pricing\n'
    'note: 5-minute cache writes (1-hour writes are $6/M). Long-context tier from the 1M-token context beta of 2025-08-12; the long-context cache prices are the standard 1.25x and 0.1x multipliers on $6, as the pricing page says they stack, not separately listed.\n'
)

BILL_AGENT_ARGS = ['bill', 'claude-sonnet-4', '--input', '4200', '--output', '300', '--calls', '7', '--history-growth', '2000', '--as-of', '2025-10-01']
BILL_AGENT = (
    'API bill: Claude Sonnet 4 (Anthropic)\n'
    '  model                   Claude Sonnet 4\n'
    '  provider                Anthropic\n'
    '  tier                    standard\n'
    '  input_usd               $0.0126\n'
    '  output_usd              $0.0045\n'
    '  usd                     $0.0171\n'
    '  price_date              2025-08-12\n'
    '  price_age_days          50\n'
    '  price_source            https://docs.anthropic.com/en/docs/about-claude/pricing\n'
    '  task_input_tokens       71,400\n'
    '  task_usd_without_cache  $0.2457\n'
    '  task_usd_with_cache     $0.1088\n'
    '  cache_saving            55.7%\n'
    '  task_output_tokens      2,100\n'
    'note: 5-minute cache writes (1-hour writes are $6/M). Long-context tier from the 1M-token context beta of 2025-08-12; the long-context cache prices are the standard 1.25x and 0.1x multipliers on $6, as the pricing page says they stack, not separately listed.\n'
    "note: an agent's honest unit is the task: 7 calls re-send 71,400 input tokens in all, 17.0x the first prompt\n"
    '\n'
    "the agent's calls, with prompt caching:\n"
    '  call   input  cache read  cache write  usd (cached)\n'
    '     1   4,200           0        4,200      $0.02025\n'
    '     2   6,200       4,200        2,000      $0.01326\n'
    '     3   8,200       6,200        2,000      $0.01386\n'
    '     4  10,200       8,200        2,000      $0.01446\n'
    '     5  12,200      10,200        2,000      $0.01506\n'
    '     6  14,200      12,200        2,000      $0.01566\n'
    '     7  16,200      14,200        2,000      $0.01626\n'
)

PLAN_H100_ARGS = ['plan', 'serve', '--model', 'llama-3.1-70b', '--rate', '10/s', '--gpu', 'h100-sxm', '--price', 'h100-sxm=2.50', '--batch', '16,64,256', '--top', '3']
PLAN_H100 = (
    'Plan serve Llama 3.1 70B: 10 requests/s, TTFT <= 500 ms, TPOT <= 50 ms\n'
    '  model                               Llama 3.1 70B\n'
    '  configurations                      48\n'
    '  valid_configurations                30\n'
    '  fitting_configurations              23\n'
    '  meeting_slo                         11\n'
    '  best                                3 x 4 h100-sxm (bf16, TP 4, batch 64)\n'
    '  best_total_gpus                     12\n'
    '  best_fleet_usd_per_hour             $30/h\n'
    '  best_usd_per_million_tokens_all_in  $2.778/M\n'
    '  best_ttft_s                         99.65 ms\n'
    '  best_tpot_s                         41.22 ms\n'
    '  best_error_bar                      tokens_per_s: median error 7% (max 175%) on 205 published multi-GPU H100 dense-model points, out of sample, tpot_s: median error 7% (max 39%) on 20 published multi-GPU H100 dense-model points, out of sample, ttft_s: median error 13% (max 24%) on 19 published multi-GPU H100 dense-model points, out of sample\n'
    'assumed: utilization = 70%\n'
    'note: ranking: each row at the target load (10 requests/s): tok/s/GPU = rate · output / total GPUs, what a GPU delivers ($/M follows from it); TPOT = a step of the full batch with the prompt chunks of the requests that replace finished ones (the replica at capacity: an upper bound)\n'
    "note: $/M all-in: the fleet's hour over the output tokens it serves, each with its prompt's prefill, as `napkin serve` gives usd_per_million_tokens_all_in (its usd_per_million_output_tokens leaves the prefill to usd_per_million_input_tokens)\n"
    'note: Pareto front: every column at capacity, each replica in the steady state of its batch, prompts included: tok/s/GPU = decoding sequences / TPOT / GPUs\n'
    "note: gemm_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: bandwidth_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: simplification: no queueing beyond the utilisation target: each replica's steady state at its batch (continuous batching, prompt chunks riding in decode steps), TTFT with no queue (`napkin serve --rate` simulates the queue)\n"
    "note: simplification: a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces over its NVLink-class link at the bus bandwidth the family's published sweep measured for each message size (one-shot where faster), bridged PCIe cards beyond their pair and cards with no NVLink over PCIe at its fitted fraction and measured step time, a larger group at the scale-out bandwidth; GPUs beyond the TP degree are pipeline stages, and their hops are not costed\n"
    '\n'
    'cheapest configurations that meet both objectives:\n'
    '  gpu       prec  gpus  tp  pp  batch  replicas  total      TTFT  TPOT@load  tok/s/GPU@load  fleet $/h  $/M all-in  bound\n'
    '  h100-sxm  bf16     4   4   1     64         3     12  99.65 ms   41.22 ms           250/s      $30/h    $2.778/M  bandwidth\n'
    '  h100-sxm  bf16     4   2   2     64         4     16  147.8 ms    46.8 ms         187.5/s      $40/h    $3.704/M  bandwidth\n'
    '  h100-sxm  bf16     2   2   1     16        11     22  144.8 ms   40.62 ms         136.4/s      $55/h    $5.093/M  bandwidth\n'
    '\n'
    'Pareto front, tokens/s per GPU against tokens/s per user (everything that fits, objectives aside):\n'
    '  gpu       prec  gpus  tp  batch  tok/s/user  tok/s/GPU@capacity      TPOT  bound\n'
    '  h100-sxm  bf16     8   8     16     51.95/s             103.9/s  19.25 ms  fixed costs\n'
    '  h100-sxm  bf16     4   4     16     38.15/s             152.6/s  26.21 ms  bandwidth\n'
    '  h100-sxm  bf16     8   8     64     32.33/s             258.6/s  30.94 ms  fixed costs\n'
    '  h100-sxm  bf16     4   4     64     24.26/s             388.1/s  41.22 ms  bandwidth\n'
    '  h100-sxm  bf16     8   2    256     17.19/s             550.2/s  58.16 ms  bandwidth\n'
    '  h100-sxm  bf16     4   1    256     10.53/s               674/s  94.96 ms  bandwidth\n'
)

# no --rate: each configuration's highest rate within the mean objectives, ranked by $/M at it
PLAN_MAX_RATE_ARGS = ['plan', 'serve', '--model', 'llama-3.1-70b', '--gpu', 'h100-sxm', '--price', 'h100-sxm=2.50', '--batch', '16,64,256', '--top', '3']
PLAN_MAX_RATE = (
    'Plan serve Llama 3.1 70B: the highest rate per replica, TTFT <= 500 ms, TPOT <= 50 ms\n'
    '  model                               Llama 3.1 70B\n'
    '  configurations                      48\n'
    '  valid_configurations                30\n'
    '  fitting_configurations              23\n'
    '  meeting_slo                         11\n'
    '  best                                1 x 4 h100-sxm (bf16, TP 4, batch 64)\n'
    '  best_total_gpus                     4\n'
    '  best_requests_per_s_per_replica     3.623/s\n'
    '  best_fleet_usd_per_hour             $10/h\n'
    '  best_usd_per_million_tokens_all_in  $2.556/M\n'
    '  best_ttft_s                         99.65 ms\n'
    '  best_tpot_s                         41.22 ms\n'
    '  best_error_bar                      tokens_per_s: median error 7% (max 175%) on 205 published multi-GPU H100 dense-model points, out of sample, tpot_s: median error 7% (max 39%) on 20 published multi-GPU H100 dense-model points, out of sample, ttft_s: median error 13% (max 24%) on 19 published multi-GPU H100 dense-model points, out of sample\n'
    'assumed: utilization = 70%\n'
    "note: ranking: each row is one replica at its highest rate within the objectives: 70% of its steady-state capacity (the utilisation target; raise --utilization to load it more); $/M = the replica's hour over the tokens it serves at that rate\n"
    "note: $/M all-in: the fleet's hour over the output tokens it serves, each with its prompt's prefill, as `napkin serve` gives usd_per_million_tokens_all_in (its usd_per_million_output_tokens leaves the prefill to usd_per_million_input_tokens)\n"
    'note: Pareto front: every column at capacity, each replica in the steady state of its batch, prompts included: tok/s/GPU = decoding sequences / TPOT / GPUs\n'
    "note: gemm_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: bandwidth_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: simplification: no queueing beyond the utilisation target: each replica's steady state at its batch (continuous batching, prompt chunks riding in decode steps), TTFT with no queue (`napkin serve --rate` simulates the queue)\n"
    "note: simplification: a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces over its NVLink-class link at the bus bandwidth the family's published sweep measured for each message size (one-shot where faster), bridged PCIe cards beyond their pair and cards with no NVLink over PCIe at its fitted fraction and measured step time, a larger group at the scale-out bandwidth; GPUs beyond the TP degree are pipeline stages, and their hops are not costed\n"
    '\n'
    'cheapest per million output tokens (all-in), each replica at its highest rate within the objectives:\n'
    '  gpu       prec  gpus  tp  pp  batch    req/s      TTFT      TPOT  tok/s/GPU    $/h  $/M all-in  bound\n'
    '  h100-sxm  bf16     4   4   1     64  3.623/s  99.65 ms  41.22 ms    271.7/s  $10/h    $2.556/M  bandwidth\n'
    '  h100-sxm  bf16     4   2   2     64  3.191/s  147.8 ms   46.8 ms    239.3/s  $10/h    $2.902/M  bandwidth\n'
    '  h100-sxm  bf16     8   8   1     64  4.827/s  71.14 ms  30.94 ms      181/s  $20/h    $3.836/M  fixed costs\n'
    '\n'
    'Pareto front, tokens/s per GPU against tokens/s per user (everything that fits, objectives aside):\n'
    '  gpu       prec  gpus  tp  batch  tok/s/user  tok/s/GPU@capacity      TPOT  bound\n'
    '  h100-sxm  bf16     8   8     16     51.95/s             103.9/s  19.25 ms  fixed costs\n'
    '  h100-sxm  bf16     4   4     16     38.15/s             152.6/s  26.21 ms  bandwidth\n'
    '  h100-sxm  bf16     8   8     64     32.33/s             258.6/s  30.94 ms  fixed costs\n'
    '  h100-sxm  bf16     4   4     64     24.26/s             388.1/s  41.22 ms  bandwidth\n'
    '  h100-sxm  bf16     8   2    256     17.19/s             550.2/s  58.16 ms  bandwidth\n'
    '  h100-sxm  bf16     4   1    256     10.53/s               674/s  94.96 ms  bandwidth\n'
)

# "the cheapest GPU to serve Llama 3.1 70B at p99 TPOT under 50 ms" (and p99 TTFT under 1 s): screened, then simulated
PLAN_P99_ARGS = ['plan', 'serve', '--model', 'llama-3.1-70b', '--tpot-p99', '50ms', '--ttft-p99', '1s', '--gpu', 'h100-sxm,h200', '--price', 'h100-sxm=2.50,h200=3.50', '--batch', '16,64,128', '--max-gpus', '4', '--top', '3', '--confirm', '2']
PLAN_P99 = (
    'Plan serve Llama 3.1 70B: the highest rate per replica, TTFT p99 <= 1 s, TPOT p99 <= 50 ms\n'
    '  model                               Llama 3.1 70B\n'
    '  configurations                      54\n'
    '  valid_configurations                36\n'
    '  fitting_configurations              26\n'
    '  meeting_mean_objectives             12\n'
    '  screened_configurations             12\n'
    '  simulated_configurations            2\n'
    '  best                                1 x 4 h100-sxm (bf16, TP 4, batch 64)\n'
    '  best_total_gpus                     4\n'
    '  best_requests_per_s_per_replica     3.623/s\n'
    '  best_fleet_usd_per_hour             $10/h\n'
    '  best_usd_per_million_tokens_all_in  $2.556/M\n'
    '  best_ttft_s                         99.65 ms\n'
    '  best_error_bar                      tokens_per_s: median error 7% (max 175%) on 205 published multi-GPU H100 dense-model points, out of sample, tpot_s: median error 7% (max 39%) on 20 published multi-GPU H100 dense-model points, out of sample, ttft_s: median error 13% (max 24%) on 19 published multi-GPU H100 dense-model points, out of sample\n'
    '  best_ttft_p99_s                     322.2 ms\n'
    '  best_tpot_p99_s                     37.52 ms\n'
    'assumed: utilization = 70%\n'
    'note: PP > 1 rows are screened only: the simulation (`napkin serve --rate`) runs a replica as one TP group, without its pipeline stages\n'
    "note: p99 objectives: each configuration at the highest rate per replica (within 70% of its capacity, the utilisation target) whose screened p99s meet them: TPOT p99 <= the steady state with every slot busy (a bound at any load), TTFT p99 = the M/M/c wait for one of the batch's slots (Erlang C) + a prompt step + the chunked prefill + the prompts that arrive with it; the cheapest then ran through `napkin serve --rate`'s simulation (seeded Poisson arrivals, same inputs; sim columns): 2 of them meet the objectives there\n"
    "note: $/M all-in: the fleet's hour over the output tokens it serves, each with its prompt's prefill, as `napkin serve` gives usd_per_million_tokens_all_in (its usd_per_million_output_tokens leaves the prefill to usd_per_million_input_tokens)\n"
    'note: Pareto front: every column at capacity, each replica in the steady state of its batch, prompts included: tok/s/GPU = decoding sequences / TPOT / GPUs\n'
    "note: gemm_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: bandwidth_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    'note: simplification: the p99 screen is a queueing approximation (an upper bound by construction: each part at its own p99), and only the configurations listed with sim columns ran through the load simulation; both model continuous batching with the same operator steps\n'
    "note: simplification: a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces over its NVLink-class link at the bus bandwidth the family's published sweep measured for each message size (one-shot where faster), bridged PCIe cards beyond their pair and cards with no NVLink over PCIe at its fitted fraction and measured step time, a larger group at the scale-out bandwidth; GPUs beyond the TP degree are pipeline stages, and their hops are not costed\n"
    '\n'
    "cheapest configurations that meet the p99 objectives (the screen's p99s; sim: `napkin serve --rate` on each):\n"
    '  gpu       prec  gpus  tp  pp  batch  replicas  req/s/replica  TTFT p99  TPOT p99  sim TTFT p99  sim TPOT p99  fleet $/h  $/M all-in\n'
    '  h100-sxm  bf16     4   4   1     64         1        3.623/s  347.9 ms  41.22 ms      322.2 ms      37.52 ms      $10/h    $2.556/M\n'
    '  h100-sxm  bf16     4   2   2     64         1        3.191/s  630.8 ms   46.8 ms             -             -      $10/h    $2.902/M\n'
    '  h200      bf16     4   4   1     64         1        3.993/s  346.7 ms   37.4 ms        321 ms      33.63 ms      $14/h    $3.247/M\n'
    '\n'
    'Pareto front, tokens/s per GPU against tokens/s per user (everything that fits, objectives aside):\n'
    '  gpu   prec  gpus  tp  batch  tok/s/user  tok/s/GPU@capacity      TPOT  bound\n'
    '  h200  bf16     4   4     16     44.11/s             176.4/s  22.67 ms  bandwidth\n'
    '  h200  bf16     2   2     16     29.73/s             237.8/s  33.64 ms  bandwidth\n'
    '  h200  bf16     4   4     64     26.74/s             427.8/s   37.4 ms  bandwidth\n'
    '  h200  bf16     4   2    128     17.91/s             573.2/s  55.82 ms  bandwidth\n'
    '  h200  bf16     2   2    128      11.3/s             723.1/s  88.51 ms  bandwidth\n'
)

# p99 objectives at a rate: the replicas each carry rate / replicas
PLAN_P99_RATE_ARGS = ['plan', 'serve', '--model', 'llama-3.1-8b', '--rate', '20/s', '--ttft-p99', '300ms', '--tpot-p99', '30ms', '--gpu', 'h100-sxm', '--price', 'h100-sxm=2.50', '--batch', '16,64,128', '--max-gpus', '2', '--top', '3', '--confirm', '1']
PLAN_P99_RATE = (
    'Plan serve Llama 3.1 8B: 20 requests/s, TTFT p99 <= 300 ms, TPOT p99 <= 30 ms\n'
    '  model                               Llama 3.1 8B\n'
    '  configurations                      12\n'
    '  valid_configurations                9\n'
    '  fitting_configurations              9\n'
    '  meeting_mean_objectives             9\n'
    '  screened_configurations             9\n'
    '  simulated_configurations            1\n'
    '  best                                2 x 1 h100-sxm (bf16, TP 1, batch 128)\n'
    '  best_total_gpus                     2\n'
    '  best_requests_per_s_per_replica     10/s\n'
    '  best_fleet_usd_per_hour             $5/h\n'
    '  best_usd_per_million_tokens_all_in  $0.2315/M\n'
    '  best_ttft_s                         40.26 ms\n'
    '  best_error_bar                      tokens_per_s: median error 6% (max 87%) on 189 published single-GPU H100 dense-model points, out of sample, tpot_s: median error 10% (max 30%) on 18 published single-GPU H100 dense-model points, out of sample, ttft_s: median error 5% (max 25%) on 20 published single-GPU H100 dense-model points, out of sample\n'
    '  best_ttft_p99_s                     110.4 ms\n'
    '  best_tpot_p99_s                     15.92 ms\n'
    'assumed: utilization = 70%\n'
    "note: p99 objectives: each configuration at the highest rate per replica (within 70% of its capacity, the utilisation target) whose screened p99s meet them: TPOT p99 <= the steady state with every slot busy (a bound at any load), TTFT p99 = the M/M/c wait for one of the batch's slots (Erlang C) + a prompt step + the chunked prefill + the prompts that arrive with it; the cheapest then ran through `napkin serve --rate`'s simulation (seeded Poisson arrivals, same inputs; sim columns): 1 of them meets the objectives there\n"
    "note: $/M all-in: the fleet's hour over the output tokens it serves, each with its prompt's prefill, as `napkin serve` gives usd_per_million_tokens_all_in (its usd_per_million_output_tokens leaves the prefill to usd_per_million_input_tokens)\n"
    'note: Pareto front: every column at capacity, each replica in the steady state of its batch, prompts included: tok/s/GPU = decoding sequences / TPOT / GPUs\n'
    "note: gemm_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: bandwidth_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    'note: simplification: the p99 screen is a queueing approximation (an upper bound by construction: each part at its own p99), and only the configurations listed with sim columns ran through the load simulation; both model continuous batching with the same operator steps\n'
    "note: simplification: a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces over its NVLink-class link at the bus bandwidth the family's published sweep measured for each message size (one-shot where faster), bridged PCIe cards beyond their pair and cards with no NVLink over PCIe at its fitted fraction and measured step time, a larger group at the scale-out bandwidth; GPUs beyond the TP degree are pipeline stages, and their hops are not costed\n"
    '\n'
    "cheapest configurations that meet the p99 objectives (the screen's p99s; sim: `napkin serve --rate` on each):\n"
    '  gpu       prec  gpus  tp  pp  batch  replicas  req/s/replica  TTFT p99  TPOT p99  sim TTFT p99  sim TPOT p99  fleet $/h  $/M all-in\n'
    '  h100-sxm  bf16     1   1   1    128         2           10/s  130.6 ms  25.91 ms      110.4 ms      15.92 ms       $5/h   $0.2315/M\n'
    '  h100-sxm  bf16     1   1   1     64         3        6.667/s  118.2 ms  16.72 ms             -             -    $7.50/h   $0.3472/M\n'
    '  h100-sxm  bf16     2   2   1     64         2           10/s  75.84 ms   11.4 ms             -             -      $10/h    $0.463/M\n'
    '\n'
    'Pareto front, tokens/s per GPU against tokens/s per user (everything that fits, objectives aside):\n'
    '  gpu       prec  gpus  tp  batch  tok/s/user  tok/s/GPU@capacity      TPOT  bound\n'
    '  h100-sxm  bf16     2   2     16     132.2/s              1058/s  7.562 ms  bandwidth\n'
    '  h100-sxm  bf16     1   1     16     98.08/s              1569/s   10.2 ms  bandwidth\n'
    '  h100-sxm  bf16     2   2     64     87.71/s              2807/s   11.4 ms  bandwidth\n'
    '  h100-sxm  bf16     2   1    128     60.26/s              3856/s   16.6 ms  bandwidth\n'
    '  h100-sxm  bf16     1   1    128     38.59/s              4940/s  25.91 ms  bandwidth\n'
)

# prompt and output lengths as grid axes
PLAN_WORKLOADS_ARGS = ['plan', 'serve', '--model', 'llama-3.1-8b', '--rate', '5/s', '--prompt', '500,4000', '--output', '100,500', '--gpu', 'h100-sxm', '--price', 'h100-sxm=2.50', '--batch', '8,64', '--max-gpus', '2', '--top', '3']
PLAN_WORKLOADS = (
    'Plan serve Llama 3.1 8B: 5 requests/s, TTFT <= 500 ms, TPOT <= 50 ms\n'
    '  model                               Llama 3.1 8B\n'
    '  configurations                      32\n'
    '  valid_configurations                24\n'
    '  fitting_configurations              24\n'
    '  meeting_slo                         22\n'
    '  best                                1 x 1 h100-sxm (bf16, TP 1, batch 64, prompt 500, output 500)\n'
    '  best_total_gpus                     1\n'
    '  best_fleet_usd_per_hour             $2.50/h\n'
    '  best_usd_per_million_tokens_all_in  $0.2778/M\n'
    '  best_ttft_s                         21.96 ms\n'
    '  best_tpot_s                         11.97 ms\n'
    '  best_error_bar                      tokens_per_s: median error 6% (max 87%) on 189 published single-GPU H100 dense-model points, out of sample, tpot_s: median error 10% (max 30%) on 18 published single-GPU H100 dense-model points, out of sample, ttft_s: median error 5% (max 25%) on 20 published single-GPU H100 dense-model points, out of sample\n'
    'assumed: utilization = 70%\n'
    'note: ranking: each row at the target load (5 requests/s): tok/s/GPU = rate · output / total GPUs, what a GPU delivers ($/M follows from it); TPOT = a step of the full batch with the prompt chunks of the requests that replace finished ones (the replica at capacity: an upper bound)\n'
    "note: $/M all-in: the fleet's hour over the output tokens it serves, each with its prompt's prefill, as `napkin serve` gives usd_per_million_tokens_all_in (its usd_per_million_output_tokens leaves the prefill to usd_per_million_input_tokens)\n"
    'note: Pareto front: every column at capacity, each replica in the steady state of its batch, prompts included: tok/s/GPU = decoding sequences / TPOT / GPUs\n'
    "note: gemm_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: bandwidth_efficiency: each GPU's published measurement, or its family's (catalog/efficiency.toml), with the fixed costs fitted to published serving runs\n"
    "note: simplification: no queueing beyond the utilisation target: each replica's steady state at its batch (continuous batching, prompt chunks riding in decode steps), TTFT with no queue (`napkin serve --rate` simulates the queue)\n"
    "note: simplification: a TP group within the GPU's scale-up domain (8 on an HGX board) all-reduces over its NVLink-class link at the bus bandwidth the family's published sweep measured for each message size (one-shot where faster), bridged PCIe cards beyond their pair and cards with no NVLink over PCIe at its fitted fraction and measured step time, a larger group at the scale-out bandwidth; GPUs beyond the TP degree are pipeline stages, and their hops are not costed\n"
    '\n'
    'cheapest configurations that meet both objectives:\n'
    '  gpu       prec  gpus  tp  pp  batch  prompt  output  replicas  total      TTFT  TPOT@load  tok/s/GPU@load  fleet $/h  $/M all-in  bound\n'
    '  h100-sxm  bf16     1   1   1     64     500     500         1      1  21.96 ms   11.97 ms          2500/s    $2.50/h   $0.2778/M  bandwidth\n'
    '  h100-sxm  bf16     2   2   1     64     500     500         1      2  15.43 ms   8.648 ms          1250/s       $5/h   $0.5556/M  bandwidth\n'
    '  h100-sxm  bf16     2   1   2     64     500     500         1      2   20.1 ms   9.906 ms          1250/s       $5/h   $0.5556/M  bandwidth\n'
    '\n'
    'cheapest for each prompt and output length:\n'
    '  gpu       prec  gpus  tp  pp  batch  prompt  output  replicas  total      TTFT  TPOT@load  tok/s/GPU@load  fleet $/h  $/M all-in  bound\n'
    '  h100-sxm  bf16     1   1   1      8     500     100         1      1  18.63 ms   9.143 ms           500/s    $2.50/h    $1.389/M  bandwidth\n'
    '  h100-sxm  bf16     1   1   1     64     500     500         1      1  21.96 ms   11.97 ms          2500/s    $2.50/h   $0.2778/M  bandwidth\n'
    '  h100-sxm  bf16     1   1   1      8   4,000     100         2      2  109.8 ms   17.61 ms           250/s       $5/h    $2.778/M  bandwidth\n'
    '  h100-sxm  bf16     1   1   1     64   4,000     500         2      2  122.1 ms   33.66 ms          1250/s       $5/h   $0.5556/M  bandwidth\n'
    '\n'
    'Pareto front, tokens/s per GPU against tokens/s per user (everything that fits, objectives aside):\n'
    '  gpu       prec  gpus  tp  batch  prompt  output  tok/s/user  tok/s/GPU@capacity      TPOT  bound\n'
    '  h100-sxm  bf16     2   2      8     500     500     151.5/s             606.1/s  6.599 ms  fixed costs\n'
    '  h100-sxm  bf16     1   1      8     500     500     116.9/s               935/s  8.556 ms  bandwidth\n'
    '  h100-sxm  bf16     2   2     64     500     500     115.6/s              3700/s  8.648 ms  bandwidth\n'
    '  h100-sxm  bf16     1   1     64     500     500     83.58/s              5349/s  11.97 ms  bandwidth\n'
)

SERVE_WATERFALL_ARGS = ['serve', '--model', 'llama-3.1-8b', '--gpu', 'h100', '--batch', '8', '--price', '2.95/h', '--waterfall', 'batch=64,precision=fp8,tp=2,cached-prefix=900,draft=llama-3.2-1b']
SERVE_WATERFALL = (
    'Serve Llama 3.1 8B on 1 x H100 SXM (TP 1)\n'
    '  model                          Llama 3.1 8B\n'
    '  gpu                            H100 SXM\n'
    '  gpus                           1\n'
    '  tp                             1\n'
    '  batch                          8\n'
    '  weights_bytes                  16.06 GB\n'
    '  weights_bytes_per_gpu          16.06 GB\n'
    '  kv_bytes_per_token             131.1 kB\n'
    '  kv_bytes_per_sequence          170.4 MB\n'
    '  kv_total_bytes                 1.363 GB\n'
    '  kv_bytes_per_gpu               1.363 GB\n'
    '  usable_bytes_per_gpu           76.56 GB\n'
    '  needed_bytes_per_gpu           17.42 GB\n'
    '  fits                           yes\n'
    '  free_bytes                     59.13 GB\n'
    '  max_batch                      355\n'
    '  prefill_linear_flops           16.06 TFLOP\n'
    '  prefill_attention_flops        262.1 GFLOP\n'
    '  prefill_flops                  16.32 TFLOP\n'
    '  prefill_s                      30.49 ms\n'
    '  prefill_mfu                    54.1%\n'
    '  decode_flops_per_token         16.66 GFLOP\n'
    '  decode_step_bytes              17.27 GB\n'
    '  decode_step_flops              133.3 GFLOP\n'
    '  decode_floor_s                 5.154 ms\n'
    '  decode_floor_tokens_per_s      1552/s\n'
    '  scheduling                     continuous\n'
    '  decode_step_s                  8.536 ms\n'
    '  decode_sequences               8\n'
    '  prefill_tokens_per_step        26.67\n'
    '  prompt_step_tokens             1,000\n'
    '  prompt_step_share              2.67%\n'
    '  mixed_step_s                   31.1 ms\n'
    '  cycle_s                        9.138 ms\n'
    '  ttft_s                         31.1 ms\n'
    '  bound                          bandwidth\n'
    '  compute_bound_batch            202\n'
    '  tpot_s                         9.138 ms\n'
    '  tokens_per_s_per_sequence      109.4/s\n'
    '  request_latency_s              2.763 s\n'
    '  tokens_per_s                   875.5/s\n'
    '  requests_per_s                 2.918/s\n'
    '  dense_flops_per_s              989.5 TFLOP/s\n'
    '  memory_bytes_per_s             3.35 TB/s\n'
    '  replica_usd_per_hour           $2.95/h\n'
    '  usd_per_request                $0.0002808\n'
    '  usd_per_million_output_tokens  $0.8744/M\n'
    '  usd_per_million_input_tokens   $0.01849/M\n'
    '  usd_per_million_tokens_all_in  $0.936/M\n'
    '  error_bar                      tokens_per_s: median error 6% (max 87%) on 189 published single-GPU H100 dense-model points, out of sample, tpot_s: median error 10% (max 30%) on 18 published single-GPU H100 dense-model points, out of sample, ttft_s: median error 5% (max 25%) on 20 published single-GPU H100 dense-model points, out of sample\n'
    'warning [every-hour-busy]: no --utilization: the $/M figures assume every paid hour is busy (100%); an hour the replica sits idle still costs, so at 40% busy they are 2.5x; give --utilization\n'
    'warning [draft-slower]: at waterfall step draft=llama-3.2-1b: speculative decoding is slower here (0.91x): the draft and the verification cost more than the accepted tokens save\n'
    'assumed: usable = 90%; utilization = 100%\n'
    'fitted: per_layer_overhead = 160 us; per_layer_decode_overhead = 90 us\n'
    "note: continuous batching, steady state at 8 sequences in flight: every request's prefill is paid in the same GPU time as the decoding; no queue (give --rate for latency under load)\n"
    'note: waterfall: each change is applied on top of the ones before it, in the order given, to the same prompt and output lengths\n'
    '\n'
    'waterfall (each change on top of the ones before):\n'
    '  step                tokens/s     x      TPOT      TTFT    $/M out  binds      max batch\n'
    '  baseline             875.5/s     -  9.138 ms   31.1 ms  $0.8744/M  bandwidth        355\n'
    '  batch=64              3827/s  4.37  16.72 ms  35.38 ms  $0.1493/M  bandwidth        355\n'
    '  precision=fp8         5110/s  1.34  12.52 ms  24.63 ms  $0.1183/M  bandwidth        395\n'
    '  tp=2                  6880/s  1.35  9.302 ms   17.7 ms  $0.1799/M  bandwidth        845\n'
    '  cached-prefix=900     8437/s  1.23  7.586 ms  9.659 ms  $0.1799/M  bandwidth      2,744\n'
    '  draft=llama-3.2-1b    7691/s  0.91  8.321 ms  9.659 ms  $0.1987/M  bandwidth      1,498\n'
)


@pytest.mark.parametrize("args,expected", [
    (SERVE_70B_8XH100_ARGS, SERVE_70B_8XH100),
    (BILL_RECEIPT_ARGS, BILL_RECEIPT),
    (BILL_AGENT_ARGS, BILL_AGENT),
    (PLAN_H100_ARGS, PLAN_H100),
    (SERVE_WATERFALL_ARGS, SERVE_WATERFALL),
    (PLAN_MAX_RATE_ARGS, PLAN_MAX_RATE),
    (PLAN_P99_ARGS, PLAN_P99),
    (PLAN_P99_RATE_ARGS, PLAN_P99_RATE),
    (PLAN_WORKLOADS_ARGS, PLAN_WORKLOADS),
], ids=['serve_70b_8xh100', 'bill_receipt', 'bill_agent', 'plan_h100', 'serve_waterfall', 'plan_max_rate', 'plan_p99',
        'plan_p99_rate', 'plan_workloads'])
def test_exact_output(run_cli, args, expected):
    assert run_cli(*args).stdout == expected


def test_serve_json_has_the_issue_keys(run_cli):
    d = json.loads(run_cli("serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--price", "2.5/h",
                           "--json").stdout)
    for key in ("weights_bytes", "weights_bytes_per_gpu", "kv_bytes_per_token", "kv_bytes_per_sequence",
                "kv_total_bytes", "fits", "free_bytes", "max_batch", "prefill_flops", "ttft_s", "decode_step_bytes",
                "decode_step_flops", "decode_step_s", "bound", "tpot_s", "tokens_per_s_per_sequence", "tokens_per_s",
                "compute_bound_batch", "request_latency_s", "usd_per_million_output_tokens",
                "usd_per_million_input_tokens", "derivation", "assumptions", "warnings"):
        assert key in d, key
    assert d["weights_bytes"] == pytest.approx(141.1e9, rel=1e-3)  # base units, not "141.1 GB"


def test_waterfall_json_rows(run_cli):
    d = json.loads(run_cli(*SERVE_WATERFALL_ARGS, "--json").stdout)
    steps = [row["step"] for row in d["waterfall"]]
    assert steps == ["baseline", "batch=64", "precision=fp8", "tp=2", "cached-prefix=900", "draft=llama-3.2-1b"]
    assert d["waterfall"][3]["gpus"] == 2  # tp=2 on a one-GPU replica brings its second GPU
    assert all(row["binds"] in ("memory capacity", "bandwidth", "compute", "communication", "fixed costs")
               for row in d["waterfall"])


@pytest.mark.parametrize("args,name", [
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8"], "roofline"),
    (SERVE_WATERFALL_ARGS, "waterfall"),
    (["plan", "serve", "--model", "llama-3.1-70b", "--rate", "10/s", "--gpu", "h100-sxm,h200"], "pareto"),
])
def test_chart_writes_svg(run_cli, tmp_path, args, name):
    path = tmp_path / "chart.svg"
    result = run_cli(*args, "--chart", str(path))
    assert path.read_text().lstrip().startswith("<svg")
    assert f"wrote {name} chart" in result.stderr


def test_memory_chart_by_name(run_cli, tmp_path):
    path = tmp_path / "m.png"
    run_cli("serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--chart", str(path),
            "--chart-name", "memory")
    assert path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args,message", [
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--tp", "3"],
     "error: tp does not divide the 64 attention heads of Llama 3.1 70B; got 3 (use one of 1, 2, 4, 8, 16, 32, 64)\n"),
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--tp", "4"],
     "error: tp exceeds the GPUs of the replica (2); got 4 (use --tp at most 2, or raise --gpus to 4)\n"),
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "6", "--tp", "4"],
     "error: gpus is not a multiple of --tp 4; got 6 (GPUs beyond the TP degree form pipeline stages: "
     "give gpus = tp x stages)\n"),
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--prompt", "1000", "--cached-prefix", "1000"],
     "error: cached_prefix must be less than the prompt (1000 tokens); got 1000 (at least one prompt token is "
     "computed)\n"),
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--mfu", "40"],
     "error: gemm_efficiency must be in (0, 1]; got 40 (did you mean 0.40?)\n"),
    (["serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--waterfall", "foo=1"],
     "error: waterfall has a knob napkin does not vary; got foo=1 (use one of batch, precision, kv-precision, tp, "
     "gpus, gpu, cached-prefix, draft, draft-tokens, acceptance, gemm-efficiency, bandwidth-efficiency, "
     "allreduce-latency, price, scheduling, chunk)\n"),
    (["bill", "claude-5"], "error: unknown API model 'claude-5'; closest: claude-opus-4, claude-haiku-3.5, "
                          "claude-sonnet-4\n"),
    (["bill", "claude-sonnet-4", "--input", "100", "--cached", "200"],
     "error: cached exceeds the 100 input tokens; got 200 (cached and written tokens are part of the input)\n"),
    (["bill", "claude-sonnet-4", "--self-hosted", "--gpu", "h100"],
     "error: serve_model is required: Claude Sonnet 4 has no open weights to self-host; got nothing (give "
     "--serve-model with an open model, e.g. llama-3.1-70b)\n"),
    (["plan", "serve", "--model", "llama-3.1-70b", "--rate", "0/s"], "error: rate must be > 0; got 0/s (give a positive number)\n"),
])
def test_bad_input_is_one_line(run_cli, args, message):
    result = run_cli(*args, code=1)
    assert result.stderr == message
    assert result.stdout == ""


# ------------------------------------------------------------------ review fixes
WATERFALL_REPEAT_ARGS = ['serve', '--model', 'llama-3.1-8b', '--gpu', 'h100', '--price', '2.95/h',
                         '--waterfall', 'batch=32,precision=fp8,batch=128', '--waterfall', 'batch=100000,batch=256']
WATERFALL_REPEAT_TAIL = (
    'warning [every-hour-busy]: no --utilization: the $/M figures assume every paid hour is busy (100%); an hour the replica sits idle still costs, so at 40% busy they are 2.5x; give --utilization\n'
    'warning [waterfall-does-not-fit]: step batch=100000 does not fit (at most 395 sequences of 1,300 tokens fit on 1 x H100 SXM, not 100,000): it shows no tokens/s, $/M or speed-up; the next step that fits is compared with batch=128\n'
    'assumed: usable = 90%; utilization = 100%\n'
    'fitted: per_layer_overhead = 160 us; per_layer_decode_overhead = 90 us\n'
    "note: continuous batching, steady state at 1 sequence in flight: every request's prefill is paid in the same GPU time as the decoding; no queue (give --rate for latency under load)\n"
    'note: waterfall: each change is applied on top of the ones before it, in the order given, to the same prompt and output lengths\n'
    '\n'
    'waterfall (each change on top of the ones before):\n'
    '  step           tokens/s      x      TPOT      TTFT     $/M out  binds            max batch\n'
    '  baseline        121.6/s      -   8.22 ms  30.57 ms    $6.675/M  bandwidth              355\n'
    '  batch=32         2594/s  21.32  12.34 ms  32.93 ms   $0.2529/M  bandwidth              355\n'
    '  precision=fp8    3533/s   1.36  9.058 ms   22.5 ms   $0.1909/M  bandwidth              395\n'
    '  batch=128        6505/s   1.84  19.68 ms   28.9 ms  $0.08203/M  bandwidth              395\n'
    '  batch=100000          -      -         -         -           -  memory capacity        395\n'
    '  batch=256        7318/s   1.12  34.98 ms  37.44 ms  $0.06631/M  bandwidth              395\n'
)


def test_waterfall_keeps_repeated_steps_and_marks_the_one_that_does_not_fit(run_cli):
    """Every step in the order given (batch twice, then again), and batch=100000 (at most 395 sequences fit
    with fp8 weights) as not fitting: no tokens/s, no speed-up, no $/M; batch=256 is compared with batch=128."""
    out = run_cli(*WATERFALL_REPEAT_ARGS).stdout
    assert out[out.index("warning ["):] == WATERFALL_REPEAT_TAIL


def test_waterfall_chart_draws_no_gain_for_a_step_that_does_not_fit(run_cli, tmp_path):
    from napkin.charts.serve import waterfall_chart

    d = json.loads(run_cli(*WATERFALL_REPEAT_ARGS, "--json").stdout)
    values = {v["step"]: v for v in waterfall_chart(d)["data"]["values"]}
    huge = values["batch=100000"]
    assert huge["change"] == "does not fit" and huge["label"] == "does not fit"
    assert huge["start"] == huge["end"] == pytest.approx(values["batch=128"]["end"])  # no bar: no gain
    assert values["batch=256"]["start"] == pytest.approx(values["batch=128"]["end"])
    assert values["batch=256"]["change"] == "gain"
    path = tmp_path / "w.svg"
    run_cli(*WATERFALL_REPEAT_ARGS, "--chart", str(path))
    assert "does not fit" in path.read_text()
    # a knob repeated with the same value keeps its own column
    d2 = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--waterfall", "batch=64,batch=64",
                            "--json").stdout)
    assert [v["step"] for v in waterfall_chart(d2)["data"]["values"]] == ["baseline", "batch=64", "batch=64 (2)"]


def test_bill_without_break_even_says_so_in_words(run_cli):
    out = run_cli("bill", "claude-haiku-3.5", "--self-hosted", "--serve-model", "llama-3.1-405b", "--gpu", "h100",
                  "--gpus", "16", "--tp", "8", "--price", "5/h", "--as-of", "2025-10-01").stdout
    assert "None" not in out and "breakeven" not in out
    assert "note: no break-even volume: self-hosting never pays here, since even at full load (" in out


def test_bill_as_of_before_the_price_date(run_cli):
    out = run_cli("bill", "claude-sonnet-4", "--as-of", "2024-01-01").stdout
    assert "price_age_days" not in out and "-589" not in out
    assert ("warning [price-not-yet-listed]: the catalog price of Claude Sonnet 4 is dated 2025-08-12, 589 days "
            "after --as-of 2024-01-01: it was not in force then") in out


def test_serve_tp_beyond_the_scale_up_domain_warns(run_cli):
    out = run_cli("serve", "--model", "llama-3.1-405b", "--gpu", "h100", "--tp", "16").stdout
    assert re.search(r"^  tp_link_bytes_per_s +50 GB/s$", out, re.M)
    assert "warning [beyond-scale-up-domain]: TP 16 spans 2 scale-up domains of 8 H100 SXM (NVLink 4)" in out


def test_waterfall_step_without_a_value_is_one_line(run_cli):
    result = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--waterfall", "batch=64,fp8", code=1)
    assert result.stderr == "error: waterfall must be NAME=VALUE; got fp8 (e.g. batch=64,precision=fp8,batch=128)\n"


@pytest.mark.parametrize("step,message", [
    ("batch=abc", "error: waterfall has a step whose batch is not a count such as 7B, 70.6e9, 15T, 4M or 4Mi; "
                  "got batch=abc (fix that step)\n"),
    ("tp=3", "error: waterfall has a step whose tp does not divide the 32 attention heads of Llama 3.1 8B; got tp=3 "
             "(use one of 1, 2, 4, 8, 16, 32)\n"),
])
def test_a_bad_waterfall_step_names_the_waterfall_not_the_base_input(run_cli, step, message):
    """Found in review: `batch=abc` in the waterfall turned the page's batch input red."""
    r = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--waterfall", step, code=1)
    assert r.stderr == message


def test_a_waterfall_tp_step_keeps_the_replicas_given_gpus(run_cli):
    """Found in review: tp=8 on a `--gpus 2` replica quietly made it 8 GPUs, while `serve --gpus 2 --tp 8` is an
    error. A step obeys the base command's rules: given --gpus stay, so the step is refused the same way."""
    base = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--tp", "8", code=1)
    assert base.stderr == ("error: tp exceeds the GPUs of the replica (2); got 8 "
                           "(use --tp at most 2, or raise --gpus to 8)\n")
    step = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--waterfall", "tp=8", code=1)
    assert step.stderr == ("error: waterfall has a step whose tp exceeds the GPUs of the replica (2); got tp=8 "
                           "(use tp at most 2, or put gpus=8 before it)\n")
    d = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--waterfall",
                           "tp=1,gpus=8,tp=8", "--json").stdout)
    assert [(row["step"], row["gpus"]) for row in d["waterfall"]] == [
        ("baseline", 2), ("tp=1", 2), ("gpus=8", 8), ("tp=8", 8)]  # tp=1 on 2 given GPUs: 2 pipeline stages
    d = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--waterfall", "tp=4",
                           "--json").stdout)
    assert [row["gpus"] for row in d["waterfall"]] == [2, 4]  # only --tp given: the GPUs follow the TP degree


def test_serve_under_load_does_not_ask_for_the_rate_it_was_given(run_cli):
    """Fuzz repro: `serve --model llama-3.1-8b --gpu h100 --rate 2/s` noted "no queue (give --rate for latency under
    load)" above the queue its --rate simulated; with no --rate the hint stays."""
    args = ("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--price", "2.5/h")
    loaded = run_cli(*args, "--rate", "2/s", "--requests", "100").stdout
    assert [x for x in loaded.splitlines() if x.startswith("note:")] == [
        "note: continuous batching, steady state at 1 sequence in flight: every request's prefill is paid in the same "
        "GPU time as the decoding; no queue (the load simulation's figures have the queue)",
        "note: load: 100 requests simulated (Poisson arrivals at exactly the rate given, seed 0), the first tenth as "
        "warm-up; percentiles over "
        "the rest"]
    assert [x for x in run_cli(*args).stdout.splitlines() if x.startswith("note:")] == [
        "note: continuous batching, steady state at 1 sequence in flight: every request's prefill is paid in the same "
        "GPU time as the decoding; no queue (give --rate for latency under load)"]


def test_the_bandwidth_bound_note_writes_both_batches_alike(run_cli):
    """Fuzz repro: `serve --model llama-3.1-70b --gpu h100 --gpus 9` noted "memory holds at most 1286 sequences,
    short of the 1,753 ...": one figure with a thousands separator, the other without."""
    out = run_cli("serve", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "9", "--price", "2.5/h").stdout
    assert ("note: memory holds at most 1,286 sequences, short of the 1,753 that would make the weights' GEMMs "
            "compute-bound: decode on this replica is always bandwidth-bound\n") in out
