"""What does a training token cost? Time, GPU-hours, marginal and loaded cost of a planned run.

The arithmetic of seeds 000, 001 and 002:

    tokens_per_gpu_s = peak · MFU · goodput / flops_per_token
    gpu_hours        = D / tokens_per_gpu_s / 3600
    marginal_usd     = gpu_hours · usd_per_gpu_hour
    loaded_usd       = marginal · (1 + Σ overheads) + fixed (+ data)

D is the *advanced* token count (the planning denominator); data cost is spread over
*unique* tokens. Every figure names its denominator. ``--sensitivity`` moves each input
by ±20% and ranks them by how far loaded cost per million tokens moves (a tornado).
"""

from __future__ import annotations

from dataclasses import dataclass, field as dfield, replace
from typing import Annotated, Any

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators import goodput as GP
from napkin.calculators.basics import model_or_none, peak_of, resolve_params
from napkin.derivation import Report
from napkin.errors import InputError, NapkinError
from napkin.formulas import energy as en, flops, memory as mem, training as T
from napkin.hardware import Accelerator
from napkin.model import ModelSpec
from napkin.request import check_bounds, field
from napkin.units import KWH_J, fmt_auto
from napkin.units import format as fmt

S = msgspec.Struct

DEFAULT_GPU = "h100-sxm"
DEFAULT_MFU = 0.40
DEFAULT_GOODPUT = 0.90
SEED_PRICE = 2.50  # seed 001's illustrative loaded H100 price, $/GPU-hour
DEFAULT_MAX_GPUS = 100_000
SENSITIVITY_STEP = 0.20  # ±20%
MFU_IMPLAUSIBLE = 0.60
ATTENTION_WARN = 0.05  # warn when 6N leaves out an attention term this large


class TrainRequest(S, kw_only=True, forbid_unknown_fields=True):
    model: Annotated[str | None, field("name", "catalog model or path to a config.json (instead of --params)")] = None
    params: Annotated[float | None, field("count", "parameters N (active parameters for MoE FLOPs)", gt=0)] = None
    tokens: Annotated[float | None, field("count", "advanced tokens D of the final run (the planning denominator)",
                                          gt=0)] = None
    unique_tokens: Annotated[float | None, field("count", "distinct tokens of data (the data-cost denominator)",
                                                 gt=0)] = None
    epochs: Annotated[float | None, field("number", "passes over the unique tokens (tokens = unique · epochs)",
                                          gt=0)] = None
    gpu: Annotated[str | None, field("name", "accelerator (default h100-sxm)")] = None
    precision: Annotated[str, field("precision", "training precision; the peak is the dense one at it")] = "bf16"
    gpus: Annotated[int | None, field("int", "GPUs in the job (gives the wall time)", gt=0)] = None
    deadline: Annotated[float | None, field("seconds", "calendar time allowed (gives the GPUs needed)", gt=0)] = None
    max_gpus: Annotated[int, field("int", "largest cluster a --deadline may ask for", gt=0)] = DEFAULT_MAX_GPUS
    mfu: Annotated[float | None, field("fraction", "model FLOPs utilisation (default 0.40, assumed)")] = None
    goodput: Annotated[str | None, field("text", "fraction of paid time making progress (default 0.90, assumed), "
                                                 "or 'auto' from an interruption rate (--mtbf-per-gpu, --cluster-mtbf "
                                                 "or --interruptions/--period), --checkpoint-time and "
                                                 "--restart-time, as `napkin goodput` takes them")] = None
    flops_convention: Annotated[str, field("choice", "FLOPs per token: 6N, or with the attention term",
                                           choices=flops.CONVENTIONS)] = "6N"
    seq_len: Annotated[float | None, field("count", "sequence length (for causal/full FLOPs)", gt=0)] = None
    price: Annotated[float | None, field("usd_per_hour", "loaded $/GPU-hour (default: the catalog's dated "
                                                        "reference list price)", gt=0)] = None
    overhead: Annotated[dict[str, float], field("number", "overheads as multipliers on the final run's compute",
                                                ge=0, example="experiments=0.6")] = {}
    fixed_usd: Annotated[float, field("usd", "fixed spend added once (licensing, people, ...; data in --data-usd)",
                                      ge=0)] = 0.0
    data_usd: Annotated[float | None, field("usd", "data spend, spread over unique tokens", ge=0)] = None
    pue: Annotated[float | None, field("number", "facility power / IT power for energy (default 1.0: GPUs only)",
                                       ge=1)] = None
    peak: Annotated[float | None, field("flops_per_s", "dense peak per GPU by hand (instead of the catalog's)",
                                        gt=0)] = None
    usable: Annotated[float, field("fraction", "fraction of GPU memory usable for training state")] = 0.8
    calibration: Annotated[str | None, field("path", "calibration file from `napkin measure` "
                                                     "(its training MFU)")] = None
    # the failure model of --goodput auto: the same names, docs and aliases as `napkin goodput`
    mtbf_per_gpu: Annotated[float | None, field("seconds", "goodput auto: " + GP.DOCS["mtbf_per_gpu"], gt=0)] = None
    cluster_mtbf: Annotated[float | None, field("seconds", "goodput auto: " + GP.DOCS["cluster_mtbf"], gt=0)] = None
    interruptions: Annotated[int | None, field("int", "goodput auto: " + GP.DOCS["interruptions"], gt=0)] = None
    period: Annotated[float | None, field("seconds", "goodput auto: " + GP.DOCS["period"], gt=0)] = None
    observed_gpus: Annotated[int | None, field("int", "goodput auto: " + GP.DOCS["observed_gpus"], gt=0)] = None
    checkpoint_time: Annotated[float | None, field("seconds", "goodput auto: " + GP.DOCS["checkpoint_time"], gt=0,
                                                   aliases=GP.ALIASES["checkpoint_time"])] = None
    restart_time: Annotated[float | None, field("seconds", "goodput auto: " + GP.DOCS["restart_time"], ge=0,
                                                aliases=GP.ALIASES["restart_time"])] = None
    checkpoint_interval: Annotated[float | None, field("seconds", "goodput auto: " + GP.DOCS["checkpoint_interval"],
                                                       gt=0, aliases=GP.ALIASES["checkpoint_interval"])] = None
    sensitivity: Annotated[bool, field("bool", "rank inputs by how far ±20% moves loaded $/M tokens")] = False
    assumed: Annotated[list[str], field("text", "inputs a saved plan took from defaults (kept labelled as such)",
                                        hidden=True)] = []


