"""The inputs each tab of the page opens with: the worked examples of the README.

Raw values, as a person would type them (unit strings). The API tests run every entry
and check it against the worked example it cites, so a default cannot drift silently.
A calculator missing here opens with its request's own defaults.
"""

from __future__ import annotations

# calculator name -> raw request (field -> value as typed); the comment names the worked example
EXAMPLES: dict[str, dict[str, object]] = {
    # kv-per-token-llama31-70b
    "model": {"model": "llama-3.1-70b"},
    # kv-total-70b-8k-32seq, weights-70b-bf16: 70B with 32 users at 8k context on 4 H100s
    "memory": {"model": "llama-3.1-70b", "context": "8192", "sequences": "32", "gpu": "h100-sxm", "gpus": "4"},
    # decode-batch1-attainable-h100, ridge-h100
    "roofline": {"gpu": "h100-sxm", "intensity": "1"},
    # mfu-70b-4m-step
    "mfu": {"params": "70B", "tokens_per_step": "4M", "step_time": "2.07s", "gpus": "2048", "gpu": "h100-sxm"},
    # allreduce-70b-grads-8-ranks
    "allreduce": {"size": "141GB", "ranks": "8", "link": "h100-sxm"},
    # cost-7b-2t-marginal, cost-7b-2t-loaded, cost-7b-2t-sensitivity-mfu (the headline question: one training token of 7B on 2T)
    "train": {"params": "7B", "tokens": "2T", "gpu": "h100-sxm", "mfu": "0.4", "goodput": "0.9",
              "price": "$2.50/h", "overhead": "experiments=0.6,lost=0.15,eval=0.05,idle=0.2",
              "fixed_usd": "60k", "sensitivity": "true"},
    # hardware-compare-newer-gpu: a part with 2.2x the H100's dense peak, MFU 0.35, at $4.50/h
    "compare": {"params": "7B", "tokens": "2T", "gpu": "h100-sxm,next-gen", "peak": "next-gen=2.1769P",
                "mfu": "h100-sxm=0.40,next-gen=0.35", "price": "h100-sxm=2.50,next-gen=4.50", "goodput": "0.9"},
    # claim-70b-2t-500k
    "check": {"params": "70B", "tokens": "2T", "claimed_usd": "$500k"},
    # no worked example: an owned H100 at $30k over 4 years against a $2.50/h rental
    "gpu-hour": {"capex": "$30k", "gpu": "h100-sxm", "per_gpu_year": "network=1500", "utilization": "0.8",
                 "vs": "$2.50/h"},
    # Llama 3's 419 interruptions (Dubey et al. 2024, table 5) in 54 days on 16,384 GPUs; checkpoint and restart times assumed
    "goodput": {"gpus": "16384", "interruptions": "419", "period": "54d", "checkpoint_time": "1min",
                "restart_time": "10min"},
    # amortise-training-over-served: the 7B/2T run's loaded cost over 500B and 50T served tokens
    "amortise": {"training_usd": "$387,679", "served": "500B,50T"},
    # journey-training-over-request: Llama 3.1 405B's 3.8e25 FLOP, split compute-optimally
    "optimal": {"flops": "3.8e25"},
    # serve-cost-8xh100: 70B on one 8 x H100 node at $2.50 per GPU-hour, 32 sequences decoding
    "serve": {"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": "8", "batch": "32", "price": "$2.50/h"},
    # journey-bill: 1,000 tokens in and 300 out at $3/M and $15/M
    "bill": {"model": "claude-sonnet-4", "input": "1000", "output": "300"},
    # the serving plan for 70B at 10 requests/s under the request's default SLOs (TTFT 500 ms, TPOT 50 ms)
    "plan-serve": {"model": "llama-3.1-70b", "rate": "10/s"},
    # the issue's training plan: Llama 3.1 70B on 1,024 H100s, 8k sequences, Llama 3's 16Mi-token batch
    "plan-train": {"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": "1024", "seq_len": "8192",
                   "global_batch": "16Mi"},
    # the ledger reads an uploaded step log: the tab opens empty, waiting for the file
    "ledger": {},
    # journey-*: the request's own defaults are one short question through Llama 3.1 405B on 8 H100s
    "journey": {},
    # the card of the journey's defaults (Llama 3.1 405B on 8 H100s)
    "card": {},
    # journey-tokens-rule
    "tokens": {"text": "Why is the sky red at sunset but blue at noon?"},
    # the serving predictions against published measurements (the training ones arrive with plan train's)
    "validate": {"group": "serving"},
}
