"""A short training run of a small GPT, and its MFU from model FLOPs.

The model is GPT-2 shaped, in plain PyTorch: a token embedding tied to the output
head, a learned position table, ``L`` pre-norm blocks of causal self-attention and a
4·d GELU MLP, no biases in the linear layers. Paper symbols: ``L`` layers, ``d`` width,
``h`` heads, ``T`` sequence length, ``V`` vocabulary, ``B`` sequences per step.

**FLOP convention (stated in every output).** Model FLOPs per token are
``6·N + 6·L·d·T`` (napkin's ``causal`` convention, DESIGN.md): ``N`` counts the weights
that multiply an activation once per token, the blocks' linear layers ``12·L·d²`` and
the output head ``V·d``. The input embedding and position tables are lookups, not
matmuls, and are left out; so are the norms' gains (elementwise). For this tied model
N is the parameter count less the position table and the norms. The attention term
counts the causal half of the ``QKᵀ`` and ``AV`` products.

The analytic count is cross-checked against ``torch.utils.flop_counter.FlopCounterMode``
over one forward and backward pass. The counter counts every product it sees whole,
the masked half of attention included, so with explicit attention it should equal
the ``full`` convention (``6·N + 12·L·d·T``) exactly; ``counter_expectation`` says what
it should see for fused attention kernels.

MFU = model FLOPs per step / step time / peak, over the catalog's dense peak and over
the measured matmul ceiling. With recomputation on, HFU adds the recomputed forward
pass (``2·N_blocks`` plus the forward third of attention) and is reported beside MFU,
never as it. Nothing here reads hardware utilisation counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from napkin.formulas import flops as F
from napkin.measure.noise import Timing, time_repeats
from napkin.units import GIGA, MEGA

CONVENTION = "causal"


@dataclass(frozen=True)
class GPTConfig:
    """Shape of the probe model and of one training step."""

    n_layers: int
    d_model: int
    n_heads: int
    seq_len: int
    vocab_size: int
    batch: int
    attention: str = "matmul"  # "matmul" (explicit QKᵀ, softmax, AV) | "sdpa" (fused kernel)
    recompute: bool = False  # recompute each block's activations in the backward pass

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def block_params(self) -> int:
        """Linear weights of the blocks: (3d² + d²) attention + 8d² MLP per layer = 12·L·d²."""
        return 12 * self.n_layers * self.d_model**2

    @property
    def head_params(self) -> int:
        """The output head's matmul, V·d (its weight is the tied token embedding)."""
        return self.vocab_size * self.d_model

    @property
    def n_params_flops(self) -> int:
        """N of 6N: the weights that multiply an activation once per token."""
        return self.block_params + self.head_params

    @property
    def total_params(self) -> int:
        """Every parameter: tied embedding, position table, blocks, norm gains."""
        d = self.d_model
        return self.vocab_size * d + self.seq_len * d + self.block_params + (2 * self.n_layers + 1) * d

    @property
    def tokens_per_step(self) -> int:
        return self.batch * self.seq_len

    def to_dict(self) -> dict:
        return {"n_layers": self.n_layers, "d_model": self.d_model, "n_heads": self.n_heads,
                "seq_len": self.seq_len, "vocab_size": self.vocab_size, "batch": self.batch,
                "attention": self.attention, "recompute": self.recompute}


# The model sized to the device: (kind, quick) -> config. A CUDA GPU with less than
# 40 GB gets the quick (GPT-2 small, 124M) size in full mode too.
SIZES = {
    ("cpu", True): GPTConfig(n_layers=2, d_model=128, n_heads=4, seq_len=128, vocab_size=2048, batch=4),
    ("cpu", False): GPTConfig(n_layers=4, d_model=256, n_heads=4, seq_len=256, vocab_size=4096, batch=8),
    ("cuda", True): GPTConfig(n_layers=12, d_model=768, n_heads=12, seq_len=1024, vocab_size=50304,
                              batch=8, attention="sdpa"),
    ("cuda", False): GPTConfig(n_layers=24, d_model=1024, n_heads=16, seq_len=1024, vocab_size=50304,
                               batch=16, attention="sdpa"),
}


def default_config(device: Any, quick: bool) -> GPTConfig:
    if device.kind == "cuda" and not quick and (device.memory_bytes or 0) < 40 * GIGA:
        return SIZES[("cuda", True)]
    return SIZES[(device.kind, quick)]


# ------------------------------------------------------------------------------ FLOP counts
def model_flops_per_token(cfg: GPTConfig, convention: str = CONVENTION) -> float:
    """6·N + the attention term of ``convention`` (6N | causal | full), per token."""
    attn = F.attention_flops_per_token(cfg.n_layers, d_attn=cfg.d_model, seq_len=cfg.seq_len,
                                       convention=convention)
    return F.train_flops_per_token(cfg.n_params_flops, attention_flops=attn)