# --------------------------------------------------------------------------- resolved inputs
@dataclass(frozen=True)
class Inputs:
    """The numbers the cost depends on, after defaults and catalogs: what --sensitivity moves."""

    params: float  # N in the FLOPs (active for MoE)
    attention_flops_per_token: float
    tokens: float  # advanced
    peak: float
    mfu: float
    goodput: float
    price: float
    overhead: dict[str, float] = dfield(default_factory=dict)
    fixed_usd: float = 0.0
    data_usd: float = 0.0

    def loaded_usd_per_million(self) -> float:
        fpt = flops.train_flops_per_token(self.params, attention_flops=self.attention_flops_per_token)
        tps = T.tokens_per_gpu_s(self.peak, mfu=self.mfu, goodput=self.goodput, flops_per_token=fpt)
        marginal = T.marginal_usd(T.gpu_hours(self.tokens, tokens_per_gpu_s=tps), usd_per_gpu_hour=self.price)
        loaded = T.loaded_usd(marginal, overhead_multiplier=sum(self.overhead.values()),
                              fixed_usd=self.fixed_usd + self.data_usd)
        return T.usd_per_million_tokens(loaded, n_tokens=self.tokens)


# input name -> (attribute of Inputs, unit kind, capped at 1)
_SENSITIVE = {
    "params": ("params", "count", False),
    "tokens": ("tokens", "count", False),
    "peak": ("peak", "flops_per_s", False),
    "mfu": ("mfu", "fraction", True),
    "goodput": ("goodput", "fraction", True),
    "price": ("price", "usd_per_hour", False),
    "seq_len": ("attention_flops_per_token", "count", False),
    "fixed_usd": ("fixed_usd", "usd", False),
    "data_usd": ("data_usd", "usd", False),
}


def sensitivity(x: Inputs, *, seq_len: float | None = None, step: float = SENSITIVITY_STEP) -> list[dict]:
    """Each input moved by ±step (fractions capped at 1), ranked by the swing in loaded $/M.

    The attention term is linear in seq_len, so moving seq_len moves that term.
    """
    base = x.loaded_usd_per_million()
    rows = []
    items: list[tuple[str, str, float, str, bool]] = []
    for name, (attr, kind, capped) in _SENSITIVE.items():
        value = getattr(x, attr)
        if name == "seq_len":
            if not value or not seq_len:
                continue
            items.append((name, attr, seq_len, kind, capped))
        elif value:
            items.append((name, attr, value, kind, capped))
    for k, v in x.overhead.items():
        if v:
            items.append((f"overhead.{k}", k, v, "number", False))
    for name, attr, value, kind, capped in items:
        lo, hi = value * (1 - step), value * (1 + step)
        if capped:
            hi = min(hi, 1.0)
        out = []
        for v in (lo, hi):
            if name.startswith("overhead."):
                moved = replace(x, overhead={**x.overhead, attr: v})
            elif name == "seq_len":
                moved = replace(x, attention_flops_per_token=x.attention_flops_per_token * v / value)
            else:
                moved = replace(x, **{attr: v})
            out.append(moved.loaded_usd_per_million())
        rows.append({"input": name, "unit": kind, "base_value": value, "low_value": lo, "high_value": hi,
                     "low_usd_per_million": out[0], "high_usd_per_million": out[1],
                     "swing_usd_per_million": abs(out[1] - out[0]), "base_usd_per_million": base})
    rows.sort(key=lambda r: -r["swing_usd_per_million"])
    return rows


# ------------------------------------------------------------------------------------ report
class TrainReport(Report):
    """A Report whose table shows $/M tokens, energy and the cost breakdown in their units."""

    NESTED_UNITS = {"usd_per_million_tokens": "usd_per_million", "cost_breakdown_usd": "usd"}
    HIDDEN = ("sensitivity", "vary", "denominators")

    def rows(self) -> list[tuple[str, str]]:
        out = []
        for k, v in self.results.items():
            if k in self.HIDDEN:
                continue
            if k == "usd_per_million_tokens" and isinstance(v, dict):
                denom = self.results.get("denominators") or {}
                out.append((k, ", ".join(f"{n}: {fmt(x, 'usd_per_million')}"
                                         + (f" {denom[n].split()[0]}" if n in denom else "")
                                         for n, x in v.items())))
            elif k in self.NESTED_UNITS and isinstance(v, dict):
                kind = self.NESTED_UNITS[k]
                out.append((k, ", ".join(f"{n}: {fmt(x, kind)}" for n, x in v.items())))
            elif k == "energy_kwh" and isinstance(v, (int, float)):
                out.append((k, fmt(v * KWH_J, "joules")))
            elif isinstance(v, dict):
                out.append((k, ", ".join(f"{n}: {fmt_auto(x, None)}" for n, x in v.items())))
            else:
                out.append((k, fmt_auto(v, self.units.get(k))))
        return out

    def text(self) -> str:
        base = super().text()
        rows = self.results.get("sensitivity")
        if not rows:
            return base
        return base + "\n" + sensitivity_text(rows)


