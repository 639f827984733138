"""An input a command does not use is still checked, and the output says it was not used (found in
review: `check --params 70B ... --model no-such-thing` and `train --mfu 0.4 --calibration /missing.toml`
exited 0 without a word)."""

from __future__ import annotations

import pytest

from napkin import calibration, calculate
from napkin.errors import NapkinError


@pytest.mark.parametrize("name,raw,message", [
    ("check", {"params": "70B", "tokens": "2T", "claimed_usd": "500k", "model": "no-such-thing"},
     "unknown model 'no-such-thing'"),
    ("optimal", {"flops": "3.8e25", "gpu": "nope"}, "unknown gpu 'nope'"),
    ("bill", {"model": "claude-sonnet-4", "input": "1000", "output": "300", "gpu": "nope"}, "unknown gpu 'nope'"),
    ("train", {"params": "7B", "tokens": "2T", "mfu": "0.4", "calibration": "/no/such/calibration.toml"},
     "calibration does not exist"),
    ("serve", {"model": "llama-3.1-8b", "gpu": "h100", "mfu": "0.5", "bandwidth_efficiency": "0.7",
               "calibration": "/no/such/calibration.toml"}, "calibration does not exist"),
])
def test_an_unused_input_is_still_checked(name, raw, message):
    with pytest.raises(NapkinError) as exc:
        calculate(name, raw)
    assert str(exc.value).startswith(message)


@pytest.mark.parametrize("name,raw,note", [
    ("check", {"params": "70B", "tokens": "2T", "claimed_usd": "500k", "model": "llama-3.1-70b"},
     "--params 70B replaces Llama 3.1 70B's 70.55B parameters"),
    ("optimal", {"flops": "3.8e25", "gpu": "h100"},
     "--gpu h100-sxm is not used: it sizes a GPUs × days budget, and --flops gives the budget"),
    ("bill", {"model": "claude-sonnet-4", "input": "1000", "output": "300", "gpu": "h100"},
     "--gpu used only with --self-hosted: not used here"),
])
def test_an_unused_input_is_said(name, raw, note):
    assert note in calculate(name, raw).notes


def test_a_calibration_without_rank_counts_says_so(tmp_path):
    cal = calibration.Calibration(device="test", date="2026-11-30", memory_bytes_per_s=1e12,
                                  allreduce_bus_bytes_per_s={"16MiB": 100e9})
    assert cal.allreduce_setup == "over an unrecorded number of ranks"
    cal.allreduce_ranks, cal.allreduce_backend = 8, "nccl"
    assert cal.allreduce_setup == "over 8 ranks (nccl)"


def test_memory_refuses_a_hand_architecture_beside_a_model_and_says_when_params_replace_its_count():
    """Found in review: `memory --model llama-3.1-70b --layers 10` kept the model's 80 layers without a word."""
    with pytest.raises(NapkinError) as exc:
        calculate("memory", {"model": "llama-3.1-70b", "layers": "10"})
    assert str(exc.value).startswith("layers is for a model given by hand, and --model llama-3.1-70b gives its own")
    r = calculate("memory", {"model": "llama-3.1-70b", "params": "70B"})
    assert ("--params 70B used in place of Llama 3.1 70B's computed 70.55B; the rest of the architecture is the "
            "model's") in r.notes


def test_llama_3_is_not_read_as_llama_3_1():
    """Llama 3 has an 8,192-token context; the catalog's Llama 3.1 has 131,072: no alias between them."""
    with pytest.raises(NapkinError):
        calculate("model", {"model": "llama-3-70b"})
