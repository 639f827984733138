"""Measure the local accelerator, and turn the measurement into a calibration.

``napkin measure`` runs five probes in order (PyTorch, the optional ``measure`` extra):

1. ``matmul``: the matmul ceiling per precision over a sweep of shapes, beside the
   catalog's dense peak when the device is in the catalog.
2. ``bandwidth``: a large copy (bytes read + bytes written) and a large read.
3. ``train_probe``: a short training run of a small GPT; MFU from model FLOPs
   (``6·N + 6·L·d·T``, counted analytically and cross-checked with FlopCounterMode),
   over the catalog peak and over the measured ceiling. Never from utilisation counters.
4. ``decode``: tokens/s at a few batch sizes against the bandwidth roofline.
5. ``noise``: CPU time over wall time, and the spread of repeats; contended sections
   are marked.

``run(Options(...))`` returns a :class:`Measurement`; ``report(m)`` is its napkin
Report (the working behind every figure); ``to_calibration(m)`` is what
``--save calibration.toml`` writes for ``napkin train|serve --calibration``.
``collectives`` (all-reduce bus bandwidth under torchrun) lives beside them and is run
by ``python -m napkin.measure --collectives``.

Torch is imported inside ``run``: importing this package costs nothing.
"""

from __future__ import annotations

import datetime
import platform
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from napkin.measure import bandwidth as bw
from napkin.measure import decode as dec
from napkin.measure import matmul as mm
from napkin.measure import train_probe as tp
from napkin.measure.device import Device
from napkin.measure.noise import Meter

__all__ = ["Measurement", "Options", "report", "run", "to_calibration"]

SECTIONS = ("matmul", "bandwidth", "train", "decode")


@dataclass
class Options:
    """What to measure and how hard. ``None`` knobs take the device's defaults."""

    device: str = "auto"
    quick: bool = False
    precisions: tuple[str, ...] | None = None
    recompute: bool = False
    skip: tuple[str, ...] = ()  # sections not to run: matmul, bandwidth, train, decode
    # size knobs (tests shrink them)
    matmul_shapes: list[tuple[int, int, int]] | None = None
    buffer_bytes: float | None = None
    train: tp.GPTConfig | None = None
    decode: dec.DecodeConfig | None = None
    warmup: int | None = None
    repeats: int | None = None
    threads: int | None = None


@dataclass
class Measurement:
    device: Device
    options: Options
    date: str
    versions: dict[str, str]
    matmul: dict[str, mm.MatmulResult] = field(default_factory=dict)
    not_measured: dict[str, str] = field(default_factory=dict)  # precision -> why
    bandwidth: bw.BandwidthResult | None = None
    train: tp.TrainResult | None = None
    decode: dec.DecodeResult | None = None
    meter: Meter = field(default_factory=Meter)
    elapsed_s: float = 0.0

    @property
    def contended(self) -> bool:
        return self.meter.contended


def _repeats(device: Device, quick: bool, opts: Options) -> tuple[int, int]:
    if opts.warmup is not None and opts.repeats is not None:
        return opts.warmup, opts.repeats
    table = {("cpu", True): (2, 7), ("cpu", False): (3, 10), ("cuda", True): (3, 10), ("cuda", False): (5, 20)}
    w, r = table[(device.kind, quick)]
    return (opts.warmup if opts.warmup is not None else w), (opts.repeats if opts.repeats is not None else r)


def training_precision(device: Device) -> str:
    """bf16 mixed precision on a GPU; fp32 on a CPU (whose bf16 matmuls are not its training path)."""
    return "bf16" if device.kind == "cuda" else "fp32"


def versions() -> dict[str, str]:
    import torch

    from napkin.version import __version__

    out = {"napkin": __version__, "torch": torch.__version__, "python": platform.python_version()}
    if torch.version.cuda:
        out["cuda"] = str(torch.version.cuda)
    return out