def sensitivity_text(rows: list[dict]) -> str:
    """The tornado as a table: each input's −20% and +20% and the loaded $/M at each."""
    base = rows[0]["base_usd_per_million"] if rows else 0.0
    table = [("input", "-20% .. +20%", "loaded $/M", "swing")]
    for r in rows:
        table.append((r["input"], f"{fmt(r['low_value'], r['unit'])} .. {fmt(r['high_value'], r['unit'])}",
                      f"{fmt(r['low_usd_per_million'], 'usd_per_million')} .. "
                      f"{fmt(r['high_usd_per_million'], 'usd_per_million')}",
                      fmt(r["swing_usd_per_million"], "usd_per_million")))
    widths = [max(len(t[i]) for t in table) for i in range(4)]
    lines = [f"sensitivity of loaded cost per million tokens ({fmt(base, 'usd_per_million')}) to ±20% in each input:"]
    for t in table:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    return "\n".join(lines)


# --------------------------------------------------------------------------------- helpers
def parse_goodput(raw: Any) -> float | str | None:
    """A fraction in (0, 1] or the word 'auto'; None when not given."""
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().lower() == "auto":
        return "auto"
    from napkin import units

    try:
        value = units.parse(raw, "fraction", "goodput")
    except InputError:
        raise InputError("goodput", raw, "must be a fraction or auto", "e.g. 0.9, 90% or auto") from None
    check_bounds("goodput", value, {"gt": 0.0, "le": 1.0}, "fraction", raw)
    return value


def reference_price(g: Accelerator) -> dict | None:
    """The catalog's dated reference $/GPU-hour for a part, or None."""
    try:
        prices = catalog.table("prices")
    except FileNotFoundError:
        return None
    entry = (prices.get("gpu_hour") or {}).get(g.key)
    if not entry or "usd_per_gpu_hour" not in entry:
        return None
    return entry


def resolve_gpu(r: Report, req: Any) -> Accelerator | None:
    """The accelerator: --gpu, or H100 SXM when neither --gpu nor --peak is given (said so)."""
    if req.gpu:
        return catalog.gpu(req.gpu)
    if req.peak is not None:
        return None
    g = catalog.gpu(DEFAULT_GPU)
    r.assume("gpu", g.key, f"no --gpu given: the seeds' {g.name}", basis="assumed")
    return g


def resolve_price(r: Report, price: float | None, g: Accelerator | None) -> tuple[float, str]:
    """$/GPU-hour and how it was chosen: given, a dated reference list price, or the seed's $2.50."""
    if price is not None:
        r.assume("price", price, "loaded $/GPU-hour as given", unit="usd_per_hour", basis="given")
        return price, "given"
    if g is None:
        r.assume("price", SEED_PRICE, "seed 001's illustrative loaded H100 price; give --price for yours",
                 unit="usd_per_hour", basis="reference")
        r.warn("illustrative-price", f"no --price: using seed 001's illustrative {fmt(SEED_PRICE, 'usd_per_hour')} "
                                     "per GPU-hour; give --price with your loaded rate")
        return SEED_PRICE, "illustrative seed figure"
    ref = reference_price(g)
    if ref is None:
        raise InputError("price", "nothing", f"is required: the catalog has no reference price for the {g.name}",
                         "give --price 2.50/h (your loaded $/GPU-hour)")
    value = float(ref["usd_per_gpu_hour"])
    when = ref.get("date", "undated")
    src = ref.get("source", "no source")
    r.assume("price", value, f"reference list price for the {g.name}, {when} ({src}); not a loaded price",
             unit="usd_per_hour", basis="reference")
    r.warn("list-price", f"no --price: using the {g.name}'s reference list price {fmt(value, 'usd_per_hour')} "
                         f"({when}); a loaded GPU-hour adds power, networking, storage and support "
                         f"(`napkin gpu-hour`)")
    return value, f"reference list price, {when}"


def resolve_flops_per_token(r: Report, m: ModelSpec | None, n: float, convention: str,
                            seq_len: float | None) -> tuple[float, float]:
    """(flops_per_token, attention part) under the stated convention; recorded in the report."""
    r.set("flops_convention", convention)
    attn = 0.0
    if convention != "6N":
        if m is None:
            raise InputError("flops_convention", convention, "needs the model's layers and attention width",
                             "give --model NAME, or use --flops-convention 6N")
        if seq_len is None:
            raise InputError("seq_len", "nothing", f"is required with --flops-convention {convention}",
                             "give --seq-len 8192")
        factor = 6 if convention == "causal" else 12
        d_attn = m.n_heads * m.head_dim
        attn = r.step("attention_flops_per_token", f"{factor} · L · d_attn · T  ({convention})",
                      value=flops.attention_flops_per_token(m.n_layers, d_attn=d_attn, seq_len=seq_len,
                                                            convention=convention),
                      unit="flops", L=m.n_layers, d_attn=d_attn, T=(seq_len, "count"))
        fpt = r.step("flops_per_token", "6 · N + attention",
                     value=flops.train_flops_per_token(n, attention_flops=attn), unit="flops", N=(n, "count"), attention=(attn, "flops"))
        return fpt, attn
    fpt = r.step("flops_per_token", "6 · N  (no attention term)", value=flops.train_flops_per_token(n),
                 unit="flops", N=(n, "count"))
    if seq_len is not None:
        if m is None:
            r.note("seq_len is unused under the 6N convention without --model")
        else:
            extra = flops.attention_flops_per_token(m.n_layers, d_attn=m.n_heads * m.head_dim, seq_len=seq_len,
                                                    convention="causal")
            if extra / fpt >= ATTENTION_WARN:
                r.warn("attention-ignored",
                       f"6N leaves out attention: at seq_len {fmt(seq_len, 'count')} the causal term adds "
                       f"{extra / fpt:.0%} to flops_per_token (use --flops-convention causal)")
    return fpt, attn


