"""Exact output of `napkin journey` and `napkin card` (the worked example's node with N = 405B), JSON and pages."""

from __future__ import annotations

import json

import pytest

JOURNEY_405B_ARGS = ("journey", "--params", "405B")
JOURNEY_405B = (
    'One prompt through Llama 3.1 405B on 8 × H100 SXM (fp8)\n'
    'prompt: "Why is the sky red at sunset but blue at noon?"\n'
    '\n'
    '1. The tokenizer                                                Σ 0 FLOP\n'
    '  encoding                   o200k_base\n'
    '  question_characters                46\n'
    '  question_words                     11\n'
    '  question_tokens                    12  = len(o200k_base.encode(prompt))\n'
    '  characters_per_token            3.833  = characters / tokens   [characters = 46, tokens = 12]\n'
    '  words_per_token                0.9167  = words / tokens   [words = 11, tokens = 12]\n'
    '  system_tokens                     988\n'
    '  prompt_tokens                   1,000  = question_tokens + system_tokens   [question_tokens = 12, system_tokens = 988]\n'
    '  question_share                   1.2%  = question_tokens / prompt_tokens\n'
    '  embedding_bytes_per_token    32.77 kB  = d_model · 2 bytes (bf16)   [d_model = 16384]\n'
    '  embedded_prompt_values         16.38M  = prompt_tokens · d_model   [prompt_tokens = 1,000, d_model = 16384]\n'
    "  note: counts differ by tokenizer: these are o200k_base's; Llama 3.1 405B's own vocabulary has 128,256 entries\n"
    "  note: Llama 3's own tokenizer (128,256 entries) splits this question into 12 tokens too\n"
    '  note: splitting text is lookups, not arithmetic: the meter does not move\n'
    '\n'
    '2. The weights                                                  Σ 0 FLOP\n'
    '  params                     405B\n'
    '  bytes_per_param               1\n'
    '  weights_bytes            405 GB  = N · bytes_per_param   [N = 405B, bytes_per_param = 1, precision = fp8]\n'
    '  memory_bytes_per_gpu      80 GB\n'
    '  capacity_bytes           640 GB  = gpus · memory_per_gpu   [gpus = 8, memory_per_gpu = 80 GB]\n'
    '  needed_bytes           405.7 GB  = weights + kv_bytes_per_token · (prompt + output)   [weights = 405 GB, kv_bytes_per_token = 516.1 kB, tokens = 1,300]\n'
    '  fits                        yes\n'
    '  gpus_used                     8\n'
    '  weights_bytes_per_gpu  50.62 GB  = weights_bytes / gpus   [gpus = 8]\n'
    '  free_bytes               235 GB  = capacity − weights  (for the KV cache and activations)\n'
    '  load_s                   40.5 s  = weights_bytes / disk_bandwidth   [disk_bandwidth = 10 GB/s]\n'
    '  node_usd_per_hour         $24/h  = gpus · usd_per_gpu_hour  (paid whether it answers or idles)   [gpus = 8, usd_per_gpu_hour = $3/h]\n'
    '  note: N = 405B given; the architecture gives 405.9B\n'
    '  note: weights are loaded once and stay resident: numbers sitting still compute nothing\n'
    '\n'
    '3. The memory wall                                              Σ 0 FLOP\n'
    '  mac_flops                               2 FLOP\n'
    '  compute_precision                          fp8\n'
    '  dense_flops_per_s                1.979 PFLOP/s\n'
    "  mac_s                                 1.011 fs  = 2 FLOP / dense peak  (one multiply-accumulate's share of a second)   [peak = 1.979 PFLOP/s]\n"
    '  node_flops_per_s                 15.83 PFLOP/s  = gpus · dense peak   [gpus = 8]\n'
    '  memory_bytes_per_s                   3.35 TB/s\n'
    '  node_memory_bytes_per_s              26.8 TB/s  = gpus · bandwidth   [gpus = 8]\n'
    '  ridge_flops_per_byte                     590.7  = peak / bandwidth   [peak = 1.979 PFLOP/s, bandwidth = 3.35 TB/s]\n'
    '  weight_read_one_gpu_s                 120.9 ms  = weights_bytes / bandwidth  (through one GPU)   [weights = 405 GB, bandwidth = 3.35 TB/s]\n'
    '  weight_read_s                         15.11 ms  = weights_bytes / (gpus · bandwidth)   [weights = 405 GB, gpus = 8]\n'
    '  decode_intensity_flops_per_byte              2  = 2 · batch / bytes_per_param  (batch 1)   [batch = 1, bytes_per_param = 1]\n'
    '  decode_fraction_of_ridge                0.339%  = decode intensity / ridge\n'
    '  gemm_efficiency                          56.8%\n'
    '  bandwidth_efficiency                       86%\n'
    "  note: the operator model times Llama 3.1 405B's layers as the architecture has them (405.9B parameters); --params sets the meter and the napkin rules\n"
    "  note: datasheet peaks are ceilings: the kernels reach gemm_efficiency of the dense peak on a large GEMM and bandwidth_efficiency of the HBM bandwidth (see the assumptions for where each comes from); the prefill and decode times below are the operator model's, as `napkin serve` computes them\n"
    '  note: the multiply-accumulate above is counted where it runs, in prefill: the meter does not move here, so Σ is exactly 2·N·(prompt + output)\n'
    '\n'
    '4. Prefill                                                   Σ 810 TFLOP\n'
    '  flops_per_token              810 GFLOP  = 2 · N_active   [N_active = 405B]\n'
    '  prefill_attention_flops    4.129 TFLOP  = 2 · L · T² · d_attn  (causal)   [L = 126, T = 1,000, d_attn = 16384]\n'
    '  prefill_flops                810 TFLOP  = 2 · N_active · T   [N_active = 405B, T = 1,000]\n'
    '  mfu                                40%\n'
    '  effective_flops_per_s    6.333 PFLOP/s  = gpus · dense peak · MFU   [gpus = 8, peak = 1.979 PFLOP/s, MFU = 40%]\n'
    '  prefill_napkin_s              127.9 ms  = prefill_flops / effective_flops_per_s  (the napkin rule: one MFU for the whole prompt)   [prefill_flops = 810 TFLOP, effective = 6.333 PFLOP/s]\n'
    "  prefill_s                     181.7 ms  = Σ operators of the prompt's prefill on TP 8  (the operator model: GEMMs, attention, element-wise kernels, all-reduces, fixed costs)   [tokens = 1,000]\n"
    '  prefill_mfu                      28.2%  = prefill_flops / (prefill_s · gpus · dense peak)\n'
    '  prefill_tokens_per_s            5503/s  = prompt_tokens / prefill_s   [prompt_tokens = 1,000]\n'
    '  kv_bytes_per_token            516.1 kB  = 2 · L · h_kv · d_h · bytes   [L = 126, h_kv = 8, d_h = 128, bytes = 2, precision = bf16]\n'
    '  prompt_kv_bytes               516.1 MB  = kv_bytes_per_token · prompt_tokens   [prompt_tokens = 1,000]\n'
    '  max_context_kv_bytes          67.65 GB  = kv_bytes_per_token · max_context   [max_context = 131,072]\n'
    '  kv_capacity_tokens              455.3k  = free_bytes / kv_bytes_per_token   [free_bytes = 235 GB]\n'
    '  ttft_s                        181.7 ms  = prefill_s  (on an idle node: queueing and the network add to it)\n'
    '  note: prefill operators: mlp 75.69 ms, allreduce 52.71 ms, layer_overhead 20.16 ms\n'
    "  note: the operator model's TTFT against published runs (napkin validate): median error 13% (max 24%) on 19 published multi-GPU H100 dense-model points, out of sample\n"
    '\n'
    '5. Decode                                                  Σ 1.053 PFLOP\n'
    '  decode_attention_flops        2.849 TFLOP  = 4 · L · d_attn · T_out · (T_in + T_out / 2)   [L = 126, d_attn = 16384, T_in = 1,000, T_out = 300]\n'
    '  decode_flops                    243 TFLOP  = 2 · N_active · T_out  (one full pass per output token)   [N_active = 405B, T_out = 300]\n'
    '  kv_bytes_per_sequence            670.9 MB  = kv_bytes_per_token · (prompt + output)   [tokens = 1,300]\n'
    '  decode_bytes_per_token           405.7 GB  = active weights + KV of the sequence   [weights = 405 GB, kv = 670.9 MB]\n'
    '  decode_floor_s_per_token         15.14 ms  = (active weights + KV) / (gpus · bandwidth)  (the napkin floor: every byte once, at the datasheet rate)   [bandwidth = 26.8 TB/s]\n'
    '  decode_compute_s_per_token       51.16 us  = flops_per_token / (gpus · dense peak)  (what FLOPs alone would take)\n'
    '  decode_s_per_token               32.43 ms  = Σ operators of a decode step of one sequence (KV of ctx tokens) on TP 8  (the operator model)   [ctx = 1,150]\n'
    '  decode_floor_share                  46.7%  = decode_floor_s_per_token / decode_s_per_token\n'
    '  decode_tokens_per_s               30.83/s  = 1 / decode_s_per_token\n'
    '  decode_s                          9.697 s  = (output_tokens − 1) · decode_s_per_token  (prefill emits the first)   [output_tokens = 300]\n'
    '  answer_s                          9.879 s  = ttft_s + (output_tokens − 1) · decode_s_per_token   [ttft_s = 181.7 ms, output_tokens = 300]\n'
    '  reading_tokens_per_s              5.289/s  = 238 words/min / 60 / 0.75 words per token\n'
    '  speed_over_reading                   5.83  = decode_tokens_per_s / reading_tokens_per_s\n'
    '  tp_allreduce_bytes_per_token     14.45 MB  = 2 all-reduces · L · 2 · (n − 1) / n · d_model · 2 bytes   [L = 126, n = 8, d_model = 16384]\n'
    "  tp_allreduce_s_per_token         3.433 ms  = the allreduce operator of the one-sequence step: 2 · L all-reduces, each the faster of a one-shot kernel (latency + (n − 1) · message / link) and the ring (its bytes at the family's measured bus bandwidth for the message, or over the link plus its latency)\n"
    '  tp_allreduce_share                  10.6%  = tp_allreduce_s_per_token / decode_s_per_token\n'
    '  batch                                  64\n'
    '  batch_s_per_step                 45.43 ms  = Σ operators of a decode step of 64 sequences (no prompts)\n'
    '  mixed_step_s                     192.3 ms  = Σ operators of a step with 64 decode tokens and 1,000 prompt tokens\n'
    "  prompt_step_share                   21.3%  = (decode_sequences · prompt / output) / prompt tokens in a step  (the steps that carry a new request's prompt)   [decode_sequences = 64, prompt = 1,000, output = 300, in_a_step = 1,000]\n"
    '  batch_cycle_s                    76.76 ms  = share · mixed_step_s + (1 − share) · batch_s_per_step  (the mean step a sequence waits per token)   [mixed = 192.3 ms, decode = 45.43 ms]\n'
    "  batch_tokens_per_s                833.8/s  = decode_sequences / batch_cycle_s  (every request's prefill paid)   [decode_sequences = 64]\n"
    '  batch_speedup                       27.04  = batch_tokens_per_s / decode_tokens_per_s  (per-user cost falls as much)\n'
    '  batch_at_ridge                      295.4  = ridge · bytes_per_param / 2  (where weight reads stop binding)   [ridge = 590.7, bytes_per_param = 1]\n'
    '  max_sequences_in_memory               350  = floor(free_bytes / kv_bytes_per_sequence)   [free_bytes = 235 GB]\n'
    '  note: decode operators, one sequence: mlp 14.31 ms, layer_overhead 11.34 ms, allreduce 3.433 ms\n'
    "  note: the operator model's throughput against published runs (napkin validate): median error 7% (max 175%) on 205 published multi-GPU H100 dense-model points, out of sample\n"
    '  note: each answer token needs the one before it: decode is serial, and each step reads every weight\n'
    '  note: the step times include what a napkin rule leaves out: the tensor-parallel all-reduces, attention over the KV cache, the element-wise kernels and the fixed per-layer costs, each operator on its own roofline, summed\n'
    "  note: the operator model's decode step (TPOT) against published runs (napkin validate): median error 7% (max 39%) on 20 published multi-GPU H100 dense-model points, out of sample\n"
    '  note: the meter counts 2N for every answer token; the last token is never fed back, so strictly one pass fewer (0.08% of Σ)\n'
    '\n'
    '6. The bill                                                Σ 1.053 PFLOP\n'
    '  input_usd                             $0.003  = prompt_tokens · price_in / 1e6   [prompt_tokens = 1,000, price_in = $3/M]\n'
    '  output_usd                           $0.0045  = output_tokens · price_out / 1e6   [output_tokens = 300, price_out = $15/M]\n'
    '  usd                                  $0.0075  = input_usd + output_usd\n'
    '  output_over_input_price                    5  = price_out / price_in\n'
    '  flops_per_usd                       1.404e17  = Σ FLOPs / usd   [Σ = 1.053 PFLOP, usd = $0.0075]\n'
    '  shared_node_s                       359.8 ms  = output_tokens / batch_tokens_per_s  (the node time this request holds in the batch, its prefill included)   [output_tokens = 300, batch = 64]\n'
    '  gpu_usd_alone                       $0.06586  = node_usd_per_hour · answer_s / 3600   [answer_s = 9.879 s]\n'
    '  gpu_usd_shared                     $0.002399  = node_usd_per_hour · shared_node_s / 3600\n'
    '  gpu_usd_per_million_tokens_all_in   $7.996/M  = node $/h / 3600 / batch_tokens_per_s · 1e6  (at full use, prompts included)   [batch_tokens_per_s = 833.8/s]\n'
    '  price_over_gpu_cost                    3.127  = usd / gpu_usd_shared\n'
    '  tdp_watts                              700 W\n'
    '  energy_alone_j                      55.32 kJ  = gpus · TDP · answer_s  (alone on the node)   [gpus = 8, TDP = 700 W, answer_s = 9.879 s]\n'
    '  energy_j                            2.015 kJ  = gpus · TDP · shared_node_s  (batched)   [gpus = 8, TDP = 700 W, shared_node_s = 359.8 ms]\n'
    '  energy_over_google_median              2.332  = energy_j / 0.24 Wh\n'
    '  note: money is arithmetic about FLOPs, not FLOPs: the meter does not move\n'
    '\n'
    '7. The training debt                                       Σ 1.053 PFLOP\n'
    '  training_tokens                    15.6T\n'
    '  train_flops                3.791e25 FLOP  = 6 · N_active · D   [N_active = 405B, D = 15.6T]\n'
    '  requests_per_training_run            36B  = train_flops / Σ FLOPs of one request   [train_flops = 3.791e25 FLOP, Σ = 1.053 PFLOP]\n'
    '  tokens_per_param                   38.52  = D / N\n'
    "  note: the training run is a second ledger: its FLOPs are not on this request's meter\n"
    '\n'
    'Σ 1.053 PFLOP = prefill 810 TFLOP + decode 243 TFLOP   (2N per token, no attention term)\n'
    'assumed: system_tokens = 988; disk_bandwidth = 10 GB/s; usd_per_gpu_hour = $3/h; mfu = 40%; chunk = 8,192; price_in = $3/M; price_out = $15/M\n'
    'fitted: per_layer_overhead = 160 us; per_layer_decode_overhead = 90 us\n'
)

