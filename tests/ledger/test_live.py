"""Live: a growing log followed by the watcher, Prometheus metrics, and the trainer callbacks."""

from __future__ import annotations

import json
import urllib.request

import pytest

from napkin import calculate
from napkin.ledger.calculator import LedgerRequest
from napkin.request import parse_request

from ledger_helpers import T0


def _req(path, **kw):
    return parse_request(LedgerRequest, {"logs": [str(path)], "price": "1/h", **kw})


def test_watch_follows_growth_and_alerts_on_crossing(tmp_path):
    """Plan $0.01/M: 36 s steps of 1M tokens at $1/h are on plan; 72 s steps are 100% over; back to 36 s recovers."""
    from napkin.ledger.watch import Watcher

    path = tmp_path / "live.csv"
    path.write_text("step,t_wall,gpus_allocated,tokens\n")
    w = Watcher(str(path), _req(path, plan_usd_per_million="0.01"))
    assert w.poll().lines == [f"waiting: log has no step records; got {path} (give a log with step, t_wall, "
                              "gpus_allocated and tokens per record)"]
    assert w.poll() is None  # nothing changed
    t, step = T0, 0
    lines = [f"{step},{t},1,1000000"]
    for _ in range(10):
        step, t = step + 1, t + 36
        lines.append(f"{step},{t},1,1000000")
    with open(path, "a") as fh:
        fh.write("\n".join(lines) + "\n" + "11,171")  # the last line is half-written
    up = w.poll()
    assert up.report["last_step"] == 10 and up.report["skipped_lines"]["count"] == 0
    assert [ln for ln in up.lines if ln.startswith("ALERT")] == []
    slow = []
    for _ in range(40):  # the half-written line is completed as step 11, then the run slows down
        step, t = step + 1, t + 72
        slow.append(f"{step},{t},1,1000000")
    text = path.read_text()
    path.write_text(text[:text.rindex("\n") + 1] + "\n".join(slow) + "\n")
    up = w.poll()
    assert up.lines[1].startswith("ALERT 2024-05-01: realised $0.0")
    assert up.report["per_day"][0]["alert"]
    fast = []
    for _ in range(400):
        step, t = step + 1, t + 1
        fast.append(f"{step},{t},1,1000000")
    with open(path, "a") as fh:
        fh.write("\n".join(fast) + "\n")
    up = w.poll()
    assert up.lines[1:] == ["ok 2024-05-01: back within 10% of plan"]


def test_prometheus_exporter_serves_the_figures(tmp_path):
    from napkin.ledger.prometheus import Exporter

    path = tmp_path / "log.csv"
    path.write_text("step,t_wall,gpus_allocated,tokens\n" + "\n".join(
        f"{s},{T0 + 10 * s},8,1000" for s in range(11)) + "\n")
    report = calculate("ledger", {"logs": [str(path)], "price": "3.6/h", "plan_usd_per_million": "40",
                                  "params": "1B", "gpu": "h100"})
    exp = Exporter("127.0.0.1:0", "run-a")
    try:
        exp.update(report)
        body = urllib.request.urlopen(f"http://127.0.0.1:{exp.port}/metrics", timeout=5).read().decode()
    finally:
        exp.close()
    assert 'napkin_realised_usd_per_million_tokens{run="run-a",tokens="advanced"} 80.0' in body
    assert 'napkin_drift_ratio{run="run-a",window="run"} 2.0' in body
    assert 'napkin_goodput{kind="time",run="run-a"} 1.0' in body
    assert 'napkin_mfu{run="run-a"}' in body
    assert 'napkin_drift_alert{run="run-a"} 1.0' in body