def resolve_tokens(r: Report, req: Any, m: ModelSpec | None) -> tuple[float, float | None]:
    """(advanced tokens, unique tokens or None) from --tokens, --unique-tokens and --epochs."""
    d, u, e = req.tokens, req.unique_tokens, req.epochs
    if d is not None:
        if u is not None and e is not None:
            if abs(u * e - d) > 1e-9 * d:
                raise InputError("epochs", f"{e:g}", f"does not match: unique_tokens · epochs = "
                                 f"{fmt(u * e, 'count')} but tokens = {fmt(d, 'count')}",
                                 "give two of --tokens, --unique-tokens and --epochs")
        elif u is not None:
            if u > d * (1 + 1e-12):
                raise InputError("unique_tokens", fmt(u, "count"), f"exceeds the advanced tokens ({fmt(d, 'count')})",
                                 "unique tokens are at most the tokens trained on")
            e = r.step("epochs", "advanced_tokens / unique_tokens", value=d / u, unit="number",
                       advanced_tokens=(d, "count"), unique_tokens=(u, "count"), result=False)
        elif e is not None:
            u = r.step("unique_tokens", "advanced_tokens / epochs", value=d / e, unit="count",
                       advanced_tokens=(d, "count"), epochs=e, result=False)
        r.set("advanced_tokens", d, "count")
    elif u is not None:
        if e is None:
            e = r.assume("epochs", 1.0, "one pass over the unique tokens (give --epochs)", unit="number")
        d = r.step("advanced_tokens", "unique_tokens · epochs", value=u * e, unit="count",
                   unique_tokens=(u, "count"), epochs=e)
    elif e is not None:
        raise InputError("epochs", f"{e:g}", "needs --unique-tokens", "give --unique-tokens 500B --epochs 4")
    elif m is not None and m.training_tokens:
        d = r.assume("tokens", m.training_tokens, f"{m.name}'s published training tokens", unit="count",
                     basis="catalog")
        r.set("advanced_tokens", d, "count")
    else:
        raise InputError("tokens", "nothing", "is required", "give --tokens 2T, or --unique-tokens with --epochs")
    if u is not None:
        r.set("unique_tokens", u, "count")
        r.set("epochs", e, "number")
    return d, u


def resolve_mfu(r: Report, req: Any, n: float, g: Accelerator | None = None) -> float:
    if req.mfu is not None:
        r.assume("mfu", req.mfu, "as given", unit="fraction", basis="given")
        if req.calibration:
            from napkin import calibration

            calibration.load(req.calibration)  # still read: a missing or broken file is an error, not ignored
            r.note("--mfu given: it overrides the calibration's training MFU")
        mfu = req.mfu
    elif req.calibration:
        from napkin import calibration

        cal = calibration.load(req.calibration)
        if cal.training_mfu is None:
            raise InputError("calibration", req.calibration, "has no training MFU",
                             "run `napkin measure` with a training step, or give --mfu")
        # the measured MFU counted the way this plan counts FLOPs per token (6N, causal, full)
        mfu = cal.training_mfu_for(getattr(req, "flops_convention", "6N")) or cal.training_mfu
        r.assume("mfu", mfu, cal.label, unit="fraction", basis="measured")
        for code, message in cal.fit_warnings(g, uses="its training MFU", precision=getattr(req, "precision", None)):
            r.warn(code, message)
        size = getattr(cal, "training_mfu_params", None)
        if size and abs(size - n) / n > 0.5:
            r.warn("mfu-model-size", f"the calibration's MFU was measured on a {fmt(size, 'count')}-parameter model; "
                                     f"MFU changes with model size, so measure on one near {fmt(n, 'count')}")
    else:
        mfu = DEFAULT_MFU
        r.assume("mfu", mfu, "not measured: replace with the MFU of a short full-scale trial "
                             "(`napkin mfu` on its step time) or `napkin measure`", unit="fraction")
    if mfu > MFU_IMPLAUSIBLE:
        r.warn("mfu-high", f"MFU {mfu:.0%} is above what dense training runs sustain (35-50% is good); check it is "
                           f"MFU (model FLOPs) and not HFU, against the dense peak")
    return mfu