CARD_405B_ARGS = ("card", "--params", "405B")
CARD_405B = (
    'Numbers every AI engineer should know: Llama 3.1 405B on 8 × H100 SXM (fp8)\n'
    '  number                                                                     value  formula                                                  earned in\n'
    '  characters per token (o200k_base)                                          3.833  characters / tokens                                      1. The tokenizer\n'
    '  words per token                                                           0.9167  words / tokens                                           1. The tokenizer\n'
    "  the question's share of the prompt                                          1.2%  question_tokens / prompt_tokens                          1. The tokenizer\n"
    '  weights at fp32 (4 bytes per parameter)                                  1.62 TB  N · 4 bytes                                              2. The weights\n'
    '  weights at bf16 (2 bytes per parameter)                                   810 GB  N · 2 bytes                                              2. The weights\n'
    '  weights at fp8 (1 byte per parameter)                                     405 GB  N · 1 byte                                               2. The weights\n'
    '  weights at int4 (0.5 bytes per parameter)                               202.5 GB  N · 0.5 bytes                                            2. The weights\n'
    '  left for the KV cache on 8 × H100 SXM                                     235 GB  capacity − weights                                       2. The weights\n'
    '  load the weights from disk                                                40.5 s  weights_bytes / disk_bandwidth                           2. The weights\n'
    '  rent of the node, busy or idle                                             $24/h  gpus · usd_per_gpu_hour                                  2. The weights\n'
    '  one multiply-accumulate                                                   2 FLOP  a · b + c                                                3. The memory wall\n'
    '  one MAC at the fp8 peak                                                 1.011 fs  2 FLOP / dense peak                                      3. The memory wall\n'
    '  dense fp8 peak, one H100 SXM                                       1.979 PFLOP/s  datasheet, dense (not sparse)                            3. The memory wall\n'
    '  memory bandwidth, one H100 SXM                                         3.35 TB/s  datasheet                                                3. The memory wall\n'
    '  ridge point, FLOP per byte                                                 590.7  peak / bandwidth                                         3. The memory wall\n'
    '  batch-1 decode, FLOP per byte                                                  2  2 · batch / bytes_per_param                              3. The memory wall\n'
    '  read every weight once                                                  15.11 ms  weights_bytes / (gpus · bandwidth)                       3. The memory wall\n'
    '  FLOPs per token                                                        810 GFLOP  2 · N_active                                             4. Prefill\n'
    '  prefill of the 1,000-token prompt at 40% MFU                            127.9 ms  prefill_flops / effective_flops_per_s                    4. Prefill\n'
    "  prefill of the 1,000-token prompt, operator model                       181.7 ms  Σ operators of the prompt's prefill on TP 8              4. Prefill\n"
    '  prefill rate, one prompt                                                  5503/s  prompt_tokens / prefill_s                                4. Prefill\n'
    '  KV cache per token (bf16)                                               516.1 kB  2 · L · h_kv · d_h · bytes                               4. Prefill\n'
    '  KV cache at full context                                                67.65 GB  kv_bytes_per_token · max_context                         4. Prefill\n'
    '  decode floor per token                                                  15.14 ms  (active weights + KV) / (gpus · bandwidth)               5. Decode\n'
    '  share of the floor one request reaches                                     46.7%  decode_floor_s_per_token / decode_s_per_token            5. Decode\n'
    '  decode speed, one user                                                   30.83/s  1 / decode_s_per_token                                   5. Decode\n'
    '  batch where decode turns compute-bound, at the datasheet ridge             295.4  ridge · bytes_per_param / 2                              5. Decode\n'
    '  throughput gain at batch 64                                                27.04  batch_tokens_per_s / decode_tokens_per_s                 5. Decode\n'
    '  all-reduce volume per token per GPU                                     14.45 MB  2 all-reduces · L · 2 · (n − 1) / n · d_model · 2 bytes  5. Decode\n'
    "  all-reduces' share of a one-user decode step                               10.6%  tp_allreduce_s_per_token / decode_s_per_token            5. Decode\n"
    "  Σ FLOPs of one request                                               1.053 PFLOP  Σ rungs' FLOPs = prefill_flops + decode_flops            5. Decode\n"
    '  API bill for the request                                                 $0.0075  input_usd + output_usd                                   6. The bill\n'
    '  output price over input price                                                  5  price_out / price_in                                     6. The bill\n'
    '  GPU cost per million output tokens, prompts included, at batch 64       $7.996/M  node $/h / 3600 / batch_tokens_per_s · 1e6               6. The bill\n'
    '  FLOPs per dollar                                                        1.404e17  Σ FLOPs / usd                                            6. The bill\n'
    '  energy per request, batched                                             2.015 kJ  gpus · TDP · shared_node_s                               6. The bill\n'
    '  6ND, the training run                                              3.791e25 FLOP  6 · N_active · D                                         7. The training debt\n'
    '  requests that equal one training run                                         36B  train_flops / Σ FLOPs of one request                     7. The training debt\n'
    'assumed: system_tokens = 988; disk_bandwidth = 10 GB/s; usd_per_gpu_hour = $3/h; mfu = 40%; chunk = 8,192; price_in = $3/M; price_out = $15/M\n'
    'fitted: per_layer_overhead = 160 us; per_layer_decode_overhead = 90 us\n'
)


