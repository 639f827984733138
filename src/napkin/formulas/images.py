"""Tokens an image costs as input, at each main provider's published formula.

An image is billed as input tokens, at a count each provider derives from its width and
height in pixels. The three formulas differ in kind: OpenAI counts 512-px tiles after two
resizes, Anthropic counts pixels (after one cap), Google counts 768-px tiles. The same
photo can cost several times more at one provider than at another.
"""

from __future__ import annotations

import math

# OpenAI (GPT-4o, GPT-4.1, o-series at detail "high"): resize into 2048 x 2048, then the shortest side to 768
OPENAI_FIT_PX = 2048
OPENAI_SHORT_SIDE_PX = 768
OPENAI_TILE_PX = 512
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170
# Anthropic (Claude 3 and 4 families before Opus 4.7): pixels / 750 after a cap on the long edge and the count
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_LONG_EDGE_PX = 1568
ANTHROPIC_MAX_PIXELS = 784 * 1568  # the largest size the docs list as sent unresized (1:2); 1092 x 1092 is 1:1
# Google (Gemini 2.0 and later at the default media resolution): 258 per small image or per 768-px tile
GEMINI_SMALL_PX = 384
GEMINI_TILE_PX = 768
GEMINI_TOKENS_PER_TILE = 258


def openai_image_tokens(width_px: float, *, height_px: float, detail: str = "high") -> int:
    """tokens = 85 + 170 · tiles, tiles = ceil(w'/512) · ceil(h'/512) after fitting into 2048 x 2048
    and scaling the shortest side down to 768 px; detail "low" is 85 whatever the size.

    Trap: the count is in tiles, not pixels: 513 x 513 costs as much as 1024 x 1024, and the
    second resize means a 4000 x 3000 photo costs no more than 1024 x 768. GPT-4o mini and the
    GPT-4.1 mini/nano and o4-mini models count 32-px patches with other multipliers instead.
    Source: OpenAI API docs, "Images and vision", section "Calculating costs"
    (https://platform.openai.com/docs/guides/images-vision#calculating-costs), as quoted in
    May 2024 (1024 x 1024 high: 765 tokens; 2048 x 4096: 1105; low: 85).
    """
    if detail == "low":
        return OPENAI_BASE_TOKENS
    w, h = float(width_px), float(height_px)
    fit = min(1.0, OPENAI_FIT_PX / max(w, h))
    w, h = w * fit, h * fit
    short = min(1.0, OPENAI_SHORT_SIDE_PX / min(w, h))
    w, h = w * short, h * short
    tiles = math.ceil(w / OPENAI_TILE_PX - 1e-9) * math.ceil(h / OPENAI_TILE_PX - 1e-9)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles


def anthropic_image_tokens(width_px: float, *, height_px: float) -> int:
    """tokens = ceil(w · h / 750), after scaling down (aspect kept) an image whose long edge
    passes 1568 px or whose count passes about 1,600 tokens (784 x 1568 px, the largest size the
    docs list as sent unresized: 1,640 tokens).

    Trap: the count grows with the pixels (not in tiles), so halving both sides quarters it;
    and a large image is capped, so a 4000 x 3000 photo costs about what 1,600 tokens do.
    Claude Opus 4.7 raised the long edge to 2576 px: its large images cost up to ~3x more.
    Source: Anthropic docs, "Vision", section "Calculate image costs"
    (https://docs.anthropic.com/en/docs/build-with-claude/vision), the version with Claude
    Sonnet 3.7 prices, 2025 (1000 x 1000: ~1334 tokens; 1092 x 1092: ~1590; 200 x 200: ~54).
    """
    w, h = float(width_px), float(height_px)
    cap = min(1.0, ANTHROPIC_LONG_EDGE_PX / max(w, h), math.sqrt(ANTHROPIC_MAX_PIXELS / (w * h)))
    w, h = w * cap, h * cap
    return math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN - 1e-9)


def gemini_image_tokens(width_px: float, *, height_px: float) -> int:
    """tokens = 258 when both sides are at most 384 px; else 258 · ceil(w/768) · ceil(h/768).

    Trap: the docs say a larger image is "cropped and scaled as needed into tiles of 768x768
    pixels": the tile count here is that rule read plainly, so a side just over a multiple of
    768 may cost a tile less than counted. Gemini 3's media_resolution setting changes it.
    Source: Google AI for Developers, "Understand and count tokens"
    (https://ai.google.dev/gemini-api/docs/tokens), Gemini 2.0 section, 2025.
    """
    w, h = float(width_px), float(height_px)
    if w <= GEMINI_SMALL_PX and h <= GEMINI_SMALL_PX:
        return GEMINI_TOKENS_PER_TILE
    return GEMINI_TOKENS_PER_TILE * math.ceil(w / GEMINI_TILE_PX - 1e-9) * math.ceil(h / GEMINI_TILE_PX - 1e-9)