def auto_goodput(r: Report | None, req: Any, n_gpus: float) -> float:
    """Goodput from failure rates for a cluster of n_gpus: `napkin goodput`'s derivation (Daly 2006)."""
    missing = [o for o, v in (("--checkpoint-time", req.checkpoint_time), ("--restart-time", req.restart_time))
               if v is None]
    rates = (req.mtbf_per_gpu, req.cluster_mtbf, req.interruptions)
    if all(v is None for v in rates):
        missing.insert(0, "an interruption rate (--mtbf-per-gpu, --cluster-mtbf or --interruptions/--period)")
    if missing:
        raise InputError("goodput", "auto", "needs the failure model", "give " + ", ".join(missing))
    from napkin.formulas import reliability as rel

    per_gpu = GP.per_gpu_mtbf(r, req, n_gpus=req.gpus)
    m_cluster = rel.cluster_mtbf_s(per_gpu, n_gpus=n_gpus)
    tau, g = GP.failure_goodput(req.checkpoint_time, restart_s=req.restart_time, mtbf_s=m_cluster,
                                interval_s=req.checkpoint_interval)
    if r is not None:
        r.step("cluster_mtbf_s", "mtbf_per_gpu / n_gpus", value=m_cluster, unit="seconds",
               mtbf_per_gpu=(per_gpu, "seconds"), n_gpus=int(n_gpus))
        if req.checkpoint_interval is not None:
            r.set("checkpoint_interval_s", tau, "seconds")
        else:
            r.step("checkpoint_interval_s", "sqrt(2δM) · [1 + ⅓·sqrt(δ/2M) + (δ/2M)/9] − δ  (Daly 2006)",
                   value=tau, unit="seconds", δ=(req.checkpoint_time, "seconds"), M=(m_cluster, "seconds"))
        r.step("goodput", "τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1))  (Daly 2006)", value=g, unit="fraction",
               τ=(tau, "seconds"), δ=(req.checkpoint_time, "seconds"), R=(req.restart_time, "seconds"),
               M=(m_cluster, "seconds"), result=False)
        GP.warn_frequent_failures(r, tau=tau, checkpoint_s=req.checkpoint_time, restart_s=req.restart_time,
                                  mtbf_s=m_cluster, goodput=g)
    return float(g)


# -------------------------------------------------------------------------------------- run
def _today_defaults(req: Any) -> dict[str, Any]:
    """What each input a plan can freeze (its ``assumed`` list) defaults to now, for this request."""
    out: dict[str, Any] = {"mfu": DEFAULT_MFU if req.calibration is None else None, "goodput": DEFAULT_GOODPUT,
                           "pue": 1.0}
    g = None
    if req.peak is None:
        out["gpu"] = catalog.gpu(DEFAULT_GPU).key
        try:
            g = catalog.gpu(req.gpu or DEFAULT_GPU)
        except NapkinError:
            g = None
    if req.peak is not None and req.gpu is None:
        out["price"] = SEED_PRICE
    elif g is not None:
        ref = reference_price(g)
        out["price"] = float(ref["usd_per_gpu_hour"]) if ref else None
    return out


def _same(name: str, frozen: Any, today: Any) -> bool:
    if today is None or frozen is None:
        return False
    if name == "gpu":
        try:
            return catalog.gpu(str(frozen)).key == today
        except NapkinError:
            return False
    if name == "goodput":
        try:
            frozen = parse_goodput(frozen)
        except InputError:
            return False
    return isinstance(frozen, (int, float)) and float(frozen) == float(today)


def thaw_defaults(req: TrainRequest) -> tuple[TrainRequest, dict[str, Any]]:
    """A saved plan froze its defaults at the values they took and listed them in ``assumed``.

    Where a frozen value is still today's default, it is dropped, so it resolves as a default
    again with the same label, note, date, source and warning as when the plan was saved.
    Returns the request and the defaults frozen at a value that is no longer today's (name ->
    today's default), which keep the plan's value and are labelled as the plan's defaults.
    """
    if not req.assumed:
        return req, {}
    today = _today_defaults(req)
    thawed, stale = {}, {}
    for name in req.assumed:
        if name not in today or getattr(req, name, None) is None:
            continue
        if name == "goodput" and str(req.goodput).strip().lower() == "auto":
            continue  # derived from failure rates: not a default
        if _same(name, getattr(req, name), today[name]):
            thawed[name] = None
        else:
            stale[name] = today[name]
    return msgspec.structs.replace(req, **thawed), stale


def _label_stale(r: Report, stale: dict[str, Any]) -> None:
    """Defaults a plan froze at values that are no longer today's: still defaults, not given."""
    kinds = {"mfu": "fraction", "goodput": "fraction", "price": "usd_per_hour", "pue": "number", "gpu": None}
    for a in list(r.assumptions):
        if a.name not in stale:
            continue
        today = stale[a.name]
        now = "" if today is None else f"; today's default is {fmt_auto(today, kinds.get(a.name))}"
        if a.name == "price":
            r.assume("price", a.value, f"the reference price when the plan was saved{now}; not a loaded price",
                     unit=a.unit, basis="reference")
            r.set("price_basis", "reference price, as saved in the plan")
            r.warn("list-price", f"the plan's price {fmt(a.value, 'usd_per_hour')} was a reference list price when "
                                 f"it was saved{now}; give --price with your loaded rate (`napkin gpu-hour`)")
        else:
            r.assume(a.name, a.value, f"a default when the plan was saved{now}; not a measurement", unit=a.unit,
                     basis="assumed")
    if "gpu" in stale and not any(a.name == "gpu" for a in r.assumptions) and r.results.get("gpu"):
        r.assume("gpu", r.results["gpu"], f"a default when the plan was saved; today's is {stale['gpu']}",
                 basis="assumed")