def test_journey_exact_output(run_cli):
    assert run_cli(*JOURNEY_405B_ARGS).stdout == JOURNEY_405B


def test_card_exact_output(run_cli):
    assert run_cli(*CARD_405B_ARGS).stdout == CARD_405B


def test_journey_json_carries_rungs_and_meter(run_cli):
    d = json.loads(run_cli("journey", "--json").stdout)
    rungs = d["rungs"]
    assert [r["n"] for r in rungs] == [1, 2, 3, 4, 5, 6, 7]
    assert [r["title"] for r in rungs] == ["The tokenizer", "The weights", "The memory wall", "Prefill", "Decode",
                                           "The bill", "The training debt"]
    assert d["meter_flops"] == sum(r["flops"] for r in rungs) == rungs[-1]["meter_flops"]
    prefill = rungs[3]
    assert prefill["flops"] == d["prefill_flops"] == prefill["figures"]["prefill_flops"]
    assert prefill["units"]["prefill_s"] == "seconds"
    (step,) = [s for s in prefill["derivation"] if s["name"] == "prefill_flops"]
    assert step["formula"] == "2 · N_active · T" and step["values"]["T"] == 1000
    assert prefill["working"]["prefill_flops"].startswith("2 · N_active · T   [N_active = 405.9B, T = 1,000]")
    assert {a["name"] for a in d["assumptions"]} >= {"mfu", "system_tokens", "price_in", "price_out"}
    assert d["flops_convention"] == "2N per token, no attention term"