def _tiny_gpt2_trainer(tmp_path, **args):
    """A one-layer GPT-2 on random tokens: 6 steps of 4 sequences of 16 on the CPU, logging every 2."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=32))

    class Data(torch.utils.data.Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            x = torch.randint(0, 64, (16,))
            return {"input_ids": x, "labels": x}

    targs = TrainingArguments(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], max_steps=6,
                              per_device_train_batch_size=4, logging_steps=2, save_strategy="no", disable_tqdm=True,
                              **args)
    return Trainer(model=model, args=targs, train_dataset=Data())


def test_hf_trainer_callback_on_a_real_trainer(tmp_path):
    """A tiny GPT-2 on CPU for 6 steps: figures land in the Trainer's log history; the JSONL step log it
    writes reports the same $/M as the callback's last figure."""
    from napkin.ledger.callbacks import NapkinTrainerCallback, attach

    trainer = _tiny_gpt2_trainer(tmp_path)
    cb = NapkinTrainerCallback(price="2.50/h", tokens_per_step=64, every=3, params="0.1M", peak="1T",
                               plan_usd_per_million="1000", jsonl=str(tmp_path / "steps.jsonl"))
    attach(trainer, cb)
    trainer.train()
    logged = [e for e in trainer.state.log_history if "napkin/usd_per_million_tokens" in e]
    assert [e["step"] for e in logged] == [3, 6]
    assert all("napkin/mfu" in e and "napkin/drift_ratio" in e for e in logged)
    assert all("napkin/t_wall" in e for e in trainer.state.log_history if "loss" in e)
    rows = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4, 5, 6]
    r = calculate("ledger", {"logs": [str(tmp_path / "steps.jsonl")], "price": "2.50/h"})
    assert r["usd_per_million_advanced_tokens"] == pytest.approx(logged[-1]["napkin/usd_per_million_tokens"],
                                                                 rel=1e-12)
    trainer.state.save_to_json(str(tmp_path / "trainer_state.json"))
    hf = calculate("ledger", {"logs": [str(tmp_path / "trainer_state.json")], "price": "2.50/h",
                              "tokens_per_step": "64"})
    assert hf["last_step"] == 6 and hf["format"] == "hf"


def test_lightning_callback_on_a_real_trainer(tmp_path):
    """A tiny module for 5 steps on CPU with CSVLogger: napkin/* columns in metrics.csv, read back by the
    lightning reader."""
    import lightning.pytorch as L
    import torch
    from lightning.pytorch.loggers import CSVLogger

    from napkin.ledger.callbacks import NapkinLightningCallback

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.lin(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    logger = CSVLogger(str(tmp_path), name="run")
    cb = NapkinLightningCallback(price="2.50/h", tokens_fn=lambda batch: batch[0].shape[0], every=1,
                                 plan_usd_per_million="1000", jsonl=str(tmp_path / "steps.jsonl"))
    trainer = L.Trainer(max_steps=5, accelerator="cpu", logger=logger, callbacks=[cb], enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=False, log_every_n_steps=1)
    trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=8))
    metrics = tmp_path / "run" / "version_0" / "metrics.csv"
    header = metrics.read_text().splitlines()[0].split(",")
    assert {"napkin/usd_per_million_tokens", "napkin/t_wall", "napkin/drift_ratio"} <= set(header)
    r = calculate("ledger", {"logs": [str(metrics)], "price": "2.50/h", "gpus": 1, "tokens_per_step": "8"})
    assert r["format"] == "lightning" and r["last_step"] == 5
    steps = calculate("ledger", {"logs": [str(tmp_path / "steps.jsonl")], "price": "2.50/h"})
    assert steps["advanced_tokens"] == 5 * 8
    assert steps["usd_per_million_advanced_tokens"] == pytest.approx(
        cb.core.last_figures["napkin/usd_per_million_tokens"], rel=1e-12)


def test_hf_callback_when_the_trainer_counts_tokens(tmp_path):
    """include_num_input_tokens_seen=True: transformers 5 adds train_runtime to every log entry, which is not the
    end-of-training summary. The figures still land in every entry, and the trainer_state.json it saves is read
    with no --tokens-per-step and no --start (the callback's wall clock is in it)."""
    from napkin.ledger.callbacks import NapkinTrainerCallback, attach

    trainer = _tiny_gpt2_trainer(tmp_path, include_num_input_tokens_seen=True)
    cb = NapkinTrainerCallback(price="2.50/h", every=3, jsonl=str(tmp_path / "steps.jsonl"))
    attach(trainer, cb)
    trainer.train()
    history = trainer.state.log_history
    steps = [e for e in history if "loss" in e]
    assert all("train_runtime" in e for e in steps)  # what broke the reader and the callback before
    assert all("napkin/t_wall" in e for e in steps)
    assert [e["step"] for e in history if "napkin/usd_per_million_tokens" in e] == [3, 6]
    rows = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert [r["tokens"] for r in rows] == [0.0] + [4 * 16.0] * 6  # batch 4 × 16 tokens, from the Trainer's count
    trainer.state.save_to_json(str(tmp_path / "trainer_state.json"))
    hf = calculate("ledger", {"logs": [str(tmp_path / "trainer_state.json")], "price": "2.50/h"})
    assert (hf["format"], hf["last_step"]) == ("hf", 6)
    assert hf["advanced_tokens"] == (6 - steps[0]["step"]) * 64


