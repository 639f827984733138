"""Trainer callbacks: realised $/M tokens, MFU and drift in the trainer's own loggers.

``NapkinTrainerCallback`` (Hugging Face ``transformers.TrainerCallback``) and
``NapkinLightningCallback`` (PyTorch Lightning ``Callback``) record each optimiser step's
wall time, and every ``every`` steps log ``napkin/usd_per_million_tokens`` (marginal per
advanced token), ``napkin/mfu`` (over allocated time, 6N), ``napkin/drift_ratio``
(against the plan), ``napkin/realised_usd`` and ``napkin/t_wall``; with ``jsonl=PATH``
they also write the generic step log (``step, t_wall, gpus_allocated, tokens, loss``)
that ``napkin ledger report|watch`` reads. transformers and lightning are imported only
when a class is first used, so napkin never requires them::

    from napkin.ledger.callbacks import NapkinTrainerCallback, attach
    attach(trainer, NapkinTrainerCallback(price="2.50/h", tokens_per_step=4096, every=10))

Within one process the step only moves forward; a restart is a new process writing a new
log, and ``napkin ledger report --run NAME`` joins them. Under data parallelism (DDP,
FSDP, DeepSpeed) every rank runs the callback, but only global rank zero writes the step
log and logs the figures: the others would repeat each step once per rank.
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any, Callable

from napkin import units
from napkin.errors import InputError

__all__ = ["NapkinLightningCallback", "NapkinTrainerCallback", "attach"]


class LedgerCore:
    """Framework-free part: records, figures, the JSONL step log."""

    def __init__(self, *, price: float | str, tokens_per_step: float | str | None = None, gpus: int | None = None,
                 params: float | str | None = None, model: str | None = None, gpu: str | None = None,
                 precision: str = "bf16", peak: float | str | None = None, plan: str | None = None,
                 plan_usd_per_million: float | str | None = None, every: int = 10, jsonl: str | None = None,
                 clock: Callable[[], float] = time.time):
        from napkin.ledger.realised import RunningLedger

        self.price = units.parse(price, "usd_per_hour", "price")
        self.tokens_per_step = None if tokens_per_step is None else units.parse(tokens_per_step, "count",
                                                                                "tokens_per_step")
        if every < 1:
            raise InputError("every", every, "must be >= 1")
        self.gpus = gpus
        self.every = int(every)
        self.clock = clock
        self.ledger = RunningLedger(self.price)
        self.flops_per_token: float | None = None
        self.peak: float | None = None
        if params is not None or model is not None:
            from napkin import catalog
            from napkin.formulas import flops

            n = units.parse(params, "count", "params") if params is not None else catalog.model(model).active_params
            self.flops_per_token = flops.train_flops_per_token(n)
            if peak is not None:
                self.peak = units.parse(peak, "flops_per_s", "peak")
            elif gpu is not None:
                self.peak = catalog.gpu(gpu).peak(precision)
        self.plan_usd_per_million: float | None = None
        if plan_usd_per_million is not None:
            self.plan_usd_per_million = units.parse(plan_usd_per_million, "usd_per_million", "plan_usd_per_million")
        elif plan is not None:
            from napkin.ledger.drift import load_plan

            self.plan_usd_per_million = load_plan(plan).usd_per_million
        self.jsonl = jsonl
        self._fh: Any = None  # opened on rank zero's first record, closed in close()
        self.rank_zero = True  # set by the trainer callback from the process's global rank
        self.last_figures: dict[str, float] = {}

    def record(self, step: int, tokens: float, *, gpus: int, loss: float | None = None) -> None:
        """One optimiser step's record; only on global rank zero (other ranks keep nothing)."""
        if not self.rank_zero:
            return
        t = self.clock()
        self.ledger.add(float(step), t, float(gpus), float(tokens))
        if self.jsonl and self._fh is None:
            self._fh = open(self.jsonl, "a", buffering=1)  # noqa: SIM115 - closed in close()
        if self._fh is not None:
            row = {"step": int(step), "t_wall": t, "gpus_allocated": gpus, "tokens": tokens}
            if loss is not None:
                row["loss"] = float(loss)
            self._fh.write(json.dumps(row) + "\n")

    def figures(self) -> dict[str, float]:
        """The figures to log now (those that exist yet; none off rank zero)."""
        if not self.rank_zero:
            return {}
        led = self.ledger
        out: dict[str, float] = {"napkin/t_wall": led.last[1]} if led.last else {}
        if led.last is not None:
            out["napkin/gpus_allocated"] = led.last[2]
        out["napkin/realised_usd"] = led.usd
        per_m = led.usd_per_million
        if per_m is not None:
            out["napkin/usd_per_million_tokens"] = per_m
            if self.plan_usd_per_million:
                out["napkin/drift_ratio"] = per_m / self.plan_usd_per_million
        if led.processed_tokens > 0:
            out["napkin/goodput_tokens"] = led.advanced_tokens / led.processed_tokens
        if self.flops_per_token and self.peak and led.gpu_seconds > 0:
            from napkin.ledger.realised import realised_mfu

            out["napkin/mfu"] = realised_mfu(led.advanced_tokens, flops_per_token=self.flops_per_token,
                                             gpu_seconds=led.gpu_seconds, dense_flops_per_s=self.peak)
        self.last_figures = out
        return out

    def due(self, step: int) -> bool:
        """Whether figures are logged at ``step``: the same answer on every rank (the Trainer's
        logging gathers the loss across ranks, so every rank must log at the same steps)."""
        return step > 0 and step % self.every == 0

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def attach(trainer: Any, callback: Any) -> Any:
    """Add ``callback`` to a Hugging Face Trainer ahead of its reporting integrations,
    so TensorBoard, W&B, ... receive the napkin/* figures too."""
    trainer.callback_handler.callbacks.insert(0, callback)
    return callback


