"""A real two-process DDP run (Lightning, gloo on CPU): the step log is written once, by rank zero."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from napkin import calculate

SCRIPT = textwrap.dedent("""
    import torch
    import lightning.pytorch as L

    from napkin.ledger.callbacks import NapkinLightningCallback


    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.lin(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)


    if __name__ == "__main__":
        torch.manual_seed(0)
        data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
        cb = NapkinLightningCallback(price="2.50/h", tokens_per_step=16, every=2, jsonl="steps.jsonl")
        trainer = L.Trainer(max_steps=6, accelerator="cpu", devices=2, strategy="ddp", logger=False, callbacks=[cb],
                            enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False)
        trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=8))
        # Tear the gloo group down before the interpreter does: left to exit, its threads are sometimes
        # destroyed while still joinable and the process aborts ("terminate called without an active exception";
        # pytorch/pytorch#190489, and #179291 on the SIGABRT at interpreter finalization).
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
""")


def test_lightning_ddp_two_ranks_write_one_step_log(tmp_path):
    """Before the fix each step was written by both ranks: 14 lines, 7 rollbacks, goodput 50%."""
    (tmp_path / "ddp.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_"))}
    done = subprocess.run([sys.executable, "ddp.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "GLOBAL_RANK: 1" in done.stderr  # two processes really ran
    rows = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4, 5, 6]
    assert {r["gpus_allocated"] for r in rows} == {2}
    r = calculate("ledger", {"logs": [str(tmp_path / "steps.jsonl")], "price": "2.50/h"})
    assert r["restarts"]["rollbacks"] == 0
    assert r["goodput"]["tokens"] == 1.0
    assert r["advanced_tokens"] == 6 * 16