def run_train(req: TrainRequest) -> TrainReport:
    req, stale = thaw_defaults(req)
    m = model_or_none(req.model)
    r = TrainReport("Training cost", command="train")
    if m is not None:
        r.set("model", m.name)
    g = resolve_gpu(r, req)
    if req.gpus is not None and req.deadline is not None:
        raise InputError("deadline", fmt(req.deadline, "seconds"), "cannot be given with --gpus",
                         "give --gpus K for the wall time, or --deadline for the GPUs needed")
    goodput_in = parse_goodput(req.goodput)

    n = resolve_params(r, m, req.params, active=True)
    n_total = req.params if req.params is not None else m.params  # type: ignore[union-attr]
    fpt, attn = resolve_flops_per_token(r, m, n, req.flops_convention, req.seq_len)
    d, u = resolve_tokens(r, req, m)
    train_flops = r.step("train_flops", "flops_per_token · D", value=fpt * d, unit="flops",
                         flops_per_token=(fpt, "flops"), D=(d, "count"))

    if g is not None:
        r.set("gpu", g.key)
    r.set("precision", req.precision)
    peak = peak_of(r, g, req.precision, req.peak)
    r.set("dense_flops_per_s", peak, "flops_per_s")
    mfu = resolve_mfu(r, req, n, g)
    r.set("mfu", mfu, "fraction")

    # goodput: given, assumed, or from failure rates (which needs the cluster size)
    if goodput_in == "auto":
        if req.gpus is None and req.deadline is None:
            raise InputError("goodput", "auto", "needs the cluster size", "give --gpus K or --deadline 3w")
        tps_at_1 = T.tokens_per_gpu_s(peak, mfu=mfu, goodput=1.0, flops_per_token=fpt)
        if req.gpus is not None:  # --max-gpus limits what a --deadline may ask for, not a cluster given
            n_gpus = float(req.gpus)
        else:  # the cluster and its failure rate depend on each other
            n_gpus = float(_auto_cluster_for_deadline(req, d, tps_at_1))
        goodput = auto_goodput(r, req, n_gpus)
        if goodput <= 0:  # only where e^((τ+δ)/M) passes a float: no measurable progress
            raise InputError("goodput", "auto", f"is 0: on {int(n_gpus):,} GPUs failures arrive faster than the "
                             "job can make progress between them", "checkpoint and restart faster, or use fewer GPUs")
        if req.gpus is not None:
            _warn_past_peak(r, req, d, tps_at_1)
        r.assume("goodput", goodput, "from failure rates (Daly 2006, as `napkin goodput`)", unit="fraction",
                 basis="given")
    elif goodput_in is None:
        goodput = DEFAULT_GOODPUT
        r.assume("goodput", goodput, "not measured: replace with advanced-token time over paid time from a run's "
                                     "logs (`napkin ledger`), or --goodput auto from failure rates",
                 unit="fraction")
    else:
        goodput = goodput_in
        r.assume("goodput", goodput, "as given", unit="fraction", basis="given")
    if goodput_in != "auto" and GP.failure_model_given(req):
        r.warn("failure-model-unused", "the interruption rate, checkpoint and restart times are used only with "
                                       "--goodput auto; this plan's goodput is " + ("assumed" if goodput_in is None
                                                                                     else "given"))
    r.set("goodput", goodput, "fraction")

    tps = r.step("tokens_per_gpu_s", "peak · MFU · goodput / flops_per_token",
                 value=T.tokens_per_gpu_s(peak, mfu=mfu, goodput=goodput, flops_per_token=fpt), unit="per_s",
                 peak=(peak, "flops_per_s"), MFU=(mfu, "fraction"), goodput=(goodput, "fraction"),
                 flops_per_token=(fpt, "flops"))
    hours = r.step("gpu_hours", "D / tokens_per_gpu_s / 3600  (allocated GPU-hours of the final run)",
                   value=T.gpu_hours(d, tokens_per_gpu_s=tps), unit="count", D=(d, "count"),
                   tokens_per_gpu_s=(tps, "per_s"))

    n_used = None
    if req.gpus is not None:
        n_used = req.gpus
        r.set("gpus", req.gpus, "count")
        r.step("wall_s", "D / (tokens_per_gpu_s · gpus)", value=T.wall_seconds(d, tokens_per_gpu_s=tps,
               n_gpus=req.gpus), unit="seconds", gpus=req.gpus)
    elif req.deadline is not None:
        r.set("deadline_s", req.deadline, "seconds")
        need = T.gpus_for_deadline(d, tokens_per_gpu_s=tps, deadline_s=req.deadline)
        if need > req.max_gpus:
            _infeasible(req, d, tps)
        n_used = int(need)
        r.step("gpus_needed", "ceil(D / (tokens_per_gpu_s · deadline))", value=n_used, unit="count",
               deadline=(req.deadline, "seconds"))
        r.step("wall_s", "D / (tokens_per_gpu_s · gpus_needed)", value=T.wall_seconds(d, tokens_per_gpu_s=tps,
               n_gpus=n_used), unit="seconds", gpus_needed=n_used)
    else:
        r.note("give --gpus K for the wall time, or --deadline for the GPUs it needs")

    price, basis = resolve_price(r, req.price, g)
    r.set("price", price, "usd_per_hour")
    r.set("price_basis", basis)
    marginal = r.step("marginal_usd", "gpu_hours · price", value=T.marginal_usd(hours, usd_per_gpu_hour=price),
                      unit="usd", gpu_hours=(hours, "count"), price=(price, "usd_per_hour"))
    overhead_sum = sum(req.overhead.values())
    if req.overhead:
        r.set("overhead", dict(req.overhead))
        r.step("overhead_multiplier", "1 + " + " + ".join(req.overhead), value=1.0 + overhead_sum,
               unit="number", **{k: v for k, v in req.overhead.items()})
    else:
        r.note("no --overhead given: loaded equals marginal plus fixed spend; experiments, lost work, evaluation "
               "and idle capacity typically more than double it (seed 001)")
    data = req.data_usd or 0.0
    if req.fixed_usd:
        r.set("fixed_usd", req.fixed_usd, "usd")
    if req.data_usd is not None:
        r.set("data_usd", req.data_usd, "usd")
    fixed_formula = " + fixed" + (" + data" if req.data_usd is not None else "")
    loaded = r.step("loaded_usd", "marginal · (1 + Σ overheads)" + fixed_formula,
                    value=T.loaded_usd(marginal, overhead_multiplier=overhead_sum, fixed_usd=req.fixed_usd + data),
                    unit="usd", marginal=(marginal, "usd"), **{"Σ overheads": overhead_sum},
                    fixed=(req.fixed_usd, "usd"),
                    **({"data": (data, "usd")} if req.data_usd is not None else {}))
    r.step("loaded_over_marginal", "loaded / marginal", value=loaded / marginal, unit="number")

    per_m = {
        "marginal": r.step("usd_per_million_tokens.marginal", "marginal_usd / advanced_tokens · 1e6",
                           value=T.usd_per_million_tokens(marginal, n_tokens=d), unit="usd_per_million",
                           result=False),
        "loaded": r.step("usd_per_million_tokens.loaded", "loaded_usd / advanced_tokens · 1e6",
                         value=T.usd_per_million_tokens(loaded, n_tokens=d), unit="usd_per_million", result=False),
    }
    denominators = {"marginal": "advanced tokens", "loaded": "advanced tokens"}
    if req.data_usd is not None:
        if u is None:
            u = d
            r.assume("unique_tokens", d, "no --unique-tokens: one epoch, so unique = advanced tokens", unit="count")
        per_m["data_per_unique"] = r.step("usd_per_million_tokens.data_per_unique", "data_usd / unique_tokens · 1e6",
                                          value=T.usd_per_million_tokens(data, n_tokens=u), unit="usd_per_million",
                                          unique_tokens=(u, "count"), result=False)
        denominators["data_per_unique"] = "unique tokens"
    r.set("usd_per_million_tokens", per_m)
    r.set("denominators", denominators)
    breakdown = {"final run": marginal}
    breakdown.update({k: marginal * v for k, v in req.overhead.items()})
    if req.fixed_usd:
        breakdown["fixed"] = req.fixed_usd
    if data:
        breakdown["data"] = data
    r.set("cost_breakdown_usd", breakdown)

    # energy of the final run at TDP
    if g is not None and g.tdp_watts:
        pue = req.pue if req.pue is not None else 1.0
        if req.pue is None:
            r.assume("pue", 1.0, "GPU boards only; give --pue (1.1-1.5 is typical) for the facility", unit="number")
        else:
            r.assume("pue", pue, "as given", unit="number", basis="given")
        r.step("energy_kwh", "gpu_hours · TDP · PUE / 1000  (kWh)",
               value=en.gpu_energy_kwh(hours, tdp_watts=g.tdp_watts, pue=pue), unit=None, gpu_hours=(hours, "count"), TDP=(g.tdp_watts, "watts"), PUE=pue)
        r.note("energy counts the GPUs at TDP (an upper bound on board power) times PUE; host CPUs, network and "
               "storage are not in it")
    else:
        r.note("energy needs a catalog --gpu (its TDP)")

    # static training state and the smallest cluster that holds it
    static = r.step("training_static_bytes", "N_total · 16  (bf16 weights 2 + grads 2 + fp32 master 4 + Adam 8)",
                    value=mem.training_static_bytes(n_total), unit="bytes", N_total=(n_total, "count"))
    if g is not None:
        need_state = r.step("min_gpus_for_state", "ceil(static / (memory · usable)), fully sharded",
                            value=int(mem.min_gpus_for_state(static, memory_bytes=g.memory_bytes, usable=req.usable)),
                            unit="count", static=(static, "bytes"), memory=(g.memory_bytes, "bytes"),
                            usable=(req.usable, "fraction"))
        r.note("min_gpus_for_state is fully sharded (ZeRO-3/FSDP) static state only; activations are extra")
        if n_used is not None and n_used < need_state:
            r.warn("state-does-not-fit", f"{n_used:,} GPUs cannot hold the training state: it needs at least "
                                         f"{need_state:,} {g.name}s fully sharded, before activations")

    r.title = _title(m, n_total, d, g, req.precision, peak)
    _label_stale(r, stale)
    if req.sensitivity:
        x = Inputs(params=n, attention_flops_per_token=attn, tokens=d, peak=peak, mfu=mfu, goodput=goodput,
                   price=price, overhead=dict(req.overhead), fixed_usd=req.fixed_usd, data_usd=data)
        r.set("sensitivity", sensitivity(x, seq_len=req.seq_len))
    return r