def hardware_flops_per_token(cfg: GPTConfig, convention: str = CONVENTION) -> float:
    """Model FLOPs plus, with recomputation, the blocks' forward pass done again.

    The recomputed forward is 2·N_blocks and a third of the attention term (forward
    is one of its three parts). The head is not recomputed.
    """
    base = model_flops_per_token(cfg, convention)
    if not cfg.recompute:
        return base
    attn = F.attention_flops_per_token(cfg.n_layers, d_attn=cfg.d_model, seq_len=cfg.seq_len,
                                       convention=convention)
    return base + F.FORWARD_FLOPS_PER_PARAM * cfg.block_params + attn / 3.0


# ------------------------------------------------------------------------------ the model
def build_model(torch: Any, cfg: GPTConfig, *, device: str = "cpu", dtype: Any = None) -> Any:
    """A GPT-2 shaped model in plain torch (built inside a function: torch loads lazily)."""
    nn = torch.nn
    fn = torch.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            d = cfg.d_model
            self.ln1 = nn.LayerNorm(d, bias=False)
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.proj = nn.Linear(d, d, bias=False)
            self.ln2 = nn.LayerNorm(d, bias=False)
            self.up = nn.Linear(d, 4 * d, bias=False)
            self.down = nn.Linear(4 * d, d, bias=False)

        def attend(self, x: Any) -> Any:
            b, t, d = x.shape
            h, dh = cfg.n_heads, cfg.head_dim
            q, k, v = self.qkv(x).split(d, dim=2)
            q, k, v = (z.view(b, t, h, dh).transpose(1, 2) for z in (q, k, v))
            if cfg.attention == "sdpa":
                y = fn.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
                mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
                att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
                y = att @ v
            return self.proj(y.transpose(1, 2).reshape(b, t, d))

        def forward(self, x: Any) -> Any:
            x = x + self.attend(self.ln1(x))
            return x + self.down(fn.gelu(self.up(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
            self.wpe = nn.Embedding(cfg.seq_len, cfg.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layers))
            self.ln_f = nn.LayerNorm(cfg.d_model, bias=False)
            for p in self.parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=0.02)

        def forward(self, idx: Any) -> Any:
            t = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
            for block in self.blocks:
                if cfg.recompute and self.training:
                    # the whole block again in the backward pass (no early stop), as HFU counts it
                    with torch.utils.checkpoint.set_checkpoint_early_stop(False):
                        x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            return fn.linear(self.ln_f(x), self.wte.weight)  # the head, tied to the embedding

    model = GPT()
    return model.to(device=device, dtype=dtype) if dtype is not None else model.to(device)


def count_flops(torch: Any, cfg: GPTConfig, *, device: str = "cpu", model: Any = None,
                precision: str = "fp32") -> dict:
    """FLOPs of one forward and backward pass as FlopCounterMode counts them, by op.

    Run under the training step's autocast, so the same kernels (a fused attention
    kernel needs bf16 or fp16) are the ones counted.
    """
    from torch.utils.flop_counter import FlopCounterMode

    if model is None:
        model = build_model(torch, cfg, device=device)
    model.train()
    idx = torch.randint(0, cfg.vocab_size, (cfg.batch, cfg.seq_len), device=device)
    counter = FlopCounterMode(display=False)
    amp = precision in ("bf16", "fp16")
    amp_dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    with counter:
        with torch.autocast(device_type=kind, dtype=amp_dtype, enabled=amp):
            logits = model(idx)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, cfg.vocab_size), idx.view(-1))
        loss.backward()
    model.zero_grad(set_to_none=True)
    by_op = {str(op).split(".")[-1] if "." in str(op) else str(op): float(n)
             for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return {"total": float(counter.get_total_flops()), "by_op": by_op}


FUSED_ATTENTION_OPS = ("_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
                       "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
                       "_efficient_attention_forward")


def counter_expectation(cfg: GPTConfig, counted: dict) -> tuple[float, bool]:
    """What FlopCounterMode should report for one step, and whether it saw the attention ops.

    The counter counts every product it sees, whole:

    * linear layers: 6·N per token (2·N forward, 4·N backward), plus 2·N_blocks again
      when the blocks are recomputed;
    * explicit attention (``bmm``): the full square, 4·L·d·T per token forward and
      8·L·d·T backward (the ``full`` convention's 12·L·d·T), plus 4·L·d·T recomputed;
    * a fused attention kernel it knows (flash, memory-efficient, cuDNN): the same
      forward, and 10·L·d·T backward, because its backward formula counts the scores
      the kernel recomputes;
    * a fused kernel it does not know (the CPU's flash attention in torch 2.13): nothing.
    """
    ops = counted["by_op"]
    fused = any(k in FUSED_ATTENTION_OPS for k in ops)
    covers_attention = fused or "bmm" in ops
    linear = F.train_flops_per_token(cfg.n_params_flops)
    if cfg.recompute:
        linear += F.FORWARD_FLOPS_PER_PARAM * cfg.block_params
    attn = 0.0
    if covers_attention:
        forward, backward = 4.0, (10.0 if fused else 8.0)
        attn = (forward * (2 if cfg.recompute else 1) + backward) * cfg.n_layers * cfg.d_model * cfg.seq_len
    return (linear + attn) * cfg.tokens_per_step, covers_attention


# ------------------------------------------------------------------------------ the run
@dataclass(frozen=True)
class TrainResult:
    config: GPTConfig
    precision: str
    timing: Timing
    counted_flops_per_step: float
    counter_expected_flops_per_step: float
    counter_covers_attention: bool
    peak_flops_per_s: float | None  # catalog dense peak at the run's precision
    ceiling_flops_per_s: float | None  # measured matmul ceiling at the run's precision
    convention: str = CONVENTION
    by_op: dict = field(default_factory=dict)

    @property
    def step_s(self) -> float:
        """Median step time: what the run sustains."""
        return self.timing.median_s

    @property
    def tokens_per_s(self) -> float:
        return self.config.tokens_per_step / self.step_s

    @property
    def flops_per_token(self) -> float:
        return model_flops_per_token(self.config, self.convention)

    @property
    def model_flops_per_s(self) -> float:
        return self.flops_per_token * self.tokens_per_s

    @property
    def hardware_flops_per_s(self) -> float:
        return hardware_flops_per_token(self.config, self.convention) * self.tokens_per_s

    def _over(self, rate: float, denominator: float | None) -> float | None:
        return rate / denominator if denominator else None

    @property
    def mfu(self) -> float | None:
        """Model FLOP/s over the catalog's dense peak (None with no catalog peak)."""
        return self._over(self.model_flops_per_s, self.peak_flops_per_s)

    @property
    def mfu_of_ceiling(self) -> float | None:
        """Model FLOP/s over the measured matmul ceiling at the same precision."""
        return self._over(self.model_flops_per_s, self.ceiling_flops_per_s)

    def mfu_by_convention(self) -> dict[str, float]:
        """MFU under each FLOPs convention (6N, causal, full), over the catalog peak or else the ceiling.

        A plan turns MFU back into tokens/s with its own FLOPs per token, so it needs the
        MFU counted the way it counts: 6N for a 6N plan or ledger, causal for a causal one.
        """
        denominator = self.peak_flops_per_s or self.ceiling_flops_per_s
        if not denominator:
            return {}
        return {c: model_flops_per_token(self.config, c) * self.tokens_per_s / denominator for c in F.CONVENTIONS}

    @property
    def hfu(self) -> float | None:
        if not self.config.recompute:
            return None
        return self._over(self.hardware_flops_per_s, self.peak_flops_per_s or self.ceiling_flops_per_s)

    @property
    def counter_ratio(self) -> float:
        return self.counted_flops_per_step / self.counter_expected_flops_per_step

    @property
    def samples(self) -> list[float]:
        return list(self.timing.samples)


def measure(torch: Any, device: Any, cfg: GPTConfig, *, precision: str, warmup: int, repeats: int,
            peak_flops_per_s: float | None, ceiling_flops_per_s: float | None,
            progress: Callable[[str], None] | None = None) -> TrainResult:
    """Train ``cfg`` on random tokens for ``warmup`` + ``repeats`` steps; time each step."""
    dev = device.torch_device
    if progress:
        progress(f"train: build a {cfg.n_params_flops / MEGA:.2f}M-parameter GPT")
    model = build_model(torch, cfg, device=dev)
    if progress:
        progress("train: count FLOPs (FlopCounterMode)")
    counted = count_flops(torch, cfg, device=dev, model=model, precision=precision)
    expected, covers = counter_expectation(cfg, counted)
    amp = precision in ("bf16", "fp16")
    amp_dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    opt_kwargs = {"fused": True} if device.kind == "cuda" else {}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **opt_kwargs)
    scaler_needed = precision == "fp16"
    scaler = torch.amp.GradScaler(device.kind) if scaler_needed else None
    gen = torch.Generator(device=dev).manual_seed(0)
    idx = torch.randint(0, cfg.vocab_size, (cfg.batch, cfg.seq_len), device=dev, generator=gen)
    tgt = torch.randint(0, cfg.vocab_size, (cfg.batch, cfg.seq_len), device=dev, generator=gen)

    def step() -> None:
        with torch.autocast(device_type=device.kind, dtype=amp_dtype, enabled=amp):
            logits = model(idx)
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, cfg.vocab_size), tgt.view(-1))
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)

    if progress:
        progress(f"train: {warmup} warm-up + {repeats} timed steps of {cfg.tokens_per_step} tokens")
    model.train()
    timing = time_repeats(torch, device, step, warmup=warmup, repeats=repeats, flush=None)
    del model, opt
    return TrainResult(cfg, precision, timing, counted["total"], expected, covers, peak_flops_per_s,
                       ceiling_flops_per_s, CONVENTION, counted["by_op"])


def with_recompute(cfg: GPTConfig, on: bool) -> GPTConfig:
    return replace(cfg, recompute=on)