def _fake_hf(cb, *, zero, steps=4):
    from types import SimpleNamespace

    args = SimpleNamespace(world_size=2, process_index=0 if zero else 1, include_num_input_tokens_seen="no")
    state = SimpleNamespace(global_step=0, is_world_process_zero=zero, log_history=[], num_input_tokens_seen=0)
    control = SimpleNamespace(should_log=False)
    cb.on_train_begin(args, state, control)
    logs = []
    for _ in range(steps):
        state.global_step += 1
        control.should_log = False
        cb.on_step_end(args, state, control)
        entry = {"loss": 1.0}
        state.log_history.append({**entry, "step": state.global_step})
        cb.on_log(args, state, control, logs=entry)
        logs.append((control.should_log, entry))
    cb.on_train_end(args, state, control)
    return logs


def test_callbacks_write_only_on_global_rank_zero(tmp_path):
    """Under DDP every rank runs the callback: only rank zero writes the step log and logs figures (two ranks
    writing each step twice read as a rollback per step). Every rank asks the Trainer to log at the same steps
    (its logging gathers the loss across ranks)."""
    from types import SimpleNamespace

    from napkin.ledger.callbacks import NapkinLightningCallback, NapkinTrainerCallback

    other, zero = tmp_path / "rank1.jsonl", tmp_path / "rank0.jsonl"
    opts = {"price": "2.50/h", "tokens_per_step": 16, "every": 2}
    rank1 = _fake_hf(NapkinTrainerCallback(jsonl=str(other), **opts), zero=False)
    rank0 = _fake_hf(NapkinTrainerCallback(jsonl=str(zero), **opts), zero=True)
    assert not other.exists()
    assert [json.loads(x)["step"] for x in zero.read_text().splitlines()] == [0, 1, 2, 3, 4]
    assert [asked for asked, _ in rank1] == [asked for asked, _ in rank0] == [False, True, False, True]
    assert all(not any(k.startswith("napkin/") for k in e) for _, e in rank1)
    assert "napkin/usd_per_million_tokens" in rank0[1][1]

    class Logger:
        def __init__(self):
            self.calls = []

        def log_metrics(self, metrics, step):
            self.calls.append(step)

    for is_zero, path in ((False, tmp_path / "l1.jsonl"), (True, tmp_path / "l0.jsonl")):
        cb = NapkinLightningCallback(jsonl=str(path), **opts)
        trainer = SimpleNamespace(is_global_zero=is_zero, world_size=2, global_step=0, loggers=[Logger()])
        cb.on_train_start(trainer, None)
        for _ in range(4):
            trainer.global_step += 1
            cb.on_train_batch_end(trainer, None, {"loss": 1.0}, None, 0)
        cb.on_train_end(trainer, None)
        assert path.exists() is is_zero
        assert trainer.loggers[0].calls == ([2, 4] if is_zero else [])


def test_watch_waits_for_a_half_written_trainer_state(tmp_path):
    """The Trainer rewrites trainer_state.json at each save: a poll that catches it half-written waits and
    reads it again at the next refresh, instead of ending the watch."""
    from napkin.ledger.watch import Watcher

    path = tmp_path / "trainer_state.json"
    hist = [{"loss": 2.0, "step": s, "napkin/t_wall": T0 + 10 * s, "napkin/gpus_allocated": 8} for s in range(11)]
    whole = json.dumps({"log_history": hist})
    path.write_text(whole[: len(whole) // 2])
    w = Watcher(str(path), _req(path, tokens_per_step="1000"))
    up = w.poll()
    assert up.report is None
    assert up.waiting.startswith(f"log is not valid JSON (Input data was truncated); got {path} (give a "
                                 "trainer_state.json) (not complete yet? trying again)")
    path.write_text(whole)
    up = w.poll()
    assert up.report["last_step"] == 10