def _infeasible(req: Any, d: float, tps: float) -> None:
    shortest = T.wall_seconds(d, tokens_per_gpu_s=tps, n_gpus=req.max_gpus)
    need = T.gpus_for_deadline(d, tokens_per_gpu_s=tps, deadline_s=req.deadline) if tps > 0 else float("inf")
    needs = f"it needs {int(need):,} GPUs" if need != float("inf") else "no cluster makes progress"
    raise InputError("deadline", fmt(req.deadline, "seconds"),
                     f"is infeasible: {needs}, more than --max-gpus {req.max_gpus:,}",
                     f"allow {_at_least(shortest)} or more, or raise --max-gpus")


def _at_least(seconds: float) -> str:
    """A duration as printed, rounded up so that the printed value is itself enough."""
    from napkin import units

    for k in range(100):
        text = fmt(seconds * (1 + k * 1e-4), "seconds")
        if units.parse(text.replace(" ", ""), "seconds", "deadline") >= seconds:
            return text
    return fmt(seconds, "seconds")


# ----------------------------------------------------------- --goodput auto: the cluster size
# A synchronous job stops whenever any GPU fails, so the cluster's MTBF is the per-GPU MTBF over
# the GPU count, and goodput falls as the cluster grows. Throughput, GPUs × goodput, therefore
# rises, peaks and falls: past the peak each added GPU costs more in lost time than it adds.
_DOUBLINGS = 62  # the search for the peak stops at 2^62 GPUs


