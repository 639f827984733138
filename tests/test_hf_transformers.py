"""napkin's parameter count of every config.json fixture equals Hugging Face transformers' own count of
the same config, built on the meta device (no weights are allocated or downloaded).

This is the independent check behind the per-family readers: each family's extras (q/k norms,
sinks, expert biases, shared-expert gates, interleaved dense layers, vision towers) must be counted
exactly as the modelling code that loads the checkpoint defines them.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from napkin.catalog.hf import load_config

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
FOLDERS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def transformers_count(cfg: dict) -> tuple[int, int]:
    """(all parameters, those of the vision tower and projector) of the model transformers builds."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    cfg = dict(cfg)
    cfg.pop("quantization_config", None)  # count the architecture, not a quantized loader
    if cfg.get("model_type") == "mistral3":
        # transformers 5 ties Mistral 3's head by default; the released checkpoint has its own lm_head
        cfg["text_config"] = {**cfg["text_config"], "tie_word_embeddings": False}
        cfg["tie_word_embeddings"] = False
    if cfg.get("model_type") == "llama4":
        # the Hub config writes attn_temperature_tuning as 4; transformers 5's strict config wants a bool
        cfg["text_config"] = {**cfg["text_config"], "attn_temperature_tuning": True}
    config = AutoConfig.for_model(**cfg)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        cls = AutoModelForImageTextToText if "vision_config" in cfg else AutoModelForCausalLM
        model = cls.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    vision = sum(p.numel() for n, p in model.named_parameters() if "vision" in n or "multi_modal_projector" in n)
    return total, vision


@pytest.mark.parametrize("folder", FOLDERS)
def test_count_equals_transformers(folder):
    cfg = json.loads((FIXTURES / folder / "config.json").read_text())
    total, vision = transformers_count(cfg)
    spec = load_config(str(FIXTURES / folder))
    assert spec.checkpoint_params == total, f"{folder}: napkin {spec.checkpoint_params:,.0f} vs transformers {total:,}"
    assert spec.vision_params == vision