def run(opts: Options, progress: Callable[[str], None] | None = None) -> Measurement:
    """Run the probes (those not in ``opts.skip``) and return every figure with its timings."""
    import torch

    from napkin.errors import InputError
    from napkin.measure import device as devmod
    from napkin.measure.noise import make_flush

    started = time.perf_counter()
    for name in opts.skip:
        if name not in SECTIONS:
            raise InputError("skip", name, "is not a section", "use one of " + ", ".join(SECTIONS))
    device = devmod.resolve(opts.device)
    saved_threads = torch.get_num_threads()
    if device.kind == "cpu":
        torch.set_num_threads(opts.threads or device.threads)
    threads = torch.get_num_threads() if device.kind == "cpu" else device.threads
    device = Device(device.kind, device.name, threads, device.cache_bytes, device.memory_bytes,
                    device.catalog_key, device.mapped_key, device.note, device.index)
    m = Measurement(device, opts, datetime.datetime.now(datetime.timezone.utc).date().isoformat(), versions())
    warmup, repeats = _repeats(device, opts.quick, opts)
    ctx = None
    try:
        ctx = _Run(torch, device, opts, warmup, repeats,
                   float(threads) if device.kind == "cpu" else None,  # a GPU's host thread waits: no CPU/wall test
                   progress or (lambda _msg: None), make_flush(torch, device), training_precision(device))
        if "matmul" not in opts.skip:
            _matmul(m, ctx)
        if "bandwidth" not in opts.skip:
            _bandwidth(m, ctx)
        if "train" not in opts.skip:
            _train(m, ctx)
        if "decode" not in opts.skip:
            _decode(m, ctx)
    finally:
        if ctx is not None:
            ctx.flush = None  # the cache-flush buffer, freed before the threads are restored
        if device.kind == "cpu":
            torch.set_num_threads(saved_threads)
    m.elapsed_s = time.perf_counter() - started
    return m


@dataclass
class _Run:
    """What every probe of one run shares."""

    torch: Any
    device: Device
    opts: Options
    warmup: int
    repeats: int
    expect: float | None  # CPU time over wall time a CPU probe should show (its threads); None on a GPU
    say: Callable[[str], None]
    flush: Any
    train_prec: str


def _matmul(m: Measurement, c: _Run) -> None:
    from napkin.hardware import precision as canonical

    wanted = [canonical(p, "precision") for p in (c.opts.precisions or mm.DEFAULT_PRECISIONS[c.device.kind])]
    if "train" not in c.opts.skip and c.train_prec not in wanted:
        wanted.append(c.train_prec)  # the training run's MFU needs the ceiling at its precision
    shapes = c.opts.matmul_shapes or mm.SHAPES[(c.device.kind, c.opts.quick)]
    with m.meter.section("matmul", c.expect) as sec:
        for p in dict.fromkeys(wanted):
            reason = mm.why_not(p, c.device.kind)
            if reason:
                m.not_measured[p] = reason
                continue
            res = mm.measure(c.torch, c.device, p, shapes, warmup=c.warmup, repeats=c.repeats, flush=c.flush,
                             progress=c.say)
            for s in res.shapes:
                sec.add(s.timing)
            m.matmul[p] = res


def _bandwidth(m: Measurement, c: _Run) -> None:
    size = c.opts.buffer_bytes or bw.default_buffer_bytes(c.device, c.opts.quick)
    with m.meter.section("bandwidth", c.expect) as sec:
        m.bandwidth = bw.measure(c.torch, c.device, buffer_bytes=size, warmup=c.warmup, repeats=c.repeats,
                                 flush=c.flush, progress=c.say)
        sec.add(m.bandwidth.copy)
        sec.add(m.bandwidth.read)


def _train(m: Measurement, c: _Run) -> None:
    cfg = c.opts.train or tp.default_config(c.device, c.opts.quick)
    if c.opts.recompute:
        cfg = tp.with_recompute(cfg, True)
    prec = c.train_prec
    ceiling = m.matmul[prec].ceiling_flops_per_s if prec in m.matmul else None
    with m.meter.section("train", None) as sec:
        m.train = tp.measure(c.torch, c.device, cfg, precision=prec, warmup=max(1, c.warmup),
                             repeats=c.repeats, peak_flops_per_s=c.device.catalog_peak(prec),
                             ceiling_flops_per_s=ceiling, progress=c.say)
        sec.add(m.train.timing)
    if prec in m.matmul:  # a second look at the ceiling the MFU is divided by
        m.matmul[prec] = mm.rerun_best(c.torch, c.device, m.matmul[prec], warmup=1, repeats=c.repeats,
                                       flush=c.flush, progress=c.say)
        m.train = replace(m.train, ceiling_flops_per_s=m.matmul[prec].ceiling_flops_per_s)