def _throughput(req: Any, n: float) -> float:
    """GPUs × goodput on n GPUs: the cluster's progress in GPU-equivalents."""
    return n * auto_goodput(None, req, n)


def peak_cluster(req: Any) -> int:
    """The cluster size at which GPUs × goodput is largest (the shortest wall time at any size).

    n·g(n) with g from Daly's model rises then falls (at a fixed interval its logarithm in 1/M
    has a strictly decreasing slope), so: double n while it still rises, then a ternary search
    on whole GPUs in the bracket.
    """
    n = 1
    for _ in range(_DOUBLINGS):
        if _throughput(req, 2 * n) <= _throughput(req, n):
            break
        n *= 2
    lo, hi = max(1, n // 2), 2 * n
    while hi - lo > 2:
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        if _throughput(req, m1) < _throughput(req, m2):
            lo = m1 + 1
        else:
            hi = m2
    return max(range(lo, hi + 1), key=lambda k: _throughput(req, k))


def _auto_cluster_for_deadline(req: Any, d: float, tps_at_1: float) -> int:
    """The smallest cluster that meets --deadline at its own goodput, or an infeasible error.

    Below the throughput peak n·g(n) grows with n, so "n GPUs at goodput g(n) meet the
    deadline" is false and then true: a bisection on whole GPUs finds the first n where it
    holds, which is self-consistent (the GPUs needed at g(n) are n). Past the peak no size does.
    """
    def need(n: float) -> float:
        gp = auto_goodput(None, req, n)
        return (T.gpus_for_deadline(d, tokens_per_gpu_s=tps_at_1 * gp, deadline_s=req.deadline) if gp > 0
                else float("inf"))

    top = peak_cluster(req)
    if need(top) > top:
        _unreachable(req, d, tps_at_1, top)
    lo, hi = 1, top  # need(hi) <= hi
    while lo < hi:
        mid = (lo + hi) // 2
        if need(mid) <= mid:
            hi = mid
        else:
            lo = mid + 1
    if hi > req.max_gpus:
        at_cap = _wall_at(req, d, tps_at_1, req.max_gpus)
        raise InputError("deadline", fmt(req.deadline, "seconds"),
                         f"is infeasible: it needs {hi:,} GPUs (at their goodput "
                         f"{auto_goodput(None, req, hi):.1%}), more than --max-gpus {req.max_gpus:,}",
                         f"allow {_at_least(at_cap)} or more, or raise --max-gpus")
    return hi


def _wall_at(req: Any, d: float, tps_at_1: float, n: int) -> float:
    return T.wall_seconds(d, tokens_per_gpu_s=tps_at_1 * auto_goodput(None, req, n), n_gpus=n)


def _unreachable(req: Any, d: float, tps_at_1: float, top: int) -> None:
    """No cluster size meets the deadline: say the fastest wall time and the size that gives it."""
    fastest = _wall_at(req, d, tps_at_1, top)
    problem = (f"is infeasible: no cluster size meets it at these failure rates; GPUs × goodput peaks at "
               f"{top:,} GPUs (goodput {auto_goodput(None, req, top):.1%}), which take {fmt(fastest, 'seconds')}; "
               "more GPUs fail more often and finish later")
    if top <= req.max_gpus:
        fix = f"allow {_at_least(fastest)} or more, or checkpoint and restart faster"
    else:
        fix = (f"allow {_at_least(_wall_at(req, d, tps_at_1, req.max_gpus))} or more, the fastest within --max-gpus "
               f"{req.max_gpus:,}; or raise --max-gpus to {top:,} and allow {_at_least(fastest)}; or checkpoint "
               "and restart faster")
    raise InputError("deadline", fmt(req.deadline, "seconds"), problem, fix)


def _warn_past_peak(r: Report, req: Any, d: float, tps_at_1: float) -> None:
    """A --gpus past the throughput peak finishes later than a smaller cluster: say so."""
    top = peak_cluster(req)
    if req.gpus > top:
        r.warn("past-throughput-peak",
               f"{req.gpus:,} GPUs are past the size where GPUs × goodput peaks ({top:,} GPUs, goodput "
               f"{auto_goodput(None, req, top):.1%}, {fmt(_wall_at(req, d, tps_at_1, top), 'seconds')}): with "
               "failures this frequent, fewer GPUs finish sooner")


def _title(m: ModelSpec | None, n: float, d: float, g: Accelerator | None, precision: str, peak: float) -> str:
    who = m.name if m is not None else f"{fmt(n, 'count')} params"
    on = g.name if g is not None else f"{fmt(peak, 'flops_per_s')} by hand"
    return f"Training: {who} on {fmt(d, 'count')} tokens, {on} {precision}"


def charts(report: Any) -> dict[str, dict]:
    from napkin.charts.train import train_charts

    return train_charts(report)


TRAIN = Calculator(
    "train", TrainRequest, run_train, "Training cost",
    "Cost, time and cluster size of a planned training run: marginal and loaded $ per million tokens.",
    establishes="what the final run's compute costs at the stated MFU, goodput and price, and what the whole "
                "model costs with the overheads written down",
    needs_measuring="MFU and goodput from a short full-scale trial; your loaded GPU-hour; last quarter's "
                    "experiment, eval and idle spend for the overhead multipliers",
    charts=charts,
)
