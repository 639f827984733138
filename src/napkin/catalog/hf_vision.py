"""Parameters of the vision encoder (and its projector) a multimodal checkpoint ships.

A text token never touches these weights, but they are loaded with the model, so they count
in its memory and in the checkpoint's published total (Llama 4 Scout's 108.6B on the Hub is
107.8B of language model and 0.87B of vision). Counted from ``vision_config`` for:

    gemma3    SigLIP (siglip_vision_model): conv patch embedding with bias, learned positions,
              pre-LN blocks with biased q/k/v/o and a GELU MLP, post LayerNorm; the projector is
              an RMSNorm and a vision_hidden x text_hidden matrix (Gemma3MultiModalProjector)
    llama4    Llama4VisionModel: unfolded linear patch embedding, class token, learned positions,
              pre/post LayerNorm, biased blocks, a pixel-shuffle MLP adapter; Llama4MultiModalProjector
    mistral3  Pixtral: conv patch embedding, RMSNorm, gated MLP blocks without biases;
              Mistral3MultiModalProjector (RMSNorm, a 2x2 patch merger, two linear layers)

Source: transformers' modeling_siglip.py, modeling_llama4.py, modeling_pixtral.py and
modeling_mistral3.py; each formula reproduces transformers' own count on the meta device.
"""

from __future__ import annotations

from typing import Any


def _ln(d: int) -> int:
    return 2 * d  # LayerNorm: weight and bias


def _siglip(v: dict[str, Any], text_hidden: int) -> int:
    d, f, L = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
    c, p, size = v.get("num_channels", 3), v["patch_size"], v["image_size"]
    block = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * _ln(d)
    embed = c * p * p * d + d + (size // p) ** 2 * d
    projector = d + d * text_hidden  # mm_soft_emb_norm, mm_input_projection_weight
    return L * block + embed + _ln(d) + projector


def _llama4(v: dict[str, Any], text_hidden: int) -> int:
    d, f, L = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
    c, p, size = v.get("num_channels", 3), v["patch_size"], v["image_size"]
    block = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * _ln(d)
    embed = c * p * p * d + d + ((size // p) ** 2 + 1) * d  # patch linear, class token, positions
    adapter = f * v["projector_input_dim"] + v["projector_output_dim"] ** 2  # Llama4VisionMLP2 fc1, fc2
    projector = v["vision_output_dim"] * text_hidden
    return L * block + embed + 2 * _ln(d) + adapter + projector


def _pixtral(v: dict[str, Any], text_hidden: int, merge: int) -> int:
    d, f, L = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
    c, p = v.get("num_channels", 3), v["patch_size"]
    block = 4 * d * d + 3 * d * f + 2 * d
    embed = c * p * p * d + d  # patch_conv (no bias), ln_pre
    projector = d + merge * merge * d * d + d * text_hidden + text_hidden * text_hidden
    return L * block + embed + projector


def vision_params(cfg: dict[str, Any], outer_mt: str, text_hidden: int, notes: list[str]) -> dict[str, int]:
    """{"vision_params": n} for a known vision encoder; otherwise a note and {}."""
    v = cfg["vision_config"]
    try:
        if outer_mt == "gemma3":
            n = _siglip(v, text_hidden)
        elif outer_mt == "llama4":
            n = _llama4(v, text_hidden)
        elif outer_mt == "mistral3":
            n = _pixtral(v, text_hidden, int(cfg.get("spatial_merge_size", 2)))
        else:
            n = 0
    except (KeyError, TypeError):
        n = 0
    if not n:
        notes.append(f"vision_config present ({v.get('model_type', 'unnamed')}): its encoder is not counted, so "
                     "the memory of the weights is understated by the vision tower's size.")
        return {}
    notes.append(f"The checkpoint also holds a {v.get('model_type', 'vision')} encoder and projector of "
                 f"{n:,} parameters (vision_params): loaded with the model, never used by a text token.")
    return {"vision_params": n}