def _decode(m: Measurement, c: _Run) -> None:
    from napkin.errors import InputError

    cfg_d = c.opts.decode or dec.default_config(c.device, c.opts.quick, c.train_prec)
    rate = m.bandwidth.roofline_bytes_per_s if m.bandwidth else None
    if rate is None:
        raise InputError("skip", "bandwidth", "cannot skip the bandwidth probe while measuring decode",
                         "skip decode too, or measure bandwidth")
    steps = {("cpu", True): 2, ("cpu", False): 4}.get((c.device.kind, c.opts.quick), 10)
    size = m.bandwidth.buffer_bytes

    def reprobe() -> float:
        return bw.measure(c.torch, c.device, buffer_bytes=size, warmup=1, repeats=3,
                          flush=c.flush).roofline_bytes_per_s

    with m.meter.section("decode", None) as sec:
        m.decode = dec.measure(c.torch, c.device, cfg_d, bandwidth_bytes_per_s=rate, warmup=1,
                               repeats=max(3, c.repeats // 2), steps_per_repeat=steps, flush=c.flush,
                               bandwidth_probe=reprobe, progress=c.say)
        for pt in m.decode.points:
            sec.add(pt.timing)


# ------------------------------------------------------------------------------ the report
def report(m: Measurement) -> Any:
    """A napkin Report of the measurement: each figure with the formula and timings behind it."""
    from napkin.derivation import Report

    d = m.device
    r = Report(f"Measured: {d.name}", command="measure")
    r.set("device", d.name)
    r.set("device_kind", d.kind)
    r.set("catalog_gpu", d.catalog_key or "none")
    if d.kind == "cpu":
        r.set("threads", d.threads, "count")
    r.set("date", m.date)
    r.set("mode", "quick" if m.options.quick else "full")
    r.note(d.note)
    for p, res in m.matmul.items():
        _matmul_rows(r, res)
    for p, why in m.not_measured.items():
        r.note(f"{p} not measured: {why}")
    if m.bandwidth is not None:
        _bandwidth_rows(r, m.bandwidth)
    if m.train is not None:
        _train_rows(r, m.train)
    if m.decode is not None:
        _decode_rows(r, m.decode)
    _noise_rows(r, m)
    r.set("elapsed_s", m.elapsed_s, "seconds")
    r.note("MFU counts model FLOPs per token, 6·N + 6·L·d·T (causal), over step time and peak; "
           "it is never read from hardware utilisation counters")
    return r


def _matmul_rows(r: Any, res: mm.MatmulResult) -> None:
    p = res.precision
    for s in res.shapes:
        r.step(f"matmul_{p}_{s.label}", "2·m·n·k / best_time", value=s.best_flops_per_s, unit="flops_per_s",
               result=False, m=s.m, n=s.n, k=s.k, best_time=(s.timing.best_s, "seconds"),
               note=f"median {s.median_flops_per_s:.4g} FLOP/s" + ("; re-run after the training run" if s.rerun else ""))
    r.step(f"matmul_{p}_ceiling_flops_per_s", "max over shapes of 2·m·n·k / best_time",
           value=res.ceiling_flops_per_s, unit="flops_per_s", note=f"at {res.best.label}")
    r.set(f"matmul_{p}_median_flops_per_s", res.median_flops_per_s, "flops_per_s")
    r.set(f"matmul_{p}_shape", res.best.label)
    r.assume(f"matmul_{p}_ceiling_flops_per_s", res.ceiling_flops_per_s,
             f"best of {len(res.best.timing.samples)} repeats at {res.best.label}", unit="flops_per_s",
             basis="measured")
    if res.catalog_peak_flops_per_s:
        r.set(f"matmul_{p}_catalog_peak_flops_per_s", res.catalog_peak_flops_per_s, "flops_per_s")
        r.assume(f"dense_{p}_peak_flops_per_s", res.catalog_peak_flops_per_s, "catalog dense peak",
                 unit="flops_per_s", basis="catalog")
        r.step(f"matmul_{p}_fraction_of_peak", "ceiling / catalog dense peak", value=res.fraction_of_peak,
               unit="fraction", ceiling=(res.ceiling_flops_per_s, "flops_per_s"),
               peak=(res.catalog_peak_flops_per_s, "flops_per_s"))


def _bandwidth_rows(r: Any, b: bw.BandwidthResult) -> None:
    r.set("copy_buffer_bytes", b.buffer_bytes, "bytes")
    r.step("copy_bytes_per_s", "2 · buffer / best_time  (bytes read + bytes written)", value=b.copy_bytes_per_s,
           unit="bytes_per_s", buffer=(b.buffer_bytes, "bytes"), best_time=(b.copy.best_s, "seconds"))
    r.set("copy_median_bytes_per_s", b.copy_median_bytes_per_s, "bytes_per_s")
    r.step("read_bytes_per_s", "buffer / best_time  (bytes read)", value=b.read_bytes_per_s, unit="bytes_per_s",
           buffer=(b.buffer_bytes, "bytes"), best_time=(b.read.best_s, "seconds"))
    if b.catalog_bytes_per_s:
        r.set("catalog_bytes_per_s", b.catalog_bytes_per_s, "bytes_per_s")
        r.step("bandwidth_fraction", "copy_bytes_per_s / catalog memory bandwidth", value=b.fraction_of_catalog,
               unit="fraction", copy=(b.copy_bytes_per_s, "bytes_per_s"),
               catalog=(b.catalog_bytes_per_s, "bytes_per_s"))
    r.note(f"bandwidth convention: {bw.CONVENTION}")


def _train_rows(r: Any, t: tp.TrainResult) -> None:
    c = t.config
    r.set("train_model", f"L={c.n_layers} d={c.d_model} h={c.n_heads} T={c.seq_len} V={c.vocab_size} "
                         f"B={c.batch} {t.precision}" + (" recompute" if c.recompute else ""))
    r.step("train_params", "12·L·d² + V·d  (blocks' linear weights + the output head)", value=float(c.n_params_flops),
           unit="count", L=c.n_layers, d=c.d_model, V=c.vocab_size)
    fpt = r.step("train_flops_per_token", "6·N + 6·L·d·T  (causal convention)", value=t.flops_per_token,
                 unit="flops", N=(float(c.n_params_flops), "count"), L=c.n_layers, d=c.d_model, T=c.seq_len)
    if not t.counter_covers_attention:
        what = "6N: the counter does not see this device's fused attention kernel"
    elif any(k in tp.FUSED_ATTENTION_OPS for k in t.by_op):
        what = ("full convention, plus the scores the fused attention kernel recomputes in its backward pass, "
                "which the counter counts")
    else:
        what = "full convention: the counter counts the masked half of attention"
    r.step("train_counter_ratio", f"FlopCounterMode FLOPs of one step / analytic count ({what})",
           value=t.counter_ratio, counted=(t.counted_flops_per_step, "flops"),
           analytic=(t.counter_expected_flops_per_step, "flops"))
    if abs(t.counter_ratio - 1.0) > 0.01:
        r.warn("flop-count-mismatch", f"FlopCounterMode counts {t.counter_ratio:.3f}× the analytic FLOPs of "
                                      f"a step; the analytic count (used for MFU) may miss an op")
    r.set("train_tokens_per_step", float(c.tokens_per_step), "count")
    step = r.step("train_step_s", "median of timed steps", value=t.step_s, unit="seconds",
                  best=(t.timing.best_s, "seconds"), steps=len(t.timing.samples))
    tps = r.step("train_tokens_per_s", "B·T / step_s", value=t.tokens_per_s, unit="per_s",
                 B=c.batch, T=c.seq_len, step_s=(step, "seconds"))
    rate = r.step("train_model_flops_per_s", "flops_per_token · tokens_per_s", value=t.model_flops_per_s,
                  unit="flops_per_s", flops_per_token=(fpt, "flops"), tokens_per_s=(tps, "per_s"))
    if t.mfu is not None:
        r.step("train_mfu", "model_flops_per_s / catalog dense peak", value=t.mfu, unit="fraction",
               model_flops_per_s=(rate, "flops_per_s"), peak=(t.peak_flops_per_s, "flops_per_s"))
    if t.mfu_of_ceiling is not None:
        r.step("train_mfu_of_ceiling", "model_flops_per_s / measured matmul ceiling", value=t.mfu_of_ceiling,
               unit="fraction", model_flops_per_s=(rate, "flops_per_s"),
               ceiling=(t.ceiling_flops_per_s, "flops_per_s"))
    by_conv = t.mfu_by_convention()
    if by_conv:
        r.set("train_mfu_by_convention", by_conv, "fraction")
        r.note("a plan or ledger that counts 6N FLOPs per token (no attention term) must use the 6N MFU: "
               "MFU and FLOPs per token go together, or the tokens/s they give back is wrong")
    if t.hfu is not None:
        r.step("train_hfu", "(model FLOPs + recomputed forward 2·N_blocks + attention/3) per token · tokens_per_s "
               "/ peak", value=t.hfu, unit="fraction")
        r.warn("hfu-not-mfu", "HFU counts the recomputed forward pass; it is shown beside MFU, never as MFU")


def _decode_rows(r: Any, dres: dec.DecodeResult) -> None:
    c = dres.config
    r.set("decode_model", f"L={c.n_layers} d={c.d_model} V={c.vocab_size} context={c.context} {c.precision}")
    r.step("decode_weights_bytes", "(12·L·d² + V·d) · bytes per value", value=c.weights_bytes, unit="bytes",
           L=c.n_layers, d=c.d_model, V=c.vocab_size)
    r.step("decode_kv_bytes_per_sequence", "2 · L · d · context · bytes per value", value=c.kv_bytes_per_sequence,
           unit="bytes", L=c.n_layers, d=c.d_model, context=c.context)
    for pt in dres.points:
        b = pt.batch
        r.step(f"decode_b{b}_tokens_per_s", "B / median step time", value=pt.tokens_per_s, unit="per_s",
               B=b, step=(pt.step_s, "seconds"))
        r.step(f"decode_b{b}_roofline_tokens_per_s", "B · bandwidth / (weights_bytes + B · kv_bytes_per_sequence)",
               value=pt.roofline_tokens_per_s, unit="per_s", B=b,
               bandwidth=(dres.bandwidth_bytes_per_s, "bytes_per_s"), weights_bytes=(pt.weights_bytes, "bytes"),
               kv_bytes_per_sequence=(pt.kv_bytes_per_sequence, "bytes"))
        r.set(f"decode_b{b}_fraction_of_roofline", pt.fraction_of_roofline, "fraction")
        if pt.fraction_of_roofline > 1.05:
            r.warn("decode-beats-roofline", f"decode at batch {b} ran {pt.fraction_of_roofline:.2f}× the bandwidth "
                                            f"roofline: some bytes came from cache, or the bandwidth probe was slowed")
    for n in dres.notes:
        r.note(n)


def _noise_rows(r: Any, m: Measurement) -> None:
    for name, sec in m.meter.sections.items():
        if sec.expected_cpu_per_wall:
            r.set(f"noise_{name}_cpu_per_wall", sec.cpu_per_wall)
        r.set(f"noise_{name}_spread", sec.spread, "fraction")
    r.set("contended", m.contended)
    hit = [f"{name} ({'; '.join(sec.reasons)})" for name, sec in m.meter.sections.items() if sec.contended]
    if hit:
        r.warn("contended", "other work shared the machine while measuring: " + ", ".join(hit)
               + "; the figures are lower bounds: rerun on a quiet machine")


# ------------------------------------------------------------------------------ calibration
def to_calibration(m: Measurement) -> Any:
    """The calibration a measurement gives (what ``--save`` writes)."""
    from napkin.calibration import Calibration

    if m.bandwidth is None:
        from napkin.errors import InputError

        raise InputError("save", "calibration", "needs the bandwidth probe", "do not skip bandwidth when saving")
    t = m.train
    mfu = basis = None
    if t is not None:
        mfu, basis = (t.mfu, "catalog peak") if t.mfu is not None else (t.mfu_of_ceiling, "measured ceiling")
    return Calibration(
        device=m.device.name,
        date=m.date,
        versions=dict(m.versions),
        peak_flops_per_s={p: r.ceiling_flops_per_s for p, r in m.matmul.items()},
        matmul_fraction_of_peak={p: r.fraction_of_peak for p, r in m.matmul.items()
                                 if r.fraction_of_peak is not None},
        memory_bytes_per_s=m.bandwidth.copy_bytes_per_s,
        bandwidth_fraction=m.bandwidth.fraction_of_catalog,
        training_mfu=mfu,
        training_mfu_by_convention=t.mfu_by_convention() if t is not None else {},
        training_mfu_params=float(t.config.n_params_flops) if t is not None else None,
        catalog_key=m.device.catalog_key,
        training_precision=t.precision if t is not None else "",
        training_mfu_basis=basis or "",
        flops_convention="causal: 6N + 6·L·d·T per token" if t is not None else "",
        contended=m.contended,
    )