def test_journey_attention_flag_adds_the_term(run_cli):
    d = json.loads(run_cli("journey", "--attention", "--json").stdout)
    assert d["meter_flops"] == pytest.approx(d["prefill_flops"] + d["decode_flops"], rel=1e-12)
    assert d["prefill_flops"] == pytest.approx(2 * d["params"] * 1000 + d["prefill_attention_flops"], rel=1e-12)
    assert d["flops_convention"] == "2N per token plus the causal attention term"


def test_journey_pages(run_cli, tmp_path):
    html, md, svg = tmp_path / "j.html", tmp_path / "j.md", tmp_path / "ladder.svg"
    r = run_cli("journey", "--html", html, "--markdown", md, "--chart", svg)
    assert r.stderr == f"wrote {html}\nwrote {md}\nwrote {svg}\n"
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    for title in ("1. The tokenizer", "4. Prefill", "7. The training debt", "Numbers every AI engineer should know"):
        assert title in page
    assert "<svg" in page  # the FLOPs ladder, drawn inline
    assert "Σ 1.055 PFLOP = prefill 811.7 TFLOP + decode 243.5 TFLOP" in page
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# One prompt through Llama 3.1 405B on 8 × H100 SXM (fp8)\n")
    assert "## 4. Prefill · Σ 811.7 TFLOP\n" in text
    assert "| ridge point, FLOP per byte | 590.7 | `peak / bandwidth` | 3. The memory wall |" in text
    assert svg.read_text().startswith("<svg")