@functools.cache
def _hf_class() -> type:
    from transformers import TrainerCallback

    class NapkinTrainerCallback(TrainerCallback):
        """Realised $/M tokens, MFU and drift into the Trainer's logs every ``every`` steps.

        Tokens per step: ``tokens_per_step`` (global), or the Trainer's own count when
        ``include_num_input_tokens_seen`` is on. GPUs: ``gpus`` or the world size.
        """

        def __init__(self, **options: Any):
            self.core = LedgerCore(**options)
            self._seen: float | None = None
            self._gpus: int | None = None

        def _tokens(self, args: Any, state: Any) -> float:
            if self.core.tokens_per_step is not None:
                return self.core.tokens_per_step
            seen = float(getattr(state, "num_input_tokens_seen", 0) or 0)
            delta = seen - (self._seen or 0.0)
            self._seen = seen
            return delta

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            counting = str(getattr(args, "include_num_input_tokens_seen", "no")).lower() not in ("no", "false")
            if self.core.tokens_per_step is None and not counting:
                raise InputError("tokens_per_step", "nothing", "is required by NapkinTrainerCallback",
                                 "give tokens_per_step= (global batch × sequence length), or train with "
                                 "include_num_input_tokens_seen=True")
            zero = getattr(state, "is_world_process_zero", None)
            self.core.rank_zero = bool(zero) if zero is not None else int(getattr(args, "process_index", 0) or 0) == 0
            self._gpus = self.core.gpus or int(getattr(args, "world_size", 1) or 1)
            self._seen = float(getattr(state, "num_input_tokens_seen", 0) or 0)
            self.core.record(state.global_step, 0.0, gpus=self._gpus)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            self.core.record(state.global_step, self._tokens(args, state), gpus=self._gpus or 1)
            if self.core.due(state.global_step):
                control.should_log = True
            return control

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            from napkin.ledger.readers.hf import is_summary

            # the end-of-training summary is not a step; transformers 5 puts train_runtime in every
            # entry when it counts tokens, so the summary is told by the keys only it has
            if logs is None or not self.core.rank_zero or is_summary(logs):
                return
            last = self.core.ledger.last  # every entry a step record: its wall clock and GPUs
            figures = self.core.figures() if self.core.due(state.global_step) else {
                "napkin/t_wall": last[1], "napkin/gpus_allocated": last[2]} if last else {}
            logs.update(figures)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(figures)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.core.close()

    return NapkinTrainerCallback


@functools.cache
def _lightning_class() -> type:
    try:
        from lightning.pytorch import Callback
    except ImportError:  # the standalone package
        from pytorch_lightning import Callback  # type: ignore[no-redef]

    class NapkinLightningCallback(Callback):
        """Realised $/M tokens, MFU and drift into the Trainer's loggers every ``every`` steps.

        Tokens per step: ``tokens_per_step`` (global), or ``tokens_fn(batch)`` giving one
        rank's tokens in a batch (summed over gradient accumulation, times the world size).
        GPUs: ``gpus`` or the trainer's world size.
        """

        def __init__(self, *, tokens_fn: Callable[[Any], float] | None = None, **options: Any):
            self.core = LedgerCore(**options)
            self.tokens_fn = tokens_fn
            if self.core.tokens_per_step is None and tokens_fn is None:
                raise InputError("tokens_per_step", "nothing", "is required by NapkinLightningCallback",
                                 "give tokens_per_step= (global batch × sequence length) or tokens_fn=")
            self._step = 0
            self._pending = 0.0
            self._gpus = 1

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self.core.rank_zero = bool(getattr(trainer, "is_global_zero", True))
            self._gpus = self.core.gpus or int(getattr(trainer, "world_size", 1) or 1)
            self._step = trainer.global_step
            self.core.record(self._step, 0.0, gpus=self._gpus)

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            if self.tokens_fn is not None:
                self._pending += float(self.tokens_fn(batch)) * self._gpus
            step = trainer.global_step
            if step == self._step:  # accumulating gradients: no optimiser step yet
                return
            tokens = self.core.tokens_per_step if self.core.tokens_per_step is not None else self._pending
            tokens /= max(step - self._step, 1) if self.core.tokens_per_step is None else 1
            loss = None
            if isinstance(outputs, dict) and "loss" in outputs:
                loss = float(outputs["loss"])
            elif hasattr(outputs, "item"):
                loss = float(outputs.item())
            self.core.record(step, tokens, gpus=self._gpus, loss=loss)
            self._step, self._pending = step, 0.0
            figures = self.core.figures() if self.core.due(step) else {}
            if figures:
                for logger in trainer.loggers:
                    logger.log_metrics(figures, step=step)

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self.core.close()

    return NapkinLightningCallback


def __getattr__(name: str) -> Any:
    if name == "NapkinTrainerCallback":
        return _hf_class()
    if name == "NapkinLightningCallback":
        return _lightning_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
