"""Disaggregated serving: P replicas only prefill, D replicas only decode, the KV cache moved between.

Each prefill replica runs prefill steps of as many prompts as the token budget holds; each
decode replica decodes --batch sequences with no prompts in its steps; every request's KV
cache crosses the scale-out network once. The system serves the lesser of the two sides' rates.
"""

from __future__ import annotations

from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import scheduling as sch

from .decode import Context, decode_step
from .inputs import Setup
from .request import ServeRequest
from .schedule import pairs_per_request, total


def split(raw: str) -> tuple[int, int]:
    try:
        p, d = (int(x) for x in str(raw).split(":"))
    except ValueError:
        raise InputError("disaggregate", raw, "must be P:D, two whole numbers of replicas", "e.g. 1:3") from None
    if p < 1 or d < 1 or p + d > 4096:
        raise InputError("disaggregate", raw, "needs at least one prefill and one decode replica (4,096 in all at most)",
                         "e.g. 1:3")
    return p, d


def disaggregated(r: Report, s: Setup, req: ServeRequest, c: Context, prefill_s: float) -> None:
    n_p, n_d = split(req.disaggregate or "")
    new, cached = req.prompt - req.cached_prefix, req.cached_prefix
    n = float(max(1, int(req.chunk // new)))
    t_pre = total(s.replica.operators(n * new, prefill_pairs=n * pairs_per_request(s, new, cached), logits=n))
    lam_p = r.step("prefill_side_requests_per_s", "P · n / prefill_step_s   (n prompts per step)",
                   value=n_p * n / t_pre, unit="per_s", P=n_p, n=n, prefill_step_s=(t_pre, "seconds"))
    t_dec = total(decode_step(s, req.batch, c))
    lam_d = r.step("decode_side_requests_per_s", "D · batch / (output · decode_step_s)",
                   value=n_d * req.batch / (req.output * t_dec), unit="per_s", D=n_d, batch=req.batch)
    lam = min(lam_p, lam_d)
    kv = c.kv_bytes_per_token * float(s.m.kv_held_tokens(req.prompt))
    t_kv = r.step("kv_transfer_s", "kv_bytes_per_token · prompt / (gpus · scale-out per GPU)",
                  value=kv / (s.gpus * s.scale_out), unit="seconds", kv_bytes=(kv, "bytes"), gpus=s.gpus,
                  scale_out=(s.scale_out, "bytes_per_s"),
                  note="each request's KV cache crosses the scale-out network once, every GPU sending its shard")
    r.step("disaggregated_ttft_s", "prefill_s + kv_transfer_s   (no queue)", value=prefill_s + t_kv, unit="seconds")
    r.step("disaggregated_tpot_s", "decode_step_s (no prompts in the decode replicas' steps)", value=t_dec,
           unit="seconds")
    tps = r.step("disaggregated_tokens_per_s", "min(prefill side, decode side) · output", value=lam * req.output,
                 unit="per_s", cites=sch.static_tokens_per_s)
    gpus = (n_p + n_d) * s.gpus
    r.step("disaggregated_tokens_per_s_per_gpu", "disaggregated_tokens_per_s / ((P + D) · gpus)", value=tps / gpus,
           unit="per_s", gpus=gpus)
    side = "prefill" if lam_p < lam_d else "decode"
    other = lam_d / lam_p if side == "prefill" else lam_p / lam_d
    r.note(f"disaggregated {n_p}:{n_d}: the {side} side binds; the other side idles {1 - 1 / other:.0%} of the time "
           f"(balance P:D near {lam_d / (lam_d + lam_p) * (n_p + n_d):.1f}:{lam_p / (lam_d + lam_p) * (n_p + n_d):.1f}"
           " of these throughputs)")
    if req.price is not None:
        r.step("disaggregated_usd_per_million_tokens_all_in", "((P + D) · gpus · price / 3600) / tokens_per_s · 1e6",
               value=gpus * req.price / 3600.0 / tps * 1e6, unit="usd_per_million")