def test_card_exports(run_cli, tmp_path):
    png, html, md = tmp_path / "card.png", tmp_path / "card.html", tmp_path / "card.md"
    run_cli("card", "--model", "llama-3.1-70b", "--gpu", "h200", "--gpus", "2", "--png", png, "--html", html,
            "--markdown", md)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Numbers every AI engineer should know: Llama 3.1 70B on 2 × H200" in html.read_text(encoding="utf-8")
    text = md.read_text(encoding="utf-8")
    # the whole card recomputed for the pair: 70B's KV is 320 KiB per token in bf16 (seed 004's 327,680 B)
    assert "| KV cache per token (bf16) | 327.7 kB | `2 · L · h_kv · d_h · bytes` | 4. Prefill |" in text


def test_card_json_rows_name_their_rung(run_cli):
    d = json.loads(run_cli("card", "--json").stdout)
    rows = {r["key"]: r for r in d["rows"]}
    assert rows["ridge_flops_per_byte"]["rung_title"] == "The memory wall"
    assert rows["kv_bytes_per_token"]["value"] == 516096
    fp8 = rows["weights_bytes_fp8"]["value"]
    assert fp8 == pytest.approx(405.85e9, rel=1e-4)  # 1 byte per parameter
    assert [rows[f"weights_bytes_{p}"]["value"] / fp8 for p in ("fp32", "bf16", "int4")] == [4.0, 2.0, 0.5]
    assert all(r["formula"] for r in d["rows"])
    assert [r["rung"] for r in d["rows"]] == sorted(r["rung"] for r in d["rows"])


