"""Decode: tokens/s of the probe GPT at a few batch sizes, against the bandwidth roofline.

One decode step emits one token per sequence and reads every weight once, plus each
sequence's KV cache. Its memory-bound ceiling is the roofline's
``tokens/s = B · bandwidth / (weight_bytes + B · kv_bytes_per_sequence)``
(``napkin.formulas.roofline.decode_tokens_per_s``) with the measured bandwidth (the
better of copy and read) and the same bytes the step reads:

* weight bytes: the blocks' linear weights ``12·L·d²`` and the output head ``V·d``
  (tied to the embedding, read whole to score every token), at the run's precision.
  Norm gains and the B embedding rows are a few kilobytes and are left out.
* KV bytes per sequence: ``2 · L · d · C`` values for a context of ``C`` tokens.

The decode model has the probe's architecture, widened so its weights are at least
four times the last-level cache (a CPU) or a few GiB (a GPU): a model that fits in
cache is read from cache, and the DRAM roofline does not bound it. Each timed step
decodes at the same position (the cache holds exactly ``C`` tokens), so every step
reads the same bytes. The bandwidth is re-measured beside each batch size and the
roofline takes the best rate seen. On CUDA the step is captured as a CUDA graph when it can be
(launch overhead otherwise dominates a small model); eager otherwise, and said so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from napkin.formulas import roofline
from napkin import units
from napkin.hardware import bytes_per_value
from napkin.measure.noise import Timing, time_repeats
from napkin.units import GIBI


@dataclass(frozen=True)
class DecodeConfig:
    n_layers: int
    d_model: int
    n_heads: int
    vocab_size: int
    context: int  # tokens already in each sequence's KV cache
    batches: tuple[int, ...]
    precision: str

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def n_params(self) -> int:
        """Weights read per step: 12·L·d² (blocks) + V·d (the head)."""
        return 12 * self.n_layers * self.d_model**2 + self.vocab_size * self.d_model

    @property
    def weights_bytes(self) -> float:
        return self.n_params * bytes_per_value(self.precision)

    @property
    def kv_bytes_per_sequence(self) -> float:
        """K and V of every layer for ``context`` tokens: 2 · L · d · C values."""
        return 2.0 * self.n_layers * self.d_model * self.context * bytes_per_value(self.precision)

    def to_dict(self) -> dict:
        return {"n_layers": self.n_layers, "d_model": self.d_model, "n_heads": self.n_heads,
                "vocab_size": self.vocab_size, "context": self.context, "batches": list(self.batches),
                "precision": self.precision, "n_params": self.n_params, "weights_bytes": self.weights_bytes}


def default_config(device: Any, quick: bool, precision: str) -> DecodeConfig:
    """Weights ≥ 4× the last-level cache on a CPU (2 layers); 2 or 4 GiB over 4 layers on a GPU."""
    bpv = bytes_per_value(precision)
    if device.kind == "cuda":
        layers, heads_dim, vocab, context, batches = 4, 128, 50304, 512, (1, 16, 64)
        target = (2 if quick else 4) * GIBI
    else:
        layers, heads_dim, vocab, context, batches = 2, 64, 2048, 64 if quick else 256, (1, 4, 16)
        target = 4 * device.cache_bytes
    # smallest d (a multiple of the head size) with (12·L·d² + V·d) · bytes ≥ target
    a, b, c = 12.0 * layers, float(vocab), -target / bpv
    d = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    d = int(math.ceil(d / heads_dim) * heads_dim)
    return DecodeConfig(layers, d, d // heads_dim, vocab, context, batches, precision)


@dataclass(frozen=True)
class DecodePoint:
    batch: int
    timing: Timing
    roofline_tokens_per_s: float
    weights_bytes: float
    kv_bytes_per_sequence: float

    @property
    def step_s(self) -> float:
        return self.timing.median_s

    @property
    def tokens_per_s(self) -> float:
        """Median: batch tokens per median step."""
        return self.batch / self.timing.median_s

    @property
    def best_tokens_per_s(self) -> float:
        return self.batch / self.timing.best_s

    @property
    def fraction_of_roofline(self) -> float:
        return self.tokens_per_s / self.roofline_tokens_per_s

    def to_dict(self) -> dict:
        return {"batch": self.batch, "tokens_per_s": self.tokens_per_s,
                "best_tokens_per_s": self.best_tokens_per_s, "step_s": self.step_s,
                "roofline_tokens_per_s": self.roofline_tokens_per_s,
                "fraction_of_roofline": self.fraction_of_roofline,
                "bytes_per_step": self.weights_bytes + self.batch * self.kv_bytes_per_sequence}


@dataclass(frozen=True)
class DecodeResult:
    config: DecodeConfig
    bandwidth_bytes_per_s: float
    points: tuple[DecodePoint, ...]
    graphs: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def samples(self) -> list[float]:
        return list(self.points[0].timing.samples) if self.points else []


def _weights(torch: Any, cfg: DecodeConfig, dev: str, dtype: Any) -> dict:
    g = torch.Generator(device=dev).manual_seed(0)
    d = cfg.d_model

    def w(*shape: int) -> Any:
        return torch.randn(*shape, device=dev, dtype=dtype, generator=g) * 0.02

    layers = [{"qkv": w(3 * d, d), "proj": w(d, d), "up": w(4 * d, d), "down": w(d, 4 * d),
               "ln1": torch.ones(d, device=dev, dtype=dtype), "ln2": torch.ones(d, device=dev, dtype=dtype)}
              for _ in range(cfg.n_layers)]
    return {"wte": w(cfg.vocab_size, d), "wpe": w(cfg.context + 1, d), "layers": layers,
            "ln_f": torch.ones(d, device=dev, dtype=dtype)}


def _step_fn(torch: Any, cfg: DecodeConfig, W: dict, batch: int, dev: str, dtype: Any) -> Callable[[], None]:
    """One decode step for ``batch`` sequences at position ``context`` (static tensors)."""
    fn = torch.nn.functional
    L, d, h, dh, C = cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.context
    g = torch.Generator(device=dev).manual_seed(1)
    kc = [torch.randn(batch, h, C + 1, dh, device=dev, dtype=dtype, generator=g) for _ in range(L)]
    vc = [torch.randn(batch, h, C + 1, dh, device=dev, dtype=dtype, generator=g) for _ in range(L)]
    tok = torch.zeros(batch, dtype=torch.long, device=dev)
    scale = 1.0 / math.sqrt(dh)

    def step() -> None:
        x = W["wte"][tok] + W["wpe"][C]
        for i, lw in enumerate(W["layers"]):
            a = fn.layer_norm(x, (d,), lw["ln1"])
            q, k, v = fn.linear(a, lw["qkv"]).split(d, dim=1)
            kc[i][:, :, C] = k.view(batch, h, dh)
            vc[i][:, :, C] = v.view(batch, h, dh)
            att = torch.matmul(q.view(batch, h, 1, dh), kc[i].transpose(-2, -1)) * scale
            y = torch.matmul(att.softmax(dim=-1), vc[i]).view(batch, d)
            x = x + fn.linear(y, lw["proj"])
            m = fn.layer_norm(x, (d,), lw["ln2"])
            x = x + fn.linear(fn.gelu(fn.linear(m, lw["up"])), lw["down"])
        logits = fn.linear(fn.layer_norm(x, (d,), W["ln_f"]), W["wte"])
        tok.copy_(logits.argmax(dim=-1))

    return step


def _graphed(torch: Any, step: Callable[[], None]) -> Callable[[], None]:
    """Capture ``step`` as a CUDA graph (warmed on a side stream first)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def measure(torch: Any, device: Any, cfg: DecodeConfig, *, bandwidth_bytes_per_s: float, warmup: int,
            repeats: int, steps_per_repeat: int, flush: Callable[[], None] | None,
            bandwidth_probe: Callable[[], float] | None = None,
            progress: Callable[[str], None] | None = None) -> DecodeResult:
    """Time decode steps at each batch size; set each beside its roofline.

    ``bandwidth_probe`` re-measures the memory bandwidth just before each batch size;
    the roofline uses the best rate seen (other work on the machine only ever lowers a
    measured rate, so the best is the closest to what the memory can do).
    """
    from napkin.measure.matmul import dtype_of

    dev = device.torch_device
    dtype = dtype_of(torch, cfg.precision)
    notes: list[str] = []
    graphs = device.kind == "cuda"
    timed: list[tuple[int, Timing]] = []
    rate = bandwidth_bytes_per_s
    with torch.inference_mode():
        if progress:
            progress(f"decode: build a {cfg.weights_bytes / GIBI:.2f} GiB model")
        W = _weights(torch, cfg, dev, dtype)
        for b in cfg.batches:
            if progress:
                progress(f"decode: batch {b}")
            step = _step_fn(torch, cfg, W, b, dev, dtype)
            run = step
            if graphs:
                try:
                    run = _graphed(torch, step)
                except Exception as exc:  # capture is best effort: eager still measures
                    graphs = False
                    notes.append(f"CUDA graph capture failed ({type(exc).__name__}); decode timed eagerly, "
                                 f"so kernel-launch overhead counts against it")
            if bandwidth_probe is not None:
                rate = max(rate, bandwidth_probe())
            timing = time_repeats(torch, device, run, warmup=warmup, repeats=repeats, flush=flush,
                                  inner=steps_per_repeat)
            timed.append((b, timing))
            del step, run
        del W
    points = tuple(
        DecodePoint(b, timing, roofline.decode_tokens_per_s(
            float(b), memory_bytes_per_s=rate, weights_bytes=cfg.weights_bytes,
            kv_bytes_per_sequence=cfg.kv_bytes_per_sequence), cfg.weights_bytes, cfg.kv_bytes_per_sequence)
        for b, timing in timed)
    if device.kind != "cuda":
        notes.append("decode timed eagerly: per-op overhead of a small model counts against it")
    if rate > bandwidth_bytes_per_s:
        notes.append(f"the decode roofline uses {units.format(rate, 'bytes_per_s')}, the best of the bandwidth "
                     f"probe and its re-runs beside each batch size")
    return DecodeResult(cfg, rate, points, graphs, tuple(notes))