@pytest.mark.parametrize(("args", "message"), [
    (("journey", "--mfu", "40"), "error: mfu must be in (0, 1]; got 40 (did you mean 0.40?)\n"),
    (("journey", "--model", "llama-9"), None),
    (("journey", "--chart", "x.pdf"), "error: chart must end in .svg or .png; got x.pdf\n"),
    (("card", "--png", "card.svg"), "error: png must end in .png; got card.svg\n"),
    (("card", "--gpus", "0"), "error: gpus must be > 0; got 0 (give a positive number)\n"),
])
def test_bad_input_is_one_line(run_cli, args, message):
    r = run_cli(*args, code=1)
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ")
    if message:
        assert r.stderr == message


def test_rich_rendering_escapes_markup(capsys):
    """On a terminal the journey is drawn with rich; a warning code in brackets must survive as text."""
    from napkin import calculate, render_doc

    render_doc.print_journey_rich(render_doc.data(calculate("journey", gpus=1)))
    out = capsys.readouterr().out
    assert "1. The tokenizer" in out and "7. The training debt" in out
    assert "warning [does-not-fit]: Llama 3.1 405B at fp8 needs" in out
    render_doc.print_card_rich(render_doc.data(calculate("card")))
    assert "590.7" in capsys.readouterr().out  # the ridge point row


def test_gpus_that_do_not_divide_the_heads_are_said(run_cli):
    """serve refuses --gpus 11 for a 64-head model; the journey walks on, and says no engine splits it so."""
    out = run_cli("journey", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "11").stdout
    assert ("warning [uneven-heads]: tensor parallelism over 11 GPUs does not divide Llama 3.1 70B's 64 attention "
            "heads evenly: the journey times an even split, which no engine runs; a real deployment rounds up to 16 "
            "GPUs (or adds pipeline stages)\n") in out
    assert "uneven-heads" not in run_cli("journey", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "8").stdout
